// AXI4 read master: vta_axi_master with its three clients as vta_top wires them, fetch (0), the
// load module's DMA (1) and the compute module's (2), seen at the m_axi_* ports, with any run
// and LOAD fetch would pass and any slave that returns only the beats it owes. ARVALID holds
// until ARREADY with address and length stable; no burst crosses a 4 KiB page or runs past 256
// beats; at most one burst is outstanding (the port is held per burst) and the port changes hands
// only once its owner has taken every beat of its burst; an error response raises bus_err.
`default_nettype none
`include "vta_cfg.vh"
module f_axi_read (
    input wire clk,
    input wire rst,
    input wire launch,
    input wire [31:0] insn_addr,
    input wire [31:0] insn_count,
    input wire [2:0] q_ready,
    input wire ld_go,
    input wire [127:0] ld_insn,
    input wire ld_wgt,
    input wire cp_go,
    input wire [127:0] cp_insn,
    input wire [1:0] cp_kind,
    input wire arready,
    input wire rvalid,
    input wire [`VTA_BUS_BYTES*8-1:0] rdata,
    input wire [1:0] rresp
);
`include "f_reset.svh"
    localparam BB = `VTA_BUS_BYTES;
    localparam K = `VTA_BUS_BYTES / `VTA_UOP_BYTES;
    localparam LMAXE = (`VTA_WGT_BYTES > `VTA_INP_BYTES) ? `VTA_WGT_BYTES : `VTA_INP_BYTES;
    wire [2:0] port_req, port_gnt, port_done, c_ar_valid, c_ar_ready, c_r_valid, c_r_ready;
    wire [95:0] c_ar_addr;
    wire [23:0] c_ar_len;
    wire [BB*8-1:0] r_data;
    wire arvalid, rready, bus_err, ld_done, cp_done;
    wire [31:0] araddr;
    wire [7:0] arlen;
    wire [2:0] arsize;
    wire [1:0] arburst;
    /* verilator lint_off PINMISSING */
    vta_axi_master axi (
        .clk(clk), .rst(rst), .port_req(port_req), .port_gnt(port_gnt), .port_done(port_done),
        .c_ar_valid(c_ar_valid), .c_ar_addr(c_ar_addr), .c_ar_len(c_ar_len), .c_ar_ready(c_ar_ready),
        .c_r_valid(c_r_valid), .c_r_data(r_data), .c_r_ready(c_r_ready),
        .s_aw_valid(1'b0), .s_aw_addr(32'd0), .s_aw_len(8'd0), .s_aw_ready(), .s_w_valid(1'b0),
        .s_w_data({BB*8{1'b0}}), .s_w_last(1'b0), .s_w_ready(), .s_b_valid(),
        .m_axi_arvalid(arvalid), .m_axi_arready(arready), .m_axi_araddr(araddr), .m_axi_arlen(arlen),
        .m_axi_arsize(arsize), .m_axi_arburst(arburst), .m_axi_arid(), .m_axi_rvalid(rvalid),
        .m_axi_rready(rready), .m_axi_rdata(rdata), .m_axi_rresp(rresp), .m_axi_bresp(2'b00),
        .m_axi_rlast(1'b0), .m_axi_rid(1'b0), .m_axi_bid(1'b0), .m_axi_awvalid(), .m_axi_awready(1'b0),
        .m_axi_awaddr(), .m_axi_awlen(), .m_axi_awsize(), .m_axi_awburst(), .m_axi_awid(),
        .m_axi_wvalid(), .m_axi_wready(1'b0), .m_axi_wdata(), .m_axi_wstrb(), .m_axi_wlast(),
        .m_axi_bvalid(1'b0), .m_axi_bready(), .bus_err(bus_err));
    vta_fetch fetch (
        .clk(clk), .rst(rst), .launch(launch), .insn_addr(insn_addr), .insn_count(insn_count),
        .port_req(port_req[0]), .port_gnt(port_gnt[0]), .port_done(port_done[0]),
        .ar_valid(c_ar_valid[0]), .ar_addr(c_ar_addr[31:0]), .ar_len(c_ar_len[7:0]), .ar_ready(c_ar_ready[0]),
        .r_valid(c_r_valid[0]), .r_data(r_data), .r_ready(c_r_ready[0]),
        .q_data(), .q_valid(), .q_ready(q_ready), .err(), .err_code(), .err_index(), .busy(),
        .stall_queue(), .stall_port());
    vta_dma_read #(.MAXE(LMAXE), .K(1)) ld (
        .clk(clk), .rst(rst), .go(ld_go), .insn(ld_insn),
        .elog(ld_wgt ? 4'($clog2(`VTA_WGT_BYTES)) : 4'($clog2(`VTA_INP_BYTES))),
        .port_req(port_req[1]), .port_gnt(port_gnt[1]), .port_done(port_done[1]),
        .ar_valid(c_ar_valid[1]), .ar_addr(c_ar_addr[63:32]), .ar_len(c_ar_len[15:8]), .ar_ready(c_ar_ready[1]),
        .r_valid(c_r_valid[1]), .r_data(r_data), .r_ready(c_r_ready[1]),
        .wr_en(), .wr_idx(), .wr_data(), .wr_lanes(), .done_now(ld_done));
    wire [3:0] cp_elog = (cp_kind == 2'd0) ? 4'($clog2(`VTA_UOP_BYTES)) :
                         (cp_kind == 2'd1) ? 4'($clog2(`VTA_ACC_BYTES)) : 4'($clog2(`VTA_ACC8_BYTES));
    vta_dma_read #(.MAXE(`VTA_ACC_BYTES), .K(K)) cp (
        .clk(clk), .rst(rst), .go(cp_go), .insn(cp_insn), .elog(cp_elog),
        .port_req(port_req[2]), .port_gnt(port_gnt[2]), .port_done(port_done[2]),
        .ar_valid(c_ar_valid[2]), .ar_addr(c_ar_addr[95:64]), .ar_len(c_ar_len[23:16]), .ar_ready(c_ar_ready[2]),
        .r_valid(c_r_valid[2]), .r_data(r_data), .r_ready(c_r_ready[2]),
        .wr_en(), .wr_idx(), .wr_data(), .wr_lanes(), .done_now(cp_done));
    /* verilator lint_on PINMISSING */

    // the modules' side: a run starts once; a DMA starts a LOAD (with data: x_size > 0) when idle
    // or in its previous LOAD's last cycle; a UOP load is one unpadded row (fetch checks)
    reg f_launched, f_ld_busy, f_cp_busy;
    always @(posedge clk)
        if (rst) {f_launched, f_ld_busy, f_cp_busy} <= 0;
        else begin
            if (launch) f_launched <= 1'b1;
            f_ld_busy <= ld_go || (f_ld_busy && !ld_done);
            f_cp_busy <= cp_go || (f_cp_busy && !cp_done);
        end
    always @(*) begin
        if (rst) assume(!launch && !ld_go && !cp_go);
        assume(!launch || !f_launched);
        assume(!ld_go || !f_ld_busy || ld_done);
        assume(!cp_go || !f_cp_busy || cp_done);
        assume(`VTA_MEM_X_SIZE(ld_insn) != 0 && `VTA_MEM_X_SIZE(cp_insn) != 0);
        assume(cp_kind != 2'd3);
        if (cp_kind == 2'd0)
            assume(`VTA_MEM_Y_SIZE(cp_insn) == 1 && `VTA_MEM_Y_PAD_0(cp_insn) == 0 && `VTA_MEM_Y_PAD_1(cp_insn) == 0 &&
                   `VTA_MEM_X_PAD_0(cp_insn) == 0 && `VTA_MEM_X_PAD_1(cp_insn) == 0);
    end
    // the slave returns only the beats it owes
    wire ar_hs = arvalid && arready, r_hs = rvalid && rready;
    reg [15:0] f_owed;      // beats of accepted bursts not yet returned
    reg [1:0] f_open;       // bursts accepted whose beats have not all been taken by their client
    reg [8:0] f_taken;      // beats the owner has taken of its current burst
    reg [8:0] f_len;        // beats of the current burst
    reg [2:0] f_owner;
    wire [2:0] taking = c_r_valid & c_r_ready;
    always @(*) if (!rst) assume(!rvalid || f_owed != 0);
    always @(posedge clk)
        if (rst) {f_owed, f_open, f_taken, f_owner} <= 0;
        else begin
            f_owed <= f_owed + (ar_hs ? 16'(arlen) + 16'd1 : 16'd0) - 16'(r_hs);
            if (port_gnt != 0) f_owner <= port_gnt;
            if (ar_hs) begin
                f_len <= 9'(arlen) + 9'd1;
                f_taken <= 0;
            end else if (taking != 0) f_taken <= f_taken + 1;
            f_open <= f_open + 2'(ar_hs) - 2'((taking != 0) && f_taken + 1 == f_len);
        end
    reg f_ar_wait;
    reg [31:0] f_araddr;
    reg [7:0] f_arlen;
    always @(posedge clk) begin
        f_ar_wait <= !rst && arvalid && !arready;
        f_araddr <= araddr;
        f_arlen <= arlen;
    end
    wire [13:0] f_end = 14'(araddr[11:0]) + (14'(arlen) + 14'd1) * 14'(BB);
    always @(*) if (f_live && !rst) begin
        rd_ar_held: assert(!f_ar_wait || (arvalid && araddr == f_araddr && arlen == f_arlen));
        rd_no_4k_crossing: assert(!arvalid || f_end <= 14'd4096);
        rd_full_beats: assert(!arvalid || (araddr % BB == 0 && arsize == `VTA_LOG_BUS_BYTES && arburst == 2'b01));
        rd_one_outstanding: assert(f_open <= 2'd1 && !(arvalid && f_open != 0));
        rd_beats_to_owner: assert((taking & ~f_owner) == 3'b000 && !(taking != 0 && f_open == 0));
        rd_port_done_after_beats: assert(!(port_done & f_owner) || (f_open == 0 && f_owed == 0));
        rd_one_grant: assert(port_gnt == 0 || port_gnt == 3'b001 || port_gnt == 3'b010 || port_gnt == 3'b100);
        rd_error_response: assert(bus_err == (r_hs && (rresp == 2'b10 || rresp == 2'b11)));
    end
    always @(posedge clk) if (f_live && !rst) begin
        rd_cover_fetch_burst_done: cover(port_done[0]);
        rd_cover_load_burst_done: cover(port_done[1]);
        rd_cover_compute_burst_done: cover(port_done[2]);
        rd_cover_ar_stalled: cover(f_ar_wait && arvalid);
        rd_cover_error: cover(bus_err);
    end
endmodule
`default_nettype wire
