// AXI4-Lite register file (spec section 8): CTRL/STATUS, CYCLES, INSN_COUNT, INSN_ADDR,
// ERROR_CODE, ERROR_INDEX, then the statistics counters (vta_sim.registers: indices VTA_REG_*).
`default_nettype none
`include "vta_cfg.vh"
module vta_regs (
    input  wire        clk,
    input  wire        rst,
    input  wire        s_axil_awvalid,
    output wire        s_axil_awready,
    /* verilator lint_off UNUSEDSIGNAL */  // registers are 32-bit aligned
    input  wire [7:0]  s_axil_awaddr,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire        s_axil_wvalid,
    output wire        s_axil_wready,
    input  wire [31:0] s_axil_wdata,
    /* verilator lint_off UNUSEDSIGNAL */  // every register is written whole
    input  wire [3:0]  s_axil_wstrb,
    /* verilator lint_on UNUSEDSIGNAL */
    output reg         s_axil_bvalid,
    input  wire        s_axil_bready,
    output wire [1:0]  s_axil_bresp,
    input  wire        s_axil_arvalid,
    output wire        s_axil_arready,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [7:0]  s_axil_araddr,
    /* verilator lint_on UNUSEDSIGNAL */
    output reg         s_axil_rvalid,
    input  wire        s_axil_rready,
    output reg  [31:0] s_axil_rdata,
    output wire [1:0]  s_axil_rresp,
    output reg         launch,          // one-cycle pulse: a run starts next cycle
    output reg  [31:0] insn_count,
    output reg  [31:0] insn_addr,
    input  wire        running,
    input  wire        done,
    input  wire        error,
    input  wire [31:0] cycles,
    input  wire [`VTA_ERROR_CODE_BITS-1:0] error_code,
    input  wire [31:0] error_index,
    input  wire [`VTA_NUM_COUNTERS*32-1:0] counters
);
    // A write takes address and data together; one outstanding response at a time.
    wire wr = s_axil_awvalid && s_axil_wvalid && !s_axil_bvalid;
    assign s_axil_awready = wr;
    assign s_axil_wready = wr;
    assign s_axil_bresp = 2'b00;
    assign s_axil_rresp = 2'b00;
    wire rd = s_axil_arvalid && !s_axil_rvalid;
    assign s_axil_arready = rd;

    wire [5:0] rsel = s_axil_araddr[7:2];
    reg [31:0] rvalue;
    always @(*) begin
        case (rsel)
            6'(`VTA_REG_CTRL): rvalue = (32'(running) << `VTA_STATUS_RUNNING) | (32'(done) << `VTA_STATUS_DONE) |
                                        (32'(error) << `VTA_STATUS_ERROR);
            6'(`VTA_REG_CYCLES): rvalue = cycles;
            6'(`VTA_REG_INSN_COUNT): rvalue = insn_count;
            6'(`VTA_REG_INSN_ADDR): rvalue = insn_addr;
            6'(`VTA_REG_ERROR_CODE): rvalue = 32'(error_code);
            6'(`VTA_REG_ERROR_INDEX): rvalue = error_index;
            default: rvalue = (rsel >= `VTA_REG_COUNTERS && rsel < `VTA_REG_COUNTERS + `VTA_NUM_COUNTERS) ?
                              counters[(rsel - `VTA_REG_COUNTERS) * 32 +: 32] : 32'd0;
        endcase
    end

    always @(posedge clk) begin
        if (rst) begin
            s_axil_bvalid <= 1'b0;
            s_axil_rvalid <= 1'b0;
            launch <= 1'b0;
            insn_count <= 0;
            insn_addr <= 0;
        end else begin
            launch <= wr && (s_axil_awaddr[7:2] == 6'(`VTA_REG_CTRL)) && s_axil_wdata[`VTA_CTRL_START];
            if (wr) begin
                s_axil_bvalid <= 1'b1;
                if (s_axil_awaddr[7:2] == 6'(`VTA_REG_INSN_COUNT)) insn_count <= s_axil_wdata;
                if (s_axil_awaddr[7:2] == 6'(`VTA_REG_INSN_ADDR)) insn_addr <= s_axil_wdata;
            end else if (s_axil_bready) begin
                s_axil_bvalid <= 1'b0;
            end
            if (rd) begin
                s_axil_rvalid <= 1'b1;
                s_axil_rdata <= rvalue;
            end else if (s_axil_rready) begin
                s_axil_rvalid <= 1'b0;
            end
        end
    end
endmodule
`default_nettype wire
