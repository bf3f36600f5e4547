// REQ's lanes after the multiply (docs/isa-extensions.md, docs/hardware.md "REQ"): per lane, from
// the four registered 16 x 16 partial products of p = x * m (x, m int32: ll = xl * ml unsigned,
// lh = xl * mh and hl = xh * ml with the low half unsigned and the high half signed, hh = xh * mh
// signed, each exact in 32 bits), three stages, each registered:
//   A  p = {hh, ll} + (lh << 16) + (hl << 16), 64 bits exact (|p| <= 2^62): the three words reduced
//      to sum and carry bit by bit, then one 48-bit carry chain (p's low 16 bits are ll's); the
//      shift's mask (bits 15 + n and up) decoded from n; n registered once per lane
//   B  the barrel shift of {p, 0} by n: its 17 low bits are (p >>> n)[15:0] and p's bit n - 1 (the
//      rounding bit, 0 for n = 0), with no decrement of n in front of a second 64:1 mux; and
//      whether p >>> n fits in 16 bits (p's bits from 15 + n up all equal its sign: the mask's
//      AND-OR, beside the shifter, not after it)
//   C  t = (p >>> n)[15:0] + zp + round (18 bits) in one carry chain, the rounding bit its carry
//      in, clamped to [REQ_OUT_MIN, REQ_OUT_MAX]; a shifted value outside 16 bits saturates by its
//      sign whatever zp (|zp| <= 128); reset gives 0
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
    reg [LANES*64-1:0] p_c, p_b;
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
            p_c[i * 64 +: 64] = {s_w + c_w, ll[i * 32 +: 16]};
        end
        for (k = 0; k < 64; k = k + 1) mask_c[k] = (k >= 15 + 32'(n));
    end
    always @(posedge clk) begin
        p_b <= p_c;
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
    reg [ZB-1:0] zp_r;
    reg rs_r;
    always @(*)
        for (i = 0; i < LANES; i = i + 1) begin
            p = p_b[i * 64 +: 64];
            sh_c[i * 17 +: 17] = 17'($signed({p, 1'b0}) >>> n_b[i * NB +: NB]);
            fit_c[i] = ((p ^ {64{p[63]}}) & mask_b) == 64'd0;
            sg_c[i] = p[63];
        end
    always @(posedge clk) begin
        sh_r <= sh_c;
        fit_r <= fit_c;
        sg_r <= sg_c;
        zp_r <= zp_b;
        rs_r <= rs_b;
    end
    // ------------------------------------------------------------ C: zero point and clamp
    // the clamp by t's bits (t has 18): above REQ_OUT_MAX = 2^OB - 1 when positive with a bit set
    // from OB up, below REQ_OUT_MIN = -2^OB when negative without all of them set
    localparam OB = $clog2(`VTA_REQ_OUT_MAX + 1);
    reg [17:0] t;
    /* verilator lint_off UNUSEDSIGNAL */  // bit 0 only carries the rounding bit in
    reg [18:0] t2;                    // 2 t + 1 - round: {sh, 1} + {zp, round}, t in bits 18:1
    /* verilator lint_on UNUSEDSIGNAL */
    reg [LANES*32-1:0] y_c;
    always @(*)
        for (i = 0; i < LANES; i = i + 1) begin
            t2 = {18'($signed(sh_r[i * 17 + 1 +: 16])), 1'b1} + {18'($signed(zp_r)), sh_r[i * 17]};
            t = t2[18:1];
            if (rs_r) y_c[i * 32 +: 32] = 32'd0;
            else if (!fit_r[i] ? sg_r[i] : (t[17] && !(&t[16:OB])))
                y_c[i * 32 +: 32] = 32'(`VTA_REQ_OUT_MIN);
            else if (!fit_r[i] || (!t[17] && |t[16:OB])) y_c[i * 32 +: 32] = 32'(`VTA_REQ_OUT_MAX);
            else y_c[i * 32 +: 32] = 32'($signed(t));
        end
    always @(posedge clk) y <= y_c;
endmodule
`default_nettype wire
