// An AXI error response reaches ERROR_CODE: vta_top with any host and any DRAM slave at its ports.
// A read beat or write response with SLVERR or DECERR taken while a run is going (not in a
// launch) ends it the next cycle with error and done set and error_code = AXI_RESP (the code of
// vta_sim.registers.ERROR_CODES, through the generated header), whatever else failed in that cycle;
// the code then stays until the next launch or reset. vta_regs returns error_code as the
// ERROR_CODE register (f_regs), the masters raise bus_err on exactly these responses (f_axi_read,
// f_axi_write). Both properties follow from one transition: k-induction with k = 1.
`default_nettype none
`include "vta_cfg.vh"
module f_error_code (
    input wire clk,
    input wire rst,
    input wire s_axil_awvalid,
    input wire [7:0] s_axil_awaddr,
    input wire s_axil_wvalid,
    input wire [31:0] s_axil_wdata,
    input wire [3:0] s_axil_wstrb,
    input wire s_axil_bready,
    input wire s_axil_arvalid,
    input wire [7:0] s_axil_araddr,
    input wire s_axil_rready,
    input wire m_axi_arready,
    input wire m_axi_rvalid,
    input wire [`VTA_BUS_BYTES*8-1:0] m_axi_rdata,
    input wire m_axi_rlast,
    input wire [1:0] m_axi_rresp,
    input wire m_axi_awready,
    input wire m_axi_wready,
    input wire m_axi_bvalid,
    input wire [1:0] m_axi_bresp
);
`include "f_reset.svh"
    wire rready, bready;
    /* verilator lint_off PINMISSING */
    vta_top top (
        .clk(clk), .rst(rst), .s_axil_awvalid(s_axil_awvalid), .s_axil_awaddr(s_axil_awaddr),
        .s_axil_wvalid(s_axil_wvalid), .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb),
        .s_axil_bready(s_axil_bready), .s_axil_arvalid(s_axil_arvalid), .s_axil_araddr(s_axil_araddr),
        .s_axil_rready(s_axil_rready), .m_axi_arready(m_axi_arready), .m_axi_rvalid(m_axi_rvalid),
        .m_axi_rready(rready), .m_axi_rdata(m_axi_rdata), .m_axi_rlast(m_axi_rlast), .m_axi_rresp(m_axi_rresp),
        .m_axi_rid(1'b0), .m_axi_awready(m_axi_awready), .m_axi_wready(m_axi_wready), .m_axi_bvalid(m_axi_bvalid),
        .m_axi_bready(bready), .m_axi_bresp(m_axi_bresp), .m_axi_bid(1'b0));
    /* verilator lint_on PINMISSING */
    (* f_peek = "top.running" *) wire p_running;
    (* f_peek = "top.launch" *) wire p_launch;
    (* f_peek = "top.error" *) wire p_error;
    (* f_peek = "top.done" *) wire p_done;
    (* f_peek = "top.error_code" *) wire [`VTA_ERROR_CODE_BITS-1:0] p_error_code;
    (* f_peek = "top.ev_q" *) wire p_ev_q;
    (* f_peek = "top.ev_err" *) wire p_ev_err;
    (* f_peek = "top.ev_code" *) wire [`VTA_ERROR_CODE_BITS-1:0] p_ev_code;
    localparam SLVERR = 2'b10, DECERR = 2'b11;
    wire resp_err = (m_axi_rvalid && rready && (m_axi_rresp == SLVERR || m_axi_rresp == DECERR)) ||
                    (m_axi_bvalid && bready && (m_axi_bresp == SLVERR || m_axi_bresp == DECERR));
    // two cycles ago an error response in a run (its status is written a cycle after the run
    // stops, hw/rtl/vta_top.v), no launch since; last cycle: no run, no status pending
    reg f_err_now = 1'b0, f_err_seen = 1'b0, f_idle = 1'b0, f_past = 1'b0;
    reg [`VTA_ERROR_CODE_BITS-1:0] f_code;
    always @(posedge clk) begin
        f_past <= 1'b1;
        f_err_now <= !rst && !p_launch && p_running && resp_err;
        f_err_seen <= !rst && !p_launch && f_err_now;
        f_idle <= !rst && !p_launch && !p_running && !p_ev_q;   // and no status still to write
        f_code <= p_error_code;
    end
    // the step between (f_err_now needs no history: its register starts at 0)
    always @(*)
        err_resp_stops_the_run: assert(!f_err_now || (p_ev_q && p_ev_err && !p_running &&
                                                       p_ev_code == `VTA_ERROR_CODE_BITS'(`VTA_ERR_AXI_RESP)));
    always @(*) if (f_past) begin
        err_resp_sets_code: assert(!f_err_seen || (p_error_code == `VTA_ERROR_CODE_BITS'(`VTA_ERR_AXI_RESP) &&
                                                  p_error && p_done && !p_running));
        err_code_kept: assert(!f_idle || p_error_code == f_code);
    end
    always @(posedge clk) if (f_live && !rst) begin
        err_cover_axi_resp: cover(f_err_seen);
    end
endmodule
`default_nettype wire
