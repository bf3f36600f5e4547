// 2-D strided DMA from DRAM into an SRAM with zero padding (spec section 5, LOAD), shared by the
// load module (INP, WGT) and the compute module (UOP, ACC, ACC_8BIT).
//
// It walks the destination entries in order, as docs/timing.md describes a LOAD: a pad entry is
// written as zero in one cycle without the read port; the data of a row is read in bursts split
// at the burst boundary, each of which requests the read port REQUEST_DELAY (1) cycle after the
// previous segment ends and holds it DMA_READ_LATENCY + beats cycles from the grant. The engine runs one cycle behind
// the model: the cycle that processes the last cycle of a segment raises done_now, or registers
// the next burst's request and set-up, seen from the next cycle (REQUEST_DELAY of
// docs/timing.md). Beats that arrive early
// wait in the master's read FIFO; a burst whose beats are late (DRAM back-pressure) holds its
// last cycle until they have all arrived, so the RTL is never faster than the model.
`default_nettype none
`include "vta_cfg.vh"
module vta_dma_read #(
    parameter MAXE = 64,     // widest element (bytes) of the memories this instance fills
    parameter K = 1          // elements per beat for elements narrower than a beat (UOP)
) (
    input  wire                       clk,
    input  wire                       rst,
    input  wire                       go,        // the LOAD starts (only while idle: dep_ctrl's BEGIN_DELAY)
    /* verilator lint_off UNUSEDSIGNAL */  // the opcode and flags belong to the module
    input  wire [127:0]               insn,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [3:0]                 elog,      // log2 of the DRAM element bytes
    output wire                       port_req,
    input  wire                       port_gnt,
    output wire                       port_done, // the current burst's last cycle
    output wire                       ar_valid,
    output wire [31:0]                ar_addr,
    output wire [7:0]                 ar_len,
    input  wire                       ar_ready,
    input  wire                       r_valid,
    input  wire [`VTA_BUS_BYTES*8-1:0] r_data,
    output wire                       r_ready,
    output wire                       wr_en,
    output wire [15:0]                wr_idx,
    output reg  [MAXE*8-1:0]          wr_data,
    // wr_data of an element no narrower than a beat, without the narrow elements' shifter: what a
    // memory whose elements are never narrow writes (no shifter select, cur, in front of the
    // ACC SRAM's write register)
    output wire [MAXE*8-1:0]          wr_wide,
    output wire [K-1:0]               wr_lanes,  // valid elements of a narrow-element beat
    output wire                       done_now   // the LOAD's last cycle
);
    localparam BB = `VTA_BUS_BYTES;
    localparam LBB = `VTA_LOG_BUS_BYTES;
    localparam BOUND = `VTA_BURST_BOUNDARY;
    localparam S_IDLE = 2'd0, S_PAD = 2'd1, S_REQ = 2'd2, S_BURST = 2'd3;
    localparam LB = $clog2(BOUND);
    // a burst stays inside one BOUND-aligned window: at most BOUND / BB beats, counted in BW bits;
    // its tick counter starts LAT - 1 below zero (TW bits, wrapping) so that it ends at b_beats
    localparam BW = $clog2(BOUND / BB + 2);
    localparam TW = $clog2(BOUND / BB + `VTA_DMA_READ_LATENCY + 2) + 1;

    // ------------------------------------------------------------ latched instruction
    reg [1:0]  state;
    reg [3:0]  y0, x0;
    reg [16:0] x_end, y_end;     // x_pad_0 + x_size, y_pad_0 + y_size: the data's ends
    reg [16:0] w_last, r_last;   // the last column and row
    reg        no_xp1;           // x_pad_1 = 0: a row's last data write ends the row
    reg [31:0] row_bytes, stride_bytes;
    /* verilator lint_off UNUSEDSIGNAL */  // the formal harnesses' invariants read lg
    reg [3:0]  lg;               // log2 of the element's bytes
    /* verilator lint_on UNUSEDSIGNAL */
    reg        narrow;           // elements narrower than a beat (lg < LOG_BUS_BYTES): only where
                                 // K > 1 (hw/header.py refuses the rest), a constant 0 elsewhere
    reg [7:0]  bc_last;          // an element's last beat: 2^(lg - LOG_BUS_BYTES) - 1, or 0
    // an element's bytes, and lg as narrow elements need it (lg < LOG_BUS_BYTES), registered at
    // go, so no shift by lg sits in front of the position's adders (lg -> cur)
    localparam LGB = (LBB > 1) ? $clog2(LBB) : 1;
    reg [31:0] e_bytes;          // 1 << lg
    reg [LGB-1:0] lg_n;          // lg when narrow

    // ------------------------------------------------------------ position in the entry grid
    reg [16:0] r, c;
    reg [16:0] xl;           // x_end - c: the data entries left in the row, from a data column
    reg [15:0] idx;
    reg [31:0] row_base;     // DRAM byte of the current (or next) data row
    reg [31:0] row_end;      // row_base + row_bytes
    reg [31:0] nrb;          // row_base + stride_bytes: the next data row's base
    reg [31:0] left_r;       // row_end - cur, a cycle late (what a burst after a burst reads)
    reg [31:0] cur;          // DRAM byte of the current data position
    reg [7:0]  bc;           // beat within the element
    localparam NB = (MAXE > BB) ? MAXE / BB : 1;
    reg [NB-1:0] bc_oh;      // 1 << bc: the beat's slot in the entry, a registered select per slot
    reg [MAXE*8-1:0] asm_r;

    reg end_r, pad_r;        // the position at the start of this cycle is the LOAD's end, a pad

    // ------------------------------------------------------------ the current burst
    reg [BW-1:0] b_beats, b_got;
    reg [TW-1:0] b_tick;
    reg [7:0]    b_len;
    reg [31:0]   b_addr, q_cur;
    reg [LB:0]   q_bound;   // bytes to the next burst boundary from q_cur (1..BOUND)
    reg [LBB:0]  q_o7;      // q_cur's offset in its beat plus BB - 1: a burst's beats less its bytes
    reg [LB+1:0] q_om1;     // that offset minus 1 (two's complement): its ARLEN less its bytes
    reg          q_row;     // the next burst starts a row: row_bytes left, else left_r
    reg          ar_pend, empty;
    // compares kept as registers, updated with what they compare: a burst's end (into the port's
    // release and the next grant) and an element's last beat (into the write and the position
    // logic) read flip-flops only
    reg          last_tick;    // b_tick == b_beats
    reg          got_all;      // b_got == b_beats
    reg          last_beat_r;  // bc == bc_last

    assign ar_valid = (state == S_BURST) && ar_pend;
    assign ar_addr = b_addr;
    assign ar_len = b_len;

    // ------------------------------------------------------------ writing entries
    wire last_beat = last_beat_r;
    // a narrow beat writes the elements up to the beat's end or the row's data end, whichever first
    // the elements of lg_n bytes a beat holds from byte offset o on, and whether n of them fit
    function automatic [LBB:0] beat_elems(input [LBB-1:0] o, input [LGB-1:0] l);
        beat_elems = (LBB+1)'(((LBB+1)'(BB) - (LBB+1)'(o)) >> l);
    endfunction
    function automatic fits(input [16:0] n, input [LBB:0] e);
        fits = (n[16:LBB+1] == 0) && (n[LBB:0] <= e);
    endfunction
    // a narrow beat's elements from cur on (in_beat) and whether the row's data ends in it
    // (xl_le_beat), registered with cur and xl (dma_beat_regs), so they are not worked out from
    // cur in front of the narrow write's row wrap and its fan-out into the position's enables
    reg [LBB:0] in_beat;
    reg xl_le_beat;
    wire [16:0] n_narrow = xl_le_beat ? xl : 17'(in_beat);

    assign r_ready = (state == S_BURST) && !got_all;
    wire beat = r_ready && r_valid;
    wire in_pad = (state == S_PAD);
    // in_pad again in a flip-flop of its own for the written data's zeroing (its fan-out over
    // the MAXE*8 data bits, placed at the SRAMs' inputs, away from the state's logic, so the
    // route from the state does not precede the narrow shifter into the UOP SRAM's write register)
    (* keep *) reg pad_d;
    assign wr_en = in_pad || (beat && (narrow || last_beat));
    assign wr_idx = idx;
    assign wr_lanes = narrow ? K'((1 << n_narrow) - 1) : K'(1);
    wire one = in_pad || !narrow;    // the write moves one entry, else n_narrow

    // beat bc lands at byte bc*BB of the entry, the rest as assembled so far
    localparam SW = (MAXE < BB) ? MAXE : BB;    // a slot's bytes
    wire [MAXE*8-1:0] beat_data;
    genvar bs;
    generate for (bs = 0; bs < NB; bs = bs + 1) begin : g_slot
        assign beat_data[bs * SW * 8 +: SW * 8] = bc_oh[bs] ? r_data[SW * 8 - 1:0] : asm_r[bs * SW * 8 +: SW * 8];
    end endgenerate
    assign wr_wide = pad_d ? {MAXE*8{1'b0}} : beat_data;
    always @(*) begin
        wr_data = asm_r;
        if (pad_d) wr_data = {MAXE*8{1'b0}};
        else if (narrow) wr_data = (MAXE*8)'(r_data >> {(cur & (BB - 1)), 3'b000});
        else wr_data = beat_data;
    end

    // position after this cycle's write, and whether it is a pad entry or the LOAD's end. A pad
    // writes one entry (p_*, straight from the registered position: a pad segment's end feeds
    // the next request); a data write ends the row's data when it writes the xl entries left.
    // row r is a data row, row r + 1 all padding: registered, set at go and at each row wrap
    // from r + 1 and r + 2 (a pad segment's end reads no adder or compare on the row)
    reg data_row, pad_row1;
    wire pad_row2 = (r + 2 < 17'(y0)) || (r + 2 >= y_end);
    // c + 1 < x_pad_0 and c + 1 >= x_end as compares of c with registered bounds
    reg [16:0] x0_m1, x_end_m1;   // x_pad_0 - 1, x_end - 1 (x_end >= 1: x_size >= 1)
    // the column's compares as registers: a pad segment's end reads flip-flops only (c's compares
    // would feed the module's completion and its token pushes in one cycle). Only a pad
    // reads them, and a pad never follows a data write in the next cycle (a burst's last cycle
    // writes nothing), so a data write marks them stale and the cycle after it compares the
    // written c (not c + step then a compare: two carry chains). A pad moves c by
    // one: its compares are c1's (c + 1, a register), worked out a write ahead.
    reg c_wrap, c_lt_x0, c_ge_xend;   // c == w_last, c < x0_m1, c >= x_end_m1, unless c_stale
    reg [16:0] c1;                    // c + 1, unless c_stale
    reg c_stale;                      // c has moved by a data write since they were set
    // {v == w_last, v < x0_m1, v >= x_end_m1}: the compares of a column v
    function automatic [2:0] col_cmp(input [16:0] v);
        col_cmp = {v == w_last, v < x0_m1, v >= x_end_m1};
    endfunction
    reg r_at_last;                    // r == r_last, set with r (the LOAD's end from a register)
    wire p_wrap = c_wrap;
    wire p_pad_next = p_wrap ? (pad_row1 || x0 != 4'd0)
                             : (!data_row || (x0 != 4'd0 && c_lt_x0) || c_ge_xend);
    wire p_end_next = p_wrap && r_at_last;
    // xl == 1 as a register (a wide element's write then ends the row's data), so no 17-bit
    // compare sits in front of the row's wrap and the position's clock enables
    reg xl_is1;
    wire d_fill = narrow ? xl_le_beat : xl_is1;            // this write ends the row's data
    // the row wraps if this cycle writes (a pad always does): registers only. Every register the
    // write moves is updated under wr_en from it, so the beat (the read FIFO's valid, the owner)
    // is only their clock enable, not also in front of their data
    wire wrap = in_pad ? p_wrap : (d_fill && no_xp1);
    wire [16:0] r_next = wrap ? r + 1 : r;
    // the write's step added to c, xl and idx beside the step's choice, chosen after (* keep *:
    // Yosys' opt_share would merge them into one adder behind the choice)
    (* keep *) wire [16:0] c_one = c + 17'd1;     // a data write's (c1 is stale after one)
    (* keep *) wire [16:0] c_beat = c + 17'(in_beat);
    (* keep *) wire [16:0] xl_one = xl - 17'd1;
    (* keep *) wire [16:0] xl_beat = xl - 17'(in_beat);
    (* keep *) wire [15:0] idx_one = idx + 16'd1;
    (* keep *) wire [15:0] idx_xl = idx + 16'(xl);
    (* keep *) wire [15:0] idx_beat = idx + 16'(in_beat);
    wire [16:0] c_step = in_pad ? c1 : !narrow ? c_one : xl_le_beat ? x_end : c_beat;  // c + xl = x_end
    wire [16:0] xl_step = one ? xl_one : xl_le_beat ? 17'd0 : xl_beat;
    wire [15:0] idx_step = one ? idx_one : xl_le_beat ? idx_xl : idx_beat;
    wire [16:0] c_next = wrap ? 17'd0 : c_step;
    wire end_next = in_pad ? p_end_next : !wr_en ? end_r : (wrap && r_at_last);
    wire pad_next = in_pad ? p_pad_next : !wr_en ? pad_r : wrap ? (pad_row1 || x0 != 4'd0) : d_fill;
    wire row_next = wrap && data_row;     // the next data row begins: row_base <= nrb
    // kept apart from the adders of go (f_base + ...): merged into one adder, the choice between
    // them would come before the carry chain, after the whole row_next logic
    (* keep *) wire [31:0] nrb_inc = nrb + stride_bytes;
    (* keep *) wire [31:0] row_end_inc = row_end + stride_bytes;
    wire [31:0] row_base_next = row_next ? nrb : row_base;
    // a data write moves cur by step elements; both of a narrow beat's cases (to the beat's end,
    // or the row's xl entries left) are adders on registers, chosen after: no carry chain waits
    // for the entry count the beat writes
    // (* keep *): Yosys' opt_share would otherwise merge the shifts with go's `DRAM_BASE << elog`
    // and put go's choice in front of the shifter and this carry chain.
    // `~(32'(..))`, not `~32'(..)`: Yosys 0.70 drops a `~` in front of a sized cast.
    (* keep *) wire [31:0] cur_beat_end = (cur & ~(32'(BB - 1))) + 32'(BB);
    (* keep *) wire [31:0] cur_row_data_end = cur + (32'(xl) << lg_n);
    (* keep *) wire [31:0] cur_elem_next = cur + e_bytes;
    wire [31:0] cur_step = !narrow ? cur_elem_next : xl_le_beat ? cur_row_data_end : cur_beat_end;
    wire [31:0] cur_next = wrap ? row_base_next : !in_pad ? cur_step : cur;
    // in_beat and xl_le_beat of the written position, from each case's cur and xl beside the choice
    wire [LBB:0] ib_nrb = beat_elems(nrb[LBB-1:0], lg_n), ib_rb = beat_elems(row_base[LBB-1:0], lg_n);
    // (from the low bits of cur + e_bytes by an adder of their own, so the 32-bit sum's chain is
    // not in front of fits() into xl_le_beat; kept as a wire, as the
    // adder's own output under (* keep *) made Yosys 0.70's ABC9 exit without a message)
    (* keep *) wire [LBB:0] ib_wide = beat_elems(LBB'(cur[LBB-1:0] + e_bytes[LBB-1:0]), lg_n);
    wire [LBB:0] ib_end = beat_elems(cur_row_data_end[LBB-1:0], lg_n);
    wire [LBB:0] ib_full = beat_elems({LBB{1'b0}}, lg_n);
    wire [LBB:0] in_beat_next = wrap ? (row_next ? ib_nrb : ib_rb) : in_pad ? in_beat : !narrow ? ib_wide
                              : xl_le_beat ? ib_end : ib_full;
    wire xl_le_next = wrap ? (row_next ? fits(x_end, ib_nrb) : fits(x_end, ib_rb))
                    : in_pad ? fits(xl_one, in_beat) : !narrow ? fits(xl_one, ib_wide)
                    : xl_le_beat || fits(xl_beat, ib_full);

    // The next burst's set-up in two registered halves. Where it is requested (to_req) only its
    // start is registered: at go from the instruction, after padding the start of a row (the
    // position after this pad write), after a burst the position as it is (a burst writes
    // nothing in its last cycle). A row's bursts but its first then read the bytes left in the
    // row from left_r, registered from that same position. The request is seen from the next
    // cycle, and its length and beats are worked out from these registers when it is granted.
    (* keep *) wire [31:0] f_base = `VTA_MEM_DRAM_BASE(insn) << elog;
    wire [31:0] f_row_bytes = 32'(`VTA_MEM_X_SIZE(insn)) << elog;
    wire [31:0] f_stride = 32'(`VTA_MEM_X_STRIDE(insn)) << elog;
    wire idle = (state == S_IDLE);
    wire [31:0] nb_cur = idle ? f_base : !(in_pad && p_wrap) ? cur : data_row ? nrb : row_base;
    wire [31:0] q_left = q_row ? row_bytes : left_r;
    // The burst is min(q_left, q_bound) bytes; its beats are ceil((first beat's offset + bytes) / BB).
    // One that runs to the boundary spans BOUND less q_cur's beat-aligned offset in its window:
    // BOUND / BB - q_cur's beat in the window, ARLEN that beat's complement (BOUND / BB is a power
    // of two, at most 256). One that ends the row's data adds its bytes to the registered offset
    // terms: at the grant one adder per field and the choice after it.
    localparam WB = LB - LBB;   // bits of a beat's index in its window
    wire [WB-1:0] q_wbeat = q_cur[LB-1:LBB];
    wire q_to_row = q_left[31:LB+1] == 0 && q_left[LB:0] < q_bound;
    wire [BW-1:0] q_beats = q_to_row ? BW'(((LB+2)'(q_left[LB:0]) + (LB+2)'(q_o7)) >> LBB)
                                     : BW'(BOUND / BB) - BW'(q_wbeat);
    wire [7:0] q_last = q_to_row ? 8'(((LB+2)'(q_left[LB:0]) + q_om1) >> LBB)   // AXI ARLEN, >= 1 byte
                                 : 8'(q_wbeat ^ {WB{1'b1}});


    // ------------------------------------------------------------ segment sequencing
    // every beat must be in before the burst's last cycle (registered count: no chain from the
    // read FIFO to the port arbiter); DRAM answering within DMA_READ_LATENCY - 2 is exact (the
    // read FIFO takes a cycle)
    // A burst writes nothing in its last cycle (its beats are all in), so what follows it is known
    // from the position alone, registered a cycle ahead (end_r, pad_r): the burst's end, the
    // LOAD's end and the next request come from registers (b_tick: its last tick).
    wire tick_end = last_tick;
    wire burst_end = (state == S_BURST) && tick_end && got_all;
    wire pad_end = in_pad && (p_end_next || !p_pad_next);
    wire seg_end = pad_end || burst_end;
    wire seg_last = in_pad ? p_end_next : end_r;       // at seg_end: the LOAD ends
    wire seg_pad = in_pad ? p_pad_next : pad_r;        // at seg_end: pads follow
    // the instruction's data end (x_pad_0 + x_size) and its first narrow beat's elements
    wire [16:0] i_x_end = 17'(`VTA_MEM_X_PAD_0(insn)) + 17'(`VTA_MEM_X_SIZE(insn));
    // x_pad_0 + x_size == 1 and x_pad_0 + x_size + x_pad_1 == 1 from the fields' own bits, so no
    // sum's carry chain sits in front of the compares into c_wrap
    wire i_x0_0 = (`VTA_MEM_X_PAD_0(insn) == 4'd0), i_xp1_0 = (`VTA_MEM_X_PAD_1(insn) == 4'd0);
    wire i_xs_0 = (`VTA_MEM_X_SIZE(insn) == 16'd0), i_xs_1 = (`VTA_MEM_X_SIZE(insn) == 16'd1);
    wire i_x_end_1 = (i_xs_1 && i_x0_0) || (i_xs_0 && `VTA_MEM_X_PAD_0(insn) == 4'd1);
    wire i_w_1 = (i_x_end_1 && i_xp1_0) || (i_xs_0 && i_x0_0 && `VTA_MEM_X_PAD_1(insn) == 4'd1);
    wire [LBB:0] i_in_beat = beat_elems(f_base[LBB-1:0], LGB'(elog));
    // the instruction's first segment is a burst
    wire i_burst = (`VTA_MEM_Y_PAD_0(insn) == 4'd0) && (`VTA_MEM_X_PAD_0(insn) == 4'd0) &&
                   (`VTA_MEM_Y_SIZE(insn) != 16'd0);
    // a LOAD of no rows at all is done in its first cycle (docs/hardware.md, decisions)
    wire go_no_rows = (`VTA_MEM_Y_PAD_0(insn) == 4'd0) && (`VTA_MEM_Y_SIZE(insn) == 16'd0) &&
                      (`VTA_MEM_Y_PAD_1(insn) == 4'd0);
    // a burst requests the port from a register, the cycle after the segment before it ends (or
    // after go): docs/timing.md, REQUEST_DELAY; its set-up is registered with it (while
    // idle, from the instruction every cycle)
    wire to_req = idle || (seg_end && !seg_last && !seg_pad);
    assign port_req = (state == S_REQ);
    assign port_done = burst_end;
    assign done_now = (seg_end && seg_last) || empty;

    always @(posedge clk) begin
        if (rst) begin
            state <= S_IDLE;
            pad_d <= 1'b0;
            ar_pend <= 1'b0;
            empty <= 1'b0;
            c_stale <= 1'b0;
        end else if (idle) begin
            // While idle every register of the LOAD follows the instruction, and go only leaves
            // idle: go fans out to the state, not to the enables of some 400 flip-flops, so the
            // chain from the module's start does not reach them. A go
            // outside idle is ignored; the modules start a LOAD only after the last one's end
            // (vta_dep_ctrl: a retire at t begins the next instruction at t + 1 at the earliest).
            lg <= elog;
            e_bytes <= 32'd1 << elog;
            lg_n <= LGB'(elog);
            narrow <= (K > 1) && (elog < 4'(LBB));
            bc_last <= (elog < 4'(LBB)) ? 8'd0 : 8'((1 << (elog - 4'(LBB))) - 1);
            y0 <= `VTA_MEM_Y_PAD_0(insn);
            x0 <= `VTA_MEM_X_PAD_0(insn);
            x_end <= i_x_end;
            x_end_m1 <= i_x_end - 1;
            x0_m1 <= 17'(`VTA_MEM_X_PAD_0(insn)) - 1;
            data_row <= (`VTA_MEM_Y_PAD_0(insn) == 4'd0) && (`VTA_MEM_Y_SIZE(insn) != 16'd0);
            pad_row1 <= (17'd1 < 17'(`VTA_MEM_Y_PAD_0(insn))) ||
                        (17'd1 >= 17'(`VTA_MEM_Y_PAD_0(insn)) + 17'(`VTA_MEM_Y_SIZE(insn)));
            y_end <= 17'(`VTA_MEM_Y_PAD_0(insn)) + 17'(`VTA_MEM_Y_SIZE(insn));
            xl <= i_x_end;
            xl_is1 <= i_x_end_1;
            in_beat <= i_in_beat;
            xl_le_beat <= fits(i_x_end, i_in_beat);
            r_last <= 17'(`VTA_MEM_Y_PAD_0(insn)) + 17'(`VTA_MEM_Y_SIZE(insn)) + 17'(`VTA_MEM_Y_PAD_1(insn)) - 1;
            w_last <= i_x_end + 17'(`VTA_MEM_X_PAD_1(insn)) - 1;
            no_xp1 <= i_xp1_0;
            row_bytes <= f_row_bytes;
            stride_bytes <= f_stride;
            row_end <= f_base + f_row_bytes;
            nrb <= f_base + f_stride;
            r <= 0;
            r_at_last <= (17'(`VTA_MEM_Y_PAD_0(insn)) + 17'(`VTA_MEM_Y_SIZE(insn)) + 17'(`VTA_MEM_Y_PAD_1(insn)) == 17'd1);
            c <= 0;
            c1 <= 17'd1;
            c_stale <= 1'b0;
            c_wrap <= i_w_1;
            c_lt_x0 <= (17'd0 < 17'(`VTA_MEM_X_PAD_0(insn)) - 17'd1);
            c_ge_xend <= i_x_end_1;
            bc <= 0;
            bc_oh <= NB'(1);
            last_beat_r <= (elog <= 4'(LBB));
            idx <= `VTA_MEM_SRAM_BASE(insn);
            row_base <= f_base;
            cur <= f_base;
            empty <= go && go_no_rows;
            state <= !go ? S_IDLE : i_burst ? S_REQ : go_no_rows ? S_IDLE : S_PAD;
            pad_d <= go && !i_burst && !go_no_rows;
        end else begin
            if (beat) begin
                b_got <= b_got + 1;
                got_all <= (BW'(b_got + 1) == b_beats);
                if (!narrow && !last_beat) begin
                    bc <= bc + 1;
                    bc_oh <= bc_oh << 1;
                    last_beat_r <= (8'(bc + 1) == bc_last);
                end
            end
            if (state == S_BURST) begin
                if (ar_valid && ar_ready) ar_pend <= 1'b0;
                if (!tick_end) begin
                    b_tick <= b_tick + 1;
                    last_tick <= (TW'(b_tick + 1) == TW'(b_beats));
                end
            end
            if (wr_en) begin
                bc <= 0;
                bc_oh <= NB'(1);
                last_beat_r <= (bc_last == 8'd0);
                idx <= idx_step;
                r <= r_next;
                if (wrap) r_at_last <= (17'(r + 1) == r_last);
                c <= c_next;
                c_stale <= !wrap && !in_pad;
                if (wrap) begin
                    c1 <= 17'd1;
                    {c_wrap, c_lt_x0, c_ge_xend} <= col_cmp(17'd0);
                end else if (in_pad) begin
                    c1 <= c1 + 17'd1;
                    {c_wrap, c_lt_x0, c_ge_xend} <= col_cmp(c1);
                end
                if (wrap) begin
                    data_row <= !pad_row1;
                    pad_row1 <= pad_row2;
                end
                xl <= wrap ? x_end : xl_step;
                in_beat <= in_beat_next;
                xl_le_beat <= xl_le_next;
                xl_is1 <= wrap ? (x_end == 17'd1) : (xl == 17'd2);   // (a narrow write's step is not 1: unused)
                cur <= cur_next;
                if (row_next) begin
                    row_base <= nrb;
                    nrb <= nrb_inc;
                    row_end <= row_end_inc;
                end
            end else if (c_stale) begin
                c1 <= c + 17'd1;
                {c_wrap, c_lt_x0, c_ge_xend} <= col_cmp(c);
                c_stale <= 1'b0;
            end
            if (seg_end) begin
                state <= seg_last ? S_IDLE : seg_pad ? S_PAD : S_REQ;
                pad_d <= !seg_last && seg_pad;
            end else if (state == S_REQ && port_gnt) begin
                state <= S_BURST;
            end
        end
        // the element's beats so far, with no enable: slot bc takes the read data every cycle and
        // holds the beat's once bc moves on (bc moves only on a beat), the other slots keep theirs.
        // A cycle without a beat leaves a stale value in slot bc only, which the beat then
        // overwrites; a narrow LOAD and a pad never read asm_r. So neither go nor the read FIFO's
        // valid (r_valid, through beat) fans out into the clock enables of these MAXE*8
        // flip-flops spread over the block RAMs' inputs
        asm_r <= beat_data;
        // the next burst's set-up, registered with its request; latched while it is requested
        if (to_req) begin
            q_cur <= nb_cur;
            q_bound <= (LB+1)'(BOUND) - (LB+1)'(nb_cur & (BOUND - 1));
            q_o7 <= (LBB+1)'(nb_cur & (BB - 1)) + (LBB+1)'(BB - 1);
            q_om1 <= (LB+2)'(nb_cur & (BB - 1)) - 1;
            q_row <= idle || in_pad;
        end
        left_r <= row_end - cur;
        end_r <= idle ? go_no_rows : end_next;
        pad_r <= idle ? !i_burst : pad_next;
        // loaded every cycle of the request (q_ and left_r hold while it waits), not on the grant:
        // the grant, after fetch's enqueue and the arbiter, moves the state alone, not the
        // enables of these registers too (no path fetch.ok_r -> load.dma.got_all)
        if (!rst && state == S_REQ) begin
            b_beats <= q_beats;
            b_len <= q_last;
            b_addr <= q_cur & ~(BB - 1);
            b_got <= 0;
            // got_all from q_beats, though a requested burst always has beats (f_axi_read's
            // dma_inv_next_burst): the constant 0 took dma_regs' proof from 9 s to 2 minutes. The
            // tick starts below zero, below any BW-bit beat count (TW > BW + 1): last_tick is 0.
            got_all <= (q_beats == 0);
            b_tick <= TW'(1 - `VTA_DMA_READ_LATENCY);
            last_tick <= 1'b0;
            ar_pend <= 1'b1;
        end
    end
`ifdef FORMAL
    // the registered compares equal the compares (the k-induction proofs need them stated)
    always @(*) if (!rst) dma_pad_reg: assert(pad_d == in_pad);
    always @(*) if (!rst && state != S_IDLE) begin
        dma_last_beat_reg: assert(last_beat_r == (bc == bc_last));
        dma_lg_regs: assert(e_bytes == (32'd1 << lg) && (!narrow || 32'(lg_n) == 32'(lg)));
        dma_xl_reg: assert(narrow || xl_is1 == (xl == 17'd1));
        dma_beat_regs: assert(in_beat == beat_elems(cur[LBB-1:0], lg_n) && xl_le_beat == fits(xl, in_beat));
        dma_column_regs: assert((c_stale || ({c_wrap, c_lt_x0, c_ge_xend} == col_cmp(c) && c1 == 17'(c + 1))) &&
                                r_at_last == (r == r_last));
        // only a burst leaves them stale: a pad reads them
        dma_column_stale: assert(!c_stale || state == S_BURST);
        if (state == S_BURST)
            dma_burst_regs: assert(last_tick == (b_tick == TW'(b_beats)) && got_all == (b_got == b_beats));
        if (state == S_REQ)
            dma_q_regs: assert(q_o7 == (LBB+1)'(q_cur & (BB - 1)) + (LBB+1)'(BB - 1) && q_om1 == (LB+2)'((q_cur & (BB - 1)) - 1));
    end
`endif
endmodule
`default_nettype wire
