// REQ's lanes after the multiply (docs/isa-extensions.md, docs/hardware.md "REQ"): per lane, from
// the four registered 16 x 16 partial products of p = x * m (x, m int32: ll = xl * ml unsigned,
// lh = xl * mh and hl = xh * ml with the low half unsigned and the high half signed, hh = xh * mh
// signed, each exact in 32 bits), three stages, each registered:
//   A  p = {hh, ll} + (lh << 16) + (hl << 16), 64 bits exact (|p| <= 2^62). p's low 16 bits are
//      ll's; its bits 47:16 are {hh[15:0], ll[31:16]} + lh + hl, the three words reduced to sum
//      and carry bit by bit, then one 32-bit carry chain. Above bit 47 lh and hl are only their
//      signs, which add -(sign of lh + sign of hl), a constant 0, -1 or -2 of two bits; so p's bits
//      63:48 are hh[31:16] plus that constant plus the reduction's carry out of bit 31, in two
//      16-bit chains beside the 32-bit one, for the 32-bit chain's carry out of 0 and of 1 (the
//      carry-select). n registered once per lane.
//   B  p's top 16 bits chosen by the 32-bit chain's carry out (the carry-select's mux sits here,
//      not at A's end: A starts at the DSPs' output registers, B at fabric registers). The
//      barrel shift of {p, 0} by n keeps only VB + 1 low bits: (p >>> n)[VB-1:0] and the rounding
//      bit p[n-1] (0 for n = 0). VB = max(OB, ZB - 1) + 2 (9 for int8 results and zero points): a
//      shifted value outside VB bits saturates by its sign whatever zp and the rounding bit, so
//      the shift needs no more bits and C's sums are VB + 1 wide. The shift is three 4:1 stages by
//      n's bit pairs, the largest shift first, each only as wide as the bits the later stages can
//      still reach (25, 13, 10: a 4:1 mux is two LUT4s and a PFUMX, where a log shifter by 1, 2,
//      4, ... first keeps every stage 64 bits wide until the last). Beside it, whether p >>> n
//      fits in VB bits (p's bits from VB - 1 + n up all equal its sign): every bit a stage drops
//      above the ones the next can still reach, and the last window's bits from VB up, equal
//      the sign, tested stage by stage (a 64-bit mask of n and an AND-OR over p took a carry
//      chain per lane).
//   C  t = (p >>> n) + round + zp clamped to [REQ_OUT_MIN, REQ_OUT_MAX] by the signs of
//      t - (OUT_MAX + 1) and t - OUT_MIN, two (VB + 1)-bit carry chains side by side with the
//      rounding bit their carry in; a shifted value outside VB bits saturates by its sign; reset
//      gives 0; zp's two offsets and reset registered once per lane, as n
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
    localparam OB = $clog2(`VTA_REQ_OUT_MAX + 1);
    localparam VB = ((OB > ZB - 1) ? OB : ZB - 1) + 2;   // the bits of p >>> n that C adds
    localparam W = VB + 1, W4 = W + 3, W16 = W + 15;     // B's window after each stage
    localparam XW = 48 + W16;                            // {p, 0} sign-extended for the first stage
    localparam E16 = 64 - W16, E4 = W16 - W4, E1 = W4 - VB;
    integer i;
    // ------------------------------------------------------------ A: the product's sum
    reg [31:0] s_w, c_w, a_w;
    reg c32, sb, sd;                  // the reduction's carry out of bit 31; lh's and hl's signs
    reg [32:0] lo_w;                  // p's bits 47:16 and the carry out of them
    /* verilator lint_off UNUSEDSIGNAL */  // bit 0 only carries c32 in
    reg [16:0] hi0_w, hi1_w;          // p's bits 63:48 for a carry in of 0 and of 1, bits 16:1
    /* verilator lint_on UNUSEDSIGNAL */
    reg [LANES*49-1:0] lo_c, lo_b;    // {carry out, p's bits 47:0}
    reg [LANES*32-1:0] hi_c, hi_b;    // {p's bits 63:48 for a carry in of 1, for 0}
    reg [ZB-1:0] zp_b;
    reg rs_b;
    always @(*)
        for (i = 0; i < LANES; i = i + 1) begin
            a_w = {hh[i * 32 +: 16], ll[i * 32 + 16 +: 16]};
            s_w = a_w ^ lh[i * 32 +: 32] ^ hl[i * 32 +: 32];
            c_w = {(a_w[30:0] & lh[i * 32 +: 31]) | (a_w[30:0] & hl[i * 32 +: 31]) |
                   (lh[i * 32 +: 31] & hl[i * 32 +: 31]), 1'b0};
            c32 = (a_w[31] & lh[i * 32 + 31]) | (a_w[31] & hl[i * 32 + 31]) | (lh[i * 32 + 31] & hl[i * 32 + 31]);
            lo_w = {1'b0, s_w} + {1'b0, c_w};
            // -(sb + sd) in 16 bits is {15{sb | sd}, sb ^ sd}, plus one {15{sb & sd}, !(sb ^ sd)};
            // {x, c} + {y, c} has x + y + c in its bits 16:1
            sb = lh[i * 32 + 31];
            sd = hl[i * 32 + 31];
            hi0_w = {hh[i * 32 + 16 +: 16], c32} + {{15{sb | sd}}, sb ^ sd, c32};
            hi1_w = {hh[i * 32 + 16 +: 16], c32} + {{15{sb & sd}}, !(sb ^ sd), c32};
            lo_c[i * 49 +: 49] = {lo_w, ll[i * 32 +: 16]};
            hi_c[i * 32 +: 32] = {hi1_w[16:1], hi0_w[16:1]};
        end
    always @(posedge clk) begin
        lo_b <= lo_c;
        hi_b <= hi_c;
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
    reg [XW-1:0] xe;                  // {p, 0} sign-extended
    reg [W16-1:0] s16;                // xe >> 16 * n[5:4], the bits the later stages can reach
    reg [W4-1:0] s4;                  // s16 >> 4 * n[3:2]
    reg [NB-1:0] nl;
    reg [E16-1:0] e16;                // xe's bits 63:W16 unlike the sign (those above are p[63])
    reg [E4-1:0] e4;                  // s16's bits above W4 unlike the sign
    reg [E1-1:0] e1;                  // s4's bits from VB up unlike the sign
    reg [LANES*W-1:0] sh_c, sh_r;     // (p >>> n)[VB-1:0] and p's bit n - 1 (bit 0)
    reg [LANES-1:0] fit_c, fit_r, sg_c, sg_r;
    always @(*)
        for (i = 0; i < LANES; i = i + 1) begin
            p = {lo_b[i * 49 + 48] ? hi_b[i * 32 + 16 +: 16] : hi_b[i * 32 +: 16], lo_b[i * 49 +: 48]};
            nl = n_b[i * NB +: NB];
            xe = XW'($signed({p, 1'b0}));
            case (nl[5:4])
                2'd0: s16 = xe[0 +: W16];
                2'd1: s16 = xe[16 +: W16];
                2'd2: s16 = xe[32 +: W16];
                default: s16 = xe[48 +: W16];
            endcase
            case (nl[3:2])
                2'd0: s4 = s16[0 +: W4];
                2'd1: s4 = s16[4 +: W4];
                2'd2: s4 = s16[8 +: W4];
                default: s4 = s16[12 +: W4];
            endcase
            case (nl[1:0])
                2'd0: sh_c[i * W +: W] = s4[0 +: W];
                2'd1: sh_c[i * W +: W] = s4[1 +: W];
                2'd2: sh_c[i * W +: W] = s4[2 +: W];
                default: sh_c[i * W +: W] = s4[3 +: W];
            endcase
            // fits: xe's bits from n + VB up equal the sign. The first stage drops xe's bits from
            // 16 * n[5:4] + W16 up, the second s16's from 4 * n[3:2] + W4 up; the last window's
            // bits from n[1:0] + VB up (s4's) are the rest
            e16 = xe[W16 +: E16] ^ {E16{p[63]}};
            e4 = s16[W4 +: E4] ^ {E4{p[63]}};
            e1 = s4[VB +: E1] ^ {E1{p[63]}};
            fit_c[i] = !((nl[5:4] == 2'd0 && e16 != 0) || (nl[5:4] == 2'd1 && (e16 >> 16) != 0)
                         || (nl[5:4] == 2'd2 && (e16 >> 32) != 0)
                         || (nl[3:2] == 2'd0 && e4 != 0) || (nl[3:2] == 2'd1 && (e4 >> 4) != 0)
                         || (nl[3:2] == 2'd2 && (e4 >> 8) != 0) || (e1 >> nl[1:0]) != 0);
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
    // third sum runs. With p >>> n in VB bits and |zp| <= 2^(ZB-1), u and w fit VB + 1 bits. The
    // zero point's two offsets, zp - (OUT_MAX + 1) and zp - OUT_MIN, and reset are registered
    // once per lane, as n (each reaches its lane's sums and clamp).
    localparam ZW = ZB + 2;
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
    reg [VB:0] sh;                    // (p >>> n)[VB-1:0], sign-extended
    /* verilator lint_off UNUSEDSIGNAL */  // bit 0 only carries the rounding bit in
    reg [VB+1:0] u2, w2;              // {u, 1 - rd} = {sh, 1} + {zh, rd}; {w, 1 - rd} likewise
    /* verilator lint_on UNUSEDSIGNAL */
    reg [LANES*32-1:0] y_c;
    always @(*)
        for (i = 0; i < LANES; i = i + 1) begin
            rd = sh_r[i * W];
            sh = (VB + 1)'($signed(sh_r[i * W + 1 +: VB]));
            u2 = {sh, 1'b1} + {(VB + 1)'($signed(zh_r[i * ZW +: ZW])), rd};
            w2 = {sh, 1'b1} + {(VB + 1)'($signed(zl_r[i * ZW +: ZW])), rd};
            if (rs_r[i]) y_c[i * 32 +: 32] = 32'd0;
            else if (!fit_r[i] ? sg_r[i] : w2[VB + 1]) y_c[i * 32 +: 32] = 32'(`VTA_REQ_OUT_MIN);
            else if (!fit_r[i] || !u2[VB + 1]) y_c[i * 32 +: 32] = 32'(`VTA_REQ_OUT_MAX);
            else y_c[i * 32 +: 32] = 32'($signed({!w2[OB + 1], w2[OB:1]}));
        end
    always @(posedge clk) y <= y_c;
endmodule
`default_nettype wire
