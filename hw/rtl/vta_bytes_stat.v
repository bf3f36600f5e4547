// A bytes-moved statistic (inp/wgt/acc/uop/out_load_nbytes, spec statistics): each DMA
// instruction adds X_SIZE * Y_SIZE elements of 2^lg bytes. The product is registered the cycle
// after the begin, shifted to bytes and registered the cycle after, and added the cycle after
// that, so no multiplier, shifter and adder chain hangs off the begin; the total is final three
// cycles after the last begin, long before the host can read it. With VTA_ECP5_CELLS the product
// is a MULT18X18D's output register, so neither the instruction -> the multiplier nor the
// block's output -> the route out of its column -> the shift -> the adder is one cycle.
`default_nettype none
module vta_bytes_stat (
    input  wire        clk,
    input  wire        rst,
    input  wire        add,      // an instruction that counts begins this cycle
    input  wire [15:0] x_size,
    input  wire [15:0] y_size,
    input  wire [3:0]  lg,       // log2 of its element bytes
    output reg  [31:0] total
);
    reg        pend, pend2;
    reg [3:0]  lg_r;
    reg [31:0] nb;        // n << lg_r
`ifdef VTA_ECP5_CELLS
    wire [31:0] n;
    vta_ecp5_mul #(.W(16), .SIGNED(0), .IN_REG(0), .OUT_REG(1)) mul (.clk(clk), .a(x_size), .b(y_size), .p(n));
`else
    reg [31:0] n;
    always @(posedge clk) n <= 32'(x_size) * 32'(y_size);
`endif
    always @(posedge clk) begin
        pend <= add && !rst;
        pend2 <= pend && !rst;
        lg_r <= lg;
        nb <= n << lg_r;
        if (rst) total <= 0;
        else if (pend2) total <= total + nb;
    end
endmodule
`default_nettype wire
