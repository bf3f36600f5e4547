// On-chip SRAM as a block RAM: one write port and one read port whose address is registered
// (a synchronous read, data in the cycle after the address). Reading through the registered
// address is write-first: an entry written in the cycle its address is taken reads back new,
// which is the only forwarding the compute pipeline needs. Yosys keeps it a transparent read
// port; on ECP5 it adds the bypass DP16KD lacks between its two ports.
`default_nettype none
module vta_sram #(
    parameter WIDTH = 64,
    parameter AW = 10
) (
    input  wire             clk,
    input  wire             we,
    input  wire [AW-1:0]    waddr,
    input  wire [WIDTH-1:0] wdata,
    input  wire [AW-1:0]    raddr,
    output wire [WIDTH-1:0] rdata
);
    reg [WIDTH-1:0] mem [0:(1<<AW)-1];
    reg [AW-1:0] ra;
    always @(posedge clk) begin
        if (we) mem[waddr] <= wdata;
        ra <= raddr;
    end
    assign rdata = mem[ra];
endmodule
`default_nettype wire
