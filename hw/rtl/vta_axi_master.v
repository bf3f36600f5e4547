// The AXI4 master: one read port shared by fetch (client 0), load (1) and compute (2), one write
// port used by store. The read port is granted, in the cycle it is free, to the highest-priority
// requester (fetch > compute > load) for one burst, held until the holder signals the burst's
// last cycle (docs/timing.md "Resources"). Read data goes through a FIFO so that DRAM may answer early.
// The FIFO does not bypass: a beat reaches its client the cycle after it arrives, so the clients'
// data paths start at the FIFO's registers, not at a bypass select fanned out over the bus width
// into the DMAs' SRAM write data. The cycle comes out of
// DMA_READ_LATENCY's slack: a DRAM answering two cycles before the burst's end stays exact.
`default_nettype none
`include "vta_cfg.vh"
module vta_axi_master (
    input  wire        clk,
    input  wire        rst,
    // read clients
    input  wire [2:0]  port_req,
    output wire [2:0]  port_gnt,
    input  wire [2:0]  port_done,
    input  wire [2:0]  c_ar_valid,
    input  wire [95:0] c_ar_addr,
    input  wire [23:0] c_ar_len,
    output wire [2:0]  c_ar_ready,
    output wire [2:0]  c_r_valid,
    output wire [`VTA_BUS_BYTES*8-1:0] c_r_data,
    input  wire [2:0]  c_r_ready,
    // write client (store)
    input  wire        s_aw_valid,
    input  wire [31:0] s_aw_addr,
    input  wire [7:0]  s_aw_len,
    output wire        s_aw_ready,
    input  wire        s_w_valid,
    input  wire [`VTA_BUS_BYTES*8-1:0] s_w_data,
    input  wire        s_w_last,
    output wire        s_w_ready,
    output wire        s_b_valid,
    // AXI4 master
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
    input  wire [1:0]  m_axi_rresp,
    input  wire [1:0]  m_axi_bresp,
    /* verilator lint_off UNUSEDSIGNAL */  // bursts are counted and there is one ID
    input  wire        m_axi_rlast,
    input  wire [0:0]  m_axi_rid,
    input  wire [0:0]  m_axi_bid,
    /* verilator lint_on UNUSEDSIGNAL */
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
    output wire        bus_err      // a read beat or write response is SLVERR or DECERR
);
    reg       owned;
    reg [1:0] owner;
    // owned and owner again, one-hot: every client's beat valid and the FIFO's read are an AND
    // of this register with the FIFO's, so no decode of the owner sits in front of a DMA's beat
    // and its position registers' enables
    reg [2:0] own;

    wire port_free = !owned || port_done[owner];
    assign port_gnt[0] = port_free && port_req[0];
    assign port_gnt[2] = port_free && port_req[2] && !port_req[0];
    assign port_gnt[1] = port_free && port_req[1] && !port_req[2] && !port_req[0];

    always @(posedge clk) begin
        if (rst) begin
            owned <= 1'b0;
            owner <= 2'd0;
            own <= 3'b000;
        end else if (port_gnt != 3'b000) begin
            owned <= 1'b1;
            owner <= port_gnt[0] ? 2'd0 : port_gnt[2] ? 2'd2 : 2'd1;
            own <= port_gnt;   // one-hot: the arbiter grants one client
        end else if (owned && port_done[owner]) begin
            owned <= 1'b0;
            own <= 3'b000;
        end
    end
`ifdef FORMAL
    always @(*) if (!rst) axi_own_reg: assert(own == (owned ? (3'b001 << owner) : 3'b000));
`endif
    assign m_axi_arvalid = |(c_ar_valid & own);
    assign m_axi_araddr  = c_ar_addr[owner * 32 +: 32];
    assign m_axi_arlen   = c_ar_len[owner * 8 +: 8];
    assign m_axi_arsize  = 3'(`VTA_LOG_BUS_BYTES);
    assign m_axi_arburst = 2'b01;
    assign m_axi_arid    = 1'b0;
    assign c_ar_ready    = own & {3{m_axi_arready}};

    wire r_out_valid;
    vta_fifo #(.WIDTH(`VTA_BUS_BYTES*8), .DEPTH(`VTA_RFIFO_DEPTH), .BYPASS(0)) rfifo (
        .clk(clk), .rst(rst),
        .in_valid(m_axi_rvalid), .in_data(m_axi_rdata), .in_ready(m_axi_rready),
        .out_valid(r_out_valid), .out_data(c_r_data), .out_ready(|(c_r_ready & own)),
        /* verilator lint_off PINCONNECTEMPTY */ .count() /* verilator lint_on PINCONNECTEMPTY */);
    assign c_r_valid = own & {3{r_out_valid}};

    assign m_axi_awvalid = s_aw_valid;
    assign m_axi_awaddr  = s_aw_addr;
    assign m_axi_awlen   = s_aw_len;
    assign m_axi_awsize  = 3'(`VTA_LOG_BUS_BYTES);
    assign m_axi_awburst = 2'b01;
    assign m_axi_awid    = 1'b0;
    assign s_aw_ready    = m_axi_awready;
    assign m_axi_wvalid  = s_w_valid;
    assign m_axi_wdata   = s_w_data;
    assign m_axi_wstrb   = {`VTA_BUS_BYTES{1'b1}};
    assign m_axi_wlast   = s_w_last;
    assign s_w_ready     = m_axi_wready;
    assign s_b_valid     = m_axi_bvalid;
    assign m_axi_bready  = 1'b1;
    localparam [1:0] SLVERR = 2'b10, DECERR = 2'b11;
    assign bus_err = (m_axi_rvalid && m_axi_rready && (m_axi_rresp == SLVERR || m_axi_rresp == DECERR)) ||
                     (m_axi_bvalid && (m_axi_bresp == SLVERR || m_axi_bresp == DECERR));
endmodule
`default_nettype wire
