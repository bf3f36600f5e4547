// AXI4-Lite slave (vta_regs): the handshake rules of the slave's side, one response per request,
// and the register map of vta_sim.registers read back as written (INSN_COUNT, INSN_ADDR) or as
// the device reports it (CTRL/STATUS, CYCLES, ERROR_*, the counters); CTRL's start bit launches.
`default_nettype none
`include "vta_cfg.vh"
module f_regs (
    input wire clk,
    input wire rst,
    input wire awvalid,
    input wire [7:0] awaddr,
    input wire wvalid,
    input wire [31:0] wdata,
    input wire [3:0] wstrb,
    input wire bready,
    input wire arvalid,
    input wire [7:0] araddr,
    input wire rready,
    input wire running,
    input wire done,
    input wire error,
    input wire [31:0] cycles,
    input wire [`VTA_ERROR_CODE_BITS-1:0] error_code,
    input wire [31:0] error_index,
    input wire [`VTA_NUM_COUNTERS*32-1:0] counters
);
`include "f_reset.svh"
    wire awready, wready, bvalid, arready, rvalid, launch;
    wire [1:0] bresp, rresp;
    wire [31:0] rdata, insn_count, insn_addr;
    vta_regs dut (
        .clk(clk), .rst(rst), .s_axil_awvalid(awvalid), .s_axil_awready(awready), .s_axil_awaddr(awaddr),
        .s_axil_wvalid(wvalid), .s_axil_wready(wready), .s_axil_wdata(wdata), .s_axil_wstrb(wstrb),
        .s_axil_bvalid(bvalid), .s_axil_bready(bready), .s_axil_bresp(bresp),
        .s_axil_arvalid(arvalid), .s_axil_arready(arready), .s_axil_araddr(araddr),
        .s_axil_rvalid(rvalid), .s_axil_rready(rready), .s_axil_rdata(rdata), .s_axil_rresp(rresp),
        .launch(launch), .insn_count(insn_count), .insn_addr(insn_addr), .running(running), .done(done),
        .error(error), .cycles(cycles), .error_code(error_code), .error_index(error_index),
        .counters(counters));

    // the host follows AXI4-Lite: a VALID stays up, its payload stable, until READY
    reg f_aw_wait, f_w_wait, f_ar_wait;
    reg [7:0] f_awaddr, f_araddr;
    reg [31:0] f_wdata;
    always @(posedge clk) begin
        f_aw_wait <= !rst && awvalid && !awready;
        f_w_wait <= !rst && wvalid && !wready;
        f_ar_wait <= !rst && arvalid && !arready;
        f_awaddr <= awaddr;
        f_araddr <= araddr;
        f_wdata <= wdata;
    end
    always @(*) if (!rst) begin
        if (f_aw_wait) assume(awvalid && awaddr == f_awaddr);
        if (f_w_wait) assume(wvalid && wdata == f_wdata);
        if (f_ar_wait) assume(arvalid && araddr == f_araddr);
    end

    wire aw_hs = awvalid && awready, w_hs = wvalid && wready, ar_hs = arvalid && arready;
    wire b_hs = bvalid && bready, r_hs = rvalid && rready;
    // reference register file: what the host wrote, and what a read must return
    reg [31:0] f_count, f_addr, f_expect;
    reg f_b_owed, f_r_owed, f_start_written;
    reg [31:0] f_expect_now;
    wire [5:0] rsel = araddr[7:2];
    integer i;
    always @(*) begin
        f_expect_now = 32'd0;
        if (rsel == `VTA_REG_CTRL)
            f_expect_now = (32'(running) << `VTA_STATUS_RUNNING) | (32'(done) << `VTA_STATUS_DONE) |
                           (32'(error) << `VTA_STATUS_ERROR);
        if (rsel == `VTA_REG_CYCLES) f_expect_now = cycles;
        if (rsel == `VTA_REG_INSN_COUNT) f_expect_now = f_count;
        if (rsel == `VTA_REG_INSN_ADDR) f_expect_now = f_addr;
        if (rsel == `VTA_REG_ERROR_CODE) f_expect_now = 32'(error_code);
        if (rsel == `VTA_REG_ERROR_INDEX) f_expect_now = error_index;
        for (i = 0; i < `VTA_NUM_COUNTERS; i = i + 1)
            if (32'(rsel) == `VTA_REG_COUNTERS + i) f_expect_now = counters[i * 32 +: 32];
    end
    always @(posedge clk)
        if (rst) begin
            {f_count, f_addr, f_b_owed, f_r_owed, f_start_written} <= 0;
        end else begin
            f_start_written <= aw_hs && w_hs && awaddr[7:2] == `VTA_REG_CTRL && wdata[`VTA_CTRL_START];
            if (aw_hs && w_hs) begin
                if (awaddr[7:2] == `VTA_REG_INSN_COUNT) f_count <= wdata;
                if (awaddr[7:2] == `VTA_REG_INSN_ADDR) f_addr <= wdata;
            end
            if (aw_hs) f_b_owed <= 1'b1;
            else if (b_hs) f_b_owed <= 1'b0;
            if (ar_hs) begin
                f_r_owed <= 1'b1;
                f_expect <= f_expect_now;
            end else if (r_hs) f_r_owed <= 1'b0;
        end

    reg f_b_wait, f_r_wait;
    reg [31:0] f_rdata;
    always @(posedge clk) begin
        f_b_wait <= !rst && bvalid && !bready;
        f_r_wait <= !rst && rvalid && !rready;
        f_rdata <= rdata;
    end
    always @(*) if (f_live && !rst) begin
        lite_aw_with_w: assert(aw_hs == w_hs);
        lite_b_held: assert(!f_b_wait || bvalid);
        lite_r_held: assert(!f_r_wait || (rvalid && rdata == f_rdata));
        lite_one_b_per_write: assert(bvalid == f_b_owed && !(aw_hs && bvalid));
        lite_one_r_per_read: assert(rvalid == f_r_owed && !(ar_hs && rvalid));
        lite_okay: assert(bresp == 2'b00 && rresp == 2'b00);
        lite_read_back: assert(!rvalid || rdata == f_expect);
        lite_insn_regs: assert(insn_count == f_count && insn_addr == f_addr);
        lite_launch_on_start: assert(launch == f_start_written);
    end
    always @(posedge clk) if (f_live && !rst) begin
        lite_cover_read_back_addr: cover(r_hs && f_addr != 0 && rdata == f_addr);
        lite_cover_b_stalled: cover(f_b_wait && bvalid && !bready);
        lite_cover_counter_read: cover(rvalid && f_expect == counters[`VTA_NUM_COUNTERS * 32 - 32 +: 32] && f_expect != 0);
        lite_cover_launch: cover(launch);
    end
endmodule
`default_nettype wire
