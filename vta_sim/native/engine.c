/* The compiled engine: one call decodes a whole program, applies the static checks of
 * vta_sim/simulator.py's check_program, and runs it through the timing model of docs/timing.md
 * and the semantics of spec section 5 with the hazard checks of vta_sim/functional.py. It is a
 * line-by-line port of vta_sim/timing.py's Engine and vta_sim/functional.py's Machine (the
 * readable reference; both give identical cycles, statistics, DRAM and refusals). Every number
 * about the machine arrives at run time in `p` (slots VTA_P_*, filled by vta_sim/compiled.py);
 * the slot layout and the ISA's numbers are -D macros from vta_sim/native/layout.py.
 *
 * On a refusal (static, a deadlock, an SRAM index outside its buffer, a hazard) it stops and
 * says so; the Simulator then replays the program through the reference, which raises its
 * exact error. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef VTA_NCOLS
#error "build through vta_sim.native: it defines the layout macros from vta_sim/native/layout.py"
#endif

void vta_gemm(uint32_t *acc, const int8_t *inp, const int8_t *wgt, const int64_t *a, const int64_t *s,
              const int64_t *w, int64_t n, int64_t batch, int64_t bi, int64_t bo);
void vta_alu(int32_t *acc, const int64_t *a, const int64_t *s, int64_t n, int64_t lanes, int op, int use_imm,
             int32_t imm);

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CHUNK 1024            /* loop iterations whose indices are formed at once */

enum { IDLE, PORT, RUN, PUSH };                                        /* module phases */
enum { A_FETCH_GRANT, A_FETCH_ENQUEUE, A_ISSUE, A_BEGIN, A_GRANT, A_DONE, A_PUSHED };

typedef struct { int64_t port, cycles; } seg_t;
typedef struct { int64_t t, vc[3]; } token_t;

typedef struct {
    int64_t *qidx, *qenq, qhead, qlen;                 /* instruction queue ring (CMD_QUEUE_DEPTH) */
    int phase, has_nxt;
    int64_t free, seq, n_free, last_issue, vc[3];
    int64_t nxt_idx, nxt_issue, nxt_vc[3];             /* the issue register */
    /* the running instruction */
    int64_t idx, t, seg, nseg, body, done, push, last_push;
    seg_t *segs;
    int64_t seg_cap;
    int64_t busy, stall_token, stall_port, stall_push;
} module_t;

typedef struct {
    const int64_t *p;
    uint8_t *dram;
    int8_t *inp, *wgt, *out;
    int32_t *acc;
    uint32_t *uop;
    int64_t *uop_f[3];                                 /* decoded micro-op fields: dst, src, wgt */
    int64_t *w_seq[3], *r_seq[3];                      /* hazard tracking of INP, WGT, OUT */
    int64_t *stats;
    int64_t ia[CHUNK], is[CHUNK], iw[CHUNK];
    int64_t *stamp, *dsts, stamp_now;                  /* ACC entries a loop nest writes, once each */
    int64_t *req_dst, *req_src, req_now;               /* REQ's hazard rule: ACC entries written / read */
    int64_t req_reads;                                 /* iterations of the last REQ that read ACC[s] */
} machine_t;

enum { SH_INP, SH_WGT, SH_OUT };
static const int SH_WRITER[3] = {VTA_LOAD, VTA_LOAD, VTA_COMPUTE};
static const int SH_READER[3] = {VTA_COMPUTE, VTA_COMPUTE, VTA_STORE};

/* ------------------------------------------------------------------ hazards (functional.py _Shared) */
static int check_read(machine_t *m, int sh, int64_t e, const int64_t *vc)
{
    if (m->w_seq[sh][e] > vc[SH_WRITER[sh]]) return 1;
    m->r_seq[sh][e] = vc[SH_READER[sh]];
    return 0;
}

static int check_write(machine_t *m, int sh, int64_t e, const int64_t *vc)
{
    if (m->r_seq[sh][e] > vc[SH_READER[sh]]) return 1;
    m->w_seq[sh][e] = vc[SH_WRITER[sh]];
    return 0;
}

