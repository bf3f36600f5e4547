// Included by the liveness harnesses (f_load_live, f_compute_live) after f_reset.svh: follows one
// instruction at a time from its issue (`issue`: the module's head_ready; f_age 0 there) to the
// cycle after its last `running` cycle (f_end), and asserts that it ends within `n_bound` cycles of
// its issue (the head's bound, latched then). The including module declares issue, running,
// head_valid and n_bound; f_at_bound (its last running cycle was exactly at the bound) is for its
// covers.
    reg [31:0] f_age, f_bound;
    reg f_busy, f_ran;
    wire f_end = f_busy && f_ran && !running;
    wire f_at_bound = f_end && f_age == f_bound + 1;
    always @(*) if (!rst) assume(!head_valid || !f_busy);
    always @(posedge clk)
        if (rst) {f_busy, f_ran} <= 0;
        else if (issue) {f_busy, f_ran, f_age, f_bound} <= {2'b10, 32'd1, n_bound};
        else if (f_busy) begin
            f_busy <= !f_end;
            f_ran <= f_ran || running;
            f_age <= f_age + 1;
        end
    always @(*) if (f_live && !rst)
        live_within_bound: assert(!f_busy || f_end || f_age <= f_bound);
