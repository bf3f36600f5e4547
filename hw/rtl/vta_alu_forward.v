// The ALU's operands with their forwarding, and the ALU core (docs/hardware.md, "Compute
// pipeline"). The compute module reads ACC in S1 (and S1b, a tensor's ACC[src]) and the ALU writes
// in S5, so an iteration can miss the writes of those ahead of it; S2 forwards what they wrote:
//   - with an immediate (one per cycle), the one three ahead writes in this cycle (z) and the one
//     four ahead wrote in the cycle before (w6_z); the one or two just ahead (S3, S4) have no
//     result yet: when m of them wrote the same entry, this iteration applies the operation m + 1
//     times to the last value written before them (the immediate doubled or tripled: x + 3 imm,
//     x * imm^3, min/max unchanged, a shift by three times the amount, a left shift by 32 or more
//     given as x * 0);
//   - with a tensor operand, MIN/MAX/ADD (one per two cycles) take the one just ahead's result
//     from the ALU's first stage (zr, S4) and the write of the one before it (w6_z); SHR and MUL
//     (one per three cycles) only the one ahead's write (z): their results are the third stage's.
// Each select is worked out a cycle ahead (the iteration in S1r against the ones that will be in
// S3-S5 with it) so that only registered selects fan out across the lanes, and every input of the
// operand muxes is a register. REQ's y is its multiplier register (chosen with the immediate, off
// ACC's path); REQ forwards nothing (the contract makes a program whose iteration reads an entry
// an earlier one wrote illegal).
`default_nettype none
`include "vta_cfg.vh"
module vta_alu_forward (
    input  wire                           clk,
    input  wire                           rst,
    input  wire                           reset,      // the instruction's reset flag: results are 0
    input  wire [2:0]                     alu_op,     // the instruction's opcode and immediate
    input  wire [31:0]                    imm,
    input  wire [2:0]                     step,       // the instruction's cycle from its start (1-4), else 0
    input  wire                           tensor,     // a tensor operand (REQ included)
    input  wire                           ty,         // a tensor operand read from ACC (not REQ)
    input  wire                           req,
    input  wire [`VTA_ACC_BYTES*8-1:0]    rq_m,       // REQ's multipliers
    input  wire [`VTA_ACC_BYTES*8-1:0]    acc_rdata,  // ACC as read: ACC[dst] in S2, a tensor's ACC[src] in S1r
    input  wire                           s1r_valid,
    input  wire                           s2_valid,
    input  wire [`VTA_LA-1:0]             e_a,        // the S1r iteration's entries
    input  wire [`VTA_LA-1:0]             e_src,
    input  wire [`VTA_LA-1:0]             a2,         // the entries of the iterations in S2-S5
    input  wire [`VTA_LA-1:0]             a3,
    input  wire [`VTA_LA-1:0]             a4,
    input  wire [`VTA_LA-1:0]             a5,
    input  wire                           at3,        // the iterations that will be in S3-S5, and S5's
    input  wire                           at4,        // write, with the one in S1r are ALU iterations
    input  wire                           at5,
    input  wire                           at6,
    output wire [`VTA_ACC_BYTES*8-1:0]    z,          // the result, written in S5
    output wire [`VTA_ACC_BYTES*8-1:0]    zq          // REQ's, written in S7
);
    localparam LANES = `VTA_BATCH * `VTA_BLOCK_OUT;
    reg [`VTA_ACC_BYTES*8-1:0] x_r, x2, y2, w6_z;   // w6: the ALU's write of the cycle before
    reg [2:0]  op3;                     // the operation the ALU's first stage applies (S3)
    // the doubled and tripled operation for an ALU with an immediate, worked out after the start
    // (the doubled at step 2, the tripled at step 4, before the first iteration that can take
    // them reaches S2)
    reg [2:0]  op_d, op_t;
    reg [31:0] imm_d, imm_t;
    // the operation with immediate v applied m times as one, given m x v (sum) and v^m (prod):
    // min/max as they are, a shift by m times the amount (capped at 31 to the right; 32 or more
    // to the left gives 0, as x * 0)
    function automatic [34:0] op_times(input [2:0] o, input [31:0] v, input [31:0] sum, input [31:0] prod,
                                       input integer m);
        op_times = {o, v};
        case (o)
            `VTA_ALU_ADD: op_times = {o, sum};
            `VTA_ALU_MUL: op_times = {o, prod};
            `VTA_ALU_SHR:
                if (!v[31]) op_times = {o, ($signed(v) > `VTA_ALU_SHIFT_CAP / m) ? 32'(`VTA_ALU_SHIFT_CAP) : sum};
                else if ($signed(v) < -(`VTA_ALU_SHIFT_CAP / m)) op_times = {3'(`VTA_ALU_MUL), 32'd0};
                else op_times = {o, sum};
            default: ;
        endcase
    endfunction
`ifdef VTA_ECP5_CELLS
    // the immediate's square by halves (the doubled MUL) in MULT18X18D output registers: imm holds
    // from the start, so at step 2 they hold its square (no path imm -> a combinational
    // multiplier -> a fabric register)
    wire [31:0] sq_ll, p_sq_lh;
    vta_ecp5_mul #(.W(16), .SIGNED(0), .IN_REG(0), .OUT_REG(1)) sq_lo (.clk(clk), .a(imm[15:0]), .b(imm[15:0]),
        .p(sq_ll));
    vta_ecp5_mul #(.W(16), .SIGNED(0), .IN_REG(0), .OUT_REG(1)) sq_hi (.clk(clk), .a(imm[15:0]), .b(imm[31:16]),
        .p(p_sq_lh));
    wire [15:0] sq_lh = p_sq_lh[15:0];
    // and imm_d x imm (the tripled MUL), the same way, imm_d holding from step 3
    wire [31:0] cb_ll, p_cb_lh, p_cb_hl;
    vta_ecp5_mul #(.W(16), .SIGNED(0), .IN_REG(0), .OUT_REG(1)) cb_lo (.clk(clk), .a(imm_d[15:0]), .b(imm[15:0]),
        .p(cb_ll));
    vta_ecp5_mul #(.W(16), .SIGNED(0), .IN_REG(0), .OUT_REG(1)) cb_mid (.clk(clk), .a(imm_d[15:0]), .b(imm[31:16]),
        .p(p_cb_lh));
    vta_ecp5_mul #(.W(16), .SIGNED(0), .IN_REG(0), .OUT_REG(1)) cb_hi (.clk(clk), .a(imm_d[31:16]), .b(imm[15:0]),
        .p(p_cb_hl));
    wire [15:0] cb_lh = p_cb_lh[15:0], cb_hl = p_cb_hl[15:0];
`else
    reg [31:0] sq_ll, cb_ll;
    reg [15:0] sq_lh, cb_lh, cb_hl;
`endif
    // the tripled MUL's high half, cb_ll[31:16] + cb_lh + cb_hl, reduced to sum and carry bit by bit
    // and added in one 16-bit carry chain (not two chained adders after the MULT18X18D output
    // registers)
    wire [15:0] cb_cs_s = cb_ll[31:16] ^ cb_lh ^ cb_hl;
    wire [15:0] cb_cs_c = {(cb_ll[30:16] & cb_lh[14:0]) | (cb_ll[30:16] & cb_hl[14:0]) | (cb_lh[14:0] & cb_hl[14:0]), 1'b0};
    // S2's operands: the ALU's write of this cycle (z, registered in its third stage), MIN/MAX/ADD's
    // result in its first (zr, a tensor's one ahead), the write of the cycle before (w6_z), else ACC
    // as read (a tensor's ACC[dst] as taken in S1r, x_r). An immediate ALU's m1 (m2): the one (two)
    // ahead wrote the same entry, so the operation applies once more.
    reg m1, m2, fz, f1, f2, fzy, f1y, f2y;
    wire [`VTA_ACC_BYTES*8-1:0] zr;
    wire [`VTA_ACC_BYTES*8-1:0] x_s2 = fz ? z : f1 ? zr : f2 ? w6_z : ty ? x_r : acc_rdata;
    wire [31:0] imm_m = (m1 && m2) ? imm_t : (m1 || m2) ? imm_d : imm;
    wire [`VTA_ACC_BYTES*8-1:0] y_s2 = !ty ? (req ? rq_m : {LANES{imm_m}}) : fzy ? z : f1y ? zr : f2y ? w6_z
                                     : acc_rdata;
`ifdef VTA_ECP5_CELLS
    // the multipliers' copy of S3's operands, loaded every cycle (so not merged with x2, y2, which
    // load with S2): the same values whenever S3 holds an iteration
    reg [`VTA_ACC_BYTES*8-1:0] x2m, y2m;
    always @(posedge clk) begin
        x2m <= x_s2;
        y2m <= y_s2;
    end
