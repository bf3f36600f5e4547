// The GEMM/ALU loop nest (spec section 5): for i in [0, iter_out), j in [0, iter_in), u in
// [uop_bgn, uop_end), one iteration per `issue`, and the indices each iteration works on, a (dst),
// src and wg, its micro-op's fields plus the loop's offsets i * factor_out + j * factor_in.
//   S0  the counters step; the UOP SRAM reads the micro-op counter's next value (uop_raddr), a
//       cycle ahead of S0b, so its block RAM's output register (RD_REG = 1), not the array's
//       5.8 ns clock-to-out, feeds the index adders
//   S0b the micro-op's fields + the offsets, registered: S1's indices (a, src, wg) start at
//       flip-flops, so no 32-bit carry chain sits in front of the range checks and SRAM addresses
// The offsets advance by adds of the factors (d_ij = d_i + j * dfi as a running sum), and the
// last-iteration tests are registers set with the counters they test, so no compare's adder sits
// in front of the counters' and the offsets' enables.
`default_nettype none
`include "vta_cfg.vh"
module vta_uop_loop (
    input  wire                            clk,
    input  wire                            rst,
    input  wire                            start,      // an instruction begins: its loop is in insn
    /* verilator lint_off UNUSEDSIGNAL */  // the loop reads the opcode and word 1's factors
    input  wire [127:0]                    insn,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire                            go,         // it is a GEMM or ALU with at least one iteration
    input  wire [`VTA_GEMM_UOP_END_W-1:0]  h_bgn,      // insn's uop_bgn, uop_end, iter_out, iter_in
    input  wire [`VTA_GEMM_UOP_END_W-1:0]  h_end,
    input  wire [13:0]                     h_out,
    input  wire [13:0]                     h_in,
    input  wire                            issue,      // an iteration issues this cycle
    input  wire                            s0b_valid,  // the one issued last cycle: its micro-op is uop_rdata
    output wire [`VTA_LU-1:0]              uop_raddr,
    /* verilator lint_off UNUSEDSIGNAL */  // a micro-op's bits above its three indices (spec section 4)
    input  wire [31:0]                     uop_rdata,
    /* verilator lint_on UNUSEDSIGNAL */
    output reg                             active,     // iterations left to issue
    // S1's indices; range-checked there, only their index bits address SRAM
    output reg  [31:0]                     a,
    output reg  [31:0]                     src,
    output reg  [31:0]                     wg
);
    wire h_alu = (insn[2:0] == `VTA_OP_ALU);
    reg [`VTA_GEMM_UOP_END_W-1:0] u, u_bgn;
    reg [13:0]                 i, j, n_in;
    reg [31:0]                 dfo, dfi, sfo, sfi, wfo, wfi;
    reg [31:0]                 d_i, s_i, w_i, d_ij, s_ij, w_ij;
    reg last_u, last_j, last_i;   // u + 1 == u_end, j + 1 == n_in, i + 1 == n_out
    // the counters' next values against the bounds less two (the bounds themselves, u_end and
    // n_out, are not kept), set at the start: an equality of registers, not an adder in front of
    // one (j -> j + 2 == n_in)
    reg [`VTA_GEMM_UOP_END_W-1:0] u_end_m2;
    reg [13:0] n_in_m2, n_out_m2;
    reg u_single;                 // u_bgn + 1 == u_end: the micro-op loop has one iteration
    // u + 1 kept as a register of its own (u_inc, with u_bgn + 1 for the wrap), so that no carry
    // chain sits in front of the UOP SRAM's read address and its block RAMs' write-forward compare
    reg [`VTA_GEMM_UOP_END_W-1:0] u_inc, u_bgn1;
    wire [13:0] j_inc = j + 1, i_inc = i + 1;
    /* verilator lint_off UNUSEDSIGNAL */  // u_end's extra bit: u_next < u_end <= the UOP SRAM's depth
    wire [`VTA_GEMM_UOP_END_W-1:0] u_next = start ? h_bgn : !issue ? u : !last_u ? u_inc : u_bgn;
    /* verilator lint_on UNUSEDSIGNAL */
    assign uop_raddr = `VTA_LU'(u_next);

    // S0b's index adders by carry select: the micro-op's field (W bits) added to the offset's low
    // W bits, the offset's high bits and those plus one registered with it and chosen by the
    // carry, so the UOP block RAM's output -> its read muxes -> a 32-bit carry chain -> wg is not
    // one cycle
    localparam DW = `VTA_UOP_DST_IDX_W, SW_ = `VTA_UOP_SRC_IDX_W, WW = `VTA_UOP_WGT_IDX_W;
    reg [31:0] s0b_d, s0b_s, s0b_w;
    reg [31:DW] s0b_d1;
    reg [31:SW_] s0b_s1;
    reg [31:WW] s0b_w1;
    wire [DW:0] a_lo = (DW+1)'(`VTA_UOP_DST_IDX(uop_rdata)) + (DW+1)'(s0b_d[DW-1:0]);
    wire [SW_:0] src_lo = (SW_+1)'(`VTA_UOP_SRC_IDX(uop_rdata)) + (SW_+1)'(s0b_s[SW_-1:0]);
    wire [WW:0] wg_lo = (WW+1)'(`VTA_UOP_WGT_IDX(uop_rdata)) + (WW+1)'(s0b_w[WW-1:0]);

    always @(posedge clk) begin
        if (rst) begin
            active <= 1'b0;
        end else begin
            if (issue) begin
                s0b_d <= d_ij;
                s0b_s <= s_ij;
                s0b_w <= w_ij;
                s0b_d1 <= d_ij[31:DW] + 1;
                s0b_s1 <= s_ij[31:SW_] + 1;
                s0b_w1 <= w_ij[31:WW] + 1;
            end
            if (s0b_valid) begin
                a <= {a_lo[DW] ? s0b_d1 : s0b_d[31:DW], a_lo[DW-1:0]};
                src <= {src_lo[SW_] ? s0b_s1 : s0b_s[31:SW_], src_lo[SW_-1:0]};
                wg <= {wg_lo[WW] ? s0b_w1 : s0b_w[31:WW], wg_lo[WW-1:0]};
            end
            if (issue) begin
                if (!last_u) begin
                    u <= u_inc;
                    u_inc <= u_inc + 1;
                    last_u <= (u == u_end_m2);
                end else begin
                    u <= u_bgn;
                    u_inc <= u_bgn1;
                    last_u <= u_single;
                    if (!last_j) begin
                        j <= j_inc;
                        last_j <= (j == n_in_m2);
                        d_ij <= d_ij + dfi;
                        s_ij <= s_ij + sfi;
                        w_ij <= w_ij + wfi;
                    end else begin
                        j <= 0;
                        last_j <= (14'd1 == n_in);
                        i <= i_inc;
                        last_i <= (i == n_out_m2);
                        d_i <= d_i + dfo;
                        s_i <= s_i + sfo;
                        w_i <= w_i + wfo;
                        d_ij <= d_i + dfo;
                        s_ij <= s_i + sfo;
                        w_ij <= w_i + wfo;
                        if (last_i) active <= 1'b0;
                    end
                end
            end
            if (start) begin
                u <= h_bgn;
                last_u <= (`VTA_GEMM_UOP_END_W'(h_bgn + 1) == h_end);
                last_j <= (h_in == 14'd1);
                last_i <= (h_out == 14'd1);
                u_bgn <= h_bgn;
                u_bgn1 <= h_bgn + 1;
                u_inc <= h_bgn + 1;
                n_in <= h_in;
                u_end_m2 <= h_end - 2;
                n_in_m2 <= h_in - 14'd2;
                n_out_m2 <= h_out - 14'd2;
                u_single <= (`VTA_GEMM_UOP_END_W'(h_bgn + 1) == h_end);
                i <= 0;
                j <= 0;
                {d_i, s_i, w_i, d_ij, s_ij, w_ij} <= 0;
                // ALU's word 1 differs from GEMM's
                dfo <= 32'(`VTA_GEMM_DST_FACTOR_OUT(insn));
                dfi <= 32'(`VTA_GEMM_DST_FACTOR_IN(insn));
                sfo <= h_alu ? 32'(`VTA_ALU_SRC_FACTOR_OUT(insn)) : 32'(`VTA_GEMM_SRC_FACTOR_OUT(insn));
                sfi <= h_alu ? 32'(`VTA_ALU_SRC_FACTOR_IN(insn)) : 32'(`VTA_GEMM_SRC_FACTOR_IN(insn));
                wfo <= h_alu ? 32'd0 : 32'(`VTA_GEMM_WGT_FACTOR_OUT(insn));
                wfi <= h_alu ? 32'd0 : 32'(`VTA_GEMM_WGT_FACTOR_IN(insn));
                active <= go;
            end
        end
    end
`ifdef FORMAL
    // the registered last-iteration tests equal their compares (for k-induction)
    // (modulo the counters' widths: a running loop never wraps, `go`)
    wire [`VTA_GEMM_UOP_END_W-1:0] f_u_end = u_end_m2 + 2;
    wire [13:0] f_n_out = n_out_m2 + 14'd2;
    always @(*) if (!rst && active)
        loop_last_regs: assert(last_u == (`VTA_GEMM_UOP_END_W'(u + 1) == f_u_end) && last_j == (14'(j + 1) == n_in) &&
                               last_i == (14'(i + 1) == f_n_out) && n_in_m2 == 14'(n_in - 2) &&
                               u_inc == `VTA_GEMM_UOP_END_W'(u + 1) && u_bgn1 == `VTA_GEMM_UOP_END_W'(u_bgn + 1) &&
                               u_single == (`VTA_GEMM_UOP_END_W'(u_bgn + 1) == f_u_end));
`endif
endmodule
`default_nettype wire
