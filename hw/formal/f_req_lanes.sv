// REQ's lanes in the ALU core on symbolic operands (docs/isa-extensions.md): for every x, m (int32
// per lane), shift n (0..63), zero point zp (int8) and reset, zq four cycles later equals the
// contract's y = clamp(floor((p + 2^(n-1)) / 2^n) + zp, -128, 127) (v = p for n = 0), with
// p = x * m, written here as the contract's arithmetic: 66-bit signed, the rounding as the floor of
// (p + 2^(n-1)) / 2^n (not the RTL's p >>> n plus bit n - 1), the clamp as min/max; k-induction with
// k = 5 covers all time. p is the sum of the four 16 x 16 partial products
//     lo x lo + (lo x hi + hi x lo) * 2^16 + hi x hi * 2^32
// (lo unsigned, hi signed), each taken from this cycle's operands as the core writes its cells, so
// that Yosys merges them: what is proven is everything after the multipliers (which halves meet,
// their signs and widths, the 64-bit sum, the shift, the rounding, the zero point, the clamp, reset
// and the timing) for every value the products take. That the halves' sum is x * m is algebra no
// solver here closes on 32-bit words (f_alu_lanes); f_req_halves proves the same identity
// exhaustively on 8-bit words with 4-bit halves.
`default_nettype none
`include "vta_cfg.vh"
module f_req_lanes (
    input wire clk,
    input wire rst,
    input wire reset,
    input wire [`VTA_ACC_BYTES*8-1:0] x,
    input wire [`VTA_ACC_BYTES*8-1:0] y,
    input wire [`VTA_REQ_SHIFT_BITS-1:0] n,
    input wire [`VTA_REQ_ZP_BITS-1:0] zp
);
`include "f_reset.svh"
    localparam LANES = `VTA_BATCH * `VTA_BLOCK_OUT;
    wire [`VTA_ACC_BYTES*8-1:0] z, zr, zq;
    /* the ALU's own ops are f_alu_lanes'; here the op is REQ */
    vta_alu_core alu (.clk(clk), .reset(reset), .op(3'(`VTA_ALU_REQ)), .x(x), .y(y), .xm(x), .ym(y), .z(z), .zr(zr),
                      .n(n), .zp(zp), .zq(zq));
    reg [`VTA_ACC_BYTES*8-1:0] f_req, f_q1, f_q2, f_q3, f_q4;   // the contract's y, then 1-4 cycles old
    reg [3:0] f_past = 4'd0;
    reg [31:0] ll, lh, hl, hh;
    reg signed [65:0] p, v, t;
    integer l;
    always @(*)
        for (l = 0; l < LANES; l = l + 1) begin
            ll = 32'(x[l * 32 +: 16]) * 32'(y[l * 32 +: 16]);
            lh = 32'($signed({1'b0, x[l * 32 +: 16]})) * 32'($signed(y[l * 32 + 16 +: 16]));
            hl = 32'($signed(x[l * 32 + 16 +: 16])) * 32'($signed({1'b0, y[l * 32 +: 16]}));
            hh = 32'($signed(x[l * 32 + 16 +: 16])) * 32'($signed(y[l * 32 + 16 +: 16]));
            p = $signed({34'd0, ll}) + ($signed(66'($signed(lh))) <<< 16) + ($signed(66'($signed(hl))) <<< 16)
              + ($signed(66'($signed(hh))) <<< 32);
            // floor((p + 2^(n-1)) / 2^n): an arithmetic shift is the floor of the division
            v = (n == 0) ? p : (p + (66'sd1 <<< (n - 1))) >>> n;
            t = v + 66'($signed(zp));
            if (reset) f_req[l * 32 +: 32] = 32'd0;
            else if (t < `VTA_REQ_OUT_MIN) f_req[l * 32 +: 32] = 32'(`VTA_REQ_OUT_MIN);
            else if (t > `VTA_REQ_OUT_MAX) f_req[l * 32 +: 32] = 32'(`VTA_REQ_OUT_MAX);
            else f_req[l * 32 +: 32] = 32'(t);
        end
    always @(posedge clk) begin
        {f_q1, f_q2, f_q3, f_q4} <= {f_req, f_q1, f_q2, f_q3};
        f_past <= {f_past[2:0], 1'b1};
    end
    always @(*) if (f_past[3]) req_lanes_are_contract: assert(zq == f_q4);
    always @(posedge clk) if (f_live && !rst && f_past[3]) begin
        req_cover_in_range: cover($signed(zq[31:0]) > 0 && $signed(zq[31:0]) < `VTA_REQ_OUT_MAX);
        req_cover_clamps_low: cover($signed(zq[31:0]) == `VTA_REQ_OUT_MIN);
        req_cover_clamps_high: cover($signed(zq[31:0]) == `VTA_REQ_OUT_MAX);
    end
endmodule
`default_nettype wire
