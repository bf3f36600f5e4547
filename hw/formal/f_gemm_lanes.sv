// GEMM lanes on symbolic operands, for one micro-op: lane (b, o) equals
// reset ? 0 : acc + sum_k inp[b][k] * wgt[o][k] (int8 x int8 into int32, wrapping) of the operands
// that entered three cycles earlier (acc arrives with the sum). The lane is any constant, so one
// check covers them all. Bounded: the core keeps no state beyond its three pipeline registers,
// which hold only what the last three cycles brought, so the check at depth 6 (operands entering
// after reset, the result three cycles later) covers every operand sequence.
`default_nettype none
`include "vta_cfg.vh"
module f_gemm_lanes (
    input wire clk,
    input wire rst,
    input wire reset,
    input wire [`VTA_INP_BYTES*8-1:0] inp,
    input wire [`VTA_WGT_BYTES*8-1:0] wgt,
    input wire [`VTA_ACC_BYTES*8-1:0] acc
);
`include "f_reset.svh"
    localparam BI = `VTA_BLOCK_IN, BO = `VTA_BLOCK_OUT, LANES = `VTA_BATCH * `VTA_BLOCK_OUT;
    wire [`VTA_ACC_BYTES*8-1:0] out;
    vta_gemm_core gemm (.clk(clk), .reset(reset), .inp(inp), .wgt(wgt), .acc_in(acc), .acc_out(out));
    (* anyconst *) reg [31:0] f_lane;
    always @(*) assume(f_lane < LANES);
    reg [`VTA_INP_BYTES*8-1:0] inp1, inp2, inp3;
    reg [`VTA_WGT_BYTES*8-1:0] wgt1, wgt2, wgt3;
    reg [1:0] f_age;   // cycles of operands seen since reset (saturating)
    always @(posedge clk) begin
        {inp1, inp2, inp3, wgt1, wgt2, wgt3} <= {inp, inp1, inp2, wgt, wgt1, wgt2};
        f_age <= rst ? 2'd0 : (f_age == 2'd3) ? 2'd3 : f_age + 2'd1;
    end
    integer k;
    reg signed [31:0] f_dot;
    always @(*) begin
        f_dot = 0;
        for (k = 0; k < BI; k = k + 1)
            f_dot = f_dot + $signed(inp3[((f_lane / BO) * BI + k) * 8 +: 8]) * $signed(wgt3[((f_lane % BO) * BI + k) * 8 +: 8]);
    end
    wire [31:0] f_out = out[f_lane * 32 +: 32];
    always @(*) if (f_live && !rst && f_age == 2'd3)
        gemm_lane_is_dot: assert(f_out == (reset ? 32'd0 : acc[f_lane * 32 +: 32] + f_dot));
    always @(posedge clk) if (f_live && !rst) begin
        gemm_cover_negative: cover(f_age == 2'd3 && !reset && $signed(f_out) < -1000);
        gemm_cover_reset: cover(f_age == 2'd3 && reset && acc != 0);
    end
endmodule
`default_nettype wire
