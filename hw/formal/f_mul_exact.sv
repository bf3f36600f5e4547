// The GEMM reference's lemma: an int8 x int8 product is exact in int16, i.e. sign-extending the
// 16-bit product gives the int32 product, for every pair of operands (f_gemm_lanes sums int16
// products; this makes its reference the spec's int32 one).
`default_nettype none
module f_mul_exact (
    input wire clk,
    input wire [7:0] a,
    input wire [7:0] b
);
    wire signed [15:0] p16 = 16'($signed(a) * $signed(b));
    wire signed [31:0] p32 = $signed(a) * $signed(b);
    always @(*) begin
        mul_int16_exact: assert(32'(p16) == p32);
        mul_cover_largest: cover(p32 == 32'sd16384);
        mul_cover_smallest: cover(p32 == -32'sd16256);
    end
endmodule
`default_nettype wire
