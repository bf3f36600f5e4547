// VTA-8 top level: fetch, the three instruction queues, load/compute/store, the four token
// queues, the five SRAMs, the AXI4 master (DRAM) and the AXI4-Lite register file (host).
`default_nettype none
`include "vta_cfg.vh"
module vta_top (
    input  wire        clk,
    input  wire        rst,
    // AXI4-Lite slave: registers
    input  wire        s_axil_awvalid,
    output wire        s_axil_awready,
    input  wire [7:0]  s_axil_awaddr,
    input  wire        s_axil_wvalid,
    output wire        s_axil_wready,
    input  wire [31:0] s_axil_wdata,
    input  wire [3:0]  s_axil_wstrb,
    output wire        s_axil_bvalid,
    input  wire        s_axil_bready,
    output wire [1:0]  s_axil_bresp,
    input  wire        s_axil_arvalid,
    output wire        s_axil_arready,
    input  wire [7:0]  s_axil_araddr,
    output wire        s_axil_rvalid,
    input  wire        s_axil_rready,
    output wire [31:0] s_axil_rdata,
    output wire [1:0]  s_axil_rresp,
    // AXI4 master: DRAM
    output wire        m_axi_arvalid,
    input  wire        m_axi_arready,
    output wire [31:0] m_axi_araddr,
    output wire [7:0]  m_axi_arlen,
    output wire [2:0]  m_axi_arsize,
    output wire [1:0]  m_axi_arburst,
    output wire [0:0]  m_axi_arid,
    input  wire        m_axi_rvalid,
    output wire        m_axi_rready,
    input  wire [`VTA_BUS_BYTES*8-1:0] m_axi_rdata,
    input  wire        m_axi_rlast,
    input  wire [1:0]  m_axi_rresp,
    input  wire [0:0]  m_axi_rid,
    output wire        m_axi_awvalid,
    input  wire        m_axi_awready,
    output wire [31:0] m_axi_awaddr,
    output wire [7:0]  m_axi_awlen,
    output wire [2:0]  m_axi_awsize,
    output wire [1:0]  m_axi_awburst,
    output wire [0:0]  m_axi_awid,
    output wire        m_axi_wvalid,
    input  wire        m_axi_wready,
    output wire [`VTA_BUS_BYTES*8-1:0] m_axi_wdata,
    output wire [`VTA_BUS_BYTES-1:0]   m_axi_wstrb,
    output wire        m_axi_wlast,
    input  wire        m_axi_bvalid,
    output wire        m_axi_bready,
    input  wire [1:0]  m_axi_bresp,
    input  wire [0:0]  m_axi_bid
);
    localparam K = `VTA_BUS_BYTES / `VTA_UOP_BYTES;
    localparam BW = `VTA_BUS_BYTES * 8;

    // ------------------------------------------------------------ run control
    wire        launch, finish, fetch_err, index_err, bus_err;
    wire [31:0] insn_count, insn_addr, fetch_err_index;
    wire [`VTA_ERROR_CODE_BITS-1:0] fetch_err_code;
    reg         running, done, error;
    reg  [31:0] cycle, cycles;
    reg  [`VTA_ERROR_CODE_BITS-1:0] error_code;
    reg  [31:0] error_index;
    wire        mrst = rst || launch;
    wire        enable = running;
    // Deadlock (spec section 6): nothing runs, starts, lands a push or fetches, and FINISH has not
    // completed; no state can change any more, so one such cycle is enough.
    wire        fetch_busy, load_run, compute_run, store_run, progress;
    wire        deadlock = !fetch_busy && !load_run && !compute_run && !store_run && !progress;

    // The run ends in the cycle of its first error or of FINISH (`running`, the modules' enable,
    // drops at once); its status (DONE, ERROR, CYCLES, ERROR_CODE/INDEX) is written a cycle later
    // from registers that load every cycle, so the last cycle of a module's body (a DMA's compares,
    // the retire, FINISH) does not reach the clock enables of those 100 flip-flops across the
    // die. A deadlock is seen a cycle late too (no state can change in it) and
    // its CYCLES are its first cycle's.
    reg        dead_q, ev_q, ev_err;
    reg [31:0] ev_cycle, ev_index;
    reg [`VTA_ERROR_CODE_BITS-1:0] ev_code;
    wire       stop_err = bus_err || fetch_err || index_err || dead_q;
    always @(posedge clk) begin
        dead_q <= running && !launch && deadlock && !finish;
        ev_q <= running && !launch && (stop_err || finish);
        ev_err <= stop_err;
        ev_cycle <= (dead_q && !(bus_err || fetch_err || index_err)) ? cycle - 1 : cycle;
        // a bus error first: the data fetch or compute saw may be that of the failed beat
        ev_code <= bus_err ? `VTA_ERROR_CODE_BITS'(`VTA_ERR_AXI_RESP) : fetch_err ? fetch_err_code :
                   index_err ? `VTA_ERROR_CODE_BITS'(`VTA_ERR_INDEX) : `VTA_ERROR_CODE_BITS'(`VTA_ERR_DEADLOCK);
        // (a bus error's NO_INDEX is applied at the capture, from ev_code, so bus_err, which comes
        // after the read FIFO's count and RREADY, does not fan out over these 32 flip-flops)
        ev_index <= fetch_err ? fetch_err_index : `VTA_NO_INDEX;
        if (rst) begin
            running <= 1'b0;
            done <= 1'b0;
            error <= 1'b0;
            cycle <= 0;
            cycles <= 0;
            error_code <= 0;
            error_index <= 0;
            dead_q <= 1'b0;
            ev_q <= 1'b0;
        end else if (launch) begin
            running <= 1'b1;
            done <= 1'b0;
            error <= 1'b0;
            cycle <= 0;
            cycles <= 0;
            error_code <= 0;
            error_index <= 0;
        end else begin
            if (running) begin
                cycle <= cycle + 1;
                if (stop_err || finish) running <= 1'b0;
            end
            if (ev_q) begin
                done <= 1'b1;
                error <= ev_err;
                cycles <= ev_cycle;
                if (ev_err) begin
                    error_code <= ev_code;
                    error_index <= (ev_code == `VTA_ERROR_CODE_BITS'(`VTA_ERR_AXI_RESP)) ? `VTA_NO_INDEX : ev_index;
                end
            end
        end
    end

    // ------------------------------------------------------------ statistics
    wire [31:0] inp_bytes, wgt_bytes, acc_bytes, uop_bytes, out_bytes, gemm_count, alu_count;
    wire [31:0] l_busy, l_tok, l_port, l_push, l_count;
    wire [31:0] c_busy, c_tok, c_port, c_push, c_count;
    wire [31:0] s_busy, s_tok, s_push, s_count;
    wire [31:0] f_queue, f_port;
    // Counter i of vta_sim.registers.COUNTERS in word i (store never waits for the read port).
    wire [`VTA_NUM_COUNTERS*32-1:0] counters;
    assign counters[`VTA_CNT_INP_LOAD_NBYTES*32 +: 32] = inp_bytes;
    assign counters[`VTA_CNT_WGT_LOAD_NBYTES*32 +: 32] = wgt_bytes;
    assign counters[`VTA_CNT_ACC_LOAD_NBYTES*32 +: 32] = acc_bytes;
    assign counters[`VTA_CNT_UOP_LOAD_NBYTES*32 +: 32] = uop_bytes;
    assign counters[`VTA_CNT_OUT_STORE_NBYTES*32 +: 32] = out_bytes;
    assign counters[`VTA_CNT_GEMM_COUNTER*32 +: 32] = gemm_count;
    assign counters[`VTA_CNT_ALU_COUNTER*32 +: 32] = alu_count;
    assign counters[`VTA_CNT_LOAD_BUSY_CYCLES*32 +: 32] = l_busy;
    assign counters[`VTA_CNT_LOAD_STALL_TOKEN_CYCLES*32 +: 32] = l_tok;
    assign counters[`VTA_CNT_LOAD_STALL_PORT_CYCLES*32 +: 32] = l_port;
    assign counters[`VTA_CNT_LOAD_STALL_PUSH_CYCLES*32 +: 32] = l_push;
    assign counters[`VTA_CNT_LOAD_INSN_COUNT*32 +: 32] = l_count;
    assign counters[`VTA_CNT_COMPUTE_BUSY_CYCLES*32 +: 32] = c_busy;
    assign counters[`VTA_CNT_COMPUTE_STALL_TOKEN_CYCLES*32 +: 32] = c_tok;
    assign counters[`VTA_CNT_COMPUTE_STALL_PORT_CYCLES*32 +: 32] = c_port;
    assign counters[`VTA_CNT_COMPUTE_STALL_PUSH_CYCLES*32 +: 32] = c_push;
    assign counters[`VTA_CNT_COMPUTE_INSN_COUNT*32 +: 32] = c_count;
    assign counters[`VTA_CNT_STORE_BUSY_CYCLES*32 +: 32] = s_busy;
    assign counters[`VTA_CNT_STORE_STALL_TOKEN_CYCLES*32 +: 32] = s_tok;
    assign counters[`VTA_CNT_STORE_STALL_PORT_CYCLES*32 +: 32] = 32'd0;
    assign counters[`VTA_CNT_STORE_STALL_PUSH_CYCLES*32 +: 32] = s_push;
    assign counters[`VTA_CNT_STORE_INSN_COUNT*32 +: 32] = s_count;
    assign counters[`VTA_CNT_FETCH_STALL_QUEUE_CYCLES*32 +: 32] = f_queue;
    assign counters[`VTA_CNT_FETCH_STALL_PORT_CYCLES*32 +: 32] = f_port;

    vta_regs regs (
        .clk(clk), .rst(rst),
        .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready), .s_axil_awaddr(s_axil_awaddr),
        .s_axil_wvalid(s_axil_wvalid), .s_axil_wready(s_axil_wready), .s_axil_wdata(s_axil_wdata),
        .s_axil_wstrb(s_axil_wstrb), .s_axil_bvalid(s_axil_bvalid), .s_axil_bready(s_axil_bready),
        .s_axil_bresp(s_axil_bresp), .s_axil_arvalid(s_axil_arvalid), .s_axil_arready(s_axil_arready),
        .s_axil_araddr(s_axil_araddr), .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
        .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
        .launch(launch), .insn_count(insn_count), .insn_addr(insn_addr),
        .running(running), .done(done), .error(error), .cycles(cycles),
        .error_code(error_code), .error_index(error_index), .counters(counters));

    // ------------------------------------------------------------ read port
    wire [2:0]  port_req, port_gnt, port_done, c_ar_valid, c_ar_ready, c_r_valid, c_r_ready;
    wire [95:0] c_ar_addr;
    wire [23:0] c_ar_len;
    wire [BW-1:0] r_data;
    wire        st_aw_valid, st_aw_ready, st_w_valid, st_w_last, st_w_ready, st_b_valid;
    wire [31:0] st_aw_addr;
    wire [7:0]  st_aw_len;
    wire [BW-1:0] st_w_data;

    vta_axi_master axi (
        .clk(clk), .rst(mrst),
        .port_req(port_req), .port_gnt(port_gnt), .port_done(port_done),
        .c_ar_valid(c_ar_valid), .c_ar_addr(c_ar_addr), .c_ar_len(c_ar_len), .c_ar_ready(c_ar_ready),
        .c_r_valid(c_r_valid), .c_r_data(r_data), .c_r_ready(c_r_ready),
        .s_aw_valid(st_aw_valid), .s_aw_addr(st_aw_addr), .s_aw_len(st_aw_len), .s_aw_ready(st_aw_ready),
        .s_w_valid(st_w_valid), .s_w_data(st_w_data), .s_w_last(st_w_last), .s_w_ready(st_w_ready),
        .s_b_valid(st_b_valid),
        .m_axi_arvalid(m_axi_arvalid), .m_axi_arready(m_axi_arready), .m_axi_araddr(m_axi_araddr),
        .m_axi_arlen(m_axi_arlen), .m_axi_arsize(m_axi_arsize), .m_axi_arburst(m_axi_arburst),
        .m_axi_arid(m_axi_arid), .m_axi_rvalid(m_axi_rvalid), .m_axi_rready(m_axi_rready),
        .m_axi_rdata(m_axi_rdata), .m_axi_rlast(m_axi_rlast), .m_axi_rresp(m_axi_rresp),
        .m_axi_rid(m_axi_rid), .m_axi_bresp(m_axi_bresp), .m_axi_bid(m_axi_bid),
        .m_axi_awvalid(m_axi_awvalid), .m_axi_awready(m_axi_awready), .m_axi_awaddr(m_axi_awaddr),
        .m_axi_awlen(m_axi_awlen), .m_axi_awsize(m_axi_awsize), .m_axi_awburst(m_axi_awburst),
        .m_axi_awid(m_axi_awid), .m_axi_wvalid(m_axi_wvalid), .m_axi_wready(m_axi_wready),
        .m_axi_wdata(m_axi_wdata), .m_axi_wstrb(m_axi_wstrb), .m_axi_wlast(m_axi_wlast),
        .m_axi_bvalid(m_axi_bvalid), .m_axi_bready(m_axi_bready), .bus_err(bus_err));

    // ------------------------------------------------------------ fetch and instruction queues
    wire [127:0] q_data;
    wire [2:0]   q_valid, q_ready, h_valid, h_ready;
    wire [127:0] h_load, h_comp, h_store;
    vta_fetch fetch (
        .clk(clk), .rst(rst), .launch(launch), .insn_addr(insn_addr), .insn_count(insn_count),
        .port_req(port_req[0]), .port_gnt(port_gnt[0]), .port_done(port_done[0]),
        .ar_valid(c_ar_valid[0]), .ar_addr(c_ar_addr[31:0]), .ar_len(c_ar_len[7:0]), .ar_ready(c_ar_ready[0]),
        .r_valid(c_r_valid[0]), .r_data(r_data), .r_ready(c_r_ready[0]),
        .q_data(q_data), .q_valid(q_valid), .q_ready(q_ready),
        .err(fetch_err), .err_code(fetch_err_code), .err_index(fetch_err_index),
        .busy(fetch_busy), .stall_queue(f_queue), .stall_port(f_port));

    vta_fifo #(.WIDTH(128), .DEPTH(`VTA_CMD_QUEUE_DEPTH), .BYPASS(0)) load_q (
        .clk(clk), .rst(mrst), .in_valid(q_valid[0]), .in_data(q_data), .in_ready(q_ready[0]),
        .out_valid(h_valid[0]), .out_data(h_load), .out_ready(h_ready[0]),
        /* verilator lint_off PINCONNECTEMPTY */ .count() /* verilator lint_on PINCONNECTEMPTY */);
    vta_fifo #(.WIDTH(128), .DEPTH(`VTA_CMD_QUEUE_DEPTH), .BYPASS(0)) compute_q (
        .clk(clk), .rst(mrst), .in_valid(q_valid[1]), .in_data(q_data), .in_ready(q_ready[1]),
        .out_valid(h_valid[1]), .out_data(h_comp), .out_ready(h_ready[1]),
        /* verilator lint_off PINCONNECTEMPTY */ .count() /* verilator lint_on PINCONNECTEMPTY */);
    vta_fifo #(.WIDTH(128), .DEPTH(`VTA_CMD_QUEUE_DEPTH), .BYPASS(0)) store_q (
        .clk(clk), .rst(mrst), .in_valid(q_valid[2]), .in_data(q_data), .in_ready(q_ready[2]),
        .out_valid(h_valid[2]), .out_data(h_store), .out_ready(h_ready[2]),
        /* verilator lint_off PINCONNECTEMPTY */ .count() /* verilator lint_on PINCONNECTEMPTY */);

    // ------------------------------------------------------------ token queues
    wire l2c_push, l2c_ok, l2c_avail, l2c_pop, c2l_push, c2l_ok, c2l_avail, c2l_pop;
    wire c2s_push, c2s_ok, c2s_avail, c2s_pop, s2c_push, s2c_ok, s2c_avail, s2c_pop;
    vta_token_queue #(.DEPTH(`VTA_TOKEN_DEPTH)) l2c (.clk(clk), .rst(mrst), .push_req(l2c_push),
        .push_ok(l2c_ok), .avail(l2c_avail), .pop(l2c_pop),
        /* verilator lint_off PINCONNECTEMPTY */ .count() /* verilator lint_on PINCONNECTEMPTY */);
    vta_token_queue #(.DEPTH(`VTA_TOKEN_DEPTH)) c2l (.clk(clk), .rst(mrst), .push_req(c2l_push),
        .push_ok(c2l_ok), .avail(c2l_avail), .pop(c2l_pop),
        /* verilator lint_off PINCONNECTEMPTY */ .count() /* verilator lint_on PINCONNECTEMPTY */);
    vta_token_queue #(.DEPTH(`VTA_TOKEN_DEPTH)) c2s (.clk(clk), .rst(mrst), .push_req(c2s_push),
        .push_ok(c2s_ok), .avail(c2s_avail), .pop(c2s_pop),
        /* verilator lint_off PINCONNECTEMPTY */ .count() /* verilator lint_on PINCONNECTEMPTY */);
    vta_token_queue #(.DEPTH(`VTA_TOKEN_DEPTH)) s2c (.clk(clk), .rst(mrst), .push_req(s2c_push),
        .push_ok(s2c_ok), .avail(s2c_avail), .pop(s2c_pop),
        /* verilator lint_off PINCONNECTEMPTY */ .count() /* verilator lint_on PINCONNECTEMPTY */);
    assign progress = (|h_ready) || (l2c_push && l2c_ok) || (c2l_push && c2l_ok) ||
                      (c2s_push && c2s_ok) || (s2c_push && s2c_ok);

    // ------------------------------------------------------------ SRAMs
    wire                        inp_we, wgt_we;
    /* verilator lint_off UNUSEDSIGNAL */  // SRAM indices are 16-bit fields, the SRAMs use their low bits
    wire [15:0]                 ld_waddr;
    wire [`VTA_WGT_BYTES*8-1:0] ld_wdata;
    wire [K-1:0]                uop_we;
    wire [15:0]                 uop_waddr;
    wire [15:0]                 out_raddr;
    /* verilator lint_on UNUSEDSIGNAL */
    wire [K*32-1:0]             uop_wdata;
    wire [`VTA_LU-1:0]          uop_raddr;
    wire [31:0]                 uop_rdata;
    wire                        acc_we, out_we;
    wire [`VTA_LA-1:0]          acc_waddr, acc_raddr;
    wire [`VTA_ACC_BYTES*8-1:0] acc_wdata, acc_rdata;
    wire [`VTA_OUT_BYTES*8-1:0] out_wdata, out_rdata;
    wire [`VTA_LI-1:0]          inp_raddr;
    wire [`VTA_INP_BYTES*8-1:0] inp_rdata;
    wire [`VTA_LW-1:0]          wgt_raddr;
    wire [`VTA_WGT_BYTES*8-1:0] wgt_rdata;

    vta_sram_banked #(.WIDTH(32), .AW(`VTA_LU), .LANES(K), .RD_REG(1)) uop_mem (.clk(clk), .we(uop_we),
        .waddr(`VTA_LU'(uop_waddr)), .wdata(uop_wdata), .raddr(uop_raddr), .rdata(uop_rdata));
    vta_sram #(.WIDTH(`VTA_INP_BYTES*8), .AW(`VTA_LI), .RD_REG(1)) inp_mem (.clk(clk), .we(inp_we),
        .waddr(`VTA_LI'(ld_waddr)), .wdata(ld_wdata[`VTA_INP_BYTES*8-1:0]), .raddr(inp_raddr),
        .rdata(inp_rdata));
    vta_sram #(.WIDTH(`VTA_WGT_BYTES*8), .AW(`VTA_LW), .RD_REG(1)) wgt_mem (.clk(clk), .we(wgt_we),
        .waddr(`VTA_LW'(ld_waddr)), .wdata(ld_wdata), .raddr(wgt_raddr), .rdata(wgt_rdata));
    vta_sram #(.WIDTH(`VTA_ACC_BYTES*8), .AW(`VTA_LA), .RD_REG(1)) acc_mem (.clk(clk), .we(acc_we),
        .waddr(acc_waddr), .wdata(acc_wdata), .raddr(acc_raddr), .rdata(acc_rdata));
    vta_sram #(.WIDTH(`VTA_OUT_BYTES*8), .AW(`VTA_LA), .RD_REG(1)) out_mem (.clk(clk), .we(out_we),
        .waddr(acc_waddr), .wdata(out_wdata), .raddr(`VTA_LA'(out_raddr)), .rdata(out_rdata));

    // ------------------------------------------------------------ modules
    vta_load load (
        .clk(clk), .rst(mrst), .enable(enable),
        .head_valid(h_valid[0]), .head(h_load), .head_ready(h_ready[0]),
        .c2l_avail(c2l_avail), .c2l_pop(c2l_pop), .l2c_push(l2c_push), .l2c_push_ok(l2c_ok),
        .port_req(port_req[1]), .port_gnt(port_gnt[1]), .port_done(port_done[1]),
        .ar_valid(c_ar_valid[1]), .ar_addr(c_ar_addr[63:32]), .ar_len(c_ar_len[15:8]), .ar_ready(c_ar_ready[1]),
        .r_valid(c_r_valid[1]), .r_data(r_data), .r_ready(c_r_ready[1]),
        .inp_we(inp_we), .wgt_we(wgt_we), .sram_waddr(ld_waddr), .sram_wdata(ld_wdata),
        .inp_bytes(inp_bytes), .wgt_bytes(wgt_bytes), .busy_cycles(l_busy), .stall_token(l_tok),
        .stall_port(l_port), .stall_push(l_push), .insn_count(l_count), .running(load_run));

    vta_compute compute (
        .clk(clk), .rst(mrst), .enable(enable),
        .head_valid(h_valid[1]), .head(h_comp), .head_ready(h_ready[1]),
        .l2c_avail(l2c_avail), .l2c_pop(l2c_pop), .s2c_avail(s2c_avail), .s2c_pop(s2c_pop),
        .c2l_push(c2l_push), .c2l_push_ok(c2l_ok), .c2s_push(c2s_push), .c2s_push_ok(c2s_ok),
        .port_req(port_req[2]), .port_gnt(port_gnt[2]), .port_done(port_done[2]),
        .ar_valid(c_ar_valid[2]), .ar_addr(c_ar_addr[95:64]), .ar_len(c_ar_len[23:16]), .ar_ready(c_ar_ready[2]),
        .r_valid(c_r_valid[2]), .r_data(r_data), .r_ready(c_r_ready[2]),
        .uop_we(uop_we), .uop_waddr(uop_waddr), .uop_wdata(uop_wdata), .uop_raddr(uop_raddr),
        .uop_rdata(uop_rdata), .acc_we(acc_we), .acc_waddr(acc_waddr), .acc_wdata(acc_wdata),
        .acc_raddr(acc_raddr), .acc_rdata(acc_rdata), .out_we(out_we), .out_wdata(out_wdata),
        .inp_raddr(inp_raddr), .inp_rdata(inp_rdata), .wgt_raddr(wgt_raddr), .wgt_rdata(wgt_rdata),
        .finish(finish), .err(index_err),
        .acc_bytes(acc_bytes), .uop_bytes(uop_bytes), .gemm_count(gemm_count), .alu_count(alu_count),
        .busy_cycles(c_busy), .stall_token(c_tok), .stall_port(c_port), .stall_push(c_push),
        .insn_count(c_count), .running(compute_run));

    vta_store store (
        .clk(clk), .rst(mrst), .enable(enable),
        .head_valid(h_valid[2]), .head(h_store), .head_ready(h_ready[2]),
        .c2s_avail(c2s_avail), .c2s_pop(c2s_pop), .s2c_push(s2c_push), .s2c_push_ok(s2c_ok),
        .out_raddr(out_raddr), .out_rdata(out_rdata),
        .aw_valid(st_aw_valid), .aw_addr(st_aw_addr), .aw_len(st_aw_len), .aw_ready(st_aw_ready),
        .w_valid(st_w_valid), .w_data(st_w_data), .w_last(st_w_last), .w_ready(st_w_ready),
        .b_valid(st_b_valid),
        .out_bytes(out_bytes), .busy_cycles(s_busy), .stall_token(s_tok), .stall_push(s_push),
        .insn_count(s_count), .running(store_run));
endmodule
`default_nettype wire