`else
    wire [`VTA_ACC_BYTES*8-1:0] x2m = x2, y2m = y2;
`endif
    vta_alu_core alu (.clk(clk), .reset(reset), .op(op3), .x(x2), .y(y2), .xm(x2m), .ym(y2m), .z(z),
                      .zr(zr), .n(imm[`VTA_REQ_SHIFT_LO +: `VTA_REQ_SHIFT_BITS]),
                      .zp(imm[`VTA_REQ_ZP_LO +: `VTA_REQ_ZP_BITS]), .zq(zq));
    always @(posedge clk)
        if (!rst) begin
            if (s2_valid) begin
                x2 <= x_s2;
                y2 <= y_s2;
                op3 <= (m1 && m2) ? op_t : (m1 || m2) ? op_d : alu_op;
            end
            m1 <= at3 && !tensor && a2 == e_a;
            m2 <= at4 && !tensor && a3 == e_a;
            fz <= at5 && a4 == e_a;
            f1 <= at4 && tensor && a3 == e_a;
            f2 <= at6 && a5 == e_a;
            fzy <= at5 && a4 == e_src;
            f1y <= at4 && a3 == e_src;
            f2y <= at6 && a5 == e_src;
            w6_z <= z;
            if (s1r_valid && tensor) x_r <= acc_rdata;
            if (step == 3'd1) begin
`ifndef VTA_ECP5_CELLS
                sq_ll <= 32'(imm[15:0]) * 32'(imm[15:0]);
                sq_lh <= 16'(imm[15:0] * imm[31:16]);
`endif
            end else if (step == 3'd2) begin
                {op_d, imm_d} <= op_times(alu_op, imm, imm << 1, sq_ll + {sq_lh << 1, 16'd0}, 2);
            end else if (step == 3'd3) begin
`ifndef VTA_ECP5_CELLS
                cb_ll <= 32'(imm_d[15:0]) * 32'(imm[15:0]);
                cb_lh <= 16'(imm_d[15:0] * imm[31:16]);
                cb_hl <= 16'(imm_d[31:16] * imm[15:0]);
`endif
            end else if (step == 3'd4) begin
                {op_t, imm_t} <= op_times(alu_op, imm, imm_d + imm, {cb_cs_s + cb_cs_c, cb_ll[15:0]}, 3);
            end
        end
endmodule
`default_nettype wire
