// The read DMA's registered compares and burst set-up (vta_dma_read's own `dma_*` assertions: each
// register kept in place of a compare or an adder equals what it replaces) for ANY inputs: both
// instances as vta_top builds them (load's widest element, compute's narrow UOP beats), with
// go, the instruction, the element size, the port's grant and every AXI read signal free in
// every cycle. k-induction with k = 1 covers all time. Because nothing constrains the inputs,
// the assertions hold in any design around the DMA, so the harnesses of the whole design
// (error_code) take them as assumptions instead of proving them again there (each new
// register made that whole-design induction slower, from 1 to 8 minutes). The covers show a
// burst of each instance granted, run and ended.
`default_nettype none
`include "vta_cfg.vh"
module f_dma_regs (
    input wire clk,
    input wire rst,
    input wire ld_go,
    input wire [127:0] ld_insn,
    input wire [3:0] ld_elog,
    input wire ld_gnt,
    input wire ld_arready,
    input wire ld_rvalid,
    input wire cp_go,
    input wire [127:0] cp_insn,
    input wire [3:0] cp_elog,
    input wire cp_gnt,
    input wire cp_arready,
    input wire cp_rvalid,
    input wire [`VTA_BUS_BYTES*8-1:0] rdata
);
`include "f_reset.svh"
    localparam K = `VTA_BUS_BYTES / `VTA_UOP_BYTES;
    localparam LMAXE = (`VTA_WGT_BYTES > `VTA_INP_BYTES) ? `VTA_WGT_BYTES : `VTA_INP_BYTES;
    wire ld_done, cp_done;
    /* verilator lint_off PINMISSING */
    vta_dma_read #(.MAXE(LMAXE), .K(1)) ld (
        .clk(clk), .rst(rst), .go(ld_go), .insn(ld_insn), .elog(ld_elog), .port_gnt(ld_gnt),
        .port_done(ld_done), .ar_ready(ld_arready), .r_valid(ld_rvalid), .r_data(rdata));
    vta_dma_read #(.MAXE(`VTA_ACC_BYTES), .K(K)) cp (
        .clk(clk), .rst(rst), .go(cp_go), .insn(cp_insn), .elog(cp_elog), .port_gnt(cp_gnt),
        .port_done(cp_done), .ar_ready(cp_arready), .r_valid(cp_rvalid), .r_data(rdata));
    /* verilator lint_on PINMISSING */
    always @(posedge clk) if (f_live && !rst) begin
        dr_cover_ld_burst_ends: cover(ld_done);
        dr_cover_cp_burst_ends: cover(cp_done);
    end
endmodule
`default_nettype wire
