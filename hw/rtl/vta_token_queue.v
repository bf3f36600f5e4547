// Dependency-token queue (spec section 6): a counter of up to TOKEN_DEPTH tokens. A token pushed
// in a cycle can be popped in that cycle, and a full queue takes a push in the cycle its
// consumer pops (docs/timing.md, "Hand-offs").
`default_nettype none
module vta_token_queue #(
    parameter DEPTH = 8
) (
    input  wire clk,
    input  wire rst,
    input  wire push_req,     // producer wants to push (must not depend on push_ok)
    output wire push_ok,      // the push lands this cycle
    output wire avail,        // a pop this cycle would find a token
    input  wire pop,          // consumer takes a token (only when avail)
    output wire [CW-1:0] count
);
    localparam CW = $clog2(DEPTH + 1);
    reg [CW-1:0] cnt;
    assign count   = cnt;
    assign avail   = (cnt != 0) || push_req;
    assign push_ok = (cnt != DEPTH[CW-1:0]) || pop;
    wire push = push_req && push_ok;
    always @(posedge clk) begin
        if (rst) cnt <= 0;
        else cnt <= cnt + CW'(push) - CW'(pop);
    end
endmodule
`default_nettype wire
