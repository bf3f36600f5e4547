// vta_dep_ctrl, the life cycle every module runs: it pops a token only when one is available
// (the token queues' "no underflow") and only those its instruction's flags name, and dequeues an
// instruction only when the queue has one. What it pushes is f_dep_push.sv's.
`default_nettype none
module f_dep_ctrl (
    input wire clk,
    input wire rst,
    input wire enable,
    input wire head_valid,
    input wire head_pop_prev,
    input wire head_pop_next,
    input wire head_push_prev,
    input wire head_push_next,
    input wire prev_avail,
    input wire next_avail,
    input wire prev_queued,
    input wire next_queued,
    input wire prev_push_ok,
    input wire next_push_ok,
    input wire prev_free_ok,
    input wire next_free_ok,
    input wire prev_not_full,
    input wire next_not_full,
    input wire body_done,
    output wire start,
    output wire pop_prev,
    output wire pop_next,
    output wire push_prev,
    output wire push_next,
    output wire retire,
    output wire in_body,
    output wire stall_push
);
`include "f_reset.svh"
    wire start_early, stall_token;
    vta_dep_ctrl dut (
        .clk(clk), .rst(rst), .head_valid(head_valid), .head_pop_prev(head_pop_prev),
        .head_pop_next(head_pop_next), .head_push_prev(head_push_prev), .head_push_next(head_push_next),
        .enable(enable), .prev_avail(prev_avail), .next_avail(next_avail), .prev_queued(prev_queued),
        .next_queued(next_queued), .prev_push_ok(prev_push_ok), .next_push_ok(next_push_ok),
        .prev_free_ok(prev_free_ok), .next_free_ok(next_free_ok), .prev_not_full(prev_not_full),
        .next_not_full(next_not_full), .body_done(body_done), .start(start), .start_early(start_early),
        .pop_prev(pop_prev), .pop_next(pop_next), .push_prev(push_prev), .push_next(push_next),
        .retire(retire), .in_body(in_body), .stall_token(stall_token), .stall_push(stall_push));
    // the queues' contracts: a token counted as queued is available, "free_ok" implies "push_ok"
    // is at most as optimistic as the push itself, as vta_top wires them
    always @(*) begin
        assume(!prev_queued || prev_avail);
        assume(!next_queued || next_avail);
        assume(!prev_free_ok || prev_push_ok);
        assume(!next_free_ok || next_push_ok);
    end

    always @(*) if (f_live && !rst) begin
        dc_pop_only_available: assert((!pop_prev || prev_avail) && (!pop_next || next_avail));
        dc_pop_only_flagged: assert(pop_prev == (start && head_pop_prev) && pop_next == (start && head_pop_next));
        dc_dequeue_only_valid: assert(!start || (head_valid && enable));
        dc_token_stall: assert(!stall_token || !start);
    end
    always @(posedge clk) if (f_live && !rst) begin
        dc_cover_pop_both: cover(start && pop_prev && pop_next);
        dc_cover_token_stall: cover(stall_token && head_pop_prev);
    end
endmodule
`default_nettype wire