/* ------------------------------------------------------------------ functional semantics */
static int exec_load(machine_t *m, const int64_t *c, const int64_t *vc)
{
    const int64_t *p = m->p;
    int64_t mem = c[VTA_COL_MEMORY_TYPE], x = c[VTA_COL_X_SIZE], y = c[VTA_COL_Y_SIZE];
    if (x == 0) return 0;
    int64_t elem = p[VTA_P_ELEM_BYTES + mem];
    int64_t y0 = c[VTA_COL_Y_PAD_0], y1 = c[VTA_COL_Y_PAD_1], x0 = c[VTA_COL_X_PAD_0], x1 = c[VTA_COL_X_PAD_1];
    int64_t width = x0 + x + x1, lo = c[VTA_COL_SRAM_BASE], hi = lo + (y0 + y + y1) * width;
    int sh = mem == VTA_MEM_INP ? SH_INP : mem == VTA_MEM_WGT ? SH_WGT : -1;
    if (sh >= 0)
        for (int64_t e = lo; e < hi; e++)
            if (check_write(m, sh, e, vc)) return 1;
    uint8_t *base;
    int64_t entry;                                    /* SRAM bytes of one entry */
    if (mem == VTA_MEM_INP) base = (uint8_t *)m->inp, entry = elem;
    else if (mem == VTA_MEM_WGT) base = (uint8_t *)m->wgt, entry = elem;
    else if (mem == VTA_MEM_UOP) base = (uint8_t *)m->uop, entry = elem;
    else base = (uint8_t *)m->acc, entry = p[VTA_P_ACC_LANES] * 4;
    if (y0 || y1 || x0 || x1) memset(base + lo * entry, 0, (hi - lo) * entry);
    for (int64_t r = 0; r < y; r++) {
        const uint8_t *src = m->dram + (c[VTA_COL_DRAM_BASE] + r * c[VTA_COL_X_STRIDE]) * elem;
        uint8_t *dst = base + (lo + (y0 + r) * width + x0) * entry;
        if (mem == VTA_MEM_ACC_8BIT) {                /* int8 lanes sign-extended into int32 */
            int32_t *d = (int32_t *)dst;
            for (int64_t k = 0; k < x * elem; k++) d[k] = (int8_t)src[k];
        } else {
            memcpy(dst, src, x * elem);               /* little-endian host (x86-64, aarch64) */
        }
    }
    if (mem == VTA_MEM_UOP)
        for (int64_t e = lo; e < hi; e++)
            for (int f = 0; f < 3; f++)
                m->uop_f[f][e] = (m->uop[e] >> p[VTA_P_UOP_LO + f]) & p[VTA_P_UOP_MASK + f];
    m->stats[VTA_S_LOAD_BYTES + mem] += x * y * elem;
    return 0;
}

static int exec_store(machine_t *m, const int64_t *c, const int64_t *vc)
{
    int64_t x = c[VTA_COL_X_SIZE], y = c[VTA_COL_Y_SIZE], lo = c[VTA_COL_SRAM_BASE];
    if (x == 0) return 0;
    int64_t entry = m->p[VTA_P_ACC_LANES];            /* OUT: int8 lanes */
    for (int64_t e = lo; e < lo + x * y; e++)
        if (check_read(m, SH_OUT, e, vc)) return 1;
    for (int64_t r = 0; r < y; r++)                   /* in order: a later overlapping row wins */
        memcpy(m->dram + (c[VTA_COL_DRAM_BASE] + r * c[VTA_COL_X_STRIDE]) * entry,
               (const uint8_t *)m->out + (lo + r * x) * entry, x * entry);
    m->stats[VTA_S_STORE_BYTES] += x * y * entry;
    return 0;
}

/* functional.py _check_ranges: the analytic maximum of each index the nest forms */
static int check_ranges(machine_t *m, const int64_t *c, int gemm)
{
    const int64_t *p = m->p;
    int64_t depth[3] = {p[VTA_P_DEPTH_ACC], gemm ? p[VTA_P_DEPTH_INP] : p[VTA_P_DEPTH_ACC], p[VTA_P_DEPTH_WGT]};
    int64_t fo[3] = {c[VTA_COL_DST_FACTOR_OUT], c[VTA_COL_SRC_FACTOR_OUT], c[VTA_COL_WGT_FACTOR_OUT]};
    int64_t fi[3] = {c[VTA_COL_DST_FACTOR_IN], c[VTA_COL_SRC_FACTOR_IN], c[VTA_COL_WGT_FACTOR_IN]};
    int nfields = c[VTA_COL_RESET] ? 1 : gemm ? 3 : 2;
    for (int f = 0; f < nfields; f++) {
        int64_t top = 0;
        for (int64_t u = c[VTA_COL_UOP_BGN]; u < c[VTA_COL_UOP_END]; u++) top = MAX(top, m->uop_f[f][u]);
        top += (c[VTA_COL_ITER_OUT] - 1) * fo[f] + (c[VTA_COL_ITER_IN] - 1) * fi[f];
        if (top >= depth[f]) return 1;
    }
    return 0;
}

/* The GEMM/ALU loop nest: index chunks through loops.c's kernels; hazards on INP/WGT per
 * iteration; the distinct destinations (stamped) checked against OUT's readers and mirrored into
 * OUT once, after the nest (OUT holds the final value of each written ACC entry). */
