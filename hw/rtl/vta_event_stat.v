// A cycle-count statistic (the stall_* counters, spec statistics): the cycles in which `event`
// holds, counted a cycle late. The event is the end of a chain through a module's body and its
// token queues; registered first, it does not reach the 32 clock enables of the counter. The
// total is final a cycle after the last event, before
// the run's DONE is set (two cycles after FINISH).
`default_nettype none
module vta_event_stat (
    input  wire        clk,
    input  wire        rst,
    input  wire        event_now,   // the counted condition holds this cycle
    output reg  [31:0] total
);
    reg pend;
    always @(posedge clk) begin
        pend <= event_now && !rst;
        if (rst) total <= 0;
        else if (pend) total <= total + 1;
    end
endmodule
`default_nettype wire
