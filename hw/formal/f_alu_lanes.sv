// ALU lanes on symbolic operands, for one micro-op: every lane equals the spec's MIN/MAX/ADD/SHR/MUL
// (../shared/spec/vta-isa.md section 5), reset giving 0, a cycle after its operands (the core's two
// stages); k-induction with k = 2 covers all time. MUL's reference is the wrapping int32 product
// written by its 16-bit halves, lo x lo + (lo x hi + hi x lo) << 16 (hi x hi only reaches bit 32),
// taken on this cycle's operands and registered: its multipliers are then the core's own cells
// (Yosys merges them), and what is checked is which halves meet, their widths, the sum, the
// timing and reset. The halves identity itself is algebra no solver here closes on 32-bit words
// (docs/hardware.md, "Formal"); with the spec's 32 x 32 product here instead, neither Yices nor
// Yosys' SAT closes the multiplier miter.
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
    vta_alu_core alu (.clk(clk), .reset(reset), .op(op), .x(x), .y(y), .xm(x), .ym(y), .z(z));
    always @(*) assume(op <= `VTA_ALU_MUL);   // fetch refuses opcodes 5-7
    reg [`VTA_ACC_BYTES*8-1:0] xp, yp;        // the operands of the cycle before
    reg [2:0] opp;
    reg resetp, f_past = 1'b0;
    always @(posedge clk) begin
        {xp, yp, opp, resetp} <= {x, y, op, reset};
        f_past <= 1'b1;
    end
    reg [`VTA_ACC_BYTES*8-1:0] f_mul, f_mulp;   // the halves product of this cycle's operands, of the last
    integer l;
    always @(*)
        for (l = 0; l < LANES; l = l + 1)
            f_mul[l * 32 +: 32] = 32'(32'(x[l * 32 +: 16]) * 32'(y[l * 32 +: 16])) +
                                  {16'(x[l * 32 +: 16] * y[l * 32 + 16 +: 16]) + 16'(x[l * 32 + 16 +: 16] * y[l * 32 +: 16]), 16'd0};
    always @(posedge clk) f_mulp <= f_mul;
    reg [`VTA_ACC_BYTES*8-1:0] f_alu;
    reg signed [31:0] xs, ys, r;
    always @(*)
        for (l = 0; l < LANES; l = l + 1) begin
            xs = xp[l * 32 +: 32];
            ys = yp[l * 32 +: 32];
            case (opp)
                `VTA_ALU_MIN: r = (xs <= ys) ? xs : ys;
                `VTA_ALU_MAX: r = (xs >= ys) ? xs : ys;
                `VTA_ALU_ADD: r = xs + ys;
                `VTA_ALU_SHR: r = (ys >= 0) ? xs >>> ((ys > 31) ? 31 : ys) : xs <<< ((ys < -31) ? 31 : -ys);
                default:      r = f_mulp[l * 32 +: 32];   // MUL: xs * ys, by its halves
            endcase
            f_alu[l * 32 +: 32] = resetp ? 32'd0 : r;
        end
    always @(*) if (f_past) alu_lanes_are_spec: assert(z == f_alu);
    always @(posedge clk) if (f_live && !rst) begin
        alu_cover_shift_left: cover(opp == `VTA_ALU_SHR && !resetp && $signed(yp[31:0]) < 0 && z[31:0] != 0);
        alu_cover_mul_wraps: cover(opp == `VTA_ALU_MUL && !resetp && $signed(xp[31:0]) > 65536 &&
                                   $signed(yp[31:0]) > 65536);
        alu_cover_min_negative: cover(opp == `VTA_ALU_MIN && !resetp && $signed(z[31:0]) < 0);
    end
endmodule
`default_nettype wire
