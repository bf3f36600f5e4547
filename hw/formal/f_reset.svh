// Included at the top of every harness: cycle 0 is a reset, and f_live is set from the cycle
// after the first reset on (registers hold their reset values then), so properties are checked
// from there; under k-induction the solver may start anywhere with f_live set.
    reg f_init = 1'b1;
    reg f_live = 1'b0;
    always @(posedge clk) begin
        f_init <= 1'b0;
        if (rst) f_live <= 1'b1;
    end
    always @(*) if (f_init) assume(rst);
