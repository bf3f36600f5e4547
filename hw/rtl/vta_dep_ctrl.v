// Instruction life cycle of one module (docs/timing.md "Hand-offs"): start the head instruction
// once the module is free and every token it pops is available (taking them together), run its
// body, then push its tokens (push_prev before push_next); the module is free in the cycle its
// last push lands, and a push into a full queue lands in the cycle its consumer pops.
//
// `start_early` is the same decision made from registered state only (queue counts, no pushes or
// pops of this cycle). It differs from `start` only when two modules each wait to push into a
// full queue that the other one would pop, which the model calls a deadlock; compute uses its
// partners' early starts to decide whether its own pushes land, which keeps the
// load<->compute and store<->compute hand-offs free of combinational loops.
`default_nettype none
module vta_dep_ctrl (
    input  wire clk,
    input  wire rst,
    input  wire head_valid,
    input  wire head_pop_prev,
    input  wire head_pop_next,
    input  wire head_push_prev,
    input  wire head_push_next,
    input  wire enable,          // low while the device is halted
    input  wire prev_avail,      // a token to pop, counting one pushed this cycle
    input  wire next_avail,
    input  wire prev_queued,     // a token to pop, queued before this cycle
    input  wire next_queued,
    input  wire prev_push_ok,    // this cycle's push would land
    input  wire next_push_ok,
    input  wire prev_free_ok,    // ... as far as the free decision may know
    input  wire next_free_ok,
    input  wire prev_not_full,
    input  wire next_not_full,
    input  wire body_done,       // the running instruction's body completes this cycle
    output wire start,
    output wire start_early,
    output wire pop_prev,
    output wire pop_next,
    output wire push_prev,       // push request (lands when the queue's push_ok)
    output wire push_next,
    output wire retire,          // the instruction is complete: body done and pushes landed
    output wire in_body,
    output wire stall_token,
    output wire stall_push
);
    reg st_body, st_push, pend_prev, pend_next;

    wire push_phase = (st_body && body_done) || st_push;
    assign push_prev = push_phase && pend_prev;
    assign push_next = push_phase && pend_next && (!pend_prev || prev_push_ok);
    wire land_prev = push_prev && prev_push_ok;
    wire land_next = push_next && next_push_ok;
    wire all_landed = (!pend_prev || land_prev) && (!pend_next || land_next);

    wire idle = !st_body && !st_push;
    wire free = idle || (push_phase && (!pend_prev || prev_free_ok) && (!pend_next || next_free_ok));
    wire tokens_ok = (!head_pop_prev || prev_avail) && (!head_pop_next || next_avail);
    assign start = enable && free && head_valid && tokens_ok;

    wire free_early = idle || (push_phase && (!pend_prev || prev_not_full) && (!pend_next || next_not_full));
    wire tokens_early = (!head_pop_prev || prev_queued) && (!head_pop_next || next_queued);
    assign start_early = enable && free_early && head_valid && tokens_early;

    assign pop_prev = start && head_pop_prev;
    assign pop_next = start && head_pop_next;
    assign retire = push_phase && all_landed;
    assign in_body = st_body;
    assign stall_token = enable && free && head_valid && !tokens_ok;
    assign stall_push = push_phase && !all_landed;

    always @(posedge clk) begin
        if (rst) begin
            st_body <= 1'b0;
            st_push <= 1'b0;
            pend_prev <= 1'b0;
            pend_next <= 1'b0;
        end else if (start) begin
            st_body <= 1'b1;
            st_push <= 1'b0;
            pend_prev <= head_push_prev;
            pend_next <= head_push_next;
        end else if (push_phase) begin
            st_body <= 1'b0;
            st_push <= !all_landed;
            pend_prev <= pend_prev && !land_prev;
            pend_next <= pend_next && !land_next;
        end
    end
endmodule
`default_nettype wire
