// On-chip SRAM as a block RAM: one write port and one read port whose address is registered
// (a synchronous read, data in the cycle after the address). Reading through the registered
// address is write-first: an entry written in the cycle its address is taken reads back new,
// which is the only forwarding the compute pipeline needs.
//
// The write is registered before the block RAM (performed at the next edge), so that no path
// runs from the writer's logic (a DMA's beat assembly, an adder) across the die into the block
// RAMs' data inputs: the ports' behaviour is unchanged, the write that is still in its register
// when its entry is read is forwarded (`hit`, worked out when the read address is taken). Yosys
// keeps the array's own read port transparent to the registered write; on ECP5 it adds the
// bypass DP16KD lacks between its two ports.
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
    reg             w_en, hit;
    initial {w_en, hit} = 2'b00;   // FPGA power-up values: no write is pending (no reset port)
    reg [AW-1:0]    w_addr;
    reg [WIDTH-1:0] w_data;
    always @(posedge clk) begin
        if (w_en) mem[w_addr] <= w_data;
        w_en <= we;
        w_addr <= waddr;
        w_data <= wdata;
        hit <= we && (waddr == raddr);
        ra <= raddr;
    end
    assign rdata = hit ? w_data : mem[ra];
endmodule
`default_nettype wire