static void flush(machine_t *m, const int64_t *c, int gemm, int64_t n)
{
    const int64_t *p = m->p;
    if (gemm) {
        vta_gemm((uint32_t *)m->acc, m->inp, m->wgt, m->ia, m->is, m->iw, n, p[VTA_P_BATCH], p[VTA_P_BLOCK_IN],
                 p[VTA_P_BLOCK_OUT]);
        m->stats[VTA_S_GEMM_COUNTER] += n;
    } else {
        vta_alu(m->acc, m->ia, m->is, n, p[VTA_P_ACC_LANES], (int)c[VTA_COL_ALU_OP], (int)c[VTA_COL_USE_IMM],
                (int32_t)c[VTA_COL_IMM]);
        m->stats[VTA_S_ALU_COUNTER] += n;
    }
}

/* REQ (functional.py Machine._execute_req): counts the iterations that read ACC[s] (the first, and
 * each whose s differs from the iteration's before it) into m->req_reads, and without reset applies
 * the hazard rule: every iteration's dst differs from every earlier dst and from every src.
 * Returns 1 when the rule is broken. */
static int req_pass(machine_t *m, const int64_t *c)
{
    int64_t bgn = c[VTA_COL_UOP_BGN], end = c[VTA_COL_UOP_END], io = c[VTA_COL_ITER_OUT], ii = c[VTA_COL_ITER_IN];
    const int64_t *ud = m->uop_f[0], *us = m->uop_f[1];
    int64_t reads = 0, last = -1, stamp = ++m->req_now;
    for (int64_t i = 0; i < io; i++)
        for (int64_t j = 0; j < ii; j++) {
            int64_t sa = i * c[VTA_COL_SRC_FACTOR_OUT] + j * c[VTA_COL_SRC_FACTOR_IN];
            for (int64_t u = bgn; u < end; u++) {
                int64_t s = us[u] + sa;
                reads += s != last;
                last = s;
                if (!c[VTA_COL_RESET]) m->req_src[s] = stamp;
            }
        }
    m->req_reads = reads;
    if (c[VTA_COL_RESET]) return 0;                   /* a reset reads nothing */
    if (io * ii * (end - bgn) > m->p[VTA_P_DEPTH_ACC]) return 1;   /* more iterations than entries: a dst repeats */
    for (int64_t i = 0; i < io; i++)
        for (int64_t j = 0; j < ii; j++) {
            int64_t da = i * c[VTA_COL_DST_FACTOR_OUT] + j * c[VTA_COL_DST_FACTOR_IN];
            for (int64_t u = bgn; u < end; u++) {
                int64_t a = ud[u] + da;
                if (m->req_dst[a] == stamp || m->req_src[a] == stamp) return 1;
                m->req_dst[a] = stamp;
            }
        }
    return 0;
}

static int exec_loop(machine_t *m, const int64_t *c, const int64_t *vc, int gemm)
{
    int64_t bgn = c[VTA_COL_UOP_BGN], end = c[VTA_COL_UOP_END], io = c[VTA_COL_ITER_OUT], ii = c[VTA_COL_ITER_IN],
            lanes = m->p[VTA_P_ACC_LANES];
    m->req_reads = 0;
    if (io * ii * (end - bgn) == 0) return 0;
    if (check_ranges(m, c, gemm)) return 1;
    if (!gemm && c[VTA_COL_ALU_OPCODE] == VTA_ISA_ALU_REQ && req_pass(m, c)) return 1;
    const int64_t *ud = m->uop_f[0], *us = m->uop_f[1], *uw = m->uop_f[2];
    int reset = (int)c[VTA_COL_RESET];
    int64_t n = 0, nd = 0, stamp = ++m->stamp_now;
    for (int64_t i = 0; i < io; i++)
        for (int64_t j = 0; j < ii; j++) {
            int64_t da = i * c[VTA_COL_DST_FACTOR_OUT] + j * c[VTA_COL_DST_FACTOR_IN],
                    sa = i * c[VTA_COL_SRC_FACTOR_OUT] + j * c[VTA_COL_SRC_FACTOR_IN],
                    wa = i * c[VTA_COL_WGT_FACTOR_OUT] + j * c[VTA_COL_WGT_FACTOR_IN];
            for (int64_t u = bgn; u < end; u++) {
                int64_t a = ud[u] + da;
                if (m->stamp[a] != stamp) m->stamp[a] = stamp, m->dsts[nd++] = a;
                if (reset) continue;
                m->ia[n] = a, m->is[n] = us[u] + sa;
                if (gemm) {
                    m->iw[n] = uw[u] + wa;
                    if (check_read(m, SH_INP, m->is[n], vc) || check_read(m, SH_WGT, m->iw[n], vc)) return 1;
                }
                if (++n == CHUNK) flush(m, c, gemm, n), n = 0;
            }
        }
    if (n) flush(m, c, gemm, n);
    for (int64_t k = 0; k < nd; k++) {
        int64_t e = m->dsts[k];
        if (check_write(m, SH_OUT, e, vc)) return 1;
        int32_t *a = m->acc + e * lanes;
        int8_t *o = m->out + e * lanes;
        if (reset) memset(a, 0, lanes * sizeof *a);
        for (int64_t l = 0; l < lanes; l++) o[l] = (int8_t)(uint8_t)(uint32_t)a[l];
    }
    return 0;
}

