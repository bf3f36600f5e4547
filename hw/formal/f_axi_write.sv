// AXI4 write master: vta_store behind vta_axi_master, seen at the m_axi_* ports, with any STORE
// fetch would pass and any slave that answers B only for a burst whose data is complete. AWVALID
// and WVALID hold until READY with address, length and data stable; no burst crosses a 4 KiB
// page or runs past 256 beats; WLAST marks exactly the last beat of each burst (a ghost follows
// the f_k-th burst); at most 4 bursts have an address issued and data outstanding (the length
// queue's depth); a STORE completes only when every burst is acknowledged; an error response
// raises bus_err.
`default_nettype none
`include "vta_cfg.vh"
module f_axi_write (
    input wire clk,
    input wire rst,
    input wire enable,
    input wire head_valid,
    input wire [127:0] head_bits,
    input wire [2:0] y_size,
    input wire [9:0] x_size,
    input wire c2s_avail,
    input wire s2c_push_ok,
    input wire [`VTA_OUT_BYTES*8-1:0] out_rdata,
    input wire awready,
    input wire wready,
    input wire bvalid,
    input wire [1:0] bresp,
    output wire started,        // for f_store_live: a STORE is issued, it runs,
    output wire running,
    output wire w_last_beat     // a burst's last beat is taken
);
`include "f_reset.svh"
    localparam BB = `VTA_BUS_BYTES;
    localparam BOUND = `VTA_BURST_BOUNDARY, LB = $clog2(BOUND);
    // any STORE fetch lets through, of up to 7 rows of up to 1023 entries (four 256-beat bursts
    // and change): every burst shape, with sizes narrow enough for the solver's multipliers
    reg [127:0] head;
    always @(*) begin
        head = head_bits;
        head[2:0] = `VTA_OP_STORE;
        `VTA_MEM_MEMORY_TYPE(head) = `VTA_MEM_OUT;
        `VTA_MEM_Y_PAD_0(head) = 0;
        `VTA_MEM_Y_PAD_1(head) = 0;
        `VTA_MEM_X_PAD_0(head) = 0;
        `VTA_MEM_X_PAD_1(head) = 0;
        `VTA_MEM_Y_SIZE(head) = 16'(y_size);
        `VTA_MEM_X_SIZE(head) = 16'(x_size);
    end
    wire head_ready, c2s_pop, s2c_push;
    assign started = head_ready;
    wire [15:0] out_raddr;
    wire aw_valid, aw_ready, w_valid, w_last, w_ready, b_valid;
    wire [31:0] aw_addr;
    wire [7:0] aw_len;
    wire [BB*8-1:0] w_data;
    /* verilator lint_off PINMISSING */
    vta_store st (
        .clk(clk), .rst(rst), .enable(enable), .head_valid(head_valid), .head(head), .head_ready(head_ready),
        .c2s_avail(c2s_avail), .c2s_pop(c2s_pop), .s2c_push(s2c_push), .s2c_push_ok(s2c_push_ok),
        .out_raddr(out_raddr), .out_rdata(out_rdata),
        .aw_valid(aw_valid), .aw_addr(aw_addr), .aw_len(aw_len), .aw_ready(aw_ready),
        .w_valid(w_valid), .w_data(w_data), .w_last(w_last), .w_ready(w_ready), .b_valid(b_valid),
        .out_bytes(), .busy_cycles(), .stall_token(), .stall_push(), .insn_count(), .running(running));
    wire awvalid, wvalid, wlast, bready, bus_err;
    wire [31:0] awaddr;
    wire [7:0] awlen;
    wire [2:0] awsize;
    wire [1:0] awburst;
    wire [BB*8-1:0] wdata;
    wire [BB-1:0] wstrb;
    vta_axi_master axi (
        .clk(clk), .rst(rst), .port_req(3'b000), .port_gnt(), .port_done(3'b000), .c_ar_valid(3'b000),
        .c_ar_addr(96'd0), .c_ar_len(24'd0), .c_ar_ready(), .c_r_valid(), .c_r_data(), .c_r_ready(3'b000),
        .s_aw_valid(aw_valid), .s_aw_addr(aw_addr), .s_aw_len(aw_len), .s_aw_ready(aw_ready),
        .s_w_valid(w_valid), .s_w_data(w_data), .s_w_last(w_last), .s_w_ready(w_ready), .s_b_valid(b_valid),
        .m_axi_arvalid(), .m_axi_arready(1'b0), .m_axi_araddr(), .m_axi_arlen(), .m_axi_arsize(),
        .m_axi_arburst(), .m_axi_arid(), .m_axi_rvalid(1'b0), .m_axi_rready(), .m_axi_rdata({BB*8{1'b0}}),
        .m_axi_rresp(2'b00), .m_axi_bresp(bresp), .m_axi_rlast(1'b0), .m_axi_rid(1'b0), .m_axi_bid(1'b0),
        .m_axi_awvalid(awvalid), .m_axi_awready(awready), .m_axi_awaddr(awaddr), .m_axi_awlen(awlen),
        .m_axi_awsize(awsize), .m_axi_awburst(awburst), .m_axi_awid(), .m_axi_wvalid(wvalid),
        .m_axi_wready(wready), .m_axi_wdata(wdata), .m_axi_wstrb(wstrb), .m_axi_wlast(wlast),
        .m_axi_bvalid(bvalid), .m_axi_bready(bready), .bus_err(bus_err));
    /* verilator lint_on PINMISSING */

    // the slave: a B only for a burst whose address and last data beat it has taken; it holds at
    // most 2^16 bursts unanswered (AWREADY low beyond: a bound on the ghost counters, no more)
    wire aw_hs = awvalid && awready, w_hs = wvalid && wready, b_hs = bvalid && bready;
    assign w_last_beat = w_hs && wlast;
    reg [31:0] f_aw, f_wb, f_b;   // bursts: addresses taken, data completed, responses given
    always @(*) if (!rst) begin
        assume(!bvalid || (f_b != f_wb && f_b != f_aw));
        assume(!awready || 32'(f_aw - f_b) < 32'h10000);
    end

    // ghost: follow the f_k-th burst, its length and its beats (f_beat: beats taken of it so far)
    (* anyconst *) reg [31:0] f_k;
    reg [7:0] f_len;
    reg [8:0] f_beat;
    always @(posedge clk)
        if (rst) {f_aw, f_wb, f_b, f_beat} <= 0;
        else begin
            f_aw <= f_aw + 32'(aw_hs);
            f_wb <= f_wb + 32'(w_hs && wlast);
            f_b <= f_b + 32'(b_hs);
            if (aw_hs && f_aw == f_k) f_len <= awlen;
            if (w_hs && f_wb == f_k) f_beat <= wlast ? 9'd0 : f_beat + 9'd1;
        end
    reg f_aw_wait, f_w_wait, f_running;
    reg [31:0] f_awaddr;
    reg [7:0] f_awlen;
    reg [BB*8-1:0] f_wdata;
    reg f_wlast;
    always @(posedge clk) begin
        f_aw_wait <= !rst && awvalid && !awready;
        f_w_wait <= !rst && wvalid && !wready;
        {f_awaddr, f_awlen, f_wdata, f_wlast} <= {awaddr, awlen, wdata, wlast};
        f_running <= running;
    end
    wire [13:0] f_end = 14'(awaddr[11:0]) + (14'(awlen) + 14'd1) * 14'(BB);
    always @(*) if (f_live && !rst) begin
        wr_aw_held: assert(!f_aw_wait || (awvalid && awaddr == f_awaddr && awlen == f_awlen));
        wr_w_held: assert(!f_w_wait || (wvalid && wdata == f_wdata && wlast == f_wlast));
        wr_no_4k_crossing: assert(!awvalid || f_end <= 14'd4096);
        wr_full_beats: assert(!awvalid || (awaddr % BB == 0 && awsize == `VTA_LOG_BUS_BYTES &&
                                          awburst == 2'b01 && wstrb == {BB{1'b1}}));
        wr_w_after_aw: assert(!wvalid || f_wb != f_aw || aw_hs);
        if (wvalid && f_wb == f_k && (f_k != f_aw || aw_hs))
            wr_wlast_on_last_beat: assert(wlast == (f_beat == 9'((f_k == f_aw) ? awlen : f_len)));
        wr_outstanding: assert(32'(f_aw - f_wb) <= 32'd4);
        wr_done_when_acked: assert(!(f_running && !running) || f_b == f_aw);
        wr_error_response: assert(bus_err == (bvalid && (bresp == 2'b10 || bresp == 2'b11)));
    end

    // Induction invariants: what makes the properties above hold for all time (k-induction).
    // The ghost counters are those of the burst-length queue's own ghost (vta_fifo_ghost.svh,
    // f_k its f_n); the store's state is read through f_peek wires (hw/prove.py, peeks).
    (* f_peek = "st.wlen_q.f_reset_seen" *) wire p_wl_seen;
    (* f_peek = "st.ent_q.f_reset_seen" *) wire p_ent_seen;
    (* f_peek = "st.wlen_q.f_n" *) wire [31:0] p_wl_n;
    (* f_peek = "st.wlen_q.f_in" *) wire [31:0] p_wl_in;
    (* f_peek = "st.wlen_q.f_out" *) wire [31:0] p_wl_out;
    (* f_peek = "st.wlen_q.f_data" *) wire [8:0] p_wl_data;
    (* f_peek = "st.wl_count" *) wire [2:0] p_wl_count;
    (* f_peek = "st.w_in_burst" *) wire [8:0] p_w_in_burst;
    (* f_peek = "st.pend" *) wire [31:0] p_pend;
    (* f_peek = "st.pend0" *) wire p_pend0;
    (* f_peek = "st.pend1" *) wire p_pend1;
    (* f_peek = "st.in_body" *) wire p_in_body;
    (* f_peek = "st.ctrl.st_push" *) wire p_st_push;
    (* f_peek = "st.nop" *) wire p_nop;
    (* f_peek = "st.aw_active" *) wire p_aw_active;
    (* f_peek = "st.aw_cur" *) wire [31:0] p_aw_cur;
    (* f_peek = "st.left" *) wire [31:0] p_left;
    (* f_peek = "st.nrs" *) wire [31:0] p_nrs;
    (* f_peek = "st.to_bound" *) wire [LB:0] p_to_bound;
    (* f_peek = "st.row_bytes" *) wire [31:0] p_row_bytes;
    (* f_peek = "st.stride_bytes" *) wire [31:0] p_stride_bytes;
    localparam OB = `VTA_OUT_BYTES;
    always @(*) assume(f_k == p_wl_n);
    always @(*) if (f_live && !rst) begin
        // bursts: f_aw taken, f_wb of them with all data, f_b of those answered; the length queue
        // holds exactly the bursts whose data is still due, the f_k-th's length among them
        wr_inv_ghosts_live: assert(p_wl_seen && p_ent_seen);   // the queues' ghosts check from reset on
        wr_inv_queue_counts: assert(f_aw == p_wl_in && f_wb == p_wl_out);
        wr_inv_acked_order: assert(32'(f_aw - f_b) <= 32'h10000 && 32'(f_wb - f_b) <= 32'(f_aw - f_b));
        if (32'(f_k - f_wb) < 32'(f_aw - f_wb))
            wr_inv_len_queued: assert(p_wl_data == 9'(f_len) + 9'd1);
        wr_inv_beat: assert(f_beat == ((f_wb == f_k) ? p_w_in_burst : 9'd0) && (p_wl_count != 0 || p_w_in_burst == 0));
        // the store's count of bursts not acknowledged, its registered zero and one flags, and
        // none outstanding between STOREs or in a STORE without data
        wr_inv_counts: assert(p_pend == 32'(f_aw - f_b) && p_pend0 == (p_pend == 0) && p_pend1 == (p_pend == 1) &&
                              ((p_in_body && !p_nop) || f_aw == f_b));
        // the AW walk: only in a body, of a STORE with data, on OUT_BYTES-aligned addresses with
        // bytes left in the row, to_bound the bytes to aw_cur's next burst boundary
        if (p_aw_active)
            wr_inv_walk: assert(p_in_body && !p_nop && !p_st_push && p_aw_cur % OB == 0 && p_nrs % OB == 0 &&
                                p_left % OB == 0 && p_left != 0 && p_left <= p_row_bytes &&
                                p_row_bytes % OB == 0 && p_stride_bytes % OB == 0 && p_row_bytes != 0 &&
                                p_to_bound == (LB+1)'(BOUND) - (LB+1)'(p_aw_cur & (BOUND - 1)));
    end
    always @(posedge clk) if (f_live && !rst) begin
        wr_cover_two_bursts_one_row: cover(aw_hs && f_aw == 1 && awaddr[10:0] == 11'd0);
        wr_cover_last_beat: cover(w_hs && wlast && f_wb == f_k && f_len != 0);
        wr_cover_four_outstanding: cover(f_aw - f_wb == 4);
        wr_cover_store_done: cover(f_running && !running && f_aw > 1);
        wr_cover_error: cover(bus_err);
    end
endmodule
`default_nettype wire
