// ALU lanes on symbolic operands, for one micro-op: every lane equals the spec's MIN/MAX/ADD/SHR/MUL
// (../shared/spec/vta-isa.md section 5), reset giving 0, two cycles after its operands (the core's
// three stages), and MIN/MAX/ADD's early result zr one cycle after them (0 for the other ops);
// k-induction with k = 3 covers all time. MUL's reference is the wrapping int32 product
// written by its 16-bit halves, lo x lo + (lo x hi + hi x lo) << 16 (hi x hi only reaches bit 32;
// lo x hi and hi x lo as the core's cells take them, signed for REQ: their low 16 bits are the
// unsigned products'),
// taken on this cycle's operands and registered twice: its multipliers are then the core's own cells
// (Yosys merges them), and what is checked is which halves meet, their widths, the sum, the
// timing and reset. The halves identity itself is algebra no solver here closes on 32-bit words
// (docs/hardware.md, "Formal"); with the spec's 32 x 32 product here instead, neither Yices nor
// Yosys' SAT closes the multiplier miter.
`default_nettype none
`include "vta_cfg.vh"
`include "f_model.vh"
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
    wire [`VTA_ACC_BYTES*8-1:0] z, zr;
    wire [`VTA_ACC_BYTES*8-1:0] zq;   // REQ's (f_req_lanes)
    vta_alu_core alu (.clk(clk), .reset(reset), .op(op), .x(x), .y(y), .xm(x), .ym(y), .z(z), .zr(zr),
                      .n(`VTA_REQ_SHIFT_BITS'(0)), .zp(`VTA_REQ_ZP_BITS'(0)), .zq(zq));
    always @(*) assume(op <= `VTA_ALU_MUL);   // fetch refuses opcodes 5-7
`ifdef F_FOCUS
    always @(*) assume(`F_FOCUS);   // a mutation test's narrowed search (hw/prove.py, Mutation.focus)
`endif
    reg [`VTA_ACC_BYTES*8-1:0] xp, yp, xpp, ypp;   // the core's operands of the cycle before, two before
    reg [2:0] opp, oppp;
    reg resetp, resetpp, f_past = 1'b0, f_past2 = 1'b0;
    always @(posedge clk) begin
        {xp, yp, opp, resetp} <= {x, y, op, reset};
        {xpp, ypp, oppp, resetpp} <= {xp, yp, opp, resetp};
        f_past <= 1'b1;
        f_past2 <= f_past;
    end
    reg [`VTA_ACC_BYTES*8-1:0] f_mul, f_mulp, f_mulpp;   // the halves product of the core's operands
    integer l;
    always @(*)
        for (l = 0; l < LANES; l = l + 1)
            f_mul[l * 32 +: 32] = 32'(32'(x[l * 32 +: 16]) * 32'(y[l * 32 +: 16])) +
                                  {16'(32'($signed({1'b0, x[l * 32 +: 16]})) * 32'($signed(y[l * 32 + 16 +: 16])))
                                   + 16'(32'($signed(x[l * 32 + 16 +: 16])) * 32'($signed({1'b0, y[l * 32 +: 16]}))), 16'd0};
    always @(posedge clk) {f_mulp, f_mulpp} <= {f_mul, f_mulp};
    function automatic [31:0] spec_lane(input [2:0] o, input signed [31:0] xs, input signed [31:0] ys,
                                        input [31:0] mul, input rs);
        case (o)
            `VTA_ALU_MIN: spec_lane = (xs <= ys) ? xs : ys;
            `VTA_ALU_MAX: spec_lane = (xs >= ys) ? xs : ys;
            `VTA_ALU_ADD: spec_lane = xs + ys;
            `VTA_ALU_SHR: spec_lane = (ys >= 0) ? xs >>> ((ys > 31) ? 31 : ys) : xs <<< ((ys < -31) ? 31 : -ys);
            default:      spec_lane = mul;   // MUL: xs * ys, by its halves
        endcase
        if (rs) spec_lane = 32'd0;
    endfunction
    reg [`VTA_ACC_BYTES*8-1:0] f_alu, f_early;
    always @(*)
        for (l = 0; l < LANES; l = l + 1) begin
            f_alu[l * 32 +: 32] = spec_lane(oppp, xpp[l * 32 +: 32], ypp[l * 32 +: 32], f_mulpp[l * 32 +: 32], resetpp);
            f_early[l * 32 +: 32] = (opp == `VTA_ALU_SHR || opp == `VTA_ALU_MUL) ? 32'd0 :
                                    spec_lane(opp, xp[l * 32 +: 32], yp[l * 32 +: 32], 32'd0, resetp);
        end
    always @(*) if (f_past2) alu_lanes_are_spec: assert(z == f_alu);
    always @(*) if (f_past) alu_early_is_spec: assert(zr == f_early);
    always @(posedge clk) if (f_live && !rst) begin
        alu_cover_shift_left: cover(oppp == `VTA_ALU_SHR && !resetpp && $signed(ypp[31:0]) < 0 && z[31:0] != 0);
        alu_cover_mul_wraps: cover(oppp == `VTA_ALU_MUL && !resetpp && $signed(xpp[31:0]) > 65536 &&
                                   $signed(ypp[31:0]) > 65536);
        alu_cover_min_negative: cover(oppp == `VTA_ALU_MIN && !resetpp && $signed(z[31:0]) < 0);
    end
endmodule
`default_nettype wire
