// Bounded liveness of a LOAD: vta_load (its dep_ctrl and DMA) behind vta_axi_master's read port,
// as vta_top wires the load module, with a slave that takes every AR at once and returns its beats
// back to back from RLAT cycles after it (RLAT any constant from 1 to DMA_READ_LATENCY - 2: the
// DRAM the DMA is exact for). A LOAD issued at cycle i runs its last cycle by
// i + ISSUE_DELAY + the timing model's duration of it (docs/timing.md): 1 for x_size = 0 or a LOAD
// of no entries, else one cycle per pad entry plus, per read burst of each data row (split at the
// burst boundary), REQUEST_DELAY + DMA_READ_LATENCY + its beats. Checked by BMC for every INP or WGT
// LOAD (any addresses, strides, flags, token timing) with y_size <= 3, x_size <= 7, pads <= 3
// whose bound is at most MAXB = depth - 3 cycles: what the depth follows to its end.
`default_nettype none
`include "vta_cfg.vh"
`include "f_model.vh"
module f_load_live (
    input wire clk,
    input wire rst,
    input wire head_valid,
    input wire [127:0] head_bits,
    input wire wgt,
    input wire [1:0] y_size,
    input wire [2:0] x_size,
    input wire [1:0] y_pad_0, y_pad_1, x_pad_0, x_pad_1,
    input wire c2l_avail
);
`include "f_reset.svh"
    localparam BB = `VTA_BUS_BYTES, BOUND = `VTA_BURST_BOUNDARY, LAT = `VTA_DMA_READ_LATENCY;
    // the largest bound checked: the task's depth less reset, the issue and the step after the end
    localparam MAXB = `F_DEPTH - 3;
    reg [127:0] head;
    always @(*) begin
        head = head_bits;
        head[2:0] = `VTA_OP_LOAD;
        `VTA_MEM_MEMORY_TYPE(head) = wgt ? `VTA_MEM_WGT : `VTA_MEM_INP;
        `VTA_MEM_Y_SIZE(head) = 16'(y_size);
        `VTA_MEM_X_SIZE(head) = 16'(x_size);
        `VTA_MEM_Y_PAD_0(head) = 4'(y_pad_0);
        `VTA_MEM_Y_PAD_1(head) = 4'(y_pad_1);
        `VTA_MEM_X_PAD_0(head) = 4'(x_pad_0);
        `VTA_MEM_X_PAD_1(head) = 4'(x_pad_1);
    end

    wire issue, running, port_req, port_gnt, port_done, ar_valid, ar_ready, r_valid, r_ready;
    wire [31:0] ar_addr;
    wire [7:0] ar_len;
    wire [BB*8-1:0] r_data;
    /* verilator lint_off PINMISSING */
    vta_load ld (
        .clk(clk), .rst(rst), .enable(1'b1), .head_valid(head_valid), .head(head), .head_ready(issue),
        .c2l_avail(c2l_avail), .c2l_pop(), .l2c_push(), .l2c_push_ok(1'b1),
        .port_req(port_req), .port_gnt(port_gnt), .port_done(port_done),
        .ar_valid(ar_valid), .ar_addr(ar_addr), .ar_len(ar_len), .ar_ready(ar_ready),
        .r_valid(r_valid), .r_data(r_data), .r_ready(r_ready),
        .inp_we(), .wgt_we(), .sram_waddr(), .sram_wdata(), .inp_bytes(), .wgt_bytes(), .busy_cycles(),
        .stall_token(), .stall_port(), .stall_push(), .insn_count(), .running(running));
    wire arvalid, rready, rvalid;
    wire [7:0] arlen;
    wire [2:0] gnt, c_ar_ready, c_r_valid;
    vta_axi_master axi (
        .clk(clk), .rst(rst), .port_req({1'b0, port_req, 1'b0}), .port_gnt(gnt),
        .port_done({1'b0, port_done, 1'b0}), .c_ar_valid({1'b0, ar_valid, 1'b0}),
        .c_ar_addr({32'd0, ar_addr, 32'd0}), .c_ar_len({8'd0, ar_len, 8'd0}), .c_ar_ready(c_ar_ready),
        .c_r_valid(c_r_valid), .c_r_data(r_data), .c_r_ready({1'b0, r_ready, 1'b0}),
        .s_aw_valid(1'b0), .s_aw_addr(32'd0), .s_aw_len(8'd0), .s_aw_ready(), .s_w_valid(1'b0),
        .s_w_data({BB*8{1'b0}}), .s_w_last(1'b0), .s_w_ready(), .s_b_valid(),
        .m_axi_arvalid(arvalid), .m_axi_arready(1'b1), .m_axi_araddr(), .m_axi_arlen(arlen),
        .m_axi_arsize(), .m_axi_arburst(), .m_axi_arid(), .m_axi_rvalid(rvalid),
        .m_axi_rready(rready), .m_axi_rdata({BB*8{1'b0}}), .m_axi_rresp(2'b00), .m_axi_bresp(2'b00),
        .m_axi_rlast(1'b0), .m_axi_rid(1'b0), .m_axi_bid(1'b0), .m_axi_awvalid(), .m_axi_awready(1'b0),
        .m_axi_awaddr(), .m_axi_awlen(), .m_axi_awsize(), .m_axi_awburst(), .m_axi_awid(),
        .m_axi_wvalid(), .m_axi_wready(1'b0), .m_axi_wdata(), .m_axi_wstrb(), .m_axi_wlast(),
        .m_axi_bvalid(1'b0), .m_axi_bready(), .bus_err());
    /* verilator lint_on PINMISSING */
    assign port_gnt = gnt[1];
    assign ar_ready = c_ar_ready[1];
    assign r_valid = c_r_valid[1];

    // the slave: a burst's beats come back to back from RLAT cycles after its AR
    (* anyconst *) reg [7:0] f_rlat;
    always @(*) assume(f_rlat >= 1 && f_rlat <= LAT - 2);   // the read FIFO takes a cycle
    reg [8:0] f_left;      // beats of the accepted burst still to return
    reg [7:0] f_wait;      // cycles until its first beat
    assign rvalid = (f_left != 0) && (f_wait == 0);
    always @(posedge clk)
        if (rst) f_left <= 0;
        else if (arvalid) begin
            f_left <= 9'(arlen) + 9'd1;
            f_wait <= f_rlat - 8'd1;
        end else if (f_wait != 0) f_wait <= f_wait - 8'd1;
        else if (rvalid && rready) f_left <= f_left - 9'd1;

    // the timing model's duration of the head, in cycles (docs/timing.md, "Per-instruction durations")
    wire [3:0] elog = wgt ? 4'($clog2(`VTA_WGT_BYTES)) : 4'($clog2(`VTA_INP_BYTES));
    wire [31:0] row_bytes = 32'(x_size) << elog;
    wire [31:0] base = `VTA_MEM_DRAM_BASE(head), stride = 32'(`VTA_MEM_X_STRIDE(head));
    // bursts of a data row starting at DRAM element e: the BOUND windows its bytes touch
    function automatic [31:0] bursts(input [31:0] e, input [3:0] lg, input [31:0] nbytes);
        bursts = ((((e << lg) % BOUND) + nbytes - 1) / BOUND) + 1;
    endfunction
    wire [31:0] nb0 = (y_size > 0) ? bursts(base, elog, row_bytes) : 0;
    wire [31:0] nb1 = (y_size > 1) ? bursts(base + stride, elog, row_bytes) : 0;
    wire [31:0] nb2 = (y_size > 2) ? bursts(base + 2 * stride, elog, row_bytes) : 0;
    wire [31:0] n_bursts = nb0 + nb1 + nb2;
    wire [31:0] width = 32'(x_pad_0) + 32'(x_size) + 32'(x_pad_1);
    wire [31:0] pads = (32'(y_pad_0) + 32'(y_pad_1)) * width + 32'(y_size) * (32'(x_pad_0) + 32'(x_pad_1));
    wire [31:0] body = pads + 32'(y_size) * (row_bytes / BB) + n_bursts * (`F_REQUEST_DELAY + LAT);
    wire [31:0] n_bound = `F_ISSUE_DELAY + ((x_size == 0 || body == 0) ? 32'd1 : body);
    always @(*) if (head_valid) assume(n_bound <= MAXB);

    // one LOAD at a time, from its issue to the cycle after its last running cycle
`include "f_live_bound.svh"
    reg [31:0] f_nb;
    reg f_padded, f_wgt;
    always @(posedge clk)
        if (issue) begin
            f_nb <= (x_size == 0) ? 0 : n_bursts;
            f_padded <= x_size != 0 && y_size != 0 && pads != 0;
            f_wgt <= wgt;
        end
    always @(*) if (f_live && !rst)
        ll_one_burst_at_a_time: assert(!arvalid || f_left == 0);
    // the bound is met exactly (it is the model's duration), for each kind of segment
    always @(posedge clk) if (f_live && !rst) begin
        ll_cover_two_bursts_at_bound: cover(f_at_bound && f_nb == 2);
        ll_cover_padded_at_bound: cover(f_at_bound && f_padded);
        ll_cover_wgt_at_bound: cover(f_at_bound && f_wgt && f_nb == 1);
    end
endmodule
`default_nettype wire
