// Synchronous FIFO. With BYPASS = 1 an entry written into an empty FIFO is visible at the output
// in that cycle and a full FIFO accepts an entry in the cycle its head leaves (the master's read
// FIFO). With BYPASS = 0 every hand-off is registered: an entry is visible from the cycle after
// its write and a slot freed by a read is free from the next cycle, which is what docs/timing.md
// ("Hand-offs") asks of the instruction queues.
// The entry at the head is kept in its own register (`head`), loaded as it becomes the head: the
// output is a register (or the bypassed input), never the memory's read, so no LUT RAM read
// feeds the DMAs' beat data in the same cycle.
`default_nettype none
module vta_fifo #(
    parameter WIDTH = 8,
    parameter DEPTH = 4,
    parameter BYPASS = 1
) (
    input  wire             clk,
    input  wire             rst,
    input  wire             in_valid,
    input  wire [WIDTH-1:0] in_data,
    output wire             in_ready,
    output wire             out_valid,
    output wire [WIDTH-1:0] out_data,
    input  wire             out_ready,
    output wire [CW-1:0]    count
);
    localparam AW = (DEPTH > 1) ? $clog2(DEPTH) : 1;
    localparam CW = $clog2(DEPTH + 1);

    reg [WIDTH-1:0] mem [0:DEPTH-1];
    reg [AW-1:0] rd_ptr, wr_ptr;
    reg [CW-1:0] cnt;
    // cnt == 0 as its own register: a bypass select fans out over the bus width into the
    // consumer's data path, so no compare sits in front of it
    reg empty;
    reg [WIDTH-1:0] head;   // mem[rd_ptr] whenever the FIFO holds an entry
    assign count     = cnt;
    assign in_ready  = (cnt != DEPTH[CW-1:0]) || (BYPASS != 0 && out_ready);
    assign out_valid = !empty || (BYPASS != 0 && in_valid);
    assign out_data  = (BYPASS != 0 && empty) ? in_data : head;

    wire deq = out_valid && out_ready;
    wire enq = in_valid && in_ready;
    wire bypass = (BYPASS != 0) && empty && enq && deq;   // passes straight through, never stored

    function [AW-1:0] next_ptr(input [AW-1:0] p);
        next_ptr = (p == AW'(DEPTH - 1)) ? {AW{1'b0}} : p + 1'b1;
    endfunction

    wire inc = enq && !bypass, dec = deq && !bypass;   // an entry stored, an entry leaves the memory
    wire [CW-1:0] cnt_next = cnt + CW'(inc) - CW'(dec);
    always @(posedge clk) begin
        if (rst) begin
            rd_ptr <= 0;
            wr_ptr <= 0;
            cnt <= 0;
            empty <= 1'b1;
        end else begin
            // the memory takes every valid input, stored or not: a slot not stored into is free
            // (an empty FIFO's, when it bypasses) or the head's, whose entry is in `head` (a full
            // FIFO: wr_ptr == rd_ptr; only the entry behind the head is ever read). Its write
            // enable is then the input's valid alone, not the read (so the store's W handshake
            // does not run through the bypass into the LUT RAMs' enables)
            if (in_valid) mem[wr_ptr] <= in_data;
            if (inc) wr_ptr <= next_ptr(wr_ptr);
            if (dec) rd_ptr <= next_ptr(rd_ptr);
            // the next head: the entry behind the leaving one, the entering one into a FIFO
            // that holds none after this cycle's read, or the head as it is. The choice of data
            // reads the count alone (an empty FIFO's count is 0), so the read (out_ready, late:
            // the owner's burst state in the master) is only the registers' clock enable, no
            // mux after it on the whole width
            if (dec || empty) head <= (cnt > CW'(1)) ? mem[next_ptr(rd_ptr)] : in_data;
            cnt <= cnt_next;
            // cnt_next == 0 as compares of cnt's register chosen by the step, not through the
            // adder, so the read ready does not run through the count's adder into this register
            empty <= (inc == dec) ? (cnt == 0) : dec ? (cnt == CW'(1)) : (cnt == {CW{1'b1}});
        end
    end
`ifdef FORMAL
`include "vta_fifo_ghost.svh"   // hw/formal/: the ghost behind the queue proofs
`endif
endmodule
`default_nettype wire
