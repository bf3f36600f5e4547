// Dependency-token queue (spec section 6): a counter of up to TOKEN_DEPTH tokens, registered both
// ways (docs/timing.md, "Hand-offs"): a token pushed at t can be popped from t + 1,
// and a slot freed by a pop at t takes a push from t + 1.
`default_nettype none
module vta_token_queue #(
    parameter DEPTH = 8
) (
    input  wire clk,
    input  wire rst,
    input  wire push_req,     // producer wants to push
    output wire push_ok,      // a push lands this cycle (the queue was not full at the last edge)
    output wire avail,        // a pop this cycle finds a token (queued before this cycle)
    input  wire pop,          // consumer takes a token (only when avail)
    output wire [CW-1:0] count
);
    localparam CW = $clog2(DEPTH + 1);
    reg [CW-1:0] cnt;
    assign count   = cnt;
    assign avail   = (cnt != 0);
    assign push_ok = (cnt != DEPTH[CW-1:0]);
    wire push = push_req && push_ok;
    always @(posedge clk) begin
        if (rst) cnt <= 0;
        else cnt <= cnt + CW'(push) - CW'(pop);
    end
endmodule
`default_nettype wire
