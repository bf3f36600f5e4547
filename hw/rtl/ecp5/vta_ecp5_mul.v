// An ECP5 MULT18X18D with its operands registered inside the block (REG_INPUTA/B) with IN_REG,
// its product (REG_OUTPUT) with OUT_REG: W x W bits, signed or not, P = A x B in 2W bits. Used by the GEMM and ALU cores under VTA_ECP5_CELLS (hw/synth.py defines it
// for the ECP5 target): Yosys' synth_ecp5 maps `*` to a combinational MULT18X18D with the
// registers in the fabric, which nextpnr times as BRAM -> route -> 4.5 ns of DSP -> route -> FF;
// with the registers inside the block it times each side on its own. hw/tests/MULT18X18D.v is the
// simulation model the unit bench checks this wiring with.
`default_nettype none
/*verilator public_off*/  // the bench reads the cores' ports, not the cells' inside
module vta_ecp5_mul #(
    parameter W = 8,          // operand bits, 17 at most (one bit of sign extension)
    parameter SIGNED = 1,     // both operands signed (two's complement) or both unsigned
    parameter IN_REG = 1,     // operands registered inside the block (a cycle)
    parameter OUT_REG = 1     // product registered inside the block (a cycle)
) (
    input  wire           clk,
    input  wire [W-1:0]   a,
    input  wire [W-1:0]   b,
    output wire [2*W-1:0] p
);
    wire [17:0] a18 = SIGNED ? {{(18 - W){a[W-1]}}, a} : {{(18 - W){1'b0}}, a};
    wire [17:0] b18 = SIGNED ? {{(18 - W){b[W-1]}}, b} : {{(18 - W){1'b0}}, b};
    wire [35:0] p36;
    wire sgn = SIGNED ? 1'b1 : 1'b0;
    MULT18X18D #(
        .REG_INPUTA_CLK(IN_REG ? "CLK0" : "NONE"), .REG_INPUTB_CLK(IN_REG ? "CLK0" : "NONE"),
        .REG_OUTPUT_CLK(OUT_REG ? "CLK0" : "NONE"), .REG_PIPELINE_CLK("NONE"), .GSR("DISABLED"), .RESETMODE("SYNC")
    ) dsp (
        .A0(a18[0]), .A1(a18[1]), .A2(a18[2]), .A3(a18[3]), .A4(a18[4]), .A5(a18[5]), .A6(a18[6]),
        .A7(a18[7]), .A8(a18[8]), .A9(a18[9]), .A10(a18[10]), .A11(a18[11]), .A12(a18[12]),
        .A13(a18[13]), .A14(a18[14]), .A15(a18[15]), .A16(a18[16]), .A17(a18[17]),
        .B0(b18[0]), .B1(b18[1]), .B2(b18[2]), .B3(b18[3]), .B4(b18[4]), .B5(b18[5]), .B6(b18[6]),
        .B7(b18[7]), .B8(b18[8]), .B9(b18[9]), .B10(b18[10]), .B11(b18[11]), .B12(b18[12]),
        .B13(b18[13]), .B14(b18[14]), .B15(b18[15]), .B16(b18[16]), .B17(b18[17]),
        .C0(1'b0), .C1(1'b0), .C2(1'b0), .C3(1'b0), .C4(1'b0), .C5(1'b0), .C6(1'b0), .C7(1'b0),
        .C8(1'b0), .C9(1'b0), .C10(1'b0), .C11(1'b0), .C12(1'b0), .C13(1'b0), .C14(1'b0), .C15(1'b0),
        .C16(1'b0), .C17(1'b0),
        .SIGNEDA(sgn), .SIGNEDB(sgn), .SOURCEA(1'b0), .SOURCEB(1'b0),
        .CLK0(clk), .CLK1(1'b0), .CLK2(1'b0), .CLK3(1'b0), .CE0(1'b1), .CE1(1'b0), .CE2(1'b0), .CE3(1'b0),
        .RST0(1'b0), .RST1(1'b0), .RST2(1'b0), .RST3(1'b0),
        .P0(p36[0]), .P1(p36[1]), .P2(p36[2]), .P3(p36[3]), .P4(p36[4]), .P5(p36[5]), .P6(p36[6]),
        .P7(p36[7]), .P8(p36[8]), .P9(p36[9]), .P10(p36[10]), .P11(p36[11]), .P12(p36[12]),
        .P13(p36[13]), .P14(p36[14]), .P15(p36[15]), .P16(p36[16]), .P17(p36[17]), .P18(p36[18]),
        .P19(p36[19]), .P20(p36[20]), .P21(p36[21]), .P22(p36[22]), .P23(p36[23]), .P24(p36[24]),
        .P25(p36[25]), .P26(p36[26]), .P27(p36[27]), .P28(p36[28]), .P29(p36[29]), .P30(p36[30]),
        .P31(p36[31]), .P32(p36[32]), .P33(p36[33]), .P34(p36[34]), .P35(p36[35])
    );
    assign p = p36[2*W-1:0];
endmodule
`default_nettype wire
