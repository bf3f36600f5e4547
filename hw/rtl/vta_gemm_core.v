// GEMM core: BATCH x BLOCK_IN x BLOCK_OUT multiply-accumulates (spec section 5), four stages:
// inp and wgt are registered as they come out of their SRAMs (the multipliers' input registers),
// their products registered (the multipliers' output registers), the products' sums per output
// registered, then acc_out[b][o] = (reset ? 0 : acc_in[b][o] + dot[b][o]), int32 wrapping, with
// acc_in three cycles after inp/wgt: the accumulator's read-add-write stays one cycle, so
// back-to-back iterations on one ACC entry need only the SRAM's write-first read.
`default_nettype none
`include "vta_cfg.vh"
module vta_gemm_core (
    input  wire                          clk,
    input  wire                          reset,
    input  wire [`VTA_INP_BYTES*8-1:0]   inp,
    input  wire [`VTA_WGT_BYTES*8-1:0]   wgt,
    input  wire [`VTA_ACC_BYTES*8-1:0]   acc_in,    // three cycles after inp/wgt
    output reg  [`VTA_ACC_BYTES*8-1:0]   acc_out
);
    localparam LANES = `VTA_BATCH * `VTA_BLOCK_OUT;
    localparam BI = `VTA_BLOCK_IN;
    integer b, o, k, l;
    reg signed [31:0] sum;
    reg [LANES*BI*16-1:0] prod, prod_r;     // int8 x int8 fits 16 bits
    reg [`VTA_INP_BYTES*8-1:0] inp_r;
    reg [`VTA_WGT_BYTES*8-1:0] wgt_r;
    reg [`VTA_ACC_BYTES*8-1:0] dot, dot_r;
    always @(*)
        for (b = 0; b < `VTA_BATCH; b = b + 1)
            for (o = 0; o < `VTA_BLOCK_OUT; o = o + 1)
                for (k = 0; k < BI; k = k + 1)
                    prod[((b * `VTA_BLOCK_OUT + o) * BI + k) * 16 +: 16] =
                        16'($signed(inp_r[(b * BI + k) * 8 +: 8]) * $signed(wgt_r[(o * BI + k) * 8 +: 8]));
    always @(*)
        for (l = 0; l < LANES; l = l + 1) begin
            sum = 0;
            for (k = 0; k < BI; k = k + 1)
                sum = sum + 32'($signed(prod_r[(l * BI + k) * 16 +: 16]));
            dot[l * 32 +: 32] = sum;
        end
    always @(posedge clk) begin
        inp_r <= inp;
        wgt_r <= wgt;
        prod_r <= prod;
        dot_r <= dot;
    end
    always @(*)
        for (l = 0; l < LANES; l = l + 1)
            acc_out[l * 32 +: 32] = reset ? 32'd0 : acc_in[l * 32 +: 32] + dot_r[l * 32 +: 32];
endmodule
`default_nettype wire
