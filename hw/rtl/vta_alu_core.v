// ALU: BATCH x BLOCK_OUT int32 lanes (spec section 5). MIN/MAX signed, ADD/MUL wrapping, SHR
// arithmetic right by y (y >= 0) or left by -y (y < 0), the amount capped at 31; reset gives 0.
// Three stages, z two cycles after x, y, op and reset (and zr, MIN/MAX/ADD's result, one):
// the first registers ADD's sum (or x), y and whether MIN/MAX picks y (the compare's result, not
// the 32-bit choice, so the compare does not fan out over the lane into the op's mux in the same
// cycle), SHR's operand shifted by the amount's multiple of 8 with the rest (0-7)
// and the direction, and the three 16 x 16 partial products of MUL's low 32 bits (with
// VTA_ECP5_CELLS three MULT18X18D per lane, hw/rtl/ecp5/vta_ecp5_mul.v, from operand registers
// of their own at the DSP columns, the products in the blocks' output registers: operands in the
// blocks' input registers would put the ACC block RAM's output, through the forward mux, straight
// into them across the die); the second shifts, adds the partial
// products and picks the result, registered in z.
// The third stage (z registered after the second stage's logic) makes the loop operand ->
// multiplier -> partial products -> add -> forward -> operand span three cycles, with two
// crossings of the DSP columns (docs/hardware.md, "Compute pipeline").
// REQ (docs/isa-extensions.md; docs/hardware.md, "REQ") shares MUL's partial products: lo x hi and
// hi x lo are taken signed (the low half as an unsigned 17-bit operand, the high half signed), which
// leaves their low 16 bits, all MUL reads, unchanged, and a fourth product per lane, hi x hi, joins
// them; hw/rtl/vta_req_lanes.v sums the four to the exact 64-bit product, shifts, rounds, adds the
// zero point and clamps, three more stages: zq is REQ's result four cycles after x, y, n, zp and
// reset (z's two, plus two).
`default_nettype none
`include "vta_cfg.vh"
module vta_alu_core (
    input  wire                        clk,
    input  wire                        reset,
    input  wire [2:0]                  op,
    input  wire [`VTA_ACC_BYTES*8-1:0] x,
    input  wire [`VTA_ACC_BYTES*8-1:0] y,
    // x and y again for the MULT18X18D cells (VTA_ECP5_CELLS), from registers of their own at the
    // DSP columns, equal to x and y whenever z is used: the fabric's MIN/MAX/ADD and shifter read
    // x and y from registers placed beside them
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [`VTA_ACC_BYTES*8-1:0] xm,
    input  wire [`VTA_ACC_BYTES*8-1:0] ym,
    /* verilator lint_on UNUSEDSIGNAL */
    output reg  [`VTA_ACC_BYTES*8-1:0] z,
    output reg  [`VTA_ACC_BYTES*8-1:0] zr,    // MIN/MAX/ADD's result a cycle early (else 0)
    input  wire [`VTA_REQ_SHIFT_BITS-1:0] n,  // REQ's shift and zero point, taken with x and y
    input  wire [`VTA_REQ_ZP_BITS-1:0]    zp,
    output wire [`VTA_ACC_BYTES*8-1:0] zq     // REQ's result (reset: 0), four cycles after x, y
);
    localparam LANES = `VTA_BATCH * `VTA_BLOCK_OUT;
    integer i;
    reg signed [31:0] a, bb, r;
    localparam SB = $clog2(`VTA_ALU_SHIFT_CAP + 1);   // shift amount bits
    reg [SB-1:0] amt;                                  // |y| when at most CAP (below: `over`)
    localparam FB = (SB > 3) ? 3 : SB;                 // the amount's bits the second stage shifts by
    // the amount's multiple of 8 (a mask, not `~SB'(7)`: Yosys 0.70 drops a `~` in front of a sized cast)
    localparam [SB-1:0] AMT_HI = SB'(32'hFFFF_FFF8);
    reg over, lt;
    reg [`VTA_ACC_BYTES*8-1:0] r_c, r_a;               // ADD's sum, x for MIN/MAX, else 0
    reg [`VTA_ACC_BYTES*8-1:0] b_a;                    // y, MIN/MAX's other choice
    reg [LANES-1:0] pick_c, pick_a;                    // MIN/MAX chooses y (never under reset)
    // SHR's operand shifted by the amount's multiple of 8, bit-reversed for a left shift: the
    // second stage then only shifts right (x << n is rev(rev(x) >> n)), one 8:1 mux per bit
    // filling with fill_a (the sign, or 0 for a left shift) instead of a 16:1 mux for both
    // directions (four LUT levels in front of the ACC write register)
    reg [`VTA_ACC_BYTES*8-1:0] x_a;
    reg [`VTA_ACC_BYTES*8-1:0] x_c;
    reg [LANES*FB-1:0] amt_c, amt_a;                   // the rest of its amount
    reg [LANES-1:0] fill_c, fill_a;
    reg [LANES-1:0] shl_c, shl_a, shr_c, shr_a;        // SHR to the left, to the right (not under reset)
    reg signed [31:0] sl, sr;                          // the first stage's shifts
    reg [31:0] t;                                      // the second's
    reg [15:0] cs_s, cs_c;                             // MUL's high half as carry-save
    // the partial products, registered: lo x lo, lo x hi, hi x lo (MUL reads their low 16 bits),
    // hi x hi (REQ only); lo x hi, hi x lo and hi x hi signed, each exact in 32 bits
