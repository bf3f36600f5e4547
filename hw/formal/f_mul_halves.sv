// The ALU reference's lemma: a 32-bit wrapping product is the two's-complement halves identity
// the two-stage core adds in its second stage, a * b == lo x lo + (lo x hi + hi x lo) << 16
// (mod 2^32; hi x hi only reaches bit 32), for every pair of words, signed or not alike (the low
// 32 bits of a product do not depend on signedness). f_alu_lanes' MUL reference is this right-
// hand side on the core's own multiplier cells; this makes it the spec's int32 product.
`default_nettype none
module f_mul_halves (
    input wire clk,
    input wire [31:0] a,
    input wire [31:0] b
);
    wire [31:0] spec = a * b;
    wire [31:0] halves = 32'(32'(a[15:0]) * 32'(b[15:0])) + {16'(a[15:0] * b[31:16]) + 16'(a[31:16] * b[15:0]), 16'd0};
    always @(*) begin
        mul_halves_identity: assert(halves == spec);
        mul_halves_cover_wraps: cover(a > 32'd65536 && b > 32'd65536 && spec != 0);
    end
endmodule
`default_nettype wire
