// WIDTH x 2^AW bits of ECP5 DP16KD block RAMs, port A writing, port B reading through its output
// register (REGMODE_B OUTREG: data two cycles after the address, 1.0 ns clock-to-out against the
// array's 5.8 ns on an ECP5-85F -6). Each block is 2^AW entries deep (AW 10..14: 18, 9, 4, 2, 1
// bits wide, Lattice TN1264), so the word is side-by-side blocks and no mux follows them. A read
// in the edge of a write to its entry is undefined in the block; vta_sram forwards that write.
// hw/tests/DP16KD.v is the simulation model the native bench checks this wiring with.
`default_nettype none
/*verilator public_off*/
module vta_ecp5_bram #(
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
    localparam ABITS = (AW < 10) ? 10 : AW;
    localparam DW = (ABITS == 10) ? 18 : (ABITS == 11) ? 9 : (ABITS == 12) ? 4 : (ABITS == 13) ? 2 : 1;
    localparam N = (WIDTH + DW - 1) / DW;
    localparam SH = 14 - ABITS;
    // the address's low pins: in x18 mode AD[3:2] are unused and AD[1:0] are port A's byte enables
    localparam [13:0] LOW = (DW == 18) ? 14'b11 : 14'b0;
    wire [13:0] ada = (14'(waddr) << SH) | LOW;
    wire [13:0] adb = 14'(raddr) << SH;
    wire [N*DW-1:0] di = (N*DW)'(wdata);
    wire [N*DW-1:0] dout;
    assign rdata = dout[WIDTH-1:0];
    genvar b;
    generate for (b = 0; b < N; b = b + 1) begin : g_block
        wire [17:0] d = 18'(di[b*DW +: DW]);
        wire [17:0] q;
        /* verilator lint_off UNUSEDSIGNAL */
        wire [17:0] unused_doa;
        /* verilator lint_on UNUSEDSIGNAL */
        assign dout[b*DW +: DW] = q[DW-1:0];
        DP16KD #(
            .DATA_WIDTH_A(DW), .DATA_WIDTH_B(DW), .REGMODE_A("NOREG"), .REGMODE_B("OUTREG"),
            .WRITEMODE_A("NORMAL"), .WRITEMODE_B("NORMAL"), .RESETMODE("SYNC"), .GSR("DISABLED"),
            .CSDECODE_A("0b000"), .CSDECODE_B("0b000")
        ) ram (
            .CLKA(clk), .CEA(1'b1), .OCEA(1'b1), .WEA(we), .RSTA(1'b0), .CSA2(1'b0), .CSA1(1'b0), .CSA0(1'b0),
            .ADA13(ada[13]), .ADA12(ada[12]), .ADA11(ada[11]), .ADA10(ada[10]), .ADA9(ada[9]), .ADA8(ada[8]),
            .ADA7(ada[7]), .ADA6(ada[6]), .ADA5(ada[5]), .ADA4(ada[4]), .ADA3(ada[3]), .ADA2(ada[2]),
            .ADA1(ada[1]), .ADA0(ada[0]),
            .DIA17(d[17]), .DIA16(d[16]), .DIA15(d[15]), .DIA14(d[14]), .DIA13(d[13]), .DIA12(d[12]),
            .DIA11(d[11]), .DIA10(d[10]), .DIA9(d[9]), .DIA8(d[8]), .DIA7(d[7]), .DIA6(d[6]), .DIA5(d[5]),
            .DIA4(d[4]), .DIA3(d[3]), .DIA2(d[2]), .DIA1(d[1]), .DIA0(d[0]),
            .DOA17(unused_doa[17]), .DOA16(unused_doa[16]), .DOA15(unused_doa[15]), .DOA14(unused_doa[14]),
            .DOA13(unused_doa[13]), .DOA12(unused_doa[12]), .DOA11(unused_doa[11]), .DOA10(unused_doa[10]),
            .DOA9(unused_doa[9]), .DOA8(unused_doa[8]), .DOA7(unused_doa[7]), .DOA6(unused_doa[6]),
            .DOA5(unused_doa[5]), .DOA4(unused_doa[4]), .DOA3(unused_doa[3]), .DOA2(unused_doa[2]),
            .DOA1(unused_doa[1]), .DOA0(unused_doa[0]),
            .CLKB(clk), .CEB(1'b1), .OCEB(1'b1), .WEB(1'b0), .RSTB(1'b0), .CSB2(1'b0), .CSB1(1'b0), .CSB0(1'b0),
            .ADB13(adb[13]), .ADB12(adb[12]), .ADB11(adb[11]), .ADB10(adb[10]), .ADB9(adb[9]), .ADB8(adb[8]),
            .ADB7(adb[7]), .ADB6(adb[6]), .ADB5(adb[5]), .ADB4(adb[4]), .ADB3(adb[3]), .ADB2(adb[2]),
            .ADB1(adb[1]), .ADB0(adb[0]),
            .DIB17(1'b0), .DIB16(1'b0), .DIB15(1'b0), .DIB14(1'b0), .DIB13(1'b0), .DIB12(1'b0), .DIB11(1'b0),
            .DIB10(1'b0), .DIB9(1'b0), .DIB8(1'b0), .DIB7(1'b0), .DIB6(1'b0), .DIB5(1'b0), .DIB4(1'b0),
            .DIB3(1'b0), .DIB2(1'b0), .DIB1(1'b0), .DIB0(1'b0),
            .DOB17(q[17]), .DOB16(q[16]), .DOB15(q[15]), .DOB14(q[14]), .DOB13(q[13]), .DOB12(q[12]),
            .DOB11(q[11]), .DOB10(q[10]), .DOB9(q[9]), .DOB8(q[8]), .DOB7(q[7]), .DOB6(q[6]), .DOB5(q[5]),
            .DOB4(q[4]), .DOB3(q[3]), .DOB2(q[2]), .DOB1(q[1]), .DOB0(q[0]));
    end endgenerate
endmodule
`default_nettype wire
