// vta_dep_ctrl, the life cycle every module runs: it pops a token only when one is available
// (the token queues' "no underflow") and only those its instruction's flags name, takes an
// instruction only from a non-empty queue. What it issues, begins and pushes is f_dep_push.sv's.
`default_nettype none
module f_dep_ctrl (
    input wire clk,
    input wire rst,
    input wire enable,
    input wire head_valid,
    input wire [127:0] head,
    input wire head_pop_prev,
    input wire head_pop_next,
    input wire insn_push_prev,
    input wire insn_push_next,
    input wire prev_avail,
    input wire next_avail,
    input wire prev_push_ok,
    input wire next_push_ok,
    input wire body_done,
    output wire issue,
    output wire start,
    output wire pop_prev,
    output wire pop_next,
    output wire push_prev,
    output wire push_next,
    output wire retire,
    output wire in_body,
    output wire stall_push,
    output wire [127:0] insn
);
`include "f_reset.svh"
    wire stall_token;
    vta_dep_ctrl dut (
        .clk(clk), .rst(rst), .head_valid(head_valid), .head(head), .head_pop_prev(head_pop_prev),
        .head_pop_next(head_pop_next), .insn(insn), .insn_push_prev(insn_push_prev),
        .insn_push_next(insn_push_next), .enable(enable), .prev_avail(prev_avail), .next_avail(next_avail),
        .prev_push_ok(prev_push_ok), .next_push_ok(next_push_ok), .body_done(body_done), .issue(issue),
        .start(start), .pop_prev(pop_prev), .pop_next(pop_next), .push_prev(push_prev), .push_next(push_next),
        .retire(retire), .in_body(in_body), .stall_token(stall_token), .stall_push(stall_push));
    always @(*) if (f_live && !rst) begin
        dc_pop_only_available: assert((!pop_prev || prev_avail) && (!pop_next || next_avail));
        dc_pop_only_flagged: assert(pop_prev == (issue && head_pop_prev) && pop_next == (issue && head_pop_next));
        dc_dequeue_only_valid: assert(!issue || (head_valid && enable));
        dc_token_stall: assert(!stall_token || !issue);
    end
    always @(posedge clk) if (f_live && !rst) begin
        dc_cover_pop_both: cover(issue && pop_prev && pop_next);
        dc_cover_issue_while_begin: cover(issue && start);
        dc_cover_token_stall: cover(stall_token && head_pop_prev);
    end
endmodule
`default_nettype wire
