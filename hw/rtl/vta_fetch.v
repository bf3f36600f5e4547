// Fetch: reads the program one instruction (one read burst) at a time, checks it and appends it
// to its module's queue (spec section 4). It requests the read port at cycle 0 and again the
// cycle after it enqueues an instruction (FETCH_NEXT); the word's last beat is due
// DMA_READ_LATENCY + beats cycles after the grant (D). Both hand-offs after it are registered
// (docs/timing.md "Hand-offs"):
// the word is latched at D, its entry count multiplied out at D + 1 (S_CHK) and checked at D + 2
// (S_CHK2, results registered), and it is enqueued from D + 3 (S_ENQ, FETCH_DECODE = 3) when
// its queue had room at the last edge. A word that breaks a static rule of the spec is not
// enqueued: fetch reports it (error code and index) at D + 3 and the device halts.
`default_nettype none
`include "vta_cfg.vh"
module vta_fetch (
    input  wire         clk,
    input  wire         rst,
    input  wire         launch,       // start of a run
    input  wire [31:0]  insn_addr,
    input  wire [31:0]  insn_count,
    output wire         port_req,
    input  wire         port_gnt,
    output wire         port_done,
    output wire         ar_valid,
    output wire [31:0]  ar_addr,
    output wire [7:0]   ar_len,
    input  wire         ar_ready,
    input  wire         r_valid,
    input  wire [`VTA_BUS_BYTES*8-1:0] r_data,
    output wire         r_ready,
    output wire [127:0] q_data,
    output wire [2:0]   q_valid,      // load, compute, store
    input  wire [2:0]   q_ready,
    output reg          err,
    output reg  [`VTA_ERROR_CODE_BITS-1:0] err_code,
    output reg  [31:0]  err_index,
    output wire         busy,         // fetching, or enqueuing this cycle
    output reg  [31:0]  stall_queue,
    output reg  [31:0]  stall_port
);
    localparam BB = `VTA_BUS_BYTES;
    localparam IB = (BB >= 16) ? 1 : 16 / BB;           // beats per instruction
    localparam S_IDLE = 3'd0, S_REQ = 3'd1, S_RUN = 3'd2, S_CHK = 3'd3, S_CHK2 = 3'd5, S_ENQ = 3'd4;

    reg [2:0]   state;
    reg [31:0]  k, addr;
    reg [31:0]  count_m2;   // the count less two: last_r's update compares k with it, no adder in front
    reg [31:0]  elapsed;      // cycles since the grant: latencies up to 2^16 (vta_sim.config)
    reg         lat_end;      // this is the burst's modelled last cycle: elapsed + 1 >= Lr + IB
    reg [4:0]   got;
    reg         got_all;      // got == IB, set with got: the port's release reads flip-flops only
    reg         ar_pend;
    reg [127:0] word_r;

    // ------------------------------------------------------------ the burst of one instruction
    assign ar_valid = (state == S_RUN) && ar_pend;
    assign ar_addr  = addr & ~(BB - 1);
    assign ar_len   = 8'(IB - 1);
    assign r_ready  = (state == S_RUN) && !got_all;
    wire beat = r_ready && r_valid;
    reg [127:0] word;
    generate
        if (IB == 1) begin : g_wide
            always @(*) word = beat ? 128'(r_data >> {(addr & (BB - 1)), 3'b000}) : word_r;
        end else begin : g_narrow
            always @(*) begin
                word = word_r;
                if (beat) word[32'(got) * BB * 8 +: BB * 8] = r_data;
            end
        end
    endgenerate
    // from registers only (got_all, so no compare got == IB runs through the port's release into
    // the next grant), as the DMAs' burst end: the last beat came in a cycle before (the DRAM
    // answers within DMA_READ_LATENCY, docs/timing.md), so the read FIFO's valid does not run
    // through this compare into the port's release and the next grant
    wire data_done = (state == S_RUN) && got_all && lat_end;
    assign port_done = data_done;

    // ------------------------------------------------------------ decode, route, check
    /* verilator lint_off UNUSEDSIGNAL */  // the checks read some fields of the word
    wire [127:0] w = word_r;
    /* verilator lint_on UNUSEDSIGNAL */
    // k + 1 == count as a register, updated with k, so no compare's carry chain feeds port_req and
    // through the arbiter every read client's grant; updated by k == count - 2 (no k + 2 in front
    // of the compare)
    reg last_r;
    wire last = last_r;
    wire [2:0] op = w[2:0];
    wire [2:0] mt = `VTA_MEM_MEMORY_TYPE(w);
    wire is_mem = (op == `VTA_OP_LOAD) || (op == `VTA_OP_STORE);
    wire is_exec = (op == `VTA_OP_GEMM) || (op == `VTA_OP_ALU);
    wire to_load = (op == `VTA_OP_LOAD) && (mt == `VTA_MEM_INP || mt == `VTA_MEM_WGT);
    wire to_store = (op == `VTA_OP_STORE);
    wire [2:0] target = to_load ? 3'b001 : to_store ? 3'b100 : 3'b010;

    wire [15:0] y = `VTA_MEM_Y_SIZE(w), x = `VTA_MEM_X_SIZE(w);
    wire [`VTA_MEM_Y_PAD_0_W-1:0] y0 = `VTA_MEM_Y_PAD_0(w), y1 = `VTA_MEM_Y_PAD_1(w);
    wire [`VTA_MEM_X_PAD_0_W-1:0] x0 = `VTA_MEM_X_PAD_0(w), x1 = `VTA_MEM_X_PAD_1(w);
    wire pads = (y0 | y1 | x0 | x1) != 4'd0;
    // Entries a LOAD or STORE touches, (y_pad_0 + y_size + y_pad_1) x (x_pad_0 + x_size + x_pad_1)
    // (a STORE with pads is MALFORMED before its range is checked): the sides are registered from
    // word_r every cycle, their product at S_CHK, so that one DSP multiply from registers is all
    // S_CHK does and the multiplier never feeds the checks directly. word_r is whole from the
    // cycle after the last beat, the earliest data_done, so the sides are in by S_CHK (taken from
    // word_r, not from the beat's data, they are not behind the read FIFO's output).
    wire [16:0] ys_w = 17'(`VTA_MEM_Y_PAD_0(w)) + 17'(`VTA_MEM_Y_SIZE(w)) + 17'(`VTA_MEM_Y_PAD_1(w));
    wire [16:0] xs_w = 17'(`VTA_MEM_X_PAD_0(w)) + 17'(`VTA_MEM_X_SIZE(w)) + 17'(`VTA_MEM_X_PAD_1(w));
    reg  [39:0] entries_r;
