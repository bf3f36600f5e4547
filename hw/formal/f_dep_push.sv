// vta_dep_ctrl's pushes (through f_dep_ctrl, whose properties hold here too): it starts only when
// free, pushes exactly the tokens the instruction's flags ask for, after its body, each once and
// push_prev first, and retires when they have landed. Bounded: a body may last any number of
// cycles, and what the module owes is state its ports show only when the body ends, so
// k-induction has no bound to stop at; BMC checks every behaviour up to the depth.
`default_nettype none
module f_dep_push (
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
    input wire body_done
);
`include "f_reset.svh"
    wire start, pop_prev, pop_next, push_prev, push_next, retire, in_body, stall_push;
    f_dep_ctrl dc (
        .clk(clk), .rst(rst), .enable(enable), .head_valid(head_valid), .head_pop_prev(head_pop_prev),
        .head_pop_next(head_pop_next), .head_push_prev(head_push_prev), .head_push_next(head_push_next),
        .prev_avail(prev_avail), .next_avail(next_avail), .prev_queued(prev_queued),
        .next_queued(next_queued), .prev_push_ok(prev_push_ok), .next_push_ok(next_push_ok),
        .prev_free_ok(prev_free_ok), .next_free_ok(next_free_ok), .prev_not_full(prev_not_full),
        .next_not_full(next_not_full), .body_done(body_done), .start(start), .pop_prev(pop_prev),
        .pop_next(pop_next), .push_prev(push_prev), .push_next(push_next), .retire(retire),
        .in_body(in_body), .stall_push(stall_push));

    // ghost of the running instruction: started, body over, pushes still owed
    reg f_busy, f_body_over, f_owe_prev, f_owe_next;
    always @(posedge clk)
        if (rst) {f_busy, f_body_over, f_owe_prev, f_owe_next} <= 0;
        else if (start) begin
            f_busy <= 1'b1;
            f_body_over <= 1'b0;
            f_owe_prev <= head_push_prev;
            f_owe_next <= head_push_next;
        end else begin
            if (in_body && body_done) f_body_over <= 1'b1;
            if (push_prev && prev_push_ok) f_owe_prev <= 1'b0;
            if (push_next && next_push_ok) f_owe_next <= 1'b0;
            if (retire) f_busy <= 1'b0;
        end
    wire f_pushing = f_busy && (f_body_over || (in_body && body_done));
    always @(*) if (f_live && !rst) begin
        dp_start_only_free: assert(!start || !f_busy || retire);
        dp_push_only_owed: assert((!push_prev || (f_pushing && f_owe_prev)) && (!push_next || (f_pushing && f_owe_next)));
        dp_push_prev_first: assert(!push_next || !f_owe_prev || (push_prev && prev_push_ok));
        dp_retire_when_pushed: assert(retire == (f_pushing && (!f_owe_prev || prev_push_ok) && (!f_owe_next || next_push_ok)));
        dp_body_tracks: assert(in_body == (f_busy && !f_body_over));
    end
    always @(posedge clk) if (f_live && !rst) begin
        dp_cover_push_waits_then_lands: cover($past(stall_push) && push_next && next_push_ok && start);
        dp_cover_back_to_back: cover($past(start) && start);
    end
endmodule
`default_nettype wire
