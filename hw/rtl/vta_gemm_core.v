// GEMM core: BATCH x BLOCK_IN x BLOCK_OUT multiply-accumulates in one cycle (spec section 5):
// acc_out[b][o] = (reset ? 0 : acc_in[b][o] + sum_k inp[b][k] * wgt[o][k]), int32 wrapping.
`default_nettype none
`include "vta_cfg.vh"
module vta_gemm_core (
    input  wire                          reset,
    input  wire [`VTA_INP_BYTES*8-1:0]   inp,
    input  wire [`VTA_WGT_BYTES*8-1:0]   wgt,
    input  wire [`VTA_ACC_BYTES*8-1:0]   acc_in,
    output reg  [`VTA_ACC_BYTES*8-1:0]   acc_out
);
    integer b, o, k;
    reg signed [31:0] sum;
    always @(*) begin
        for (b = 0; b < `VTA_BATCH; b = b + 1) begin
            for (o = 0; o < `VTA_BLOCK_OUT; o = o + 1) begin
                sum = acc_in[(b * `VTA_BLOCK_OUT + o) * 32 +: 32];
                for (k = 0; k < `VTA_BLOCK_IN; k = k + 1)
                    sum = sum + 32'($signed(inp[(b * `VTA_BLOCK_IN + k) * 8 +: 8]) *
                                    $signed(wgt[(o * `VTA_BLOCK_IN + k) * 8 +: 8]));
                acc_out[(b * `VTA_BLOCK_OUT + o) * 32 +: 32] = reset ? 32'd0 : sum;
            end
        end
    end
endmodule
`default_nettype wire
