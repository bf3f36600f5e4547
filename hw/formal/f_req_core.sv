// REQ in the ALU core (hw/rtl/vta_alu_core.v) on symbolic operands: for every x, m (int32 per lane),
// n, zp and reset, the core feeds its REQ lanes (vta_req_lanes, which f_req_lanes proves equal to
// the contract for every product) the four 16 x 16 partial products of the halves identity
// (f_req_halves) one cycle after x and m: lo x lo unsigned, lo x hi and hi x lo with the low half
// unsigned and the high half signed, hi x hi signed, each lane's from its own halves, with n, zp
// and reset of x and m's cycle; and zq is the lanes' result. The reference's products are written
// from the identity here; Yosys merges them with the core's cells only where the core multiplies
// the same halves with the same signs and widths, so what is checked is which halves meet, their
// signs, which lane and which product each feeds, and the timing (the lanes' inputs are peeked:
// a second copy of the lanes beside the core's leaves the induction two unconstrained copies of
// the shifter to compare). k-induction with k = 2 covers all time.
`default_nettype none
`include "vta_cfg.vh"
module f_req_core (
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
    vta_alu_core alu (.clk(clk), .reset(reset), .op(3'(`VTA_ALU_REQ)), .x(x), .y(y), .xm(x), .ym(y), .z(z), .zr(zr),
                      .n(n), .zp(zp), .zq(zq));
    reg [LANES*32-1:0] ll, lh, hl, hh, ll_r, lh_r, hl_r, hh_r;
    reg [`VTA_REQ_SHIFT_BITS-1:0] n_r;
    reg [`VTA_REQ_ZP_BITS-1:0] zp_r;
    reg rs_r;
    integer l;
    always @(*)
        for (l = 0; l < LANES; l = l + 1) begin
            ll[l * 32 +: 32] = 32'(x[l * 32 +: 16]) * 32'(y[l * 32 +: 16]);
            lh[l * 32 +: 32] = 32'($signed({1'b0, x[l * 32 +: 16]})) * 32'($signed(y[l * 32 + 16 +: 16]));
            hl[l * 32 +: 32] = 32'($signed(x[l * 32 + 16 +: 16])) * 32'($signed({1'b0, y[l * 32 +: 16]}));
            hh[l * 32 +: 32] = 32'($signed(x[l * 32 + 16 +: 16])) * 32'($signed(y[l * 32 + 16 +: 16]));
        end
    always @(posedge clk) {ll_r, lh_r, hl_r, hh_r, n_r, zp_r, rs_r} <= {ll, lh, hl, hh, n, zp, reset};
    (* f_peek = "alu.req.ll" *) wire [LANES*32-1:0] p_ll;
    (* f_peek = "alu.req.lh" *) wire [LANES*32-1:0] p_lh;
    (* f_peek = "alu.req.hl" *) wire [LANES*32-1:0] p_hl;
    (* f_peek = "alu.req.hh" *) wire [LANES*32-1:0] p_hh;
    (* f_peek = "alu.req.n" *) wire [`VTA_REQ_SHIFT_BITS-1:0] p_n;
    (* f_peek = "alu.req.zp" *) wire [`VTA_REQ_ZP_BITS-1:0] p_zp;
    (* f_peek = "alu.req.reset" *) wire p_reset;
    (* f_peek = "alu.req.y" *) wire [`VTA_ACC_BYTES*8-1:0] p_y;
    reg f_past = 1'b0;
    always @(posedge clk) f_past <= 1'b1;
    always @(*) begin
        if (f_past) req_core_feeds_the_lanes: assert(p_ll == ll_r && p_lh == lh_r && p_hl == hl_r && p_hh == hh_r &&
                                                     p_n == n_r && p_zp == zp_r && p_reset == rs_r);
        req_core_zq_is_the_lanes: assert(zq == p_y);
    end
    always @(posedge clk) if (f_live && !rst && f_past)
        req_core_cover_negative: cover($signed(zq[31:0]) < 0 && $signed(zq[63:32]) > 0);
endmodule
`default_nettype wire
