// ALU: BATCH x BLOCK_OUT int32 lanes (spec section 5). MIN/MAX signed, ADD/MUL wrapping, SHR
// arithmetic right by y (y >= 0) or left by -y (y < 0), the amount capped at 31; reset gives 0.
`default_nettype none
`include "vta_cfg.vh"
module vta_alu_core (
    input  wire                        reset,
    input  wire [2:0]                  op,
    input  wire [`VTA_ACC_BYTES*8-1:0] x,
    input  wire [`VTA_ACC_BYTES*8-1:0] y,
    output reg  [`VTA_ACC_BYTES*8-1:0] z
);
    localparam LANES = `VTA_BATCH * `VTA_BLOCK_OUT;
    integer i;
    reg signed [31:0] a, bb, r;
    reg [4:0] amt;
    always @(*) begin
        for (i = 0; i < LANES; i = i + 1) begin
            a = x[i * 32 +: 32];
            bb = y[i * 32 +: 32];
            amt = (bb > `VTA_ALU_SHIFT_CAP || bb < -`VTA_ALU_SHIFT_CAP) ? 5'(`VTA_ALU_SHIFT_CAP)
                                                                : (bb[31] ? 5'(-bb) : 5'(bb));
            case (op)
                `VTA_ALU_MIN: r = (a < bb) ? a : bb;
                `VTA_ALU_MAX: r = (a > bb) ? a : bb;
                `VTA_ALU_ADD: r = a + bb;
                `VTA_ALU_SHR: r = bb[31] ? (a <<< amt) : (a >>> amt);
                default:      r = a * bb;   // MUL; fetch refuses opcodes 5-7
            endcase
            z[i * 32 +: 32] = reset ? 32'd0 : r;
        end
    end
endmodule
`default_nettype wire
