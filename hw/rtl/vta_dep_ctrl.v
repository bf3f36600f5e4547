// Instruction life cycle of one module (docs/timing.md, "Hand-offs"), in two stages.
//
// Issue: the queue's head (registered FIFO) moves into the issue register once every token it
// pops is queued (registered counters) and the register is empty or hands its instruction on in
// this cycle; the tokens are popped then. Begin (`start`): the issued instruction begins once the
// module is free. Its body runs, then its tokens are pushed (push_prev before push_next), each
// landing in a cycle its queue was not full at the last edge; the instruction retires in the cycle
// its last push lands and the module is free from the next. Every decision reads registers only
// (no same-cycle push, pop, enqueue or completion), so no chain crosses from one module into
// another, nor from a body's end into the next begin, and the next instruction waits in the
// issue register while the current one runs: back-to-back instructions begin in the cycle after
// the previous one retires.
`default_nettype none
module vta_dep_ctrl (
    input  wire         clk,
    input  wire         rst,
    input  wire         head_valid,
    input  wire [127:0] head,
    input  wire         head_pop_prev,
    input  wire         head_pop_next,
    output reg  [127:0] insn,            // the issued instruction (the running one once it begins)
    input  wire         insn_push_prev,  // its push flags
    input  wire         insn_push_next,
    input  wire         enable,          // low while the device is halted
    input  wire         prev_avail,      // a token to pop (queued before this cycle)
    input  wire         next_avail,
    input  wire         prev_push_ok,    // a push lands this cycle
    input  wire         next_push_ok,
    input  wire         body_done,       // the running instruction's body completes this cycle
    output wire         issue,           // the head leaves the queue (its tokens are popped)
    output wire         start,           // the issued instruction begins
    output wire         pop_prev,
    output wire         pop_next,
    output wire         push_prev,       // push request (lands when the queue's push_ok)
    output wire         push_next,
    output wire         retire,          // the instruction is complete: body done and pushes landed
    output wire         in_body,
    output wire         stall_token,
    output wire         stall_push
);
    reg st_body, st_push, pend_prev, pend_next, n_valid;

    wire push_phase = (st_body && body_done) || st_push;
    assign push_prev = push_phase && pend_prev;
    assign push_next = push_phase && pend_next && (!pend_prev || prev_push_ok);
    wire land_prev = push_prev && prev_push_ok;
    wire land_next = push_next && next_push_ok;
    wire all_landed = (!pend_prev || land_prev) && (!pend_next || land_next);

    // free from registers only (docs/timing.md, BEGIN_DELAY): a module that retires at t begins
    // its next instruction from t + 1, so no chain runs from a body's end into the next begin
    wire idle = !st_body && !st_push;
    assign start = enable && n_valid && idle;

    wire n_free = !n_valid || start;
    wire tokens_ok = (!head_pop_prev || prev_avail) && (!head_pop_next || next_avail);
    assign issue = enable && head_valid && n_free && tokens_ok;

    assign pop_prev = issue && head_pop_prev;
    assign pop_next = issue && head_pop_next;
    assign retire = push_phase && all_landed;
    assign in_body = st_body;
    assign stall_token = enable && head_valid && n_free && !tokens_ok;
    assign stall_push = push_phase && !all_landed;

    always @(posedge clk) begin
        if (rst) begin
            st_body <= 1'b0;
            st_push <= 1'b0;
            pend_prev <= 1'b0;
            pend_next <= 1'b0;
            n_valid <= 1'b0;
        end else begin
            if (start) begin
                st_body <= 1'b1;
                st_push <= 1'b0;
                pend_prev <= insn_push_prev;
                pend_next <= insn_push_next;
            end else if (push_phase) begin
                st_body <= 1'b0;
                st_push <= !all_landed;
                pend_prev <= pend_prev && !land_prev;
                pend_next <= pend_next && !land_next;
            end
            if (issue) n_valid <= 1'b1;
            else if (start) n_valid <= 1'b0;
        end
        if (issue) insn <= head;
    end
endmodule
`default_nettype wire
