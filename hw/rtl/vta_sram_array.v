// The block RAM behind a vta_sram with RD_REG = 1: a write port and a read port on one clock, the
// read two cycles after its address (the array's output, then its output register), reading the
// entry as it was before a write in the same edge (the ports do not bypass each other; vta_sram
// forwards). With VTA_ECP5_CELLS the ECP5 block RAMs themselves (hw/rtl/ecp5/vta_ecp5_bram.v,
// REGMODE OUTREG), which Yosys' inference never uses: it leaves the output register in the fabric.
`default_nettype none
module vta_sram_array #(
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
`ifdef VTA_ECP5_CELLS
    vta_ecp5_bram #(.WIDTH(WIDTH), .AW(AW)) bram (
        .clk(clk), .we(we), .waddr(waddr), .wdata(wdata), .raddr(raddr), .rdata(rdata));
`else
    reg [WIDTH-1:0] mem [0:(1<<AW)-1];
    reg [WIDTH-1:0] q, q_out;
    always @(posedge clk) begin
        if (we) mem[waddr] <= wdata;
        q <= mem[raddr];
        q_out <= q;
    end
    assign rdata = q_out;
`endif
endmodule
`default_nettype wire
