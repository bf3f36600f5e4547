// Load module: executes LOAD INP/WGT from its queue, popping c2l and pushing l2c (spec section 6).
// A LOAD with x_size = 0 is a one-cycle token-only no-op; any other LOAD requests the read port
// when it starts and moves its data with vta_dma_read once granted.
`default_nettype none
`include "vta_cfg.vh"
module vta_load (
    input  wire         clk,
    input  wire         rst,
    input  wire         enable,
    input  wire         head_valid,
    input  wire [127:0] head,
    output wire         head_ready,
    input  wire         c2l_avail,
    output wire         c2l_pop,
    output wire         l2c_push,
    input  wire         l2c_push_ok,
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
    output wire                        inp_we,
    output wire                        wgt_we,
    output wire [15:0]                 sram_waddr,
    output wire [`VTA_WGT_BYTES*8-1:0] sram_wdata,   // INP takes the low INP_BYTES
    output wire [31:0]  inp_bytes,
    output wire [31:0]  wgt_bytes,
    output reg  [31:0]  busy_cycles,
    output wire [31:0]  stall_token,
    output wire [31:0]  stall_port,
    output wire [31:0]  stall_push,
    output reg  [31:0]  insn_count,
    output wire         running       // an instruction begins or its body is under way
);
    localparam MAXE = (`VTA_WGT_BYTES > `VTA_INP_BYTES) ? `VTA_WGT_BYTES : `VTA_INP_BYTES;

    reg         is_inp;    // the running LOAD fills INP (else WGT)
    reg         nop, waiting;
    wire start, body_done, in_body, st_tok, st_push;
    wire dma_done, dma_we;
    wire [MAXE*8-1:0] dma_data;

    wire [127:0] insn;      // the issued instruction, latched below when it begins
    vta_dep_ctrl ctrl (
        .clk(clk), .rst(rst), .enable(enable),
        .head_valid(head_valid), .head(head),
        .head_pop_prev(1'b0), .head_pop_next(`VTA_C2L_POP(head)),
        .insn(insn), .insn_push_prev(1'b0), .insn_push_next(`VTA_L2C_PUSH(insn)),
        .prev_avail(1'b0), .next_avail(c2l_avail),
        .prev_push_ok(1'b0), .next_push_ok(l2c_push_ok),
        .body_done(body_done), .issue(head_ready), .start(start),
        // the load module has no prev queue and needs no retire strobe
        /* verilator lint_off PINCONNECTEMPTY */
        .pop_prev(), .pop_next(c2l_pop), .push_prev(), .push_next(l2c_push),
        .retire(), /* verilator lint_on PINCONNECTEMPTY */
        .in_body(in_body), .stall_token(st_tok), .stall_push(st_push));
    vta_event_stat tok_stat (.clk(clk), .rst(rst), .event_now(st_tok), .total(stall_token));
    vta_event_stat push_stat (.clk(clk), .rst(rst), .event_now(st_push), .total(stall_push));
    // the grant (after fetch's enqueue and the arbiter) is no clock enable of the counter
    vta_event_stat port_stat (.clk(clk), .rst(rst), .event_now(port_req && !port_gnt), .total(stall_port));
    assign running = in_body || start;

    wire n_nop = (`VTA_MEM_X_SIZE(insn) == 16'd0);
    assign body_done = in_body && (nop || dma_done);

    wire n_inp = (`VTA_MEM_MEMORY_TYPE(insn) == `VTA_MEM_INP);
    vta_dma_read #(.MAXE(MAXE), .K(1)) dma (
        .clk(clk), .rst(rst), .go(start && !n_nop), .insn(insn),
        .elog(n_inp ? 4'($clog2(`VTA_INP_BYTES)) : 4'($clog2(`VTA_WGT_BYTES))),
        .port_req(port_req), .port_gnt(port_gnt), .port_done(port_done),
        .ar_valid(ar_valid), .ar_addr(ar_addr), .ar_len(ar_len), .ar_ready(ar_ready),
        .r_valid(r_valid), .r_data(r_data), .r_ready(r_ready),
        .wr_en(dma_we), .wr_idx(sram_waddr), .wr_data(dma_data),
        /* verilator lint_off PINCONNECTEMPTY */ .wr_wide(), /* verilator lint_on PINCONNECTEMPTY */
        /* verilator lint_off PINCONNECTEMPTY */ .wr_lanes(), /* verilator lint_on PINCONNECTEMPTY */
        .done_now(dma_done));
    assign inp_we = dma_we && is_inp;
    assign wgt_we = dma_we && !is_inp;
    assign sram_wdata = (`VTA_WGT_BYTES*8)'(dma_data);

    wire to_inp = (`VTA_MEM_MEMORY_TYPE(insn) == `VTA_MEM_INP);
    vta_bytes_stat inp_stat (.clk(clk), .rst(rst), .add(start && to_inp), .x_size(`VTA_MEM_X_SIZE(insn)),
        .y_size(`VTA_MEM_Y_SIZE(insn)), .lg(4'($clog2(`VTA_INP_BYTES))), .total(inp_bytes));
    vta_bytes_stat wgt_stat (.clk(clk), .rst(rst), .add(start && !to_inp), .x_size(`VTA_MEM_X_SIZE(insn)),
        .y_size(`VTA_MEM_Y_SIZE(insn)), .lg(4'($clog2(`VTA_WGT_BYTES))), .total(wgt_bytes));
    always @(posedge clk) begin
        if (rst) begin
            waiting <= 1'b0;
            nop <= 1'b0;
            {busy_cycles, insn_count} <= 0;
        end else begin
            if (start) begin
                is_inp <= n_inp;
                nop <= n_nop;
                insn_count <= insn_count + 1;
            end
            waiting <= port_req && !port_gnt;
            if (in_body && !waiting) busy_cycles <= busy_cycles + 1;
        end
    end
endmodule
`default_nettype wire
