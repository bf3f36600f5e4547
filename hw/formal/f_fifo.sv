// Instruction queue (128-bit, CMD_QUEUE_DEPTH, registered hand-offs) and the AXI master's
// read-data FIFO (one bus beat, RFIFO_DEPTH, same-cycle bypass), i.e. vta_fifo as vta_top has them: no overflow and no underflow at its
// ports; order and contents are the ghost's (vta_fifo_ghost.svh, checked inside each instance).
`default_nettype none
`include "vta_cfg.vh"
module f_fifo (
    input wire clk,
    input wire rst,
    input wire iq_in_valid,
    input wire [127:0] iq_in_data,
    input wire iq_out_ready,
    input wire rf_in_valid,
    input wire [`VTA_BUS_BYTES*8-1:0] rf_in_data,
    input wire rf_out_ready
);
`include "f_reset.svh"
    f_fifo_port #(.WIDTH(128), .DEPTH(`VTA_CMD_QUEUE_DEPTH), .BYPASS(0)) iq (
        .clk(clk), .rst(rst), .f_live(f_live), .in_valid(iq_in_valid), .in_data(iq_in_data),
        .out_ready(iq_out_ready));
    f_fifo_port #(.WIDTH(`VTA_BUS_BYTES*8), .DEPTH(`VTA_RFIFO_DEPTH), .BYPASS(1)) rf (
        .clk(clk), .rst(rst), .f_live(f_live), .in_valid(rf_in_valid), .in_data(rf_in_data),
        .out_ready(rf_out_ready));
endmodule

// One vta_fifo and its port-level properties.
module f_fifo_port #(parameter WIDTH = 8, parameter DEPTH = 4, parameter BYPASS = 1) (
    input wire clk,
    input wire rst,
    input wire f_live,
    input wire in_valid,
    input wire [WIDTH-1:0] in_data,
    input wire out_ready
);
    localparam CW = $clog2(DEPTH + 1);
    wire in_ready, out_valid;
    wire [WIDTH-1:0] out_data;
    wire [CW-1:0] count;
    vta_fifo #(.WIDTH(WIDTH), .DEPTH(DEPTH), .BYPASS(BYPASS)) dut (
        .clk(clk), .rst(rst), .in_valid(in_valid), .in_data(in_data), .in_ready(in_ready),
        .out_valid(out_valid), .out_data(out_data), .out_ready(out_ready), .count(count));
    wire enq = in_valid && in_ready, deq = out_valid && out_ready;
    always @(*) if (f_live && !rst) begin
        q_no_overflow: assert(count <= DEPTH[CW-1:0] && (count != DEPTH[CW-1:0] || !enq || deq));
        q_no_underflow: assert(out_valid == (count != 0 || (BYPASS != 0 && in_valid)));
        q_accepts_unless_full: assert(in_ready == (count != DEPTH[CW-1:0] || (BYPASS != 0 && out_ready)));
    end
    always @(posedge clk) if (f_live && !rst) begin
        q_cover_full_enq_deq: cover(count == DEPTH[CW-1:0] - (BYPASS != 0 ? 0 : 1) && enq && deq);   // the pointers wrap
        q_cover_in_and_out: cover(count == (BYPASS != 0 ? 0 : 1) && enq && deq);   // bypass / a single entry
    end
endmodule
`default_nettype wire
