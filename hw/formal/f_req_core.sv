// REQ in the ALU core (hw/rtl/vta_alu_core.v) on symbolic operands: for every x, m (int32 per lane),
// n, zp and reset, zq four cycles later is what REQ's lanes (f_req_lanes: the contract, for every
// product) give for the four 16 x 16 partial products of the halves identity (f_req_halves):
// lo x lo unsigned, lo x hi and hi x lo with the low half unsigned and the high half signed,
// hi x hi signed, taken from x and m's own halves one cycle after them, with n, zp and reset of
// x and m's cycle. The reference's products are written from the identity and registered here;
// Yosys merges them with the core's cells only where the core multiplies the same halves with the
// same signs and widths, so what is checked is which halves meet, their signs, which lane and
// which product each feeds, and the timing. k-induction with k = 5 covers all time.
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
    wire [`VTA_ACC_BYTES*8-1:0] z, zr, zq, f_zq;
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
    vta_req_lanes #(.LANES(LANES)) f_lanes (.clk(clk), .reset(rs_r), .n(n_r), .zp(zp_r), .ll(ll_r), .lh(lh_r),
                                           .hl(hl_r), .hh(hh_r), .y(f_zq));
    reg [3:0] f_past = 4'd0;
    always @(posedge clk) f_past <= {f_past[2:0], 1'b1};
    always @(*) if (f_past[3]) req_core_feeds_the_lanes: assert(zq == f_zq);
    always @(posedge clk) if (f_live && !rst && f_past[3])
        req_core_cover_negative: cover($signed(zq[31:0]) < 0 && $signed(zq[63:32]) > 0);
endmodule
`default_nettype wire
