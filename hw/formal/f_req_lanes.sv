// REQ's lanes after the multipliers (hw/rtl/vta_req_lanes.v), one lane on symbolic partial products
// (docs/isa-extensions.md): for every lo x lo (unsigned 32-bit), lo x hi, hi x lo and hi x hi (signed
// 32-bit), shift n (0..63), zero point zp (int8) and reset, y three cycles later equals the
// contract's clamp(floor((p + 2^(n-1)) / 2^n) + zp, -128, 127) (v = p for n = 0; reset: 0), with
// p = lo x lo + (lo x hi + hi x lo) * 2^16 + hi x hi * 2^32 the exact integer (66-bit signed here),
// written as the contract's arithmetic: the rounding as the floor of the division, not the RTL's
// (p >>> n) plus bit n - 1, the clamp as min and max, not the RTL's fit test beside a 16-bit add.
// The partial products are free but for their sum, which the harness assumes within the contract's
// |p| <= 2^62 ({hi x hi, lo x lo} alone takes every such p), so this is the stage for every p the
// contract allows; k-induction with k = 4 covers all time. f_req_core proves that the ALU core feeds these lanes the halves of
// x and m, f_req_halves that the halves' sum is x * m.
`default_nettype none
`include "vta_cfg.vh"
module f_req_lanes (
    input wire clk,
    input wire rst,
    input wire reset,
    input wire [31:0] ll,
    input wire [31:0] lh,
    input wire [31:0] hl,
    input wire [31:0] hh,
    input wire [`VTA_REQ_SHIFT_BITS-1:0] n,
    input wire [`VTA_REQ_ZP_BITS-1:0] zp
);
`include "f_reset.svh"
    wire [31:0] y;
    vta_req_lanes #(.LANES(1)) dut (.clk(clk), .reset(reset), .n(n), .zp(zp), .ll(ll), .lh(lh), .hl(hl), .hh(hh), .y(y));
    wire signed [65:0] p = $signed({34'd0, ll}) + ($signed(66'($signed(lh))) <<< 16)
                         + ($signed(66'($signed(hl))) <<< 16) + ($signed(66'($signed(hh))) <<< 32);
    // the contract's products: |x * m| <= 2^62 for int32 x, m (any four partial products that sum
    // outside it are no product's: the sum could pass 64 bits)
    always @(*) assume(p >= -(66'sd1 <<< 62) && p <= (66'sd1 <<< 62));
    // floor((p + 2^(n-1)) / 2^n): an arithmetic right shift is the floor of the division
    wire signed [65:0] v = (n == 0) ? p : (p + (66'sd1 <<< (n - 1))) >>> n;
    wire signed [65:0] t = v + 66'($signed(zp));
    wire [31:0] f_y = reset ? 32'd0 : (t < `VTA_REQ_OUT_MIN) ? 32'(`VTA_REQ_OUT_MIN)
                    : (t > `VTA_REQ_OUT_MAX) ? 32'(`VTA_REQ_OUT_MAX) : 32'(t);
    reg [31:0] f_y1, f_y2, f_y3;
    reg [2:0] f_past = 3'd0;
    always @(posedge clk) begin
        {f_y1, f_y2, f_y3} <= {f_y, f_y1, f_y2};
        f_past <= {f_past[1:0], 1'b1};
    end
    always @(*) if (f_past[2]) req_lanes_are_contract: assert(y == f_y3);
    always @(posedge clk) if (f_live && !rst && f_past[2]) begin
        req_cover_in_range: cover($signed(y) > 0 && $signed(y) < `VTA_REQ_OUT_MAX && f_y2 != f_y3);
        req_cover_clamps_low: cover($signed(y) == `VTA_REQ_OUT_MIN);
        req_cover_clamps_high: cover($signed(y) == `VTA_REQ_OUT_MAX);
    end
endmodule
`default_nettype wire
