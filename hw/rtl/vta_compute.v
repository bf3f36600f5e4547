// Compute module: LOAD UOP/ACC/ACC_8BIT through the DMA, GEMM and ALU through one pipeline of
// stages S0-S8, FINISH (spec sections 4-6). Pops l2c/s2c, pushes c2l/c2s.
//
// Pipeline, one micro-op iteration per cycle (one per two for an ALU with a tensor operand, one
// per three for a tensor SHR or MUL: timing.alu_interval, `VTA_ALU_TENSOR_INTERVAL):
//   S0  loop counters' next values -> UOP SRAM read (its block RAM's output register, RD_REG)
//   S0b indices = micro-op + loop offsets, registered
//   S1  indices -> INP/WGT reads, range checks; ALU: ACC read (tensor: ACC[dst], then S1b ACC[src])
//   S1r ALU only: the ACC read in the block RAM's output register (tensor: ACC[dst] taken)
//   S2  ALU: operands registered; GEMM: INP and WGT in their block RAMs' output registers (RD_REG)
//   S3  ALU: first stage (MIN/MAX/ADD's result, MUL's partial products, SHR's coarse shift)
//       registered; GEMM: INP and WGT registered (the multipliers' input registers), ACC[dst] read
//   S4  ALU: second stage -> its result registered; GEMM: INP x WGT products registered
//   S5  ALU: the result -> ACC and OUT write; GEMM: adder tree registered, ACC[dst] arrives, the
//       S6 forward chosen
//   S6  GEMM: ACC[dst] (registered, or forwarded) + dot registered
//   S7  GEMM: the sum -> ACC and OUT write
// Every SRAM read returns its entry as written up to the cycle of its address (hw/rtl/vta_sram.v),
// one cycle later, or two for INP, WGT and ACC (their block RAMs' output registers).
// The module is the instruction's life cycle, its DMA and duration, the pipeline's valid bits and
// entry registers, REQ's multiplier queue and the SRAM ports, wiring three parts (as Apache VTA's
// Chisel core splits LoadUop, TensorGemm and TensorAlu):
//   vta_uop_loop      S0/S0b: the loop nest, the UOP read and the index adders
//   vta_gemm_forward  S3-S7: GEMM's accumulate, forwarding the three sums ahead of it
//   vta_alu_forward   S1r-S5: the ALU's operands, forwarding the writes ahead of them, and its core
// The instruction is done GEMM_PIPELINE (ALU_PIPELINE) cycles after its last issue slot, as
// docs/timing.md models it; the last write is 8 (7) cycles after it, so GEMM_PIPELINE >= 8 and
// ALU_PIPELINE >= 7 are exact (hw/header.py refuses less).
// REQ (docs/isa-extensions.md; docs/hardware.md, "REQ") issues one iteration per cycle while its
// multiplier queue has room (rq_ok: at most four iterations between S0 and the queue's head), and
// S1 does not read ACC: it compares s with the iteration before's (the first always reads) and
// queues {a, s, reads}. The queue's head takes the ACC read port, ACC[s] then ACC[a] when it reads
// s (2 cycles), ACC[a] alone when not (1): ACC[s] lands in the operand register rq_m in S1r, ACC[a]
// in S2 beside it, and the iteration runs through S2-S4 as the other ops do (MUL's partial products,
// shared, and hi x hi in S3), then through the ALU core's REQ lanes (sum, shift, zero point and
// clamp) and writes in S7, as GEMM does. The duration counts the cycles of the iterations as S1
// finds them: `elapsed` holds for a cycle after each iteration that reads s. REQ forwards nothing
// (the contract makes a program whose iteration reads an entry an earlier one wrote illegal).
`default_nettype none
`include "vta_cfg.vh"
module vta_compute (
    input  wire         clk,
    input  wire         rst,
    input  wire         enable,
    input  wire         head_valid,
    input  wire [127:0] head,
    output wire         head_ready,
    input  wire         l2c_avail,
    output wire         l2c_pop,
    input  wire         s2c_avail,
    output wire         s2c_pop,
    output wire         c2l_push,
    input  wire         c2l_push_ok,
    output wire         c2s_push,
    input  wire         c2s_push_ok,
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
    output wire [K-1:0]                 uop_we,
    output wire [15:0]                  uop_waddr,
    output wire [K*32-1:0]              uop_wdata,
    output wire [`VTA_LU-1:0]           uop_raddr,
    /* verilator lint_off UNUSEDSIGNAL */  // a micro-op's bits above its three indices (spec section 4)
    input  wire [31:0]                  uop_rdata,
    /* verilator lint_on UNUSEDSIGNAL */
    output wire                         acc_we,
    output wire [`VTA_LA-1:0]           acc_waddr,
    output wire [`VTA_ACC_BYTES*8-1:0]  acc_wdata,
    output wire [`VTA_LA-1:0]           acc_raddr,
    input  wire [`VTA_ACC_BYTES*8-1:0]  acc_rdata,
    output wire                         out_we,
    output wire [`VTA_OUT_BYTES*8-1:0]  out_wdata,
    output wire [`VTA_LI-1:0]           inp_raddr,
    input  wire [`VTA_INP_BYTES*8-1:0]  inp_rdata,
    output wire [`VTA_LW-1:0]           wgt_raddr,
    input  wire [`VTA_WGT_BYTES*8-1:0]  wgt_rdata,
    output wire         finish,          // FINISH retires this cycle
    output reg          err,             // a GEMM/ALU index left its SRAM
    output wire [31:0]  acc_bytes,
    output wire [31:0]  uop_bytes,
    output reg  [31:0]  gemm_count,
    output reg  [31:0]  alu_count,
    output reg  [31:0]  busy_cycles,
    output wire [31:0]  stall_token,
    output wire [31:0]  stall_port,
    output wire [31:0]  stall_push,
    output reg  [31:0]  insn_count,
    output wire         running       // an instruction begins or its body is under way
);
    localparam K = `VTA_BUS_BYTES / `VTA_UOP_BYTES;
    localparam LANES = `VTA_BATCH * `VTA_BLOCK_OUT;
    localparam KIND_NOP = 2'd0, KIND_LOAD = 2'd1, KIND_EXEC = 2'd2;

    // ------------------------------------------------------------ instruction life cycle
    wire start, body_done, in_body, retire, st_tok, st_push;
    wire [127:0] insn;      // the issued instruction, latched below when it begins
    vta_dep_ctrl ctrl (
        .clk(clk), .rst(rst), .enable(enable),
        .head_valid(head_valid), .head(head),
        .head_pop_prev(`VTA_L2C_POP(head)), .head_pop_next(`VTA_S2C_POP(head)),
        .insn(insn), .insn_push_prev(`VTA_C2L_PUSH(insn)), .insn_push_next(`VTA_C2S_PUSH(insn)),
        .prev_avail(l2c_avail), .next_avail(s2c_avail),
        .prev_push_ok(c2l_push_ok), .next_push_ok(c2s_push_ok),
        .body_done(body_done), .issue(head_ready), .start(start),
        .pop_prev(l2c_pop), .pop_next(s2c_pop), .push_prev(c2l_push), .push_next(c2s_push),
        .retire(retire), .in_body(in_body), .stall_token(st_tok), .stall_push(st_push));
    vta_event_stat tok_stat (.clk(clk), .rst(rst), .event_now(st_tok), .total(stall_token));
    vta_event_stat push_stat (.clk(clk), .rst(rst), .event_now(st_push), .total(stall_push));
    // the grant (after fetch's enqueue and the arbiter) is no clock enable of the counter
    vta_event_stat port_stat (.clk(clk), .rst(rst), .event_now(port_req && !port_gnt), .total(stall_port));
    assign running = in_body || start;

    wire [2:0] h_op = insn[2:0];
    wire h_load = (h_op == `VTA_OP_LOAD);
    wire h_exec = (h_op == `VTA_OP_GEMM) || (h_op == `VTA_OP_ALU);
    wire h_dma = h_load && (`VTA_MEM_X_SIZE(insn) != 16'd0);

    reg [1:0]   kind;
    reg         is_finish, waiting;
    reg [2:0]   mt;        // memory type of the running LOAD
    reg [47:0]  dur, elapsed;
    // The duration Pipe + n (2n for a tensor ALU), n = iter_out * iter_in * (uop_end - uop_bgn),
    // is multiplied out over the first cycles of the instruction (dur_ok once it is, from the
    // fourth), long before the earliest cycle it can end (ALU_PIPELINE >= 7: the seventh): no
    // multiplier chain at the start. The product is two 14-bit halves of iter_out * iter_in times
    // the micro-op count (a MULT18X18D each), summed a cycle later; the end test is a register,
    // elapsed + 1 >= dur worked out in the cycle before (dur_hit).
    reg [2:0]   dur_step;
    reg         dur_ok, dur_hit;
    reg [1:0]   d_ival;    // cycles per iteration: 1, 2 or 3
    reg [27:0]  d_oi;
    reg [`VTA_GEMM_UOP_END_W-1:0] d_u;
    reg [47:0]  d_n, d_pipe;
    localparam DNW = 14 + `VTA_GEMM_UOP_END_W;
`ifdef VTA_ECP5_CELLS
    // the halves' products in the MULT18X18D cells' output registers, loading every cycle: d_oi
    // and d_u hold from the start, so at step 2 they hold what step 1 would have registered (no
    // route from a combinational multiplier into a fabric register)
    wire [DNW-1:0] d_n_lo, d_n_hi;
    wire [2*`VTA_GEMM_UOP_END_W-1:0] p_lo, p_hi;
    vta_ecp5_mul #(.W(`VTA_GEMM_UOP_END_W), .SIGNED(0), .IN_REG(0), .OUT_REG(1)) dn_lo (.clk(clk),
        .a(`VTA_GEMM_UOP_END_W'(d_oi[13:0])), .b(d_u), .p(p_lo));
    vta_ecp5_mul #(.W(`VTA_GEMM_UOP_END_W), .SIGNED(0), .IN_REG(0), .OUT_REG(1)) dn_hi (.clk(clk),
        .a(`VTA_GEMM_UOP_END_W'(d_oi[27:14])), .b(d_u), .p(p_hi));
    assign d_n_lo = DNW'(p_lo);
    assign d_n_hi = DNW'(p_hi);
`else
    reg [DNW-1:0] d_n_lo, d_n_hi;
`endif

    // ------------------------------------------------------------ LOAD UOP / ACC / ACC_8BIT
    wire [2:0] h_mt = `VTA_MEM_MEMORY_TYPE(insn);
    wire [3:0] h_elog = (h_mt == `VTA_MEM_UOP) ? 4'($clog2(`VTA_UOP_BYTES)) :
                        (h_mt == `VTA_MEM_ACC) ? 4'($clog2(`VTA_ACC_BYTES)) : 4'($clog2(`VTA_ACC8_BYTES));
    wire dma_we, dma_done;
    wire [15:0] dma_idx;
    wire [`VTA_ACC_BYTES*8-1:0] dma_data, dma_wide;
    wire [K-1:0] dma_lanes;
    vta_dma_read #(.MAXE(`VTA_ACC_BYTES), .K(K)) dma (
        .clk(clk), .rst(rst), .go(start && h_dma), .insn(insn), .elog(h_elog),
        .port_req(port_req), .port_gnt(port_gnt), .port_done(port_done),
        .ar_valid(ar_valid), .ar_addr(ar_addr), .ar_len(ar_len), .ar_ready(ar_ready),
        .r_valid(r_valid), .r_data(r_data), .r_ready(r_ready),
        .wr_en(dma_we), .wr_idx(dma_idx), .wr_data(dma_data), .wr_wide(dma_wide), .wr_lanes(dma_lanes),
        .done_now(dma_done));
    vta_bytes_stat uop_stat (.clk(clk), .rst(rst), .add(start && h_dma && h_mt == `VTA_MEM_UOP),
        .x_size(`VTA_MEM_X_SIZE(insn)), .y_size(`VTA_MEM_Y_SIZE(insn)), .lg(h_elog), .total(uop_bytes));
    vta_bytes_stat acc_stat (.clk(clk), .rst(rst), .add(start && h_dma && h_mt != `VTA_MEM_UOP),
        .x_size(`VTA_MEM_X_SIZE(insn)), .y_size(`VTA_MEM_Y_SIZE(insn)), .lg(h_elog), .total(acc_bytes));
    assign uop_we = (dma_we && mt == `VTA_MEM_UOP) ? dma_lanes : {K{1'b0}};
    assign uop_waddr = dma_idx;
    assign uop_wdata = dma_data[K*32-1:0];
    // ACC and ACC_8BIT entries as the DMA writes them: without its narrow shifter where the
    // element is never narrower than a beat (1x8x8: only UOP's is)
    wire [`VTA_ACC_BYTES*8-1:0] acc_dma = (`VTA_ACC_BYTES >= `VTA_BUS_BYTES) ? dma_wide : dma_data;
    wire [`VTA_ACC_BYTES*8-1:0] acc8_dma = (`VTA_ACC8_BYTES >= `VTA_BUS_BYTES) ? dma_wide : dma_data;
    reg [`VTA_ACC_BYTES*8-1:0] acc8;
    integer l;
    always @(*)
        for (l = 0; l < LANES; l = l + 1)
            acc8[l * 32 +: 32] = {{24{acc8_dma[l * 8 + 7]}}, acc8_dma[l * 8 +: 8]};

    // ------------------------------------------------------------ GEMM / ALU loop (S0, S0b)
    reg                        is_alu, reset, tensor;
    reg                        req, alu_nr, ty;   // REQ; an ALU but REQ; a tensor ALU but REQ
    reg [1:0]                  slot, slot_last;   // a tensor ALU issues at slot 0 of its interval
    reg [2:0]                  alu_op;
    reg [31:0]                 imm;
    wire                       g_active;

    wire [`VTA_GEMM_UOP_END_W-1:0] h_bgn = `VTA_GEMM_UOP_END_W'(`VTA_GEMM_UOP_BGN(insn));
    wire [`VTA_GEMM_UOP_END_W-1:0] h_end = `VTA_GEMM_UOP_END(insn);
    wire [13:0] h_out = `VTA_GEMM_ITER_OUT(insn), h_in = `VTA_GEMM_ITER_IN(insn);
    wire h_alu = (h_op == `VTA_OP_ALU);
    wire h_tensor = h_alu && !`VTA_ALU_USE_IMM(insn);
    wire h_req = h_alu && (`VTA_ALU_ALU_OPCODE(insn) == 3'(`VTA_ALU_REQ));
    wire h_some = (h_end > h_bgn) && (h_out != 0) && (h_in != 0);   // n != 0
    wire [47:0] h_pipe = h_req ? `VTA_ALU_PIPELINE + `VTA_REQ_EXTRA_LATENCY : h_alu ? `VTA_ALU_PIPELINE : `VTA_GEMM_PIPELINE;

    reg rq_ok;     // REQ's queue has room for one more iteration (always, for the other instructions)
    wire issue = (kind == KIND_EXEC) && in_body && g_active && (slot == 2'd0) && rq_ok;
    reg s0b_valid;
    // S1's indices, the micro-op's plus the loop's offsets, registered
    wire [31:0] a, src, wg;
    vta_uop_loop loop (.clk(clk), .rst(rst), .start(start), .insn(insn), .go(h_exec && h_some), .h_bgn(h_bgn),
                       .h_end(h_end), .h_out(h_out), .h_in(h_in), .issue(issue), .s0b_valid(s0b_valid),
                       .uop_raddr(uop_raddr), .uop_rdata(uop_rdata), .active(g_active), .a(a), .src(src), .wg(wg));

    // ------------------------------------------------------------ S1 / S1b / S2 / S3 / S4
    reg        s1_valid, s1b_valid, s1r_valid, s2_valid, s3_valid, s4_valid, s5_valid, s6_valid,
               s7_valid, s8_valid;
    reg [31:0] s1b_a;
    /* verilator lint_off UNUSEDSIGNAL */  // range-checked in S1, only the index bits address SRAM
    reg [31:0] s1b_src, s1r_a, s1r_src, s2_a, s3_a, s4_a, s5_a, s6_a, s7_a, s8_a;
    /* verilator lint_on UNUSEDSIGNAL */
    wire bad_index = s1_valid && ((a >= `VTA_ACC_DEPTH) ||
        (!reset && !is_alu && (src >= `VTA_INP_DEPTH || wg >= `VTA_WGT_DEPTH)) ||
        (!reset && tensor && src >= `VTA_ACC_DEPTH));
    assign inp_raddr = `VTA_LI'(src);
    assign wgt_raddr = `VTA_LW'(wg);
    // REQ: the multiplier queue (four entries of {a, s, reads s}) between S1 and its ACC reads
    localparam RQW = 2 * `VTA_LA + 1;
    reg [RQW-1:0] rq_mem [0:3];
    reg [1:0] rq_wp, rq_rp;
    reg [2:0] rq_cnt, rq_fl;        // entries queued; iterations issued and not yet taken from it
    reg [`VTA_LA-1:0] rq_addr, rq_apend;   // this cycle's read; ACC[a] to read after ACC[s]
    reg rq_sread, rq_aread, rq_s1, rq_s2;  // this cycle reads ACC[s] / ACC[a]; ACC[s] read 1, 2 cycles ago
    reg rq_first, rq_hold;
    reg [31:0] rq_last_src;
    reg [`VTA_ACC_BYTES*8-1:0] rq_m;       // the multipliers, ACC[s] as last read
    wire [RQW-1:0] rq_head = rq_mem[rq_rp];
    wire rq_push = s1_valid && req;
    wire rq_rd = rq_first || (src != rq_last_src);
    wire rq_pop = !rq_sread && (rq_cnt != 3'd0);
    // ACC's read address: a tensor ALU's ACC[src] (S1b), REQ's queue head, an ALU's ACC[a] (S1),
    // GEMM's ACC[dst] (S3), chosen by one-hot selects registered a cycle ahead from the next values
    // of s1b_valid, req and is_alu, with a in the last mux: a -> the choice among s1b_valid, req
    // and is_alu -> the ACC block RAMs' write-forward compare is otherwise five levels
    wire nx_s1b = !rst && s1_valid && ty;
    wire nx_req = !rst && (start ? h_req : req);
    wire nx_alu = (!rst && start) ? h_alu : is_alu;
    reg ra_a, ra_s1b, ra_rq, ra_s3;
    always @(posedge clk) begin
        ra_s1b <= nx_s1b;
        ra_rq <= !nx_s1b && nx_req;
        ra_a <= !nx_s1b && !nx_req && nx_alu;
        ra_s3 <= !nx_s1b && !nx_req && !nx_alu;
    end
    wire [`VTA_LA-1:0] ra_other = ({`VTA_LA{ra_s1b}} & `VTA_LA'(s1b_src)) | ({`VTA_LA{ra_rq}} & rq_addr)
                                | ({`VTA_LA{ra_s3}} & `VTA_LA'(s3_a));
    assign acc_raddr = ra_a ? `VTA_LA'(a) : ra_other;

    // GEMM: S3 reads ACC[dst] (acc_raddr), S6 adds, S7 writes z_r
    wire [`VTA_ACC_BYTES*8-1:0] z_r, alu_z, alu_zq;
    vta_gemm_forward gemm (.clk(clk), .rst(rst), .reset(reset), .inp(inp_rdata), .wgt(wgt_rdata),
                           .acc_rdata(acc_rdata), .a5(`VTA_LA'(s5_a)), .a6(`VTA_LA'(s6_a)), .a7(`VTA_LA'(s7_a)),
                           .a8(`VTA_LA'(s8_a)), .v6(s6_valid), .v7(s7_valid), .v8(s8_valid), .z(z_r));
    // ALU: S2 takes its operands, forwarded where the iterations ahead wrote them; S5 writes alu_z,
    // REQ S7 alu_zq
    wire alu_we = s5_valid && alu_nr;    // REQ writes in S7
    // the iterations that will be in S3, S4 and S5 with the one in S1r (its entries a, src)
    wire at3 = s2_valid && is_alu, at4 = s3_valid && is_alu, at5 = s4_valid && is_alu, at6 = alu_we;
    vta_alu_forward alu (.clk(clk), .rst(rst), .reset(reset), .alu_op(alu_op), .imm(imm), .step(dur_step),
                         .tensor(tensor), .ty(ty), .req(req), .rq_m(rq_m), .acc_rdata(acc_rdata),
                         .s1r_valid(s1r_valid), .s2_valid(s2_valid), .e_a(`VTA_LA'(s1r_a)),
                         .e_src(`VTA_LA'(s1r_src)), .a2(`VTA_LA'(s2_a)), .a3(`VTA_LA'(s3_a)),
                         .a4(`VTA_LA'(s4_a)), .a5(`VTA_LA'(s5_a)), .at3(at3), .at4(at4), .at5(at5), .at6(at6),
                         .z(alu_z), .zq(alu_zq));
    wire exec_we = alu_we || s7_valid;    // one instruction kind runs at a time
    assign acc_we = exec_we || (dma_we && (mt == `VTA_MEM_ACC || mt == `VTA_MEM_ACC_8BIT));
    assign acc_waddr = s7_valid ? `VTA_LA'(s7_a) : exec_we ? `VTA_LA'(s5_a) : `VTA_LA'(dma_idx);
    assign acc_wdata = alu_we ? alu_z : s7_valid ? (req ? alu_zq : z_r) : (mt == `VTA_MEM_ACC) ? acc_dma : acc8;
    assign out_we = exec_we;
    genvar g;
    generate
        for (g = 0; g < LANES; g = g + 1) begin : g_out
            assign out_wdata[g * 8 +: 8] = alu_we ? alu_z[g * 32 +: 8] : req ? alu_zq[g * 32 +: 8] : z_r[g * 32 +: 8];
        end
    endgenerate

    // ------------------------------------------------------------ completion
    wire exec_done = !g_active && !s0b_valid && !s1_valid && !s1b_valid && !s1r_valid && dur_hit;
    assign body_done = in_body && ((kind == KIND_NOP) || (kind == KIND_LOAD && dma_done) ||
                                   (kind == KIND_EXEC && exec_done));
    assign finish = retire && is_finish;

    always @(posedge clk) begin
        if (rst) begin
            kind <= KIND_NOP;
            is_finish <= 1'b0;
            dur_step <= 3'd0;
            dur_ok <= 1'b0;
            dur_hit <= 1'b0;
            waiting <= 1'b0;
            s0b_valid <= 1'b0;
            s1_valid <= 1'b0;
            s1b_valid <= 1'b0;
            s1r_valid <= 1'b0;
            s2_valid <= 1'b0;
            s3_valid <= 1'b0;
            s4_valid <= 1'b0;
            s5_valid <= 1'b0;
            s6_valid <= 1'b0;
            s7_valid <= 1'b0;
            s8_valid <= 1'b0;
            err <= 1'b0;
            {req, alu_nr, ty, rq_ok, rq_sread, rq_aread, rq_s1, rq_s2, rq_hold} <= 0;
            {rq_cnt, rq_fl} <= 0;
            {gemm_count, alu_count, busy_cycles} <= 0;
            insn_count <= 0;
        end else begin
            waiting <= port_req && !port_gnt;
            if (in_body && !waiting) busy_cycles <= busy_cycles + 1;
            if (in_body && !rq_hold) elapsed <= elapsed + 1;   // REQ: a cycle more per read of ACC[s]
            if (bad_index) err <= 1'b1;

            // pipeline registers
            s0b_valid <= issue;
            s1_valid <= s0b_valid;
            s1b_valid <= s1_valid && ty;
            s1r_valid <= (s1_valid && is_alu && !tensor) || s1b_valid || rq_aread;
            s2_valid <= (s1_valid && !is_alu) || s1r_valid;
            s3_valid <= s2_valid;
            s4_valid <= s3_valid;
            s5_valid <= s4_valid;
            s6_valid <= s5_valid && !alu_nr;
            s7_valid <= s6_valid;
            s8_valid <= s7_valid;
            if (s2_valid) s3_a <= s2_a;
            if (s3_valid) s4_a <= s3_a;
            if (s4_valid) s5_a <= s4_a;
            if (s5_valid) s6_a <= s5_a;
            if (s6_valid) s7_a <= s6_a;
            if (s7_valid) s8_a <= s7_a;
            if (s1_valid) begin
                s1b_a <= a;
                s1b_src <= src;
                if (!is_alu) s2_a <= a;
                else if (!tensor) s1r_a <= a;
            end
            if (s1b_valid) begin
                s1r_a <= s1b_a;
                s1r_src <= s1b_src;
            end
            if (rq_aread) s1r_a <= 32'(rq_addr);
            // REQ: S1 queues the iteration, the head takes the read port
            rq_hold <= rq_push && rq_rd;
            if (rq_push) begin
                rq_mem[rq_wp] <= {`VTA_LA'(a), `VTA_LA'(src), rq_rd};
                rq_wp <= rq_wp + 2'd1;
                rq_last_src <= src;
                rq_first <= 1'b0;
            end
            rq_cnt <= rq_cnt + 3'(rq_push) - 3'(rq_pop);
            rq_fl <= rq_fl + 3'(issue) - 3'(rq_pop);
            rq_ok <= !req || (3'(rq_fl + 3'(issue) - 3'(rq_pop)) < 3'd4);
            if (rq_sread) begin
                rq_addr <= rq_apend;
                rq_sread <= 1'b0;
                rq_aread <= 1'b1;
            end else if (rq_pop) begin
                rq_rp <= rq_rp + 2'd1;
                rq_addr <= rq_head[0] ? rq_head[1 +: `VTA_LA] : rq_head[1 + `VTA_LA +: `VTA_LA];
                rq_apend <= rq_head[1 + `VTA_LA +: `VTA_LA];
                rq_sread <= rq_head[0];
                rq_aread <= !rq_head[0];
            end else begin
                rq_sread <= 1'b0;
                rq_aread <= 1'b0;
            end
            rq_s1 <= rq_sread;
            rq_s2 <= rq_s1;
            if (rq_s2) rq_m <= acc_rdata;       // ACC[s], two cycles after its read (S1r of its iteration)
            if (s1r_valid) s2_a <= s1r_a;
            if (issue && !reset) begin
                if (is_alu) alu_count <= alu_count + 1;
                else gemm_count <= gemm_count + 1;
            end

            // the loop's issue slot (a tensor ALU issues at slot 0 of its interval)
            if (kind == KIND_EXEC && in_body && g_active) slot <= (slot == slot_last) ? 2'd0 : slot + 2'd1;

            dur_hit <= dur_ok && (elapsed + 2 >= dur);   // in the body elapsed counts every cycle
            if (dur_step == 3'd1) begin
`ifndef VTA_ECP5_CELLS
                d_n_lo <= DNW'(d_oi[13:0]) * DNW'(d_u);
                d_n_hi <= DNW'(d_oi[27:14]) * DNW'(d_u);
`endif
                dur_step <= 3'd2;
            end else if (dur_step == 3'd2) begin
                d_n <= 48'(d_n_lo) + (48'(d_n_hi) << 14);
                dur_step <= 3'd3;
            end else if (dur_step == 3'd3) begin
                dur <= d_pipe + d_n + (d_ival[1] ? (d_ival[0] ? d_n << 1 : d_n) : 48'd0);
                dur_ok <= 1'b1;
                dur_step <= 3'd4;
            end else if (dur_step == 3'd4) begin
                dur_step <= 3'd0;
            end
            if (start) begin
                req <= h_req;
                alu_nr <= h_alu && !h_req;
                ty <= h_tensor && !h_req;
                rq_ok <= 1'b1;
                {rq_cnt, rq_fl, rq_wp, rq_rp} <= 0;
                {rq_sread, rq_aread, rq_hold} <= 0;
                rq_first <= 1'b1;
                mt <= h_mt;
                insn_count <= insn_count + 1;
                is_finish <= (h_op == `VTA_OP_FINISH);
                kind <= h_dma ? KIND_LOAD : h_exec ? KIND_EXEC : KIND_NOP;
                elapsed <= 0;
                // GEMM / ALU: the operation (the loop's bounds and factors are vta_uop_loop's)
                is_alu <= h_alu;
                reset <= `VTA_GEMM_RESET(insn);
                tensor <= h_tensor;
                slot <= 2'd0;
                slot_last <= (h_tensor && !h_req) ? 2'(`VTA_ALU_TENSOR_INTERVAL(`VTA_ALU_ALU_OPCODE(insn)) - 1) : 2'd0;
                alu_op <= `VTA_ALU_ALU_OPCODE(insn);
                imm <= 32'($signed(`VTA_ALU_IMM(insn)));
                d_oi <= 28'(h_out) * 28'(h_in);
                d_u <= (h_end > h_bgn) ? h_end - h_bgn : {`VTA_GEMM_UOP_END_W{1'b0}};
                d_pipe <= h_pipe;
                d_ival <= (h_tensor && !h_req) ? 2'(`VTA_ALU_TENSOR_INTERVAL(`VTA_ALU_ALU_OPCODE(insn))) : 2'd1;
                dur_ok <= 1'b0;
                dur_hit <= 1'b0;
                dur_step <= 3'd1;
            end
        end
    end
endmodule
`default_nettype wire
