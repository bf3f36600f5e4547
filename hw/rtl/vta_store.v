// Store module: executes STORE OUT (spec section 5), popping c2s and pushing s2c. The AW issuer
// walks rows and bursts and sums the model duration (beats + DMA_WRITE_LATENCY per burst); the
// OUT reader streams the y_size x x_size entries, which are contiguous in OUT, onto W; the
// instruction is done when every burst is acknowledged and the modelled duration has passed.
// Timing (docs/hardware.md, Fmax): the issuer keeps the bytes left in the row and to the next
// burst boundary as registers (after a burst that is not a row's last the boundary is a whole
// BOUND away), and whether the next burst is the row's last as a register too (`fits`); the
// duration left (rem = duration - elapsed) is a down-counter that a burst's cycles join a cycle
// after its AW (its B response comes later still), so the done test reads registers only.
`default_nettype none
`include "vta_cfg.vh"
module vta_store (
    input  wire         clk,
    input  wire         rst,
    input  wire         enable,
    input  wire         head_valid,
    /* verilator lint_off UNUSEDSIGNAL */  // a STORE uses only some fields of the word
    input  wire [127:0] head,
    /* verilator lint_on UNUSEDSIGNAL */
    output wire         head_ready,
    input  wire         c2s_avail,
    output wire         c2s_pop,
    output wire         s2c_push,
    input  wire         s2c_push_ok,
    output wire [15:0]  out_raddr,
    input  wire [`VTA_OUT_BYTES*8-1:0] out_rdata,
    output wire         aw_valid,
    output wire [31:0]  aw_addr,
    output wire [7:0]   aw_len,
    input  wire         aw_ready,
    output wire         w_valid,
    output wire [`VTA_BUS_BYTES*8-1:0] w_data,
    output wire         w_last,
    input  wire         w_ready,
    input  wire         b_valid,
    output wire [31:0]  out_bytes,
    output reg  [31:0]  busy_cycles,
    output wire [31:0]  stall_token,
    output wire [31:0]  stall_push,
    output reg  [31:0]  insn_count,
    output wire         running       // an instruction begins or its body is under way
);
    localparam BB = `VTA_BUS_BYTES;
    localparam LBB = `VTA_LOG_BUS_BYTES;
    localparam BOUND = `VTA_BURST_BOUNDARY;
    localparam EB = `VTA_OUT_BYTES / BB;                 // beats per OUT entry
    localparam LE = $clog2(`VTA_OUT_BYTES);

    wire start, body_done, in_body, st_tok, st_push;
    /* verilator lint_off UNUSEDSIGNAL */  // a STORE uses only some fields of the word
    wire [127:0] insn;      // the issued instruction, latched below when it begins
    /* verilator lint_on UNUSEDSIGNAL */
    vta_dep_ctrl ctrl (
        .clk(clk), .rst(rst), .enable(enable),
        .head_valid(head_valid), .head(head),
        .head_pop_prev(`VTA_C2S_POP(head)), .head_pop_next(1'b0),
        .insn(insn), .insn_push_prev(`VTA_S2C_PUSH(insn)), .insn_push_next(1'b0),
        .prev_avail(c2s_avail), .next_avail(1'b0),
        .prev_push_ok(s2c_push_ok), .next_push_ok(1'b0),
        .body_done(body_done), .issue(head_ready), .start(start),
        // the store module has no next queue and needs no retire strobe
        /* verilator lint_off PINCONNECTEMPTY */
        .pop_prev(c2s_pop), .pop_next(), .push_prev(s2c_push), .push_next(),
        .retire(), /* verilator lint_on PINCONNECTEMPTY */
        .in_body(in_body), .stall_token(st_tok), .stall_push(st_push));
    vta_event_stat tok_stat (.clk(clk), .rst(rst), .event_now(st_tok), .total(stall_token));
    vta_event_stat push_stat (.clk(clk), .rst(rst), .event_now(st_push), .total(stall_push));
    assign running = in_body || start;

    wire [15:0] f_y = `VTA_MEM_Y_SIZE(insn), f_x = `VTA_MEM_X_SIZE(insn);
    vta_bytes_stat out_stat (.clk(clk), .rst(rst), .add(start), .x_size(f_x), .y_size(f_y), .lg(4'(LE)),
                             .total(out_bytes));
    wire [31:0] f_base = `VTA_MEM_DRAM_BASE(insn) << LE;

    localparam LB = $clog2(BOUND);
    reg         nop;
    reg signed [47:0] rem;          // modelled duration - elapsed cycles (bursts issued so far)
    reg [15:0]  rem_add;            // the last AW's burst cycles, joining rem a cycle later
    reg [15:0]  y_size;
    reg [31:0]  row_bytes, stride_bytes;

    // ------------------------------------------------------------ AW issuer
    reg         aw_active;
    reg [15:0]  aw_row;
    reg [31:0]  aw_cur, nrs, left, pend;   // nrs: the next row's start; pend: bursts not acknowledged
    reg [LB:0]  to_bound;                  // bytes from aw_cur to the next burst boundary
    // the row's last burst: (left[31:LB+1] == 0) && (left[LB:0] <= to_bound), registered with left
    // and to_bound from their next values (fits_of), so that an AW's handshake enables the walk's
    // registers without a compare in front (the enable reaches some 150 flip-flops)
    reg         fits;
    function automatic fits_of(input [31:0] l, input [LB:0] tb);
        fits_of = (l[31:LB+1] == 0) && (l[LB:0] <= tb);
    endfunction
    wire [8:0]  beats = fits ? 9'(left >> LBB) : 9'(to_bound >> LBB);
    wire [2:0]  wl_count;
    assign aw_valid = aw_active && (wl_count != 3'd4);   // not in_ready: that would loop through W
    assign aw_addr = aw_cur;
    assign aw_len = fits ? 8'((left - 1) >> LBB) : 8'((32'(to_bound) - 1) >> LBB);
    wire aw_fire = aw_valid && aw_ready;
    // (* keep *): the AW walk's adders and the start's are kept apart; Yosys' opt_share would
    // merge each pair into one adder with its operands chosen by start, in front of the carry
    (* keep *) wire [31:0] nrs_inc = nrs + stride_bytes;
    (* keep *) wire [31:0] aw_cur_inc = aw_cur + 32'(to_bound);
    (* keep *) wire [31:0] left_dec = left - 32'(to_bound);
    (* keep *) wire [LB:0] nrs_to_bound = (LB+1)'(BOUND) - (LB+1)'(nrs & (BOUND - 1));
    (* keep *) wire [31:0] f_nrs = f_base + (32'(`VTA_MEM_X_STRIDE(insn)) << LE);
    (* keep *) wire [LB:0] f_to_bound = (LB+1)'(BOUND) - (LB+1)'(f_base & (BOUND - 1));

    // burst lengths for WLAST; registered (no bypass): a burst's W beats start the cycle after its
    // AW at the earliest, so AWREADY does not reach the W path and the entry queue, and the OUT
    // entries' own read latency already keeps the first beat that late
    wire       wl_valid;
    wire [8:0] wl_len;
    reg  [8:0] w_in_burst;
    wire       w_fire = w_valid && w_ready;
    assign w_last = (w_in_burst + 1 == wl_len);
    vta_fifo #(.WIDTH(9), .DEPTH(4), .BYPASS(0)) wlen_q (
        .clk(clk), .rst(rst), .in_valid(aw_fire), .in_data(beats),
        /* verilator lint_off PINCONNECTEMPTY */ .in_ready(), /* verilator lint_on PINCONNECTEMPTY */
        .out_valid(wl_valid), .out_data(wl_len), .out_ready(w_fire && w_last), .count(wl_count));

    // ------------------------------------------------------------ OUT reader and W beats
    reg  [15:0] rd_rows, rd_x, x_size;   // rows left to read, entries left in the row being read
    reg  [15:0] rd_idx;
    // OUT is read through its block RAM's output register (RD_REG = 1 in vta_top: the entry two
    // cycles after its address, not the array's 5.8 ns clock-to-out into the entry queue)
    reg         rd_inflight, rd_inflight2;   // a read one and two cycles ago
    wire        e_valid;
    wire [`VTA_OUT_BYTES*8-1:0] e_data;
    /* verilator lint_off UNUSEDSIGNAL */  // the formal assertion below states occ by it
    wire [2:0]  e_count;
    /* verilator lint_on UNUSEDSIGNAL */
    reg  [7:0]  wb;
    wire        e_last_beat = (wb == 8'(EB - 1));
    // the entry queue's slots taken or promised (e_count + rd_inflight + rd_inflight2) and
    // rd_rows != 0, each a register stepped with what it counts: the read's enable from
    // flip-flops only (no sum and compare of the counts in front of the OUT read address's clock
    // enables)
    reg  [2:0]  occ;
    reg         rows_left;
    wire out_re = rows_left && (occ < 3'd4);
    wire e_deq = w_fire && e_last_beat;   // the entry queue's read (its out_valid is in w_fire)
    assign out_raddr = rd_idx;
    vta_fifo #(.WIDTH(`VTA_OUT_BYTES*8), .DEPTH(4)) ent_q (
        .clk(clk), .rst(rst), .in_valid(rd_inflight2), .in_data(out_rdata),
        /* verilator lint_off PINCONNECTEMPTY */ .in_ready(), /* verilator lint_on PINCONNECTEMPTY */
        .out_valid(e_valid), .out_data(e_data), .out_ready(e_deq), .count(e_count));
    assign w_valid = e_valid && wl_valid;
    assign w_data = e_data[32'(wb) * BB * 8 +: BB * 8];

    // ------------------------------------------------------------ completion
    // done-test flags registered from the counters' next values: no carry or wide compare on the
    // path from them through the module's done to the next instruction's start
    wire [31:0] pend_next = pend + 32'(aw_fire) - 32'(b_valid);
    wire signed [47:0] rem_sum = rem + 48'(rem_add);
    wire signed [47:0] rem_next = rem_sum - 48'(in_body);
    reg pend0, pend1, dur_over;       // pend = 0, pend = 1, rem <= 1 (elapsed + 1 >= duration)
    wire acked = b_valid ? pend1 : pend0;
    assign body_done = in_body && (nop || (!aw_active && acked && dur_over));

    always @(posedge clk) begin
        if (rst) begin
            aw_active <= 1'b0;
            rd_rows <= 0;
            rows_left <= 1'b0;
            occ <= 0;
            pend <= 0;
            pend0 <= 1'b1;
            pend1 <= 1'b0;
            rem_add <= 0;
            rd_inflight <= 1'b0;
            rd_inflight2 <= 1'b0;
            nop <= 1'b0;
            wb <= 0;
            w_in_burst <= 0;
            {busy_cycles, insn_count} <= 0;
        end else begin
            rd_inflight <= out_re;
            rd_inflight2 <= rd_inflight;
            occ <= occ + 3'(out_re) - 3'(e_deq);
            if (out_re) begin
                rd_idx <= rd_idx + 1;
                rd_x <= (rd_x == 16'd1) ? x_size : rd_x - 1;
                if (rd_x == 16'd1) begin
                    rd_rows <= rd_rows - 1;
                    rows_left <= (rd_rows != 16'd1);
                end
            end
            if (w_fire) begin
                wb <= e_last_beat ? 8'd0 : wb + 1;
                w_in_burst <= w_last ? 9'd0 : w_in_burst + 1;
            end
            pend <= pend_next;
            pend0 <= (pend_next == 0);
            pend1 <= (pend_next == 1);
            rem <= rem_next;
            // rem_next <= 1 as rem_sum <= 1 + in_body: in_body (the body's start, from the
            // controller) chooses after the sum's carry chain, not in front of a second one
            dur_over <= rem_sum[47] || (rem_sum[47:2] == 0 && rem_sum[1:0] <= (in_body ? 2'd2 : 2'd1));
            rem_add <= aw_fire ? 16'(beats) + 16'(`VTA_DMA_WRITE_LATENCY) : 16'd0;
            if (aw_fire) begin
                if (fits) begin
                    aw_row <= aw_row + 1;
                    aw_active <= (aw_row + 1 != y_size);
                    aw_cur <= nrs;
                    nrs <= nrs_inc;
                    left <= row_bytes;
                    to_bound <= nrs_to_bound;
                    fits <= fits_of(row_bytes, nrs_to_bound);
                end else begin
                    aw_cur <= aw_cur_inc;
                    left <= left_dec;
                    to_bound <= (LB+1)'(BOUND);
                    fits <= fits_of(left_dec, (LB+1)'(BOUND));
                end
            end
            if (start) begin
                insn_count <= insn_count + 1;
                nop <= (f_x == 0);
                y_size <= f_y;
                row_bytes <= 32'(f_x) << LE;
                stride_bytes <= 32'(`VTA_MEM_X_STRIDE(insn)) << LE;
                rem <= 0;
                dur_over <= 1'b1;
                aw_active <= (f_x != 0) && (f_y != 0);
                aw_row <= 0;
                aw_cur <= f_base;
                nrs <= f_nrs;
                left <= 32'(f_x) << LE;
                to_bound <= f_to_bound;
                fits <= fits_of(32'(f_x) << LE, f_to_bound);
                rd_idx <= `VTA_MEM_SRAM_BASE(insn);
                rd_rows <= (f_x != 0) ? f_y : 16'd0;
                rows_left <= (f_x != 0) && (f_y != 0);
                rd_x <= f_x;
                x_size <= f_x;
            end
            if (in_body) busy_cycles <= busy_cycles + 1;
        end
    end
`ifdef FORMAL
    always @(*) if (!rst) store_read_regs: assert(occ <= 3'd4 && 32'(occ) == 32'(e_count) + 32'(rd_inflight) + 32'(rd_inflight2) &&
                                                  rows_left == (rd_rows != 0));
    // the registered last-burst test equals its compare while the walk runs (for k-induction)
    always @(*) if (!rst && aw_active) store_fits_reg: assert(fits == fits_of(left, to_bound));
`endif
endmodule
`default_nettype wire
