// On-chip SRAM: one synchronous read port and one write port that writes LANES consecutive
// entries (lane j at waddr + j) in a cycle. Reads are write-first: a read of an entry written in
// the same cycle returns the new data, which is the only forwarding the compute pipeline needs.
`default_nettype none
module vta_sram #(
    parameter WIDTH = 64,
    parameter AW = 10,
    parameter LANES = 1
) (
    input  wire                   clk,
    input  wire [LANES-1:0]       we,
    input  wire [AW-1:0]          waddr,
    input  wire [LANES*WIDTH-1:0] wdata,
    input  wire                   re,
    input  wire [AW-1:0]          raddr,
    output reg  [WIDTH-1:0]       rdata
);
    reg [WIDTH-1:0] mem [0:(1<<AW)-1];
    integer j;
    reg [WIDTH-1:0] rnext;
    always @(*) begin
        rnext = mem[raddr];
        for (j = 0; j < LANES; j = j + 1)
            if (we[j] && (waddr + AW'(j)) == raddr) rnext = wdata[j*WIDTH +: WIDTH];
    end
    always @(posedge clk) begin
        for (j = 0; j < LANES; j = j + 1)
            if (we[j]) mem[waddr + AW'(j)] <= wdata[j*WIDTH +: WIDTH];
        if (re) rdata <= rnext;
    end
endmodule
`default_nettype wire
