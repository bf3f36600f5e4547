// On-chip SRAM as a block RAM: one write port and one read port. The read is synchronous: data
// in the cycle after the address (RD_REG = 0) or two cycles after it (RD_REG = 1, the block RAM's
// own output register). Either way a read returns the entry as written up to the cycle its
// address is taken (write-first), which is the only forwarding the compute pipeline needs.
//
// The write is registered before the block RAM (performed at the next edge), so that no path
// runs from the writer's logic (a DMA's beat assembly, an adder) across the die into the block
// RAMs' data inputs: the ports' behaviour is unchanged, the write that is still in its register
// when its entry is read is forwarded.
//
// RD_REG = 0: Yosys keeps the array's read port transparent to the registered write (on ECP5 it
// adds the bypass DP16KD lacks between its two ports) and `hit` forwards the pending write; both
// muxes follow the block RAM's clock-to-out (5.8 ns on an ECP5-85F -6).
// RD_REG = 1, for the memories whose readers lie across the die (INP and WGT feed the GEMM's 64
// multipliers): the block RAM reads before it writes (vta_sram_array), its output register
// (REGMODE OUTREG, 1.0 ns clock-to-out) holds the data, and the two writes the read cannot see,
// the one landing in the read's own edge (`f_land`) and the one still in its register (`f_pend`),
// are selected one cycle ahead, so that a single mux with registered inputs follows the block.
`default_nettype none
module vta_sram #(
    parameter WIDTH = 64,
    parameter AW = 10,
    parameter RD_REG = 0
) (
    input  wire             clk,
    input  wire             we,
    input  wire [AW-1:0]    waddr,
    input  wire [WIDTH-1:0] wdata,
    input  wire [AW-1:0]    raddr,
    output wire [WIDTH-1:0] rdata
);
    reg             w_en;
    reg [AW-1:0]    w_addr;
    reg [WIDTH-1:0] w_data;
    initial w_en = 1'b0;   // FPGA power-up value: no write is pending (no reset port)
    always @(posedge clk) begin
        w_en <= we;
        w_addr <= waddr;
        w_data <= wdata;
    end
    generate if (RD_REG) begin : g_outreg
        wire [WIDTH-1:0] q;
        vta_sram_array #(.WIDTH(WIDTH), .AW(AW)) array (
            .clk(clk), .we(w_en), .waddr(w_addr), .wdata(w_data), .raddr(raddr), .rdata(q));
        reg f_pend, f_land, f_sel;
        reg [WIDTH-1:0] d_land, f_data;
        initial {f_pend, f_land, f_sel} = 3'b000;
        always @(posedge clk) begin
            f_pend <= we && (waddr == raddr);        // lands after the read: w_data next cycle
            f_land <= w_en && (w_addr == raddr);     // lands in the read's edge, unseen by it
            d_land <= w_data;
            f_sel <= f_pend || f_land;
            f_data <= f_pend ? w_data : d_land;
        end
        assign rdata = f_sel ? f_data : q;
    end else begin : g_plain
        reg [WIDTH-1:0] mem [0:(1<<AW)-1];
        reg [AW-1:0] ra;
        reg hit;
        initial hit = 1'b0;
        always @(posedge clk) begin
            if (w_en) mem[w_addr] <= w_data;
            hit <= we && (waddr == raddr);
            ra <= raddr;
        end
        assign rdata = hit ? w_data : mem[ra];
    end endgenerate
endmodule
`default_nettype wire
