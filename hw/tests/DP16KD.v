// Simulation model of the ECP5 DP16KD, as far as hw/rtl/ecp5/vta_ecp5_bram.v uses it (Lattice
// TN1264, sysMEM): 16 Kbit as 2^14 / DATA_WIDTH entries (widths 1, 2, 4, 9, 18; the address's
// upper pins select the entry, in x18 mode AD[1:0] are port A's byte enables), port A writing,
// port B reading at each edge its clock enable is high, through its output register when
// REGMODE_B is "OUTREG". A read in the edge of a write to its entry returns the old contents
// here (undefined in the block): the RTL must not depend on it. Only for the native bench's ECP5
// build (hw/build.py): synthesis takes the real cell from Yosys' ECP5 library.
`default_nettype none
/*verilator public_off*/
/* verilator lint_off UNUSEDSIGNAL */  // the pins the RTL ties off (port B's write side, port A's read side)
/* verilator lint_off UNUSEDPARAM */
module DP16KD (
    DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0,
    ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0,
    CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0,
    DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0,
    DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0,
    ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0,
    CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0,
    DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0
);
    parameter DATA_WIDTH_A = 18;
    parameter DATA_WIDTH_B = 18;
    parameter REGMODE_A = "NOREG";
    parameter REGMODE_B = "NOREG";
    parameter WRITEMODE_A = "NORMAL";
    parameter WRITEMODE_B = "NORMAL";
    parameter RESETMODE = "SYNC";
    parameter GSR = "ENABLED";
    parameter CSDECODE_A = "0b000";
    parameter CSDECODE_B = "0b000";
    input wire DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0;
    input wire ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0;
    input wire CEA, OCEA, CLKA, WEA, RSTA, CSA2, CSA1, CSA0;
    output wire DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0;
    input wire DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0;
    input wire ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0;
    input wire CEB, OCEB, CLKB, WEB, RSTB, CSB2, CSB1, CSB0;
    output wire DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0;
    localparam DW = DATA_WIDTH_B;
    localparam SH = (DW == 18) ? 4 : (DW == 9) ? 3 : (DW == 4) ? 2 : (DW == 2) ? 1 : 0;
    wire [17:0] dia = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
    wire [13:0] ada = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0};
    wire [13:0] adb = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0};
    reg [17:0] mem [0:(1 << (14 - SH)) - 1];
    reg [17:0] q, q_out;
    wire [17:0] be = (DW == 18) ? {{9{ada[1]}}, {9{ada[0]}}} : 18'h3ffff;
    always @(posedge CLKA)
        if (CEA && WEA) mem[ada[13:SH]] <= (mem[ada[13:SH]] & ~be) | (dia & be);
    always @(posedge CLKB) begin
        if (CEB) q <= mem[adb[13:SH]];
        if (OCEB) q_out <= q;
    end
    wire [17:0] dob = (REGMODE_B == "OUTREG") ? q_out : q;
    assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} = dob;
    assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = 18'd0;
endmodule
`default_nettype wire
