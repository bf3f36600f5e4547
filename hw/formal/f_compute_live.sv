// Bounded liveness of a GEMM or ALU instruction in vta_compute (its dep_ctrl, loop counters,
// UOP reads and pipeline), with any micro-ops and operands. An instruction issued at cycle i runs
// its last cycle by i + ISSUE_DELAY + the timing model's duration (docs/timing.md): GEMM_PIPELINE
// + n for a GEMM, ALU_PIPELINE + n with an immediate and ALU_PIPELINE + 2n with a tensor operand
// (3n for SHR and MUL: `VTA_ALU_TENSOR_INTERVAL), ALU_PIPELINE + REQ_EXTRA_LATENCY + 2n for REQ (its
// slowest: every iteration reads ACC[s]; the micro-ops choose), n = iter_out * iter_in * max(0, uop_end - uop_bgn). Checked by BMC for every GEMM and ALU (any
// flags, reset bit, factors, op, immediate, token timing) with iter_out, iter_in <= 7 and
// uop_end <= uop_bgn + 7 whose bound is at most MAXB = depth - 3 cycles: what the depth follows
// to its end.
`default_nettype none
`include "vta_cfg.vh"
`include "f_model.vh"
module f_compute_live (
    input wire clk,
    input wire rst,
    input wire head_valid,
    input wire [127:0] head_bits,
    input wire alu,
    input wire [2:0] iter_out, iter_in,
    input wire l2c_avail,
    input wire s2c_avail,
    input wire [31:0] uop_rdata
);
`include "f_reset.svh"
    localparam BB = `VTA_BUS_BYTES;
    // the largest bound checked: the task's depth less reset, the issue and the step after the end
    localparam MAXB = `F_DEPTH - 3;
    reg [127:0] head;
    always @(*) begin
        head = head_bits;
        head[2:0] = alu ? `VTA_OP_ALU : `VTA_OP_GEMM;
        `VTA_GEMM_ITER_OUT(head) = 14'(iter_out);
        `VTA_GEMM_ITER_IN(head) = 14'(iter_in);
    end
    wire [`VTA_GEMM_UOP_END_W-1:0] bgn = `VTA_GEMM_UOP_BGN(head), fin = `VTA_GEMM_UOP_END(head);
    always @(*) assume(fin <= bgn + 7);

    wire issue, running;
    /* verilator lint_off PINMISSING */
    vta_compute cp (
        .clk(clk), .rst(rst), .enable(1'b1), .head_valid(head_valid), .head(head), .head_ready(issue),
        .l2c_avail(l2c_avail), .l2c_pop(), .s2c_avail(s2c_avail), .s2c_pop(),
        .c2l_push(), .c2l_push_ok(1'b1), .c2s_push(), .c2s_push_ok(1'b1),
        .port_req(), .port_gnt(1'b0), .port_done(), .ar_valid(), .ar_addr(), .ar_len(), .ar_ready(1'b0),
        .r_valid(1'b0), .r_data({BB*8{1'b0}}), .r_ready(),
        .uop_we(), .uop_waddr(), .uop_wdata(), .uop_raddr(), .uop_rdata(uop_rdata),
        .acc_we(), .acc_waddr(), .acc_wdata(), .acc_raddr(), .acc_rdata({`VTA_ACC_BYTES*8{1'b0}}),
        .out_we(), .out_wdata(), .inp_raddr(), .inp_rdata({`VTA_INP_BYTES*8{1'b0}}), .wgt_raddr(),
        .wgt_rdata({`VTA_WGT_BYTES*8{1'b0}}), .finish(), .err(), .acc_bytes(), .uop_bytes(), .gemm_count(),
        .alu_count(), .busy_cycles(), .stall_token(), .stall_port(), .stall_push(), .insn_count(),
        .running(running));
    /* verilator lint_on PINMISSING */

    // the timing model's duration of the head, in cycles (docs/timing.md, "Per-instruction durations")
    wire tensor = alu && !`VTA_ALU_USE_IMM(head);
    // fetch refuses opcodes 6-7, and REQ with use_imm or its reserved bits set
    wire req = alu && `VTA_ALU_ALU_OPCODE(head) == 3'(`VTA_ALU_REQ);
    always @(*) if (alu) assume(`VTA_ALU_ALU_OPCODE(head) <= `VTA_ALU_OPCODE_MAX);
    always @(*) if (req) assume(!`VTA_ALU_USE_IMM(head) && (`VTA_ALU_IMM(head) >> `VTA_REQ_RSV_LO) == 0);
    wire [31:0] n = (fin > bgn) ? 32'(iter_out) * 32'(iter_in) * 32'(fin - bgn) : 32'd0;
    wire [31:0] n_bound = `F_ISSUE_DELAY + (req ? `VTA_ALU_PIPELINE + `VTA_REQ_EXTRA_LATENCY + `VTA_REQ_READ_INTERVAL * n
        : (alu ? `VTA_ALU_PIPELINE : `VTA_GEMM_PIPELINE) + (tensor ? 32'(`VTA_ALU_TENSOR_INTERVAL(`VTA_ALU_ALU_OPCODE(head))) * n : n));
    always @(*) if (head_valid) assume(n_bound <= MAXB);

    // one instruction at a time, from its issue to the cycle after its last running cycle
`include "f_live_bound.svh"
    reg [31:0] f_n;
    reg f_alu, f_tensor, f_slow, f_req;
    always @(posedge clk) if (issue) {f_n, f_alu, f_tensor, f_slow, f_req} <= {n, alu, tensor && !req,
        `VTA_ALU_TENSOR_INTERVAL(`VTA_ALU_ALU_OPCODE(head)) == 3, req};
    // the bound is met exactly (it is the model's duration), by instructions of several iterations
    always @(posedge clk) if (f_live && !rst) begin
        cl_cover_gemm_at_bound: cover(f_at_bound && !f_alu && f_n >= 4);
        cl_cover_alu_tensor_at_bound: cover(f_at_bound && f_tensor && !f_slow && f_n >= 2);
        cl_cover_alu_slow_tensor_at_bound: cover(f_at_bound && f_tensor && f_slow && f_n >= 2);
        cl_cover_alu_imm_at_bound: cover(f_at_bound && f_alu && !f_tensor && !f_req && f_n >= 4);
        cl_cover_empty_at_bound: cover(f_at_bound && f_n == 0);
        cl_cover_req_at_bound: cover(f_at_bound && f_req && f_n >= 2);   // every iteration reads ACC[s]
    end
endmodule
`default_nettype wire
