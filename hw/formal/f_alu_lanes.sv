// ALU lanes on symbolic operands, for one micro-op: every lane equals the spec's MIN/MAX/ADD/SHR/MUL
// (../shared/spec/vta-isa.md section 5), reset giving 0. Combinational, so a proof for all time.
`default_nettype none
`include "vta_cfg.vh"
module f_alu_lanes (
    input wire clk,
    input wire rst,
    input wire reset,
    input wire [2:0] op,
    input wire [`VTA_ACC_BYTES*8-1:0] x,
    input wire [`VTA_ACC_BYTES*8-1:0] y
);
`include "f_reset.svh"
    localparam LANES = `VTA_BATCH * `VTA_BLOCK_OUT;
    wire [`VTA_ACC_BYTES*8-1:0] z;
    vta_alu_core alu (.reset(reset), .op(op), .x(x), .y(y), .z(z));
    always @(*) assume(op <= `VTA_ALU_MUL);   // fetch refuses opcodes 5-7
    reg [`VTA_ACC_BYTES*8-1:0] f_alu;
    integer l;
    reg signed [31:0] xs, ys, r;
    always @(*)
        for (l = 0; l < LANES; l = l + 1) begin
            xs = x[l * 32 +: 32];
            ys = y[l * 32 +: 32];
            case (op)
                `VTA_ALU_MIN: r = (xs <= ys) ? xs : ys;
                `VTA_ALU_MAX: r = (xs >= ys) ? xs : ys;
                `VTA_ALU_ADD: r = xs + ys;
                `VTA_ALU_SHR: r = (ys >= 0) ? xs >>> ((ys > 31) ? 31 : ys) : xs <<< ((ys < -31) ? 31 : -ys);
                default:      r = xs * ys;
            endcase
            f_alu[l * 32 +: 32] = reset ? 32'd0 : r;
        end
    always @(*) alu_lanes_are_spec: assert(z == f_alu);
    always @(posedge clk) if (f_live && !rst) begin
        alu_cover_shift_left: cover(op == `VTA_ALU_SHR && !reset && $signed(y[31:0]) < 0 && z[31:0] != 0);
        alu_cover_mul_wraps: cover(op == `VTA_ALU_MUL && !reset && $signed(x[31:0]) > 65536 && $signed(y[31:0]) > 65536);
        alu_cover_min_negative: cover(op == `VTA_ALU_MIN && !reset && $signed(z[31:0]) < 0);
    end
endmodule
`default_nettype wire
