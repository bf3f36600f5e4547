// Unit-bench wrapper: the FIFO with its bypass (the read FIFO) and without (the instruction
// queues) on the same inputs, the token queue, the GEMM core and the ALU core (REQ's lanes with it), and a four-entry
// SRAM with each read latency on the same inputs, with their ports brought out for
// hw/tests/unit_bench.py.
`default_nettype none
`include "vta_cfg.vh"
module vta_units_tb (
    input  wire        clk,
    input  wire        rst,
    input  wire        f_in_valid,
    input  wire [7:0]  f_in_data,
    output wire        f_in_ready,
    output wire        f_out_valid,
    output wire [7:0]  f_out_data,
    input  wire        f_out_ready,
    output wire [2:0]  f_count,
    output wire        q_in_ready,
    output wire        q_out_valid,
    output wire [7:0]  q_out_data,
    output wire [2:0]  q_count,
    input  wire        t_push_req,
    output wire        t_push_ok,
    output wire        t_avail,
    input  wire        t_pop,
    output wire [$clog2(`VTA_TOKEN_DEPTH + 1)-1:0] t_count,
    input  wire                        g_reset,
    input  wire [`VTA_INP_BYTES*8-1:0] g_inp,
    input  wire [`VTA_WGT_BYTES*8-1:0] g_wgt,
    input  wire [`VTA_ACC_BYTES*8-1:0] g_acc_in,
    output wire [`VTA_ACC_BYTES*8-1:0] g_acc_out,
    input  wire                        a_reset,
    input  wire [2:0]                  a_op,
    input  wire [`VTA_ACC_BYTES*8-1:0] a_x,
    input  wire [`VTA_ACC_BYTES*8-1:0] a_y,
    output wire [`VTA_ACC_BYTES*8-1:0] a_z,
    output wire [`VTA_ACC_BYTES*8-1:0] a_zr,
    input  wire [`VTA_REQ_SHIFT_BITS-1:0] a_n,
    input  wire [`VTA_REQ_ZP_BITS-1:0]    a_zp,
    output wire [`VTA_ACC_BYTES*8-1:0] a_zq,
    input  wire        m_we,
    input  wire [1:0]  m_waddr,
    input  wire [7:0]  m_wdata,
    input  wire [1:0]  m_raddr,
    output wire [7:0]  m_rdata1,      // RD_REG = 0: one cycle after the address
    output wire [7:0]  m_rdata2       // RD_REG = 1: two cycles after it
);
    vta_fifo #(.WIDTH(8), .DEPTH(4)) fifo (.clk(clk), .rst(rst), .in_valid(f_in_valid), .in_data(f_in_data),
        .in_ready(f_in_ready), .out_valid(f_out_valid), .out_data(f_out_data), .out_ready(f_out_ready),
        .count(f_count));
    vta_fifo #(.WIDTH(8), .DEPTH(4), .BYPASS(0)) queue (.clk(clk), .rst(rst), .in_valid(f_in_valid),
        .in_data(f_in_data), .in_ready(q_in_ready), .out_valid(q_out_valid), .out_data(q_out_data),
        .out_ready(f_out_ready), .count(q_count));
    vta_token_queue #(.DEPTH(`VTA_TOKEN_DEPTH)) tokens (.clk(clk), .rst(rst), .push_req(t_push_req),
        .push_ok(t_push_ok), .avail(t_avail), .pop(t_pop), .count(t_count));
    vta_gemm_core gemm (.clk(clk), .reset(g_reset), .inp(g_inp), .wgt(g_wgt), .acc_in(g_acc_in), .acc_out(g_acc_out));
    vta_alu_core alu (.clk(clk), .reset(a_reset), .op(a_op), .x(a_x), .y(a_y), .xm(a_x), .ym(a_y), .z(a_z), .zr(a_zr),
                      .n(a_n), .zp(a_zp), .zq(a_zq));
    vta_sram #(.WIDTH(8), .AW(2), .RD_REG(0)) sram1 (.clk(clk), .we(m_we), .waddr(m_waddr), .wdata(m_wdata),
        .raddr(m_raddr), .rdata(m_rdata1));
    vta_sram #(.WIDTH(8), .AW(2), .RD_REG(1)) sram2 (.clk(clk), .we(m_we), .waddr(m_waddr), .wdata(m_wdata),
        .raddr(m_raddr), .rdata(m_rdata2));
endmodule
`default_nettype wire
