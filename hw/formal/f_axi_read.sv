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
    localparam BW = $clog2(`VTA_BURST_BOUNDARY / BB + 2);   // vta_dma_read's burst beat counters
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
    wire [3:0] ld_elog = ld_wgt ? 4'($clog2(`VTA_WGT_BYTES)) : 4'($clog2(`VTA_INP_BYTES));
    vta_dma_read #(.MAXE(LMAXE), .K(1)) ld (
        .clk(clk), .rst(rst), .go(ld_go), .insn(ld_insn),
        .elog(ld_elog),
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
    // (the cycle after its previous LOAD's last, at the earliest: vta_dep_ctrl); a UOP load is one
    // unpadded row (fetch checks)
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
        assume(!ld_go || !f_ld_busy);
        assume(!cp_go || !f_cp_busy);
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
        // (fetch ends its burst in the cycle it takes its last beat, which may pass the FIFO)
        rd_port_done_after_beats: assert(!(port_done & f_owner) || (f_owed == 16'(r_hs) &&
                                         (f_open == 0 || (taking != 0 && f_taken + 1 == f_len))));
        rd_one_grant: assert(port_gnt == 0 || port_gnt == 3'b001 || port_gnt == 3'b010 || port_gnt == 3'b100);
        rd_error_response: assert(bus_err == (r_hs && (rresp == 2'b10 || rresp == 2'b11)));
    end

    // Induction invariants: what makes the properties above hold for all time (k-induction),
    // over the master's, fetch's and the DMAs' state (f_peek wires, hw/prove.py peeks).
    (* f_peek = "axi.owned" *) wire p_owned;
    (* f_peek = "axi.owner" *) wire [1:0] p_owner;
    (* f_peek = "axi.rfifo.cnt" *) wire [$clog2(`VTA_RFIFO_DEPTH + 1)-1:0] p_rf_cnt;
    (* f_peek = "axi.rfifo.f_reset_seen" *) wire p_rf_seen;
    (* f_peek = "fetch.state" *) wire [2:0] p_f_state;
    (* f_peek = "fetch.got" *) wire [4:0] p_f_got;
    (* f_peek = "fetch.ar_pend" *) wire p_f_ar_pend;
    (* f_peek = "fetch.addr" *) wire [31:0] p_f_addr;
    (* f_peek = "ld.state" *) wire [1:0] p_ld_state;
    (* f_peek = "ld.ar_pend" *) wire p_ld_ar_pend;
    (* f_peek = "ld.empty" *) wire p_ld_empty;
    (* f_peek = "ld.r" *) wire [16:0] p_ld_r;
    (* f_peek = "ld.c" *) wire [16:0] p_ld_c;
    (* f_peek = "ld.r_last" *) wire [16:0] p_ld_r_last;
    (* f_peek = "ld.w_last" *) wire [16:0] p_ld_w_last;
    (* f_peek = "ld.y_end" *) wire [16:0] p_ld_y_end;
    (* f_peek = "ld.x_end" *) wire [16:0] p_ld_x_end;
    (* f_peek = "ld.xl" *) wire [16:0] p_ld_xl;
    (* f_peek = "ld.data_row" *) wire p_ld_data_row;
    (* f_peek = "ld.y0" *) wire [3:0] p_ld_y0;
    (* f_peek = "ld.x0" *) wire [3:0] p_ld_x0;
    (* f_peek = "ld.lg" *) wire [3:0] p_ld_lg;
    (* f_peek = "ld.cur" *) wire [31:0] p_ld_cur;
    (* f_peek = "ld.row_base" *) wire [31:0] p_ld_row_base;
    (* f_peek = "ld.row_end" *) wire [31:0] p_ld_row_end;
    (* f_peek = "ld.nrb" *) wire [31:0] p_ld_nrb;
    (* f_peek = "ld.left_r" *) wire [31:0] p_ld_left_r;
    (* f_peek = "ld.row_bytes" *) wire [31:0] p_ld_row_bytes;
    (* f_peek = "ld.q_cur" *) wire [31:0] p_ld_q_cur;
    (* f_peek = "ld.q_bound" *) wire [$clog2(`VTA_BURST_BOUNDARY):0] p_ld_q_bound;
    (* f_peek = "ld.q_row" *) wire p_ld_q_row;
    (* f_peek = "ld.q_beats" *) wire [BW-1:0] p_ld_q_beats;
    (* f_peek = "ld.b_beats" *) wire [BW-1:0] p_ld_b_beats;
    (* f_peek = "ld.b_got" *) wire [BW-1:0] p_ld_b_got;
    (* f_peek = "ld.b_addr" *) wire [31:0] p_ld_b_addr;
    (* f_peek = "ld.end_r" *) wire p_ld_end_r;
    (* f_peek = "ld.pad_r" *) wire p_ld_pad_r;
    (* f_peek = "ld.bc" *) wire [7:0] p_ld_bc;
    (* f_peek = "ld.stride_bytes" *) wire [31:0] p_ld_stride_bytes;
    (* f_peek = "ld.narrow" *) wire p_ld_narrow;
    (* f_peek = "ld.bc_last" *) wire [7:0] p_ld_bc_last;
    (* f_peek = "ld.x0_m1" *) wire [16:0] p_ld_x0_m1;
    (* f_peek = "ld.x_end_m1" *) wire [16:0] p_ld_x_end_m1;
    (* f_peek = "ld.pad_row1" *) wire p_ld_pad_row1;
    (* f_peek = "ld.no_xp1" *) wire p_ld_no_xp1;
    (* f_peek = "ld.b_len" *) wire [7:0] p_ld_b_len;
    (* f_peek = "cp.state" *) wire [1:0] p_cp_state;
    (* f_peek = "cp.ar_pend" *) wire p_cp_ar_pend;
    (* f_peek = "cp.empty" *) wire p_cp_empty;
    (* f_peek = "cp.r" *) wire [16:0] p_cp_r;
    (* f_peek = "cp.c" *) wire [16:0] p_cp_c;
    (* f_peek = "cp.r_last" *) wire [16:0] p_cp_r_last;
    (* f_peek = "cp.w_last" *) wire [16:0] p_cp_w_last;
    (* f_peek = "cp.y_end" *) wire [16:0] p_cp_y_end;
    (* f_peek = "cp.x_end" *) wire [16:0] p_cp_x_end;
    (* f_peek = "cp.xl" *) wire [16:0] p_cp_xl;
    (* f_peek = "cp.data_row" *) wire p_cp_data_row;
    (* f_peek = "cp.y0" *) wire [3:0] p_cp_y0;
    (* f_peek = "cp.x0" *) wire [3:0] p_cp_x0;
    (* f_peek = "cp.lg" *) wire [3:0] p_cp_lg;
    (* f_peek = "cp.cur" *) wire [31:0] p_cp_cur;
    (* f_peek = "cp.row_base" *) wire [31:0] p_cp_row_base;
    (* f_peek = "cp.row_end" *) wire [31:0] p_cp_row_end;
    (* f_peek = "cp.nrb" *) wire [31:0] p_cp_nrb;
    (* f_peek = "cp.left_r" *) wire [31:0] p_cp_left_r;
    (* f_peek = "cp.row_bytes" *) wire [31:0] p_cp_row_bytes;
    (* f_peek = "cp.q_cur" *) wire [31:0] p_cp_q_cur;
    (* f_peek = "cp.q_bound" *) wire [$clog2(`VTA_BURST_BOUNDARY):0] p_cp_q_bound;
    (* f_peek = "cp.q_row" *) wire p_cp_q_row;
    (* f_peek = "cp.q_beats" *) wire [BW-1:0] p_cp_q_beats;
    (* f_peek = "cp.b_beats" *) wire [BW-1:0] p_cp_b_beats;
    (* f_peek = "cp.b_got" *) wire [BW-1:0] p_cp_b_got;
    (* f_peek = "cp.b_addr" *) wire [31:0] p_cp_b_addr;
    (* f_peek = "cp.end_r" *) wire p_cp_end_r;
    (* f_peek = "cp.pad_r" *) wire p_cp_pad_r;
    (* f_peek = "cp.bc" *) wire [7:0] p_cp_bc;
    (* f_peek = "cp.stride_bytes" *) wire [31:0] p_cp_stride_bytes;
    (* f_peek = "cp.narrow" *) wire p_cp_narrow;
    (* f_peek = "cp.bc_last" *) wire [7:0] p_cp_bc_last;
    (* f_peek = "cp.x0_m1" *) wire [16:0] p_cp_x0_m1;
    (* f_peek = "cp.x_end_m1" *) wire [16:0] p_cp_x_end_m1;
    (* f_peek = "cp.pad_row1" *) wire p_cp_pad_row1;
    (* f_peek = "cp.no_xp1" *) wire p_cp_no_xp1;
    (* f_peek = "cp.b_len" *) wire [7:0] p_cp_b_len;
    f_dma_inv #(.BW(BW)) ld_inv (.on(f_live && !rst), .state(p_ld_state), .ar_pend(p_ld_ar_pend),
        .empty(p_ld_empty), .r(p_ld_r), .c(p_ld_c), .r_last(p_ld_r_last), .w_last(p_ld_w_last), .y_end(p_ld_y_end),
        .x_end(p_ld_x_end), .xl(p_ld_xl), .data_row_r(p_ld_data_row), .y0(p_ld_y0), .x0(p_ld_x0), .lg(p_ld_lg),
        .cur(p_ld_cur), .row_base(p_ld_row_base), .row_end(p_ld_row_end), .nrb(p_ld_nrb), .left_r(p_ld_left_r),
        .row_bytes(p_ld_row_bytes), .q_cur(p_ld_q_cur), .q_bound(p_ld_q_bound), .q_row(p_ld_q_row),
        .q_beats(p_ld_q_beats), .b_beats(p_ld_b_beats), .b_got(p_ld_b_got), .b_addr(p_ld_b_addr),
        .end_r(p_ld_end_r), .pad_r(p_ld_pad_r), .bc(p_ld_bc), .stride_bytes(p_ld_stride_bytes),
        .narrow_r(p_ld_narrow), .bc_last(p_ld_bc_last),
        .x0_m1(p_ld_x0_m1), .x_end_m1(p_ld_x_end_m1), .pad_row1(p_ld_pad_row1), .no_xp1(p_ld_no_xp1), .b_len(p_ld_b_len));
    f_dma_inv #(.BW(BW)) cp_inv (.on(f_live && !rst), .state(p_cp_state), .ar_pend(p_cp_ar_pend),
        .empty(p_cp_empty), .r(p_cp_r), .c(p_cp_c), .r_last(p_cp_r_last), .w_last(p_cp_w_last), .y_end(p_cp_y_end),
        .x_end(p_cp_x_end), .xl(p_cp_xl), .data_row_r(p_cp_data_row), .y0(p_cp_y0), .x0(p_cp_x0), .lg(p_cp_lg),
        .cur(p_cp_cur), .row_base(p_cp_row_base), .row_end(p_cp_row_end), .nrb(p_cp_nrb), .left_r(p_cp_left_r),
        .row_bytes(p_cp_row_bytes), .q_cur(p_cp_q_cur), .q_bound(p_cp_q_bound), .q_row(p_cp_q_row),
        .q_beats(p_cp_q_beats), .b_beats(p_cp_b_beats), .b_got(p_cp_b_got), .b_addr(p_cp_b_addr),
        .end_r(p_cp_end_r), .pad_r(p_cp_pad_r), .bc(p_cp_bc), .stride_bytes(p_cp_stride_bytes),
        .narrow_r(p_cp_narrow), .bc_last(p_cp_bc_last),
        .x0_m1(p_cp_x0_m1), .x_end_m1(p_cp_x_end_m1), .pad_row1(p_cp_pad_row1), .no_xp1(p_cp_no_xp1), .b_len(p_cp_b_len));
    localparam IB = (BB >= 16) ? 1 : 16 / BB;     // beats of fetch's one-instruction burst
    localparam F_RUN = 3'd2, D_BURST = 2'd3;
    // the burst of the port's owner: its ar_pend, beats taken, beats
    wire o_pend = (p_owner == 2'd0) ? p_f_ar_pend : (p_owner == 2'd1) ? p_ld_ar_pend : p_cp_ar_pend;
    wire [31:0] o_got = (p_owner == 2'd0) ? 32'(p_f_got) : (p_owner == 2'd1) ? 32'(p_ld_b_got) : 32'(p_cp_b_got);
    wire [31:0] o_beats = (p_owner == 2'd0) ? 32'(IB) : (p_owner == 2'd1) ? 32'(p_ld_b_beats) : 32'(p_cp_b_beats);
    always @(*) if (f_live && !rst) begin
        rd_inv_ghost_live: assert(p_rf_seen);   // the read FIFO's ghost checks from reset on
        // a client is in its burst exactly while it owns the port
        rd_inv_owner: assert(p_owner != 2'd3 && (p_f_state == F_RUN) == (p_owned && p_owner == 2'd0) &&
                             (p_ld_state == D_BURST) == (p_owned && p_owner == 2'd1) &&
                             (p_cp_state == D_BURST) == (p_owned && p_owner == 2'd2) &&
                             (!p_owned || f_owner == 3'b001 << p_owner));
        // a LOAD runs from go to done_now; fetch only after the launch, on 16-byte words
        rd_inv_busy: assert(f_ld_busy == (p_ld_state != 2'd0 || p_ld_empty) &&
                            f_cp_busy == (p_cp_state != 2'd0 || p_cp_empty) &&
                            (p_f_state == 3'd0 || (f_launched && p_f_addr[3:0] == 4'd0)));
        // the bus ghosts: nothing owed or buffered without an owner; the owner's burst before its
        // address is taken, and after: open until its last beat is taken, the slave owing and
        // the FIFO holding what the owner has yet to take
        if (!p_owned)
            rd_inv_idle: assert(f_open == 0 && f_owed == 0 && p_rf_cnt == 0);
        else if (o_pend)
            rd_inv_before_ar: assert(f_open == 0 && f_owed == 0 && p_rf_cnt == 0 && o_got == 0 && o_beats != 0);
        else
            rd_inv_after_ar: assert(o_got <= o_beats && f_open == 2'(o_got != o_beats) && 32'(f_taken) == o_got &&
                                    32'(f_len) == o_beats && 32'(f_owed) + 32'(p_rf_cnt) == o_beats - o_got);
    end
    always @(posedge clk) if (f_live && !rst) begin
        rd_cover_fetch_burst_done: cover(port_done[0]);
        rd_cover_load_burst_done: cover(port_done[1]);
        rd_cover_compute_burst_done: cover(port_done[2]);
        rd_cover_ar_stalled: cover(f_ar_wait && arvalid);
        rd_cover_error: cover(bus_err);
    end
endmodule

// One DMA's invariants (vta_dma_read, its registers by name): while it runs, its data position
// (r, c) and DRAM byte (cur) agree (cur = row_base plus the data entries before c in a data row),
// the registers that keep compares off its paths agree with what they stand for (data_row, xl,
// row_end, nrb, and in a request q_cur, q_bound and left_r), so that a burst requested next has
// bytes to read; a requested or issued burst is 1 to 256 aligned beats within one
// BURST_BOUNDARY (so within 4 KiB), starts at the position's beat and ends within its row's data,
// so the position moves beat by beat through it and never off the data; in a burst the
// registered end and pad flags are those of the position, no beat is taken before the address,
// none past the last.
module f_dma_inv #(parameter BW = 1) (
    input wire on,
    input wire [1:0] state,
    input wire ar_pend, empty,
    input wire [16:0] r, c, r_last, w_last, y_end, x_end, xl,
    input wire data_row_r,
    input wire [3:0] y0, x0, lg,
    input wire [31:0] cur, row_base, row_end, nrb, left_r, row_bytes, q_cur,
    input wire [$clog2(`VTA_BURST_BOUNDARY):0] q_bound,
    input wire q_row,
    input wire [BW-1:0] q_beats, b_beats, b_got,
    input wire [31:0] b_addr,
    input wire end_r, pad_r,
    input wire [7:0] bc,
    input wire [31:0] stride_bytes,
    input wire narrow_r,
    input wire [7:0] bc_last,
    input wire [16:0] x0_m1, x_end_m1,
    input wire pad_row1, no_xp1,
    input wire [7:0] b_len
);
    localparam BB = `VTA_BUS_BYTES, LBB = `VTA_LOG_BUS_BYTES, BOUND = `VTA_BURST_BOUNDARY, LB = $clog2(BOUND);
    localparam S_PAD = 2'd1, S_REQ = 2'd2, S_BURST = 2'd3;
    wire data_row = (r >= 17'(y0)) && (r < y_end);
    wire [16:0] cc = (c < 17'(x0)) ? 17'(x0) : (c > x_end) ? x_end : c;
    wire is_pad = !data_row || c < 17'(x0) || c >= x_end;
    wire narrow = lg < 4'(LBB);
    wire [31:0] emask = (32'd1 << lg) - 1;
    wire [31:0] row_end8 = (row_base + row_bytes + BB - 1) & ~(BB - 1);   // the row's last beat's end
    wire [31:0] beat_of_cur = narrow ? cur & ~(BB - 1) : cur + 32'(bc) * BB;
    wire [31:0] next_beat = b_addr + 32'(b_got) * BB;
    wire [31:0] q_addr = q_cur & ~(BB - 1);
    function automatic ok(input [31:0] addr, input [31:0] beats);
        ok = beats != 0 && beats <= 256 && addr % BB == 0 && 32'(addr % BOUND) + beats * BB <= BOUND;
    endfunction
    always @(*) if (on && state != 2'd0) begin
        dma_inv_grid: assert(!empty && r_last + 1 >= y_end && w_last + 1 >= x_end && x_end > 17'(x0) && y_end >= 17'(y0) &&
                             lg <= 4'd6 && row_bytes == 32'(x_end - 17'(x0)) << lg && (row_base & emask) == 0 &&
                             (stride_bytes & emask) == 0 && (narrow ? bc == 0 : 32'(bc) < (32'd1 << (lg - 4'(LBB)))));
        // the registered stand-ins for compares and sums (narrow, bc_last: latched at go from lg;
        // x0_m1, x_end_m1, no_xp1, pad_row1: the bounds' compares of the padding walk)
        dma_inv_registers: assert(data_row_r == data_row && xl == x_end - c && row_end == row_base + row_bytes &&
                                  nrb == row_base + stride_bytes && narrow_r == narrow &&
                                  x0_m1 == 17'(17'(x0) - 1) && x_end_m1 == 17'(x_end - 1) && no_xp1 == (w_last + 1 == x_end) &&
                                  pad_row1 == (r + 1 < 17'(y0) || r + 1 >= y_end) &&
                                  bc_last == (narrow ? 8'd0 : 8'((32'd1 << (lg - 4'(LBB))) - 1)));
        // the program's side: a LOAD's data lies below 4 GiB (each row ends 8 bytes short of it
        // at the latest), as the DMA compares DRAM byte addresses without a carry
        if (data_row) assume(33'(row_base) + 33'(row_bytes) <= 33'hFFFFFFF8);
        dma_inv_position: assert(cur == row_base + (data_row ? 32'(cc - 17'(x0)) << lg : 32'd0));
        if (state == S_PAD)
            dma_inv_pad: assert(is_pad && r <= r_last && c <= w_last);
        if (state == S_REQ)
            dma_inv_next_burst: assert(!pad_r && !end_r && r <= r_last && c <= w_last && q_cur == cur && q_bound == (LB+1)'(BOUND) - (LB+1)'(q_cur & (BOUND - 1)) &&
                                       (q_row ? cur == row_base : left_r == row_end - cur) &&
                                       ok(q_addr, 32'(q_beats)) && !is_pad && bc == 0 && q_addr == beat_of_cur &&
                                       (narrow || ((q_addr + 32'(q_beats) * BB) & emask) == 0) &&
                                       32'(q_beats) * BB <= row_end8 - q_addr);
        if (state == S_BURST)
            dma_inv_burst: assert(ok(b_addr, 32'(b_beats)) && 32'(b_len) + 1 == 32'(b_beats) && b_got <= b_beats && (!ar_pend || b_got == 0) &&
                                  end_r == (r == r_last + 1) && pad_r == is_pad && r <= r_last + 1 && c <= w_last &&
                                  (narrow || (((b_addr + 32'(b_beats) * BB) & emask) == 0 &&
                                              (b_got != b_beats || bc == 0))));
        if (state == S_BURST && b_got != b_beats)
            dma_inv_in_burst: assert(!is_pad && next_beat == beat_of_cur &&
                                     32'(b_beats - b_got) * BB <= row_end8 - next_beat);
    end
endmodule
`default_nettype wire
