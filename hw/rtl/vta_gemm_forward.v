// GEMM's accumulate with its forwarding (docs/hardware.md, "Compute pipeline"): ACC[dst] +
// INP x WGT, the accumulator registered on both sides of the adder (no path from the ACC SRAM's
// output through the adder into its input). An iteration reads ACC[dst] in S3, before the three
// iterations ahead of it have written theirs (S7), so S6 takes their sums from the write register
// (z, the one just ahead) or the two behind it (z_rr, z_rrr) when they wrote the same entry.
//   S3  ACC[dst] read (the caller's address); INP and WGT into the core's input registers
//   S5  ACC[dst] arrives (acc_q); the S6 forward chosen (fw7-fw9: the S5 iteration's entry
//       against the three ahead of it, on the index bits), so only registered selects reach
//       the adder
//   S6  ACC[dst] (registered, or forwarded) + dot registered: z, written in S7
`default_nettype none
`include "vta_cfg.vh"
module vta_gemm_forward (
    input  wire                        clk,
    input  wire                        rst,
    input  wire                        reset,      // the instruction's reset flag: the sum is 0
    input  wire [`VTA_INP_BYTES*8-1:0] inp,
    input  wire [`VTA_WGT_BYTES*8-1:0] wgt,
    input  wire [`VTA_ACC_BYTES*8-1:0] acc_rdata,  // ACC[dst] as read in S3 (two cycles later)
    input  wire [`VTA_LA-1:0]          a5,         // the entries of the iterations in S5-S8
    input  wire [`VTA_LA-1:0]          a6,
    input  wire [`VTA_LA-1:0]          a7,
    input  wire [`VTA_LA-1:0]          a8,
    input  wire                        v6,         // S6-S8 hold an iteration that writes
    input  wire                        v7,
    input  wire                        v8,
    output reg  [`VTA_ACC_BYTES*8-1:0] z           // the sum, written in S7
);
    wire [`VTA_ACC_BYTES*8-1:0] gemm_z;
    reg  [`VTA_ACC_BYTES*8-1:0] acc_q, z_rr, z_rrr;   // ACC[dst] as read (S6), the sums of S8-S9
    reg fw7, fw8, fw9;
    wire [`VTA_ACC_BYTES*8-1:0] acc_s6 = fw7 ? z : fw8 ? z_rr : fw9 ? z_rrr : acc_q;
    vta_gemm_core gemm (.clk(clk), .reset(reset), .inp(inp), .wgt(wgt), .acc_in(acc_s6), .acc_out(gemm_z));
    always @(posedge clk)
        if (!rst) begin
            fw7 <= v6 && a6 == a5;
            fw8 <= v7 && a7 == a5;
            fw9 <= v8 && a8 == a5;
        end
    // no reset, no enable (their valid bits gate every use)
    always @(posedge clk) begin
        acc_q <= acc_rdata;
        z <= gemm_z;
        z_rr <= z;
        z_rrr <= z_rr;
    end
endmodule
`default_nettype wire