`ifdef VTA_ECP5_CELLS
    wire [`VTA_ACC_BYTES*8-1:0] ll_a;                  // in the MULT18X18D output registers
    wire [LANES*32-1:0] lh_w, hl_w, hh_w;
`else
    reg [`VTA_ACC_BYTES*8-1:0] ll_c, ll_a;
    reg [LANES*32-1:0] lh_c, hl_c, hh_c, lh_w, hl_w, hh_w;
`endif
    wire [LANES*16-1:0] lh_a, hl_a;
    genvar gl;
    generate for (gl = 0; gl < LANES; gl = gl + 1) begin : g_low
        assign lh_a[gl * 16 +: 16] = lh_w[gl * 32 +: 16];
        assign hl_a[gl * 16 +: 16] = hl_w[gl * 32 +: 16];
    end endgenerate
    reg mul_a;          // MUL, not under reset
    // -v bit by bit, v[k] ^ (v[k-1:0] != 0), each bit a LUT of v's bits: written as -v it is a
    // carry chain in front of the shifter (y -> the chain -> x_a)
    function automatic [SB-1:0] neg_bits(input [SB-1:0] v);
        integer j;
        for (j = 0; j < SB; j = j + 1) neg_bits[j] = v[j] ^ ((v & SB'((1 << j) - 1)) != 0);
    endfunction
    function automatic [31:0] rev32(input [31:0] v);
        integer j;
        for (j = 0; j < 32; j = j + 1) rev32[j] = v[31 - j];
    endfunction
    wire is_shr = (op == `VTA_ALU_SHR) && !reset;
    always @(*)
        for (i = 0; i < LANES; i = i + 1) begin
            a = x[i * 32 +: 32];
            bb = y[i * 32 +: 32];
            // |y| > CAP from y's bits (CAP = 2^SB - 1), not as two 32-bit compares (carry chains):
            // y >= 2^SB, or y < 0 outside [-CAP, -1]
            over = bb[31] ? (!(&bb[30:SB]) || bb[SB-1:0] == 0) : (|bb[30:SB]);
            amt = bb[31] ? neg_bits(bb[SB-1:0]) : bb[SB-1:0];
            // MIN and MAX from one signed a < y, its two 16-bit halves compared side by side (half
            // the carry chain of a 32-bit compare; equal operands give either)
            lt = ($signed(a[31:16]) < $signed(bb[31:16])) || (a[31:16] == bb[31:16] && a[15:0] < bb[15:0]);
            // ADD's sum or x (MIN/MAX's choice of x); 0 for SHR and MUL (their results are
            // or-ed in by one-hot selects) and under reset (5-7 are refused)
            r = reset ? 32'd0 : (op == `VTA_ALU_ADD) ? a + bb
              : (op == `VTA_ALU_MIN || op == `VTA_ALU_MAX) ? a : 32'd0;
            r_c[i * 32 +: 32] = r;
            pick_c[i] = !reset && ((op == `VTA_ALU_MIN && !lt) || (op == `VTA_ALU_MAX && lt));
            // the shift by the amount's high bits (a multiple of 8) here, by its low bits after; a
            // capped amount (|y| > CAP) chooses last, beside the shift by |y|'s own bits, so the
            // 26-bit test of y's high bits runs alongside the shifter rather than in front of it
            sl = over ? a <<< (SB'(`VTA_ALU_SHIFT_CAP) & AMT_HI) : a <<< (amt & AMT_HI);
            sr = over ? a >>> (SB'(`VTA_ALU_SHIFT_CAP) & AMT_HI) : a >>> (amt & AMT_HI);
            x_c[i * 32 +: 32] = bb[31] ? rev32(sl) : sr;
            amt_c[i * FB +: FB] = over ? FB'(`VTA_ALU_SHIFT_CAP) : FB'(amt);
            fill_c[i] = !bb[31] && a[31];
            shl_c[i] = is_shr && bb[31];
            shr_c[i] = is_shr && !bb[31];
`ifndef VTA_ECP5_CELLS
            ll_c[i * 32 +: 32] = 32'(a[15:0]) * 32'(bb[15:0]);
            // each operand sign-extended to the product's 32 bits first (a cast of the product
            // alone leaves the operands' width to the tool)
            lh_c[i * 32 +: 32] = 32'($signed({1'b0, a[15:0]})) * 32'($signed(bb[31:16]));
            hl_c[i * 32 +: 32] = 32'($signed(a[31:16])) * 32'($signed({1'b0, bb[15:0]}));
            hh_c[i * 32 +: 32] = 32'($signed(a[31:16])) * 32'($signed(bb[31:16]));
`endif
        end
`ifdef VTA_ECP5_CELLS
    /* verilator lint_off UNUSEDSIGNAL */   // the 17 x 17 products' top two bits (each fits 32)
    wire [LANES*34-1:0] lh_p, hl_p;
    /* verilator lint_on UNUSEDSIGNAL */
    genvar gi;
    generate for (gi = 0; gi < LANES; gi = gi + 1) begin : g_lane
        vta_ecp5_mul #(.W(16), .SIGNED(0), .IN_REG(0), .OUT_REG(1)) ll (.clk(clk), .a(xm[gi * 32 +: 16]), .b(ym[gi * 32 +: 16]),
            .p(ll_a[gi * 32 +: 32]));
        vta_ecp5_mul #(.W(17), .SIGNED(1), .IN_REG(0), .OUT_REG(1)) lh (.clk(clk), .a({1'b0, xm[gi * 32 +: 16]}),
            .b({ym[gi * 32 + 31], ym[gi * 32 + 16 +: 16]}), .p(lh_p[gi * 34 +: 34]));
        vta_ecp5_mul #(.W(17), .SIGNED(1), .IN_REG(0), .OUT_REG(1)) hl (.clk(clk), .a({xm[gi * 32 + 31], xm[gi * 32 + 16 +: 16]}),
            .b({1'b0, ym[gi * 32 +: 16]}), .p(hl_p[gi * 34 +: 34]));
        vta_ecp5_mul #(.W(16), .SIGNED(1), .IN_REG(0), .OUT_REG(1)) hh (.clk(clk), .a(xm[gi * 32 + 16 +: 16]),
            .b(ym[gi * 32 + 16 +: 16]), .p(hh_w[gi * 32 +: 32]));
        assign lh_w[gi * 32 +: 32] = lh_p[gi * 34 +: 32];
        assign hl_w[gi * 32 +: 32] = hl_p[gi * 34 +: 32];
    end endgenerate
`endif
    always @(posedge clk) begin
        mul_a <= (op == `VTA_ALU_MUL) && !reset;
        shl_a <= shl_c;
        shr_a <= shr_c;
        x_a <= x_c;
        amt_a <= amt_c;
        fill_a <= fill_c;
        r_a <= r_c;
        b_a <= y;
        pick_a <= pick_c;
    end
`ifndef VTA_ECP5_CELLS
    always @(posedge clk) {ll_a, lh_w, hl_w, hh_w} <= {ll_c, lh_c, hl_c, hh_c};
`endif
    // REQ: n, zp and reset taken with the products (x and y's cycle), then the lanes' three stages
    reg [`VTA_REQ_SHIFT_BITS-1:0] n_a;
    reg [`VTA_REQ_ZP_BITS-1:0] zp_a;
    reg rs_a;
    always @(posedge clk) {n_a, zp_a, rs_a} <= {n, zp, reset};
    vta_req_lanes #(.LANES(LANES)) req (.clk(clk), .reset(rs_a), .n(n_a), .zp(zp_a), .ll(ll_a), .lh(lh_w), .hl(hl_w),
                                       .hh(hh_w), .y(zq));
    reg [`VTA_ACC_BYTES*8-1:0] z_c;
    always @(*)
        for (i = 0; i < LANES; i = i + 1) begin
            zr[i * 32 +: 32] = pick_a[i] ? b_a[i * 32 +: 32] : r_a[i * 32 +: 32];
            t = 32'($signed({fill_a[i], x_a[i * 32 +: 32]}) >>> amt_a[i * FB +: FB]);
            // ll[31:16] + lh + hl in one carry chain: the three reduced to sum and carry words
            // bit by bit first (not two chained adders)
            cs_s = ll_a[i * 32 + 16 +: 16] ^ lh_a[i * 16 +: 16] ^ hl_a[i * 16 +: 16];
            cs_c = {(ll_a[i * 32 + 16 +: 15] & lh_a[i * 16 +: 15]) | (ll_a[i * 32 + 16 +: 15] & hl_a[i * 16 +: 15]) |
                    (lh_a[i * 16 +: 15] & hl_a[i * 16 +: 15]), 1'b0};
            // one-hot selects, or-ed: MIN/MAX/ADD's choice (0 for the others) is zr
            z_c[i * 32 +: 32] = ({32{mul_a}} & {cs_s + cs_c, ll_a[i * 32 +: 16]}) | ({32{shl_a[i]}} & rev32(t))
                              | ({32{shr_a[i]}} & t) | zr[i * 32 +: 32];
        end
    always @(posedge clk) z <= z_c;
endmodule
`default_nettype wire
