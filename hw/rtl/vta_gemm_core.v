// GEMM core: BATCH x BLOCK_IN x BLOCK_OUT multiply-accumulates (spec section 5), two stages:
// the dot products of inp and wgt are registered at the clock edge (multipliers and adder tree
// in the cycle INP/WGT are read), then acc_out[b][o] = (reset ? 0 : acc_in[b][o] + dot[b][o]),
// int32 wrapping, with acc_in read one cycle later: the accumulator's read-add-write stays one
// cycle, so back-to-back iterations on one ACC entry need only the SRAM's write-first read.
`default_nettype none
`include "vta_cfg.vh"
module vta_gemm_core (
    input  wire                          clk,
    input  wire                          reset,
    input  wire [`VTA_INP_BYTES*8-1:0]   inp,
    input  wire [`VTA_WGT_BYTES*8-1:0]   wgt,
    input  wire [`VTA_ACC_BYTES*8-1:0]   acc_in,    // the cycle after inp/wgt
    output reg  [`VTA_ACC_BYTES*8-1:0]   acc_out
);
    localparam LANES = `VTA_BATCH * `VTA_BLOCK_OUT;
    integer b, o, k, l;
    reg signed [31:0] sum;
    reg [`VTA_ACC_BYTES*8-1:0] dot, dot_r;
    always @(*) begin
        for (b = 0; b < `VTA_BATCH; b = b + 1) begin
            for (o = 0; o < `VTA_BLOCK_OUT; o = o + 1) begin
                sum = 0;
                for (k = 0; k < `VTA_BLOCK_IN; k = k + 1)
                    sum = sum + 32'($signed(inp[(b * `VTA_BLOCK_IN + k) * 8 +: 8]) *
                                    $signed(wgt[(o * `VTA_BLOCK_IN + k) * 8 +: 8]));
                dot[(b * `VTA_BLOCK_OUT + o) * 32 +: 32] = sum;
            end
        end
    end
    always @(posedge clk) dot_r <= dot;
    always @(*)
        for (l = 0; l < LANES; l = l + 1)
            acc_out[l * 32 +: 32] = reset ? 32'd0 : acc_in[l * 32 +: 32] + dot_r[l * 32 +: 32];
endmodule
`default_nettype wire
