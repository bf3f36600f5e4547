// Dependency-token queue (vta_token_queue, TOKEN_DEPTH): no overflow, no underflow, and its
// count is the tokens that landed minus those taken (a ghost counter). The consumer's side of
// "no underflow" (pop only when avail) is proven for vta_dep_ctrl in f_dep_ctrl.sv.
`default_nettype none
`include "vta_cfg.vh"
module f_token_queue (
    input wire clk,
    input wire rst,
    input wire push_req,
    input wire pop
);
`include "f_reset.svh"
    localparam D = `VTA_TOKEN_DEPTH;
    localparam CW = $clog2(D + 1);
    wire push_ok, avail;
    wire [CW-1:0] count;
    vta_token_queue #(.DEPTH(D)) dut (.clk(clk), .rst(rst), .push_req(push_req), .push_ok(push_ok),
                                      .avail(avail), .pop(pop), .count(count));
    // the consumer's contract (vta_dep_ctrl pops only what is available)
    always @(*) if (!rst) assume(!pop || avail);

    reg [CW:0] f_tokens;   // ghost: pushes that landed minus pops since reset
    always @(posedge clk)
        if (rst) f_tokens <= 0;
        else f_tokens <= f_tokens + (CW+1)'(push_req && push_ok) - (CW+1)'(pop);

    always @(*) if (f_live && !rst) begin
        tq_count_is_ghost: assert(count == f_tokens[CW-1:0] && f_tokens <= D);
        tq_no_overflow: assert(!(push_req && push_ok && count == D));
        tq_full_refuses: assert(push_ok == (count != D));       // registered: a slot freed at t takes a push from t + 1
        tq_avail_means_token: assert(avail == (count != 0));    // and a token pushed at t is popped from t + 1
    end
    always @(posedge clk) if (f_live && !rst) begin
        tq_cover_full: cover(count == D);
        tq_cover_full_push_refused_pop: cover(count == D && push_req && pop);
        tq_cover_push_and_pop: cover(count == 1 && push_req && push_ok && pop);
    end
endmodule
`default_nettype wire
