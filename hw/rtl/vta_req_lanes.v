// REQ's lanes after the multiply (docs/isa-extensions.md, docs/hardware.md "REQ"): per lane, from
// the four registered 16 x 16 partial products of p = x * m (x, m int32: ll = xl * ml unsigned,
// lh = xl * mh and hl = xh * ml with the low half unsigned and the high half signed, hh = xh * mh
// signed, each exact in 32 bits), three stages, each registered:
//   A  p = {hh, ll} + (lh << 16) + (hl << 16), 64 bits exact (|p| <= 2^62): the three words reduced
//      to sum and carry bit by bit, then p's bits 47:16 in one 32-bit carry chain and its bits
//      63:48 in two 16-bit chains beside it, for a carry in of 0 and of 1 (p's low 16 bits are
//      ll's); the shift's mask (bits 15 + n and up) decoded from n; n registered once per lane
//   B  p's top 16 bits chosen by the 32-bit chain's carry out (the carry-select's mux sits here,
//      not at A's end: A starts at the DSPs' output registers, B at fabric registers); the barrel
//      shift of {p, 0} by n: its 17 low bits are (p >>> n)[15:0] and p's bit n - 1 (the
//      rounding bit, 0 for n = 0), with no decrement of n in front of a second 64:1 mux; and
//      whether p >>> n fits in 16 bits (p's bits from 15 + n up all equal its sign: the mask's
//      AND-OR, beside the shifter, not after it)
//   C  t = (p >>> n)[15:0] + zp + round clamped to [REQ_OUT_MIN, REQ_OUT_MAX] by the signs of
//      t - (OUT_MAX + 1) and t - OUT_MIN, two 17-bit carry chains side by side with the rounding
//      bit their carry in; a shifted value outside 16 bits saturates by its sign whatever zp
//      (|zp| <= 128); reset gives 0; zp's two offsets and reset registered once per lane, as n
// y is C's register: y = clamp(((p >>> n) + p[n-1]) + zp), three cycles after the products, n,
// zp and reset (each taken with the products, as the ALU core registers them). No stage has more
// than one of: a DSP (the products come registered), a carry chain wider than 32 bits, the shifter.
`default_nettype none
`include "vta_cfg.vh"
module vta_req_lanes #(
    parameter LANES = 1
) (
    input  wire                            clk,
    input  wire                            reset,
    input  wire [`VTA_REQ_SHIFT_BITS-1:0]  n,
    input  wire [`VTA_REQ_ZP_BITS-1:0]     zp,
    input  wire [LANES*32-1:0]             ll,
    input  wire [LANES*32-1:0]             lh,
    input  wire [LANES*32-1:0]             hl,
    input  wire [LANES*32-1:0]             hh,
    output reg  [LANES*32-1:0]             y
);
    localparam NB = `VTA_REQ_SHIFT_BITS, ZB = `VTA_REQ_ZP_BITS;
    integer i, k;
    // ------------------------------------------------------------ A: the product's sum
    reg [47:0] s_w, c_w, a_w, b_w, d_w;
    reg [32:0] lo_w;                  // p's bits 47:16 and the carry out of them
    /* verilator lint_off UNUSEDSIGNAL */  // bit 0 only makes the carry in of 1
    reg [16:0] hi1_w;                 // p's bits 63:48 for a carry in of 1: {s, 1} + {c, 1}, bits 16:1
    /* verilator lint_on UNUSEDSIGNAL */
    reg [LANES*49-1:0] lo_c, lo_b;    // {carry out, p's bits 47:0}
    reg [LANES*32-1:0] hi_c, hi_b;    // {p's bits 63:48 for a carry in of 1, for 0}
    reg [63:0] mask_c, mask_b;        // bit k: k >= 15 + n
    reg [ZB-1:0] zp_b;
    reg rs_b;
    always @(*) begin
        for (i = 0; i < LANES; i = i + 1) begin
            a_w = {hh[i * 32 +: 32], ll[i * 32 + 16 +: 16]};
            b_w = {{16{lh[i * 32 + 31]}}, lh[i * 32 +: 32]};
            d_w = {{16{hl[i * 32 + 31]}}, hl[i * 32 +: 32]};
            s_w = a_w ^ b_w ^ d_w;
            c_w = {(a_w[46:0] & b_w[46:0]) | (a_w[46:0] & d_w[46:0]) | (b_w[46:0] & d_w[46:0]), 1'b0};
            lo_w = {1'b0, s_w[31:0]} + {1'b0, c_w[31:0]};
            hi1_w = {s_w[47:32], 1'b1} + {c_w[47:32], 1'b1};
            lo_c[i * 49 +: 49] = {lo_w, ll[i * 32 +: 16]};
            hi_c[i * 32 +: 32] = {hi1_w[16:1], s_w[47:32] + c_w[47:32]};
        end
        for (k = 0; k < 64; k = k + 1) mask_c[k] = (k >= 15 + 32'(n));
    end
    always @(posedge clk) begin
        lo_b <= lo_c;
        hi_b <= hi_c;
        mask_b <= mask_c;
        zp_b <= zp;
        rs_b <= reset;
    end
    // the shift amount, one register per lane: (* keep *) on the process keeps Yosys' opt_merge
    // from folding the copies (equal inputs) back into one register that fans out to every lane
    wire [LANES*NB-1:0] n_b;
    genvar gn;
    generate for (gn = 0; gn < LANES; gn = gn + 1) begin : g_n
        reg [NB-1:0] n_l;
        (* keep *) always @(posedge clk) n_l <= n;
        assign n_b[gn * NB +: NB] = n_l;
    end endgenerate
    // ------------------------------------------------------------ B: the shift
    reg [63:0] p;
    reg [LANES*17-1:0] sh_c, sh_r;    // (p >>> n)[15:0] and p's bit n - 1 (bit 0)
    reg [LANES-1:0] fit_c, fit_r, sg_c, sg_r;
    always @(*)
        for (i = 0; i < LANES; i = i + 1) begin
            p = {lo_b[i * 49 + 48] ? hi_b[i * 32 + 16 +: 16] : hi_b[i * 32 +: 16], lo_b[i * 49 +: 48]};
            sh_c[i * 17 +: 17] = 17'($signed({p, 1'b0}) >>> n_b[i * NB +: NB]);
            fit_c[i] = ((p ^ {64{p[63]}}) & mask_b) == 64'd0;
            sg_c[i] = p[63];
        end
    always @(posedge clk) begin
        sh_r <= sh_c;
        fit_r <= fit_c;
        sg_r <= sg_c;
    end
    // ------------------------------------------------------------ C: zero point and clamp
    // t = (p >>> n) + round + zp is clamped to [REQ_OUT_MIN, REQ_OUT_MAX] = [-2^OB, 2^OB - 1] by the
    // signs of two sums, each with the rounding bit as its carry in and neither followed by a
    // compare: u = t - (OUT_MAX + 1), at or above 0 when t is above the range, and w = t - OUT_MIN,
    // below 0 when t is below it. In range, t's low OB + 1 bits are w's with bit OB flipped, so no
    // third sum runs. The zero point's two offsets, zp - (OUT_MAX + 1) and zp - OUT_MIN, and reset
    // are registered once per lane, as n (each reaches its lane's sums and clamp).
    localparam OB = $clog2(`VTA_REQ_OUT_MAX + 1), ZW = ZB + 2;
    /* verilator lint_off GENUNNAMED */
    generate if (`VTA_REQ_OUT_MIN != -(`VTA_REQ_OUT_MAX + 1) || (1 << OB) != `VTA_REQ_OUT_MAX + 1)
        $error("vta_req_lanes: the clamp by signs needs REQ_OUT_MIN = -(REQ_OUT_MAX + 1) = -2^k");
    endgenerate
    /* verilator lint_on GENUNNAMED */
    wire [ZW-1:0] zh_b = ZW'($signed(zp_b)) - ZW'(`VTA_REQ_OUT_MAX + 1);
    wire [ZW-1:0] zl_b = ZW'($signed(zp_b)) - ZW'(`VTA_REQ_OUT_MIN);
    wire [LANES*ZW-1:0] zh_r, zl_r;
    wire [LANES-1:0] rs_r;
    genvar gz;
    generate for (gz = 0; gz < LANES; gz = gz + 1) begin : g_zp
        reg [ZW-1:0] zh_l, zl_l;
        reg rs_l;
        (* keep *) always @(posedge clk) {zh_l, zl_l, rs_l} <= {zh_b, zl_b, rs_b};
        assign zh_r[gz * ZW +: ZW] = zh_l;
        assign zl_r[gz * ZW +: ZW] = zl_l;
        assign rs_r[gz] = rs_l;
    end endgenerate
    reg rd;                           // the rounding bit, p's bit n - 1
    reg [16:0] sh;                    // (p >>> n)[15:0], sign-extended
    /* verilator lint_off UNUSEDSIGNAL */  // bit 0 only carries the rounding bit in
    reg [17:0] u2, w2;                // {u, 1 - rd} = {sh, 1} + {zh, rd}; {w, 1 - rd} likewise
    /* verilator lint_on UNUSEDSIGNAL */
    reg [LANES*32-1:0] y_c;
    always @(*)
        for (i = 0; i < LANES; i = i + 1) begin
            rd = sh_r[i * 17];
            sh = 17'($signed(sh_r[i * 17 + 1 +: 16]));
            u2 = {sh, 1'b1} + {17'($signed(zh_r[i * ZW +: ZW])), rd};
            w2 = {sh, 1'b1} + {17'($signed(zl_r[i * ZW +: ZW])), rd};
            if (rs_r[i]) y_c[i * 32 +: 32] = 32'd0;
            else if (!fit_r[i] ? sg_r[i] : w2[17]) y_c[i * 32 +: 32] = 32'(`VTA_REQ_OUT_MIN);
            else if (!fit_r[i] || !u2[17]) y_c[i * 32 +: 32] = 32'(`VTA_REQ_OUT_MAX);
            else y_c[i * 32 +: 32] = 32'($signed({!w2[OB + 1], w2[OB:1]}));
        end
    always @(posedge clk) y <= y_c;
endmodule
`default_nettype wire