static int execute(machine_t *m, const int64_t *c, const int64_t *vc)
{
    switch (c[VTA_COL_OPCODE]) {
    case VTA_OP_LOAD: return exec_load(m, c, vc);
    case VTA_OP_STORE: return exec_store(m, c, vc);
    case VTA_OP_GEMM: return exec_loop(m, c, vc, 1);
    case VTA_OP_ALU: return exec_loop(m, c, vc, 0);
    default: return 0;                                /* FINISH */
    }
}

/* ------------------------------------------------------------------ segments (timing.py DmaCost) */
static void add_seg(module_t *mod, int64_t port, int64_t cycles)
{
    /* timing.py load_segments' merge: adjacent local segments merge, empty local ones vanish */
    if (!port && mod->nseg && !mod->segs[mod->nseg - 1].port) {
        mod->segs[mod->nseg - 1].cycles += cycles;
        return;
    }
    if (!port && !cycles) return;
    if (mod->nseg == mod->seg_cap) {
        mod->seg_cap = mod->seg_cap ? 2 * mod->seg_cap : 64;
        seg_t *grown = realloc(mod->segs, mod->seg_cap * sizeof(seg_t));
        if (!grown) abort();   /* at most a few segments per SRAM entry: a few hundred KiB */
        mod->segs = grown;
    }
    mod->segs[mod->nseg].port = port;
    mod->segs[mod->nseg++].cycles = cycles;
}

/* Bursts of one DMA row: split at the boundary, each `latency` + its beats; add_seg'd as read
 * bursts when `mod` is given, else summed (write bursts). */
static int64_t bursts(const int64_t *p, int64_t addr, int64_t nbytes, int64_t latency, module_t *mod)
{
    int64_t bus = p[VTA_P_BUS_BYTES], boundary = p[VTA_P_BURST_BOUNDARY], total = 0;
    int64_t pos = addr % boundary, end = pos + nbytes;
    while (pos < end) {
        int64_t stop = end < (pos / boundary + 1) * boundary ? end : (pos / boundary + 1) * boundary;
        int64_t cycles = latency + (pos % bus + stop - pos + bus - 1) / bus;
        if (mod) add_seg(mod, 1, cycles);
        total += cycles;
        pos = stop;
    }
    return total;
}

/* `req_reads`: the iterations of a REQ that read ACC[s] (exec_loop's m->req_reads) */
static void segments(const int64_t *p, const int64_t *c, module_t *mod, int64_t req_reads)
{
    int64_t op = c[VTA_COL_OPCODE], cycles = 1;
    mod->nseg = 0;
    if (op == VTA_OP_LOAD && c[VTA_COL_X_SIZE]) {
        int64_t elem = p[VTA_P_ELEM_BYTES + c[VTA_COL_MEMORY_TYPE]], x = c[VTA_COL_X_SIZE];
        int64_t width = c[VTA_COL_X_PAD_0] + x + c[VTA_COL_X_PAD_1];
        add_seg(mod, 0, c[VTA_COL_Y_PAD_0] * width);
        for (int64_t r = 0; r < c[VTA_COL_Y_SIZE]; r++) {
            add_seg(mod, 0, c[VTA_COL_X_PAD_0]);
            bursts(p, (c[VTA_COL_DRAM_BASE] + r * c[VTA_COL_X_STRIDE]) * elem, x * elem, p[VTA_P_DMA_READ_LATENCY], mod);
            add_seg(mod, 0, c[VTA_COL_X_PAD_1]);
        }
        add_seg(mod, 0, c[VTA_COL_Y_PAD_1] * width);
        mod->body = 0;
        for (int64_t k = 0; k < mod->nseg; k++) mod->body += mod->segs[k].cycles;
        if (mod->body) return;
        mod->nseg = 0;                                /* moves no entry: still its cycle */
    } else if (op == VTA_OP_STORE && c[VTA_COL_X_SIZE]) {
        int64_t entry = p[VTA_P_ACC_LANES], x = c[VTA_COL_X_SIZE];
        cycles = 0;
        for (int64_t r = 0; r < c[VTA_COL_Y_SIZE]; r++)
            cycles += bursts(p, (c[VTA_COL_DRAM_BASE] + r * c[VTA_COL_X_STRIDE]) * entry, x * entry,
                             p[VTA_P_DMA_WRITE_LATENCY], NULL);
        if (!cycles) cycles = 1;
    } else if (op == VTA_OP_GEMM || op == VTA_OP_ALU) {
        int64_t iters = c[VTA_COL_ITER_OUT] * c[VTA_COL_ITER_IN] * (c[VTA_COL_UOP_END] - c[VTA_COL_UOP_BGN]);
        if (op == VTA_OP_GEMM)
            cycles = p[VTA_P_GEMM_PIPELINE] + iters;
        else if (c[VTA_COL_ALU_OPCODE] == VTA_ISA_ALU_REQ)    /* timing.req_cycles */
            cycles = p[VTA_P_ALU_PIPELINE] + p[VTA_P_REQ_EXTRA_LATENCY] + req_reads * p[VTA_P_REQ_READ_INTERVAL]
                     + (iters - req_reads) * p[VTA_P_REQ_KEEP_INTERVAL];
        else
            cycles = p[VTA_P_ALU_PIPELINE] + iters * (c[VTA_COL_USE_IMM] ? p[VTA_P_ALU_IMM_INTERVAL]
                                                      : p[VTA_P_ALU_TENSOR_INTERVAL + c[VTA_COL_ALU_OPCODE]]);
    }
    mod->nseg = 0;
    add_seg(mod, 0, cycles);
    mod->body = cycles;
}

