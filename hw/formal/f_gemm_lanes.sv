// GEMM lanes on symbolic operands, for one micro-op: every lane (b, o) equals
// reset ? 0 : acc + sum_k inp[b][k] * wgt[o][k] (int8 x int8 into int32, wrapping) of the operands
// that entered three cycles earlier (acc arrives with the sum). A k-induction proof, one stage at a
// time: the core's operand registers hold the operands that entered a cycle earlier; the
// reference's products of those operands (int16, exact for int8 x int8: f_mul_exact proves that
// sign-extending them gives the int32 products) ride along with the pipeline (p1, p2); the
// product register holds them a cycle later, the dot register their int32 sum, and the output
// acc plus that sum. The core's registers are read through f_peek wires (hw/prove.py peeks).
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
    (* f_peek = "gemm.inp_r" *) wire [`VTA_INP_BYTES*8-1:0] p_inp_r;
    (* f_peek = "gemm.wgt_r" *) wire [`VTA_WGT_BYTES*8-1:0] p_wgt_r;
    (* f_peek = "gemm.prod_r" *) wire [LANES*BI*16-1:0] p_prod_r;
    (* f_peek = "gemm.dot_r" *) wire [`VTA_ACC_BYTES*8-1:0] p_dot_r;
    reg [`VTA_INP_BYTES*8-1:0] inp1;
    reg [`VTA_WGT_BYTES*8-1:0] wgt1;
    reg [1:0] f_age;   // cycles of operands seen since reset (saturating)
    always @(posedge clk) begin
        {inp1, wgt1} <= {inp, wgt};
        f_age <= rst ? 2'd0 : (f_age == 2'd3) ? 2'd3 : f_age + 2'd1;
    end
    always @(*) if (f_live && !rst && f_age != 2'd0)
        gemm_inv_operands: assert(p_inp_r == inp1 && p_wgt_r == wgt1);
    genvar l;
    generate for (l = 0; l < LANES; l = l + 1) begin : g_lane
        f_gemm_lane #(.L(l)) lane (.clk(clk), .on(f_live && !rst), .age(f_age), .reset(reset), .inp_r(p_inp_r),
            .wgt_r(p_wgt_r), .prod_r(p_prod_r[l * BI * 16 +: BI * 16]), .dot_r(p_dot_r[l * 32 +: 32]),
            .acc(acc[l * 32 +: 32]), .out(out[l * 32 +: 32]));
    end endgenerate
    always @(posedge clk) if (f_live && !rst) begin
        gemm_cover_negative: cover(f_age == 2'd3 && !reset && $signed(out[31:0]) < -1000);
        gemm_cover_reset: cover(f_age == 2'd3 && reset && acc != 0);
    end
endmodule

// Lane L: the reference's products of the operands in the core's registers (int16), delayed with
// the pipeline, and the lane's stages checked against them.
module f_gemm_lane #(parameter L = 0) (
    input wire clk,
    input wire on,
    input wire [1:0] age,
    input wire reset,
    input wire [`VTA_INP_BYTES*8-1:0] inp_r,
    input wire [`VTA_WGT_BYTES*8-1:0] wgt_r,
    input wire [`VTA_BLOCK_IN*16-1:0] prod_r,
    input wire [31:0] dot_r,
    input wire [31:0] acc,
    input wire [31:0] out
);
    localparam BI = `VTA_BLOCK_IN, BO = `VTA_BLOCK_OUT;
    wire [BI*16-1:0] p0;
    reg [BI*16-1:0] p1, p2;
    genvar k;
    generate for (k = 0; k < BI; k = k + 1) begin : g_k
        assign p0[k * 16 +: 16] = 16'($signed(inp_r[((L / BO) * BI + k) * 8 +: 8]) *
                                      $signed(wgt_r[((L % BO) * BI + k) * 8 +: 8]));
    end endgenerate
    always @(posedge clk) {p1, p2} <= {p0, p1};
    integer j;
    reg [31:0] dot;
    always @(*) begin
        dot = 0;
        for (j = 0; j < BI; j = j + 1)
            dot = dot + 32'($signed(p2[j * 16 +: 16]));
    end
    always @(*) if (on) begin
        if (age >= 2'd2)
            gemm_inv_products: assert(prod_r == p1);
        if (age == 2'd3) begin
            gemm_inv_dot: assert(dot_r == dot);
            gemm_lane_is_dot: assert(out == (reset ? 32'd0 : acc + dot));
        end
    end
endmodule
`default_nettype wire
