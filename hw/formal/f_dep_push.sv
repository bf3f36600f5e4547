// vta_dep_ctrl's issue register and pushes (through f_dep_ctrl, whose properties hold here too):
// it issues only into an empty (or emptying) register and keeps the instruction unchanged there,
// begins only an issued instruction and only when free (from the cycle after a retire: BEGIN_DELAY
// of docs/timing.md, revision 4), pushes exactly the tokens its flags ask for, after its body, each
// once and push_prev first, and retires when they have landed. Bounded: a body may last any number of
// cycles, and what the module owes is state its ports show only when the body ends, so
// k-induction has no bound to stop at; BMC checks every behaviour up to the depth.
`default_nettype none
module f_dep_push (
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
    input wire body_done
);
`include "f_reset.svh"
    wire issue, start, pop_prev, pop_next, push_prev, push_next, retire, in_body, stall_push;
    wire [127:0] insn;
    f_dep_ctrl dc (
        .clk(clk), .rst(rst), .enable(enable), .head_valid(head_valid), .head(head),
        .head_pop_prev(head_pop_prev), .head_pop_next(head_pop_next), .insn_push_prev(insn_push_prev),
        .insn_push_next(insn_push_next), .prev_avail(prev_avail), .next_avail(next_avail),
        .prev_push_ok(prev_push_ok), .next_push_ok(next_push_ok), .body_done(body_done), .issue(issue),
        .start(start), .pop_prev(pop_prev), .pop_next(pop_next), .push_prev(push_prev), .push_next(push_next),
        .retire(retire), .in_body(in_body), .stall_push(stall_push), .insn(insn));

    // ghost of the issue register: an instruction taken and not yet begun, and which one
    reg f_issued;
    reg [127:0] f_insn;
    always @(posedge clk)
        if (rst) f_issued <= 1'b0;
        else begin
            if (issue) f_insn <= head;
            f_issued <= issue || (f_issued && !start);
        end

    // ghost of the running instruction: started, body over, pushes still owed
    reg f_busy, f_body_over, f_owe_prev, f_owe_next;
    always @(posedge clk)
        if (rst) {f_busy, f_body_over, f_owe_prev, f_owe_next} <= 0;
        else if (start) begin
            f_busy <= 1'b1;
            f_body_over <= 1'b0;
            f_owe_prev <= insn_push_prev;
            f_owe_next <= insn_push_next;
        end else begin
            if (in_body && body_done) f_body_over <= 1'b1;
            if (push_prev && prev_push_ok) f_owe_prev <= 1'b0;
            if (push_next && next_push_ok) f_owe_next <= 1'b0;
            if (retire) f_busy <= 1'b0;
        end
    wire f_pushing = f_busy && (f_body_over || (in_body && body_done));
    always @(*) if (f_live && !rst) begin
        dp_issue_only_room: assert(!issue || !f_issued || start);
        dp_begin_only_issued: assert(!start || (f_issued && enable));
        dp_issued_insn_kept: assert(!f_issued || insn == f_insn);
        dp_start_only_free: assert(!start || !f_busy);
        dp_push_only_owed: assert((!push_prev || (f_pushing && f_owe_prev)) && (!push_next || (f_pushing && f_owe_next)));
        dp_push_prev_first: assert(!push_next || !f_owe_prev || (push_prev && prev_push_ok));
        dp_retire_when_pushed: assert(retire == (f_pushing && (!f_owe_prev || prev_push_ok) && (!f_owe_next || next_push_ok)));
        dp_body_tracks: assert(in_body == (f_busy && !f_body_over));
    end
    always @(posedge clk) if (f_live && !rst) begin
        dp_cover_push_waits_then_lands: cover($past(stall_push, 2) && $past(push_next && next_push_ok) && start);
        dp_cover_back_to_back: cover($past(retire) && start);
    end
endmodule
`default_nettype wire