/* timing.py Engine._advance: run local segments; stop at the next read burst or at completion */
static void advance(const int64_t *p, module_t *mod)
{
    while (mod->seg < mod->nseg && !mod->segs[mod->seg].port) mod->t += mod->segs[mod->seg++].cycles;
    if (mod->seg < mod->nseg) {
        mod->t += p[VTA_P_REQUEST_DELAY];
        mod->body += p[VTA_P_REQUEST_DELAY];
        mod->phase = PORT;
    } else {
        mod->done = mod->t;
        mod->phase = RUN;
    }
}

static int less(const int64_t *a, const int64_t *b)
{
    return a[0] != b[0] ? a[0] < b[0] : a[1] != b[1] ? a[1] < b[1] : a[2] < b[2];
}

/* ------------------------------------------------------------------ decoding and static checks */
/* Decodes the n words at p[VTA_P_INSN_ADDR] into rows of VTA_NCOLS and applies
 * simulator.check_program's refusals (any of them: the reference words the first). Returns 1 on
 * a refusal. */
static int decode(const int64_t *p, const uint8_t *dram, int64_t n, int64_t *rows)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t w[2];
        memcpy(w, dram + p[VTA_P_INSN_ADDR] + i * VTA_INSN_BYTES, sizeof w);
        int64_t fmt = p[VTA_P_FORMAT_OF_OPCODE + (w[0] & 7)];
        if (fmt < 0) return 1;                                          /* illegal opcode */
        int64_t *c = rows + i * VTA_NCOLS;
        for (int f = 0; f < VTA_NFIELDS; f++) {
            int64_t k = fmt * VTA_NFIELDS + f, lo = p[VTA_P_FIELD_LO + k], width = p[VTA_P_FIELD_WIDTH + k];
            uint64_t v = width ? (w[lo / 64] >> (lo % 64)) & ((UINT64_C(1) << width) - 1) : 0;
            if (width && p[VTA_P_FIELD_SIGNED + k] && (v >> (width - 1))) v -= UINT64_C(1) << width;
            c[f] = (int64_t)v;
        }
        int64_t op = c[VTA_COL_OPCODE], mt = c[VTA_COL_MEMORY_TYPE];
        if ((op == VTA_OP_FINISH) != (i == n - 1)) return 1;           /* FINISH last, and only there */
        int mem = op == VTA_OP_LOAD || op == VTA_OP_STORE;
        if (mem) {
            if (mt < 0 || mt > 7 || !p[VTA_P_ELEM_BYTES + mt] || c[VTA_COL_UNUSED]) return 1;
            if ((op == VTA_OP_STORE) != (mt == VTA_MEM_OUT)) return 1;
        }
        c[VTA_COL_MODULE] = op == VTA_OP_LOAD ? p[VTA_P_LOAD_MODULE + mt] : op == VTA_OP_STORE ? VTA_STORE : VTA_COMPUTE;
        if (c[VTA_COL_MODULE] < 0) return 1;
        /* token queues in flag order (isa.FLAGS: pop_prev, pop_next, push_prev, push_next) */
        c[VTA_COL_NPOP] = c[VTA_COL_NPUSH] = 0;
        for (int f = 0; f < 4; f++) {
            if (!c[VTA_COL_POP_PREV + f]) continue;
            int64_t q = p[VTA_P_FLAG_QUEUE + c[VTA_COL_MODULE] * 4 + f];
            if (q < 0) return 1;                                        /* illegal in this module */
            if (f < 2) c[VTA_COL_POP0 + c[VTA_COL_NPOP]++] = q;
            else c[VTA_COL_PUSH0 + c[VTA_COL_NPUSH]++] = q;
        }
        if (op == VTA_OP_ALU) {
            c[VTA_COL_ALU_OP] = p[VTA_P_ALU_CODE + c[VTA_COL_ALU_OPCODE]];
            if (c[VTA_COL_ALU_OP] < 0) return 1;
            /* REQ: use_imm must be 0, and the reserved bits above shift and zero point 0 (the
             * signed imm then lies in [0, 2^(shift bits + zero-point bits))) */
            if (c[VTA_COL_ALU_OPCODE] == VTA_ISA_ALU_REQ
                && (c[VTA_COL_USE_IMM] || c[VTA_COL_IMM] < 0
                    || c[VTA_COL_IMM] >= (INT64_C(1) << (VTA_REQ_SHIFT_BITS + VTA_REQ_ZP_BITS)))) return 1;
        }
        if (op == VTA_OP_ALU || op == VTA_OP_GEMM) {
            if (c[VTA_COL_UOP_END] > p[VTA_P_DEPTH_UOP] || c[VTA_COL_UOP_BGN] > c[VTA_COL_UOP_END]) return 1;
        }
        int64_t x = c[VTA_COL_X_SIZE], y = c[VTA_COL_Y_SIZE];
        if (!mem || !x) continue;
        int64_t y0 = c[VTA_COL_Y_PAD_0], y1 = c[VTA_COL_Y_PAD_1], x0 = c[VTA_COL_X_PAD_0], x1 = c[VTA_COL_X_PAD_1];
        int pads = y0 || y1 || x0 || x1;
        int64_t entries;
        if (op == VTA_OP_STORE) {
            if (pads) return 1;
            entries = y * x;
        } else {
            if (mt == VTA_MEM_UOP && (y != 1 || pads)) return 1;
            entries = (y0 + y + y1) * (x0 + x + x1);
        }
        if (c[VTA_COL_SRAM_BASE] + entries > p[VTA_P_MEM_DEPTH + mt]) return 1;
        if (y && (c[VTA_COL_DRAM_BASE] + (y - 1) * c[VTA_COL_X_STRIDE] + x) * p[VTA_P_ELEM_BYTES + mt]
                     > p[VTA_P_DRAM_BYTES]) return 1;
    }
    return 0;
}

