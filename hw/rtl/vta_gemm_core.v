// GEMM core: BATCH x BLOCK_IN x BLOCK_OUT multiply-accumulates (spec section 5), four stages:
// inp and wgt are registered as they come out of their SRAMs (the multipliers' input registers;
// with VTA_ECP5_CELLS those inside one MULT18X18D per product, hw/rtl/ecp5/vta_ecp5_mul.v), their
// products registered (in the fabric: the DSP's own output register's clock-to-out and route
// left too little of the cycle for the adder tree), the products' sums per output
// (a balanced adder tree, log2(BLOCK_IN) adders deep, in SW bits: no carry past the sum's range)
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
    localparam SW = 16 + $clog2(BI + 1);   // a sum of BI int8 x int8 products
    integer b, o, k, l, h;
    reg signed [SW-1:0] t [0:BI-1];
    reg [LANES*BI*16-1:0] prod_r;           // int8 x int8 fits 16 bits
`ifdef VTA_ECP5_CELLS
    wire [LANES*BI*16-1:0] prod;
`else
    reg [LANES*BI*16-1:0] prod;
    reg [`VTA_INP_BYTES*8-1:0] inp_r;
    reg [`VTA_WGT_BYTES*8-1:0] wgt_r;
`endif
    reg [`VTA_ACC_BYTES*8-1:0] dot, dot_r;
`ifdef VTA_ECP5_CELLS
    genvar gl, gk;
    generate for (gl = 0; gl < LANES; gl = gl + 1) begin : g_lane
        for (gk = 0; gk < BI; gk = gk + 1) begin : g_k
            vta_ecp5_mul #(.W(8), .SIGNED(1), .IN_REG(1), .OUT_REG(0)) mul (.clk(clk),
                .a(inp[((gl / `VTA_BLOCK_OUT) * BI + gk) * 8 +: 8]), .b(wgt[((gl % `VTA_BLOCK_OUT) * BI + gk) * 8 +: 8]),
                .p(prod[(gl * BI + gk) * 16 +: 16]));
        end
    end endgenerate
`else
    always @(*)
        for (b = 0; b < `VTA_BATCH; b = b + 1)
            for (o = 0; o < `VTA_BLOCK_OUT; o = o + 1)
                for (k = 0; k < BI; k = k + 1)
                    prod[((b * `VTA_BLOCK_OUT + o) * BI + k) * 16 +: 16] =
                        16'($signed(inp_r[(b * BI + k) * 8 +: 8]) * $signed(wgt_r[(o * BI + k) * 8 +: 8]));
    always @(posedge clk) begin
        inp_r <= inp;
        wgt_r <= wgt;
    end
`endif
    always @(*)
        for (l = 0; l < LANES; l = l + 1) begin
            for (k = 0; k < BI; k = k + 1)
                t[k] = SW'($signed(prod_r[(l * BI + k) * 16 +: 16]));
            for (h = 1; h < BI; h = h * 2)
                for (k = 0; k + h < BI; k = k + 2 * h)
                    t[k] = t[k] + t[k + h];
            dot[l * 32 +: 32] = 32'(t[0]);
        end
    always @(posedge clk) begin
        prod_r <= prod;
        dot_r <= dot;
    end
    always @(*)
        for (l = 0; l < LANES; l = l + 1)
            acc_out[l * 32 +: 32] = reset ? 32'd0 : acc_in[l * 32 +: 32] + dot_r[l * 32 +: 32];
endmodule
`default_nettype wire
