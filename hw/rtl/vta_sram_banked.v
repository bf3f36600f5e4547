// The UOP SRAM, written LANES (a power of two, 1 included) consecutive entries a cycle (a bus
// beat of micro-ops): entry e lives in bank e mod LANES, so the lanes of one write always fall in
// different banks and each bank is a vta_sram with a single write port, of read latency RD_REG + 1
// as vta_sram's.
`default_nettype none
module vta_sram_banked #(
    parameter WIDTH = 32,
    parameter AW = 10,
    parameter LANES = 2,
    parameter RD_REG = 0
) (
    input  wire                   clk,
    input  wire [LANES-1:0]       we,       // lane j writes entry waddr + j
    input  wire [AW-1:0]          waddr,
    input  wire [LANES*WIDTH-1:0] wdata,
    input  wire [AW-1:0]          raddr,
    output wire [WIDTH-1:0]       rdata
);
    localparam LB = $clog2(LANES);
    localparam SW = (LB > 0) ? LB : 1;
    wire [LANES*WIDTH-1:0] bank_rdata;
    reg  [SW-1:0] sel, sel_a;   // bank of the read address, RD_REG + 1 cycles after it
    genvar b;
    generate
        for (b = 0; b < LANES; b = b + 1) begin : g_bank
            wire [SW-1:0] lane = SW'((b - 32'(waddr)) % LANES);   // the lane that lands in bank b
            wire [AW-LB-1:0] row = (AW-LB)'((waddr + AW'(lane)) >> LB);
            vta_sram #(.WIDTH(WIDTH), .AW(AW - LB), .RD_REG(RD_REG)) bank (
                .clk(clk), .we(we[lane]), .waddr(row), .wdata(wdata[32'(lane) * WIDTH +: WIDTH]),
                .raddr(raddr[AW-1:LB]), .rdata(bank_rdata[b * WIDTH +: WIDTH]));
        end
    endgenerate
    always @(posedge clk) begin
        sel_a <= SW'(32'(raddr) % LANES);
        sel <= RD_REG ? sel_a : SW'(32'(raddr) % LANES);
    end
    assign rdata = bank_rdata[32'(sel) * WIDTH +: WIDTH];
endmodule
`default_nettype wire
