// Included inside vta_fifo under `ifdef FORMAL (a formal read only; Verilator and synthesis never
// see it). Yosys has no hierarchical references or `bind`, so what the queue's properties need of
// its memory lives here: a ghost follows the f_n-th entry to enter (f_n is any constant) and
// checks that it leaves as the f_n-th, unchanged; the pointer and memory invariants make that a
// k-induction proof. Checked wherever a vta_fifo is instantiated in a formal run.
    reg f_reset_seen = 1'b0;
    (* anyconst *) reg [31:0] f_n;
    reg [31:0] f_in, f_out;        // entries in and out since reset
    reg [WIDTH-1:0] f_data;        // the f_n-th entry, once it has entered
    wire [31:0] f_off = f_n - f_out;
    always @(posedge clk) begin
        if (rst) begin
            f_reset_seen <= 1'b1;
            f_in <= 0;
            f_out <= 0;
        end else begin
            f_in <= f_in + 32'(enq);
            f_out <= f_out + 32'(deq);
            if (enq && f_in == f_n) f_data <= in_data;
        end
    end
    always @(*) if (f_reset_seen && !rst) begin
        fifo_count_bound: assert(cnt <= DEPTH[CW-1:0]);
        fifo_empty_flag: assert(empty == (cnt == 0));
        // a full FIFO's memory may hold an input it refused in the head's slot (the head is in
        // `head`; vta_fifo writes every valid input)
        if (!empty && cnt != DEPTH[CW-1:0]) fifo_head_reg: assert(head == mem[rd_ptr]);
        fifo_count_is_ghost: assert(f_in - f_out == 32'(cnt));
        fifo_ptrs: assert(rd_ptr < DEPTH && wr_ptr == AW'((32'(rd_ptr) + 32'(cnt)) % DEPTH));
        if (f_off < 32'(cnt))
            fifo_entry_held: assert((f_off == 0 ? head : mem[AW'((32'(rd_ptr) + f_off) % DEPTH)]) == f_data);
        if (deq && f_out == f_n)
            fifo_in_order_unchanged: assert(out_data == ((f_in == f_n) ? in_data : f_data));
    end