#define AT(idx, col) insns[(idx) * VTA_NCOLS + (col)]

/* Runs the program of `n` instructions at p[VTA_P_INSN_ADDR] in `dram`; fills stats[VTA_S_*].
 * Returns 0, or VTA_ERR_* with stats[VTA_S_ERR_INDEX] the instruction (deadlock, refusal: -1). */
int vta_run(const int64_t *p, int64_t n, uint8_t *dram, int8_t *inp, int8_t *wgt, int32_t *acc, int8_t *out,
            uint32_t *uop, int64_t *stats)
{
    int64_t *insns = malloc(n * VTA_NCOLS * sizeof(int64_t));
    if (!insns) return VTA_ERR_MEMORY;
    if (decode(p, dram, n, insns)) {
        free(insns);
        stats[VTA_S_ERR_INDEX] = -1;
        return VTA_ERR_STATIC;
    }
    const int64_t qdepth = p[VTA_P_CMD_QUEUE_DEPTH], tdepth = p[VTA_P_TOKEN_DEPTH];
    const int64_t FD = p[VTA_P_FETCH_DECODE], QD = p[VTA_P_QUEUE_DELAY], TD = p[VTA_P_TOKEN_DELAY],
                  ID = p[VTA_P_ISSUE_DELAY], BD = p[VTA_P_BEGIN_DELAY];
    machine_t m = {.p = p, .dram = dram, .inp = inp, .wgt = wgt, .out = out, .acc = acc, .uop = uop,
                   .stats = stats};
    int64_t depths[3] = {p[VTA_P_DEPTH_INP], p[VTA_P_DEPTH_WGT], p[VTA_P_DEPTH_ACC]};
    for (int k = 0; k < 3; k++) {
        m.w_seq[k] = calloc(depths[k], sizeof(int64_t));
        m.r_seq[k] = calloc(depths[k], sizeof(int64_t));
        m.uop_f[k] = calloc(p[VTA_P_DEPTH_UOP], sizeof(int64_t));
    }
    m.stamp = calloc(p[VTA_P_DEPTH_ACC], sizeof(int64_t));
    m.dsts = malloc(p[VTA_P_DEPTH_ACC] * sizeof(int64_t));
    m.req_dst = calloc(p[VTA_P_DEPTH_ACC], sizeof(int64_t));
    m.req_src = calloc(p[VTA_P_DEPTH_ACC], sizeof(int64_t));
    module_t mods[3];
    memset(mods, 0, sizeof mods);
    for (int k = 0; k < 3; k++) {
        mods[k].qidx = malloc(qdepth * sizeof(int64_t));
        mods[k].qenq = malloc(qdepth * sizeof(int64_t));
        mods[k].last_issue = -1;
    }
    token_t *tok[VTA_NQUEUES];
    int64_t thead[VTA_NQUEUES] = {0}, tlen[VTA_NQUEUES] = {0}, last_pop[VTA_NQUEUES];
    for (int q = 0; q < VTA_NQUEUES; q++) {
        tok[q] = malloc(tdepth * sizeof(token_t));
        last_pop[q] = -1;
    }
    int fits = m.stamp && m.dsts && m.req_dst && m.req_src;
    for (int k = 0; k < 3; k++) fits &= m.w_seq[k] && m.r_seq[k] && m.uop_f[k] && mods[k].qidx && mods[k].qenq;
    for (int q = 0; q < VTA_NQUEUES; q++) fits &= tok[q] != NULL;
    int64_t end = fits ? -1 : 0, err = fits ? 0 : VTA_ERR_MEMORY;   /* no room: skip the run, free */
    const int64_t port_prio[3] = {p[VTA_P_PORT_PRIORITY + VTA_LOAD], p[VTA_P_PORT_PRIORITY + VTA_COMPUTE], 0};
    int64_t now = 0, port_free = 0, fetch_k = 0, fetch_t = 0;
    int fetch_req = 1;
    while (end < 0) {
        int64_t best[3] = {0, 0, 0}, key[3];
        int have = 0, action = 0, act = 0;
        module_t *bm = NULL;
        if (fetch_k < n) {
            if (fetch_req) {
                best[0] = MAX(MAX(now, fetch_t), port_free), best[1] = 3, best[2] = p[VTA_P_PORT_PRIORITY + 3];
                action = A_FETCH_GRANT, have = 1;
            } else {
                module_t *q = &mods[AT(fetch_k, VTA_COL_MODULE)];
                if (q->qlen < qdepth) {
                    int64_t t = MAX(now, fetch_t + FD);
                    if (q->qlen == qdepth - 1) t = MAX(t, q->last_issue + QD);
                    best[0] = t, best[1] = 0, best[2] = 0;
                    action = A_FETCH_ENQUEUE, have = 1;
                }
            }
        }
        for (int k = 0; k < 3; k++) {
            module_t *mod = &mods[k];
            if (!mod->has_nxt && mod->qlen) {
                int64_t idx = mod->qidx[mod->qhead], npop = AT(idx, VTA_COL_NPOP);
                int ready = 1;
                for (int j = 0; j < npop; j++) ready &= tlen[AT(idx, VTA_COL_POP0 + j)] > 0;
                if (ready) {
                    int64_t t = MAX(MAX(now, mod->qenq[mod->qhead] + QD), mod->n_free);
                    for (int j = 0; j < npop; j++) {
                        int q = (int)AT(idx, VTA_COL_POP0 + j);
                        t = MAX(t, tok[q][thead[q]].t + TD);
                    }
                    key[0] = t, key[1] = 2, key[2] = k;
                    if (!have || less(key, best)) {
                        memcpy(best, key, sizeof key);
                        action = A_ISSUE, bm = mod, have = 1;
                    }
                }
            }
            if (mod->phase == IDLE) {
                if (!mod->has_nxt) continue;
                key[0] = MAX(MAX(now, mod->free + BD), mod->nxt_issue + ID), key[1] = 1, key[2] = k, act = A_BEGIN;
            } else if (mod->phase == PORT) {
                key[0] = MAX(MAX(now, mod->t), port_free), key[1] = 3, key[2] = port_prio[k], act = A_GRANT;
            } else if (mod->phase == RUN) {
                key[0] = MAX(now, mod->done), key[1] = 0, key[2] = k, act = A_DONE;
            } else {
                int q = (int)AT(mod->idx, VTA_COL_PUSH0 + mod->push);
                if (tlen[q] >= tdepth) continue;
                key[0] = tlen[q] < tdepth - 1 ? now : MAX(now, last_pop[q] + TD), key[1] = 0, key[2] = k;
                act = A_PUSHED;
            }
            if (!have || less(key, best)) {
                memcpy(best, key, sizeof key);
                action = act, bm = mod, have = 1;
            }
        }
        if (!have) {
            err = VTA_ERR_DEADLOCK;
            stats[VTA_S_ERR_INDEX] = -1;
            break;
        }
        int64_t t = now = best[0];
        if (action == A_FETCH_GRANT) {
            stats[VTA_S_FETCH_STALL_PORT] += t - fetch_t;
            port_free = fetch_t = t + bursts(p, p[VTA_P_INSN_ADDR] + fetch_k * VTA_INSN_BYTES, VTA_INSN_BYTES,
                                             p[VTA_P_DMA_READ_LATENCY], NULL);
            fetch_req = 0;
        } else if (action == A_FETCH_ENQUEUE) {
            stats[VTA_S_FETCH_STALL_QUEUE] += t - fetch_t - FD;
            module_t *q = &mods[AT(fetch_k, VTA_COL_MODULE)];
            int64_t slot = (q->qhead + q->qlen++) % qdepth;
            q->qidx[slot] = fetch_k, q->qenq[slot] = t;
            fetch_k++, fetch_req = 1, fetch_t = t + p[VTA_P_FETCH_NEXT];
        } else if (action == A_ISSUE) {                 /* timing.py Engine._issue */
            int64_t idx = bm->qidx[bm->qhead], enq = bm->qenq[bm->qhead];
            bm->qhead = (bm->qhead + 1) % qdepth, bm->qlen--;
            int64_t wait = t - MAX(enq + QD, bm->n_free);
            bm->stall_token += wait;
            int64_t vc[3] = {0, 0, 0};
            for (int j = 0; j < AT(idx, VTA_COL_NPOP); j++) {
                int q = (int)AT(idx, VTA_COL_POP0 + j);
                token_t *tk = &tok[q][thead[q]];
                thead[q] = (thead[q] + 1) % tdepth, tlen[q]--;
                last_pop[q] = t;
                for (int v = 0; v < 3; v++) vc[v] = MAX(vc[v], tk->vc[v]);
            }
            bm->last_issue = t;
            bm->has_nxt = 1, bm->nxt_idx = idx, bm->nxt_issue = t;
            memcpy(bm->nxt_vc, vc, sizeof vc);
        } else if (action == A_BEGIN) {                 /* timing.py Engine._begin */
            int64_t idx = bm->nxt_idx, num = bm - mods;
            bm->has_nxt = 0, bm->n_free = t;
            for (int v = 0; v < 3; v++) bm->vc[v] = MAX(bm->vc[v], bm->nxt_vc[v]);
            bm->vc[num] = ++bm->seq;
            const int64_t *c = insns + idx * VTA_NCOLS;
            if (execute(&m, c, bm->vc)) {
                err = VTA_ERR_EXECUTE;
                stats[VTA_S_ERR_INDEX] = idx;
                break;
            }
            segments(p, c, bm, m.req_reads);
            bm->idx = idx, bm->t = t, bm->seg = 0, bm->push = 0, bm->last_push = t;
            advance(p, bm);
        } else if (action == A_GRANT) {
            bm->stall_port += t - bm->t;
            bm->t = port_free = t + bm->segs[bm->seg++].cycles;
            advance(p, bm);
        } else if (action == A_DONE) {
            bm->busy += bm->body;
            bm->last_push = t;
            if (AT(bm->idx, VTA_COL_NPUSH)) bm->phase = PUSH;
            else goto retire;
        } else {                                        /* a push lands */
            int q = (int)AT(bm->idx, VTA_COL_PUSH0 + bm->push);
            token_t *tk = &tok[q][(thead[q] + tlen[q]++) % tdepth];
            tk->t = t;
            memcpy(tk->vc, bm->vc, sizeof tk->vc);
            bm->push++;
            bm->stall_push += t - bm->last_push;
            bm->last_push = t;
            if (bm->push == AT(bm->idx, VTA_COL_NPUSH)) goto retire;
        }
        continue;
    retire:                                             /* timing.py Engine._retire */
        bm->free = t;
        if (bm->idx == n - 1) end = t;
        bm->phase = IDLE;
    }
    for (int k = 0; k < 3; k++) {
        int64_t *s = stats + VTA_S_MODULE + k * VTA_S_PER_MODULE;
        s[0] = mods[k].busy, s[1] = mods[k].stall_token, s[2] = mods[k].stall_port, s[3] = mods[k].stall_push;
        s[4] = mods[k].seq;
        free(mods[k].qidx), free(mods[k].qenq), free(mods[k].segs);
        free(m.w_seq[k]), free(m.r_seq[k]), free(m.uop_f[k]);
    }
    for (int q = 0; q < VTA_NQUEUES; q++) free(tok[q]);
    free(m.stamp), free(m.dsts), free(m.req_dst), free(m.req_src), free(insns);
    stats[VTA_S_CYCLES] = end;
    return (int)err;
}
