// Bounded liveness of a STORE (through f_axi_write, whose properties hold here too): with a slave
// that takes every address and beat at once and answers each burst the cycle after its last
// beat, a STORE of y rows of x entries (x <= 255 here: at most two bursts a row) is done within
// y * x * OUT_BYTES / BUS_BYTES + 2 * y * (DMA_WRITE_LATENCY + 1) + 5 cycles of its issue: the
// model's sum of (beats + DMA_WRITE_LATENCY) per burst, plus the issue and the W path's latency.
// Checked by BMC for every STORE whose bound fits the depth.
`default_nettype none
`include "vta_cfg.vh"
module f_store_live (
    input wire clk,
    input wire rst,
    input wire head_valid,
    input wire [127:0] head_bits,
    input wire [2:0] y_size,
    input wire [7:0] x_size,
    input wire c2s_avail,
    input wire [`VTA_OUT_BYTES*8-1:0] out_rdata
);
`include "f_reset.svh"
    wire started, running, w_last_beat;
    reg b_due;
    always @(posedge clk) b_due <= !rst && w_last_beat;
    f_axi_write wr (
        .clk(clk), .rst(rst), .enable(1'b1), .head_valid(head_valid), .head_bits(head_bits),
        .y_size(y_size), .x_size(10'(x_size)), .c2s_avail(c2s_avail), .s2c_push_ok(1'b1), .out_rdata(out_rdata), .awready(1'b1), .wready(1'b1),
        .bvalid(b_due), .bresp(2'b00), .started(started), .running(running), .w_last_beat(w_last_beat));
    localparam EB = `VTA_OUT_BYTES / `VTA_BUS_BYTES;
    // one STORE at a time, counted from its issue until it no longer runs
    reg [31:0] f_age, f_bound;
    reg f_busy, f_was_running, f_done;
    wire f_ends = f_busy && f_was_running && !running;
    always @(posedge clk) f_was_running <= !rst && running;
    always @(*) if (!rst) assume(!head_valid || !f_busy);
    // the STOREs whose bound fits the depth (20): one row of at most three entries; the others
    // would only be followed part of the way, at the same cost to the solver
    always @(*) assume(y_size == 3'd1 && x_size <= 8'd3);
    always @(posedge clk)
        if (rst) {f_age, f_busy, f_done} <= 0;
        else if (started) begin
            f_age <= 0;
            f_busy <= 1'b1;
            f_bound <= 32'(y_size) * 32'(x_size) * EB + 2 * 32'(y_size) * (`VTA_DMA_WRITE_LATENCY + 1) + 5;
        end else if (f_ends) begin
            f_busy <= 1'b0;
            f_done <= 1'b1;
        end else if (f_busy) f_age <= f_age + 1;
    always @(*) if (f_live && !rst)
        live_store_within_bound: assert(!f_busy || f_age <= f_bound);
    always @(posedge clk) if (f_live && !rst)
        live_cover_store_of_two_bursts_done: cover(f_ends && f_age >= 8);
endmodule
`default_nettype wire
