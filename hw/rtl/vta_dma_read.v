// 2-D strided DMA from DRAM into an SRAM with zero padding (spec section 5, LOAD), shared by the
// load module (INP, WGT) and the compute module (UOP, ACC, ACC_8BIT).
//
// It walks the destination entries in order, as docs/timing.md describes a LOAD: a pad entry is
// written as zero in one cycle without the read port; the data of a row is read in bursts split
// at the burst boundary, each of which requests the read port REQUEST_DELAY (1) cycle after the
// previous segment ends and holds it DMA_READ_LATENCY + beats cycles from the grant. The engine runs one cycle behind
// the model: the cycle that processes the last cycle of a segment raises done_now, or registers
// the next burst's request and set-up, seen from the next cycle (REQUEST_DELAY of
// docs/timing.md, revision 3). Beats that arrive early
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
    input  wire                       go,        // the LOAD starts: latch insn
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
    output wire [K-1:0]               wr_lanes,  // valid elements of a narrow-element beat
    output wire                       done_now   // the LOAD's last cycle
);
    localparam BB = `VTA_BUS_BYTES;
    localparam LBB = `VTA_LOG_BUS_BYTES;
    localparam BOUND = `VTA_BURST_BOUNDARY;
    localparam S_IDLE = 2'd0, S_PAD = 2'd1, S_REQ = 2'd2, S_BURST = 2'd3;

    // ------------------------------------------------------------ latched instruction
    reg [1:0]  state;
    reg [3:0]  lg;
    reg [15:0] y_size, x_size;
    reg [3:0]  y0, x0;
    reg [16:0] rows, width;
    reg [31:0] row_bytes, stride_bytes;
    wire narrow = (lg < 4'(LBB));

    // ------------------------------------------------------------ position in the entry grid
    reg [16:0] r, c;
    reg [15:0] idx;
    reg [31:0] row_base;     // DRAM byte of the current (or next) data row
    reg [31:0] cur;          // DRAM byte of the current data position
    reg [7:0]  bc;           // beat within the element
    reg [MAXE*8-1:0] asm_r;

    function automatic is_pad(input [16:0] rr, input [16:0] cc, input [3:0] py0, input [15:0] py,
                              input [3:0] px0, input [15:0] px);
        is_pad = (rr < 17'(py0)) || (rr >= 17'(py0) + 17'(py)) || (cc < 17'(px0)) || (cc >= 17'(px0) + 17'(px));
    endfunction

    // ------------------------------------------------------------ the current burst
    reg [31:0] b_beats, b_got, b_tick, b_addr, b_lim, q_beats, q_addr;
    reg        ar_pend, empty;
    wire [31:0] row_end = row_base + row_bytes;

    assign ar_valid = (state == S_BURST) && ar_pend;
    assign ar_addr = b_addr;
    assign ar_len = 8'(b_beats - 1);

    // ------------------------------------------------------------ writing entries
    wire [7:0] elem_beats = narrow ? 8'd1 : 8'(1 << (lg - 4'(LBB)));
    wire last_beat = (bc == elem_beats - 1);
    wire [31:0] beat_end = (cur & ~(BB - 1)) + BB;
    wire [31:0] take_end = (row_end < beat_end) ? row_end : beat_end;
    wire [16:0] n_narrow = 17'((take_end - cur) >> lg);

    assign r_ready = (state == S_BURST) && (b_got != b_beats);
    wire beat = r_ready && r_valid;
    wire in_pad = (state == S_PAD);
    assign wr_en = in_pad || (beat && (narrow || last_beat));
    assign wr_idx = idx;
    assign wr_lanes = narrow ? K'((1 << n_narrow) - 1) : K'(1);
    wire [16:0] step = (in_pad || !narrow) ? 17'd1 : n_narrow;

    always @(*) begin
        wr_data = asm_r;
        if (in_pad) wr_data = {MAXE*8{1'b0}};
        else if (narrow) wr_data = (MAXE*8)'(r_data >> {(cur & (BB - 1)), 3'b000});
        else wr_data[(32'(bc) << (LBB + 3)) +: BB*8] = r_data;  // beat bc lands at byte bc*BB
    end

    // position after this cycle's write
    wire row_wrap = wr_en && (c + step == width);
    wire [16:0] r_next = row_wrap ? r + 1 : r;
    wire [16:0] c_next = row_wrap ? 17'd0 : (wr_en ? c + step : c);
    wire end_next = (r_next == rows);
    wire data_row = (r >= 17'(y0)) && (r < 17'(y0) + 17'(y_size));
    wire [31:0] row_base_next = (row_wrap && data_row) ? row_base + stride_bytes : row_base;
    wire [31:0] cur_next = row_wrap ? row_base_next : (wr_en && !in_pad) ? cur + (32'(step) << lg) : cur;

    // next burst, from the latched state or (at go) straight from the instruction
    wire [31:0] f_base = `VTA_MEM_DRAM_BASE(insn) << elog;
    wire [31:0] f_row_bytes = 32'(`VTA_MEM_X_SIZE(insn)) << elog;
    wire [31:0] nb_cur = go ? f_base : cur_next;
    wire [31:0] nb_end = go ? f_base + f_row_bytes : row_base_next + row_bytes;
    wire [31:0] nb_left = nb_end - nb_cur;
    wire [31:0] nb_bound = BOUND - (nb_cur & (BOUND - 1));
    wire [31:0] nb_len = (nb_left < nb_bound) ? nb_left : nb_bound;
    wire [31:0] nb_beats = ((nb_cur & (BB - 1)) + nb_len + BB - 1) >> LBB;

    wire pad_next = is_pad(r_next, c_next, y0, y_size, x0, x_size);

    // ------------------------------------------------------------ segment sequencing
    // every beat must be in before the burst's last cycle (registered count: no chain from the
    // read FIFO to the port arbiter); DRAM answering within DMA_READ_LATENCY - 1 is exact
    // A burst writes nothing in its last cycle (its beats are all in), so what follows it is known
    // from the position alone, registered a cycle ahead (end_r, pad_r): the burst's end, the
    // LOAD's end and the next request come from registers (b_lim: its last tick).
    reg end_r, pad_r;
    wire burst_end = (state == S_BURST) && (b_tick >= b_lim) && (b_got == b_beats);
    wire pad_end = in_pad && (end_next || !pad_next);
    wire seg_end = pad_end || burst_end;
    wire seg_last = in_pad ? end_next : end_r;         // at seg_end: the LOAD ends
    wire seg_pad = in_pad ? pad_next : pad_r;          // at seg_end: pads follow
    wire go_burst = go && (`VTA_MEM_Y_PAD_0(insn) == 4'd0) && (`VTA_MEM_X_PAD_0(insn) == 4'd0) &&
                    (`VTA_MEM_Y_SIZE(insn) != 16'd0);
    // a LOAD of no rows at all is done in its first cycle (docs/hardware.md, decisions)
    wire go_no_rows = (`VTA_MEM_Y_PAD_0(insn) == 4'd0) && (`VTA_MEM_Y_SIZE(insn) == 16'd0) &&
                      (`VTA_MEM_Y_PAD_1(insn) == 4'd0);
    // a burst requests the port from a register, the cycle after the segment before it ends (or
    // after go): docs/timing.md revision 3, REQUEST_DELAY; its set-up is registered with it
    wire to_req = (go && go_burst) || (!go && seg_end && !seg_last && !seg_pad);
    assign port_req = (state == S_REQ);
    assign port_done = burst_end;
    assign done_now = (seg_end && seg_last) || empty;

    always @(posedge clk) begin
        if (rst) begin
            state <= S_IDLE;
            ar_pend <= 1'b0;
            empty <= 1'b0;
        end else if (go) begin
            lg <= elog;
            y_size <= `VTA_MEM_Y_SIZE(insn);
            x_size <= `VTA_MEM_X_SIZE(insn);
            y0 <= `VTA_MEM_Y_PAD_0(insn);
            x0 <= `VTA_MEM_X_PAD_0(insn);
            rows <= 17'(`VTA_MEM_Y_PAD_0(insn)) + 17'(`VTA_MEM_Y_SIZE(insn)) + 17'(`VTA_MEM_Y_PAD_1(insn));
            width <= 17'(`VTA_MEM_X_PAD_0(insn)) + 17'(`VTA_MEM_X_SIZE(insn)) + 17'(`VTA_MEM_X_PAD_1(insn));
            row_bytes <= f_row_bytes;
            stride_bytes <= 32'(`VTA_MEM_X_STRIDE(insn)) << elog;
            r <= 0;
            c <= 0;
            bc <= 0;
            idx <= `VTA_MEM_SRAM_BASE(insn);
            row_base <= f_base;
            cur <= f_base;
            empty <= go_no_rows;
            state <= go_burst ? S_REQ : go_no_rows ? S_IDLE : S_PAD;
        end else if (state == S_IDLE) begin
            empty <= 1'b0;
        end else begin
            if (beat) begin
                b_got <= b_got + 1;
                if (!narrow && !last_beat) begin
                    asm_r <= wr_data;
                    bc <= bc + 1;
                end
            end
            if (state == S_BURST) begin
                if (ar_valid && ar_ready) ar_pend <= 1'b0;
                if (!burst_end) b_tick <= b_tick + 1;
            end
            if (wr_en) begin
                bc <= 0;
                idx <= idx + 16'(step);
                r <= r_next;
                c <= c_next;
                cur <= cur_next;
                row_base <= row_base_next;
            end
            if (seg_end) begin
                state <= seg_last ? S_IDLE : seg_pad ? S_PAD : S_REQ;
            end else if (state == S_REQ && port_gnt) begin
                state <= S_BURST;
            end
        end
        // the next burst's set-up, registered with its request; latched when it is granted
        if (to_req) begin
            q_beats <= nb_beats;
            q_addr <= nb_cur & ~(BB - 1);
        end
        end_r <= end_next;
        pad_r <= pad_next;
        if (!rst && port_gnt) begin
            b_beats <= q_beats;
            b_lim <= q_beats + 32'(`VTA_DMA_READ_LATENCY) - 1;
            b_addr <= q_addr;
            b_got <= 0;
            b_tick <= 0;
            ar_pend <= 1'b1;
        end
    end
endmodule
`default_nettype wire
