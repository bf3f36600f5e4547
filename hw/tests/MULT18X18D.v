// Simulation model of the ECP5 MULT18X18D, as far as hw/rtl/ecp5/vta_ecp5_mul.v uses it (Lattice
// TN1267, sysDSP): P = A x B in 36 bits, each operand signed when its SIGNED pin is high; A and B
// registered on CLK0 when REG_INPUTA/B_CLK is "CLK0", P when REG_OUTPUT_CLK is, each register
// enabled by CE0 and synchronously cleared by RST0. Only for the unit bench's DSP build
// (hw/build.py): synthesis takes the real cell from Yosys' ECP5 library.
`default_nettype none
/*verilator public_off*/  // the bench reads the cores' ports, not the cells' inside
module MULT18X18D (
    A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0, B17, B16, B15,
    B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0, C17, C16, C15, C14, C13, C12,
    C11, C10, C9, C8, C7, C6, C5, C4, C3, C2, C1, C0,
    SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK3, CLK2, CLK1, CLK0, CE3, CE2, CE1, CE0, RST3, RST2, RST1, RST0,
    P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17,
    P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0
);
    parameter REG_INPUTA_CLK = "NONE";
    parameter REG_INPUTB_CLK = "NONE";
    parameter REG_PIPELINE_CLK = "NONE";
    parameter REG_OUTPUT_CLK = "NONE";
    parameter GSR = "ENABLED";
    parameter RESETMODE = "SYNC";
    input wire A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0;
    input wire B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0;
    input wire C17, C16, C15, C14, C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3, C2, C1, C0;
    input wire SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK3, CLK2, CLK1, CLK0, CE3, CE2, CE1, CE0;
    input wire RST3, RST2, RST1, RST0;
    output wire P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18,
                P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0;
    wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
    wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};
    reg [17:0] a_r, b_r;
    reg [35:0] p_r;
    always @(posedge CLK0) if (CE0) begin
        a_r <= RST0 ? 18'd0 : a;
        b_r <= RST0 ? 18'd0 : b;
    end
    wire [17:0] a_m = (REG_INPUTA_CLK == "CLK0") ? a_r : a;
    wire [17:0] b_m = (REG_INPUTB_CLK == "CLK0") ? b_r : b;
    wire [35:0] prod = $signed({SIGNEDA & a_m[17], a_m}) * $signed({SIGNEDB & b_m[17], b_m});
    always @(posedge CLK0) if (CE0) p_r <= RST0 ? 36'd0 : prod;
    wire [35:0] p = (REG_OUTPUT_CLK == "CLK0") ? p_r : prod;
    assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} = p;
endmodule
`default_nettype wire