`ifdef VTA_ECP5_CELLS
    // the sides again in a MULT18X18D's input registers, loaded every cycle as ys_r and xs_r are
    // (so equal to them): the block's product goes to entries_r in the fabric (neither ys_r -> a
    // combinational multiplier -> entries_r, nor the block's output register -> the route out ->
    // the range compare, is one cycle)
    wire [33:0] entries_p;
    vta_ecp5_mul #(.W(17), .SIGNED(0), .IN_REG(1), .OUT_REG(0)) side_mul (.clk(clk), .a(ys_w), .b(xs_w), .p(entries_p));
`else
    reg  [16:0] ys_r, xs_r;
    always @(posedge clk) {ys_r, xs_r} <= {ys_w, xs_w};
    wire [33:0] entries_p = 34'(ys_r) * 34'(xs_r);
`endif
    // the entries the memory has from SRAM_BASE on (depth - base, negative past its end),
    // registered from word_r every cycle as the sides are: base + entries > depth as one compare
    // of entries_r with it (not the sum then a compare, two carry chains)
    reg  signed [41:0] room_r;
    reg [31:0] depth;
    always @(*) begin
        case (mt)
            `VTA_MEM_UOP: depth = `VTA_UOP_DEPTH;
            `VTA_MEM_WGT: depth = `VTA_WGT_DEPTH;
            `VTA_MEM_INP: depth = `VTA_INP_DEPTH;
            default:      depth = `VTA_ACC_DEPTH;       // ACC, ACC_8BIT, OUT
        endcase
    end
    wire [`VTA_GEMM_UOP_BGN_W-1:0] ubgn = `VTA_GEMM_UOP_BGN(w);
    wire [`VTA_GEMM_UOP_END_W-1:0] uend = `VTA_GEMM_UOP_END(w);
    wire dep_bad = (to_load && `VTA_LOAD_FLAG_ILLEGAL(w)) || (to_store && `VTA_STORE_FLAG_ILLEGAL(w));
    reg [`VTA_ERROR_CODE_BITS-1:0] code;
    always @(*) begin
        code = `VTA_ERR_NONE;
        if (op > `VTA_OP_ALU) code = `VTA_ERR_OPCODE;
        else if ((op == `VTA_OP_FINISH) != last) code = `VTA_ERR_FINISH;
        else if (is_mem && (mt > `VTA_MEM_ACC_8BIT || (op == `VTA_OP_STORE) != (mt == `VTA_MEM_OUT)))
            code = `VTA_ERR_MEM_TYPE;
        else if (is_mem && `VTA_MEM_UNUSED(w) != 0) code = `VTA_ERR_MALFORMED;
        else if (dep_bad) code = `VTA_ERR_DEP_FLAG;
        else if (is_mem && x != 0 && (to_store || mt == `VTA_MEM_UOP) &&
                 (pads || (mt == `VTA_MEM_UOP && y != 1))) code = `VTA_ERR_MALFORMED;
        else if (is_mem && x != 0 && $signed({2'b00, entries_r}) > room_r)
            code = `VTA_ERR_SRAM_RANGE;
        else if (op == `VTA_OP_ALU && `VTA_ALU_ALU_OPCODE(w) > `VTA_ALU_OPCODE_MAX) code = `VTA_ERR_ALU_OPCODE;
        // REQ (docs/isa-extensions.md): its multipliers come from the tensor operand, and the
        // immediate's bits above the shift and the zero point are reserved
        else if (op == `VTA_OP_ALU && `VTA_ALU_ALU_OPCODE(w) == `VTA_ALU_REQ &&
                 (`VTA_ALU_USE_IMM(w) || `VTA_ALU_IMM(w) >> `VTA_REQ_RSV_LO != 0)) code = `VTA_ERR_MALFORMED;
        else if (is_exec && 32'(uend) > `VTA_UOP_DEPTH) code = `VTA_ERR_SRAM_RANGE;
        else if (is_exec && 32'(ubgn) > 32'(uend)) code = `VTA_ERR_MALFORMED;
    end
    reg [`VTA_ERROR_CODE_BITS-1:0] code_r;
    reg [2:0] target_r;
    // code_r's test as a register of its own, set with it, so no compare sits in front of the
    // enqueue, port_req and the arbiter into a DMA's grant registers
    reg ok_r;
    wire have = (state == S_ENQ);
    wire bad = have && !ok_r;

    assign q_data = word_r;
    assign q_valid = (have && !bad) ? target_r : 3'b000;
    wire enq = |(q_valid & q_ready);
    // the next word is requested from S_REQ only, the cycle after the enqueue (FETCH_NEXT), so
    // the queue's room -> the enqueue -> the arbiter -> the grant -> the state is not a one-cycle
    // loop
    assign port_req = (state == S_REQ);
    assign busy = (state == S_REQ) || (state == S_RUN) || (state == S_CHK) || (state == S_CHK2) || enq || bad;

    always @(posedge clk) if (state == S_CHK) entries_r <= 40'(entries_p);
    always @(posedge clk) begin
        if (rst) begin
            state <= S_IDLE;
            err <= 1'b0;
        end else if (launch) begin
            addr <= insn_addr;
            count_m2 <= insn_count - 2;
            k <= 0;
            last_r <= (insn_count == 32'd1);
            stall_queue <= 0;
            stall_port <= 0;
            err <= (insn_addr[3:0] != 4'd0) || (insn_count == 0);
            err_code <= `VTA_ERR_INSN_ADDR;
            err_index <= 0;
            state <= ((insn_addr[3:0] != 4'd0) || (insn_count == 0)) ? S_IDLE : S_REQ;
        end else begin
            if (port_req && !port_gnt) stall_port <= stall_port + 1;
            if (have && !bad && !enq) stall_queue <= stall_queue + 1;
            if (state == S_RUN) begin
                elapsed <= elapsed + 1;
                lat_end <= (elapsed + 2 >= `VTA_DMA_READ_LATENCY + IB);
                if (ar_valid && ar_ready) ar_pend <= 1'b0;
                if (beat) begin
                    got <= got + 1;
                    got_all <= (got + 1 == 5'(IB));
                    word_r <= word;
                end
            end
            if (data_done) state <= S_CHK;      // word_r holds the word from the next cycle
            room_r <= $signed(42'(depth)) - $signed(42'(`VTA_MEM_SRAM_BASE(w)));
            if (state == S_CHK) state <= S_CHK2;
            if (state == S_CHK2) begin
                code_r <= code;
                ok_r <= (code == `VTA_ERR_NONE);
                target_r <= target;
                state <= S_ENQ;
            end
            if (bad) begin
                err <= 1'b1;
                err_code <= code_r;
                err_index <= k;
                state <= S_IDLE;
            end else if (enq) begin
                k <= k + 1;
                last_r <= (k == count_m2);
                addr <= addr + 16;
                state <= last ? S_IDLE : S_REQ;
            end
            if (port_gnt) begin
                state <= S_RUN;
                elapsed <= 0;
                lat_end <= (1 >= `VTA_DMA_READ_LATENCY + IB);
                got <= 0;
                got_all <= 1'b0;   // IB >= 1
                ar_pend <= 1'b1;
            end
        end
    end
`ifdef FORMAL
    always @(*) if (!rst && state != S_IDLE) fetch_last_reg: assert(last_r == (k + 1 == count_m2 + 2));
    always @(*) if (!rst && state == S_RUN) fetch_got_reg: assert(got_all == (got == 5'(IB)));
    always @(*) if (!rst && have) fetch_ok_reg: assert(ok_r == (code_r == `VTA_ERR_NONE));
`endif
endmodule
`default_nettype wire
