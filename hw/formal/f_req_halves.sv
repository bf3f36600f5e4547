// REQ's product by halves (hw/rtl/vta_alu_core.v, hw/rtl/vta_req_lanes.v): for signed words x, m of
// 2H bits split into an unsigned low half and a signed high half,
//     x * m = lo x lo + (lo x hi + hi x lo) * 2^H + hi x hi * 2^2H
// with lo x lo unsigned, lo x hi and hi x lo (the low half as an unsigned H+1-bit operand, the high
// half signed) and hi x hi signed, each exact in 2H bits. The identity is the same for every H;
// no solver here closes it at the RTL's H = 16 (the multiplier miter; at H = 6, 12-bit words, Yices
// had not finished in 3 minutes), so it is proven for every pair of 8-bit words (H = 4), as
// f_mul_exact proves its lemma on int8 operands.
`default_nettype none
module f_req_halves #(
    parameter H = 4
) (
    input wire clk,
    input wire [2*H-1:0] x,
    input wire [2*H-1:0] m
);
    wire [2*H-1:0] ll = (2*H)'(x[H-1:0]) * (2*H)'(m[H-1:0]);
    wire [2*H-1:0] lh = (2*H)'($signed({1'b0, x[H-1:0]})) * (2*H)'($signed(m[2*H-1:H]));
    wire [2*H-1:0] hl = (2*H)'($signed(x[2*H-1:H])) * (2*H)'($signed({1'b0, m[H-1:0]}));
    wire [2*H-1:0] hh = (2*H)'($signed(x[2*H-1:H])) * (2*H)'($signed(m[2*H-1:H]));
    wire signed [4*H-1:0] halves = $signed({(2*H)'(0), ll}) + ($signed((4*H)'($signed(lh))) <<< H)
                                 + ($signed((4*H)'($signed(hl))) <<< H) + ($signed((4*H)'($signed(hh))) <<< 2*H);
    wire signed [4*H-1:0] full = (4*H)'($signed(x)) * (4*H)'($signed(m));
    always @(*) begin
        req_halves_exact: assert(halves == full);
        req_halves_cover_largest: cover(full == (4*H)'(1) <<< (4*H - 2));
        req_halves_cover_negative: cover(full < 0 && x[2*H-1] && !m[2*H-1]);
    end
endmodule
`default_nettype wire
