/* The micro-op loop nests of GEMM and ALU instructions (spec section 5), called by
 * vta_sim/native/__init__.py through ctypes and by engine.c.
 *
 * GEMM: acc[a[k]] += inp[s[k]] x wgt[w[k]]^T for k = 0..n-1, in 32-bit two's complement. Sums are
 * taken modulo 2^32, so repeated destinations accumulate exactly in any order, as the
 * hardware's wrapping adds do. On x86-64, BLOCK_IN = BLOCK_OUT = 8 uses SSE2: int8 widened to
 * int16, pmaddwd (pairs of int8 products never overflow int32) and a transposed add; with
 * BATCH > 1 and a CPU that has AVX2 (checked at run time), two batch rows per register. */
#include <stdint.h>

static void gemm_any(uint32_t *acc, const int8_t *inp, const int8_t *wgt, const int64_t *a, const int64_t *s,
                     const int64_t *w, int64_t n, int64_t batch, int64_t bi, int64_t bo)
{
    for (int64_t k = 0; k < n; k++) {
        uint32_t *A = acc + a[k] * batch * bo;
        const int8_t *I = inp + s[k] * batch * bi, *W = wgt + w[k] * bo * bi;
        for (int64_t b = 0; b < batch; b++)
            for (int64_t o = 0; o < bo; o++) {
                uint32_t sum = 0;
                for (int64_t i = 0; i < bi; i++)
                    sum += (uint32_t)((int32_t)I[b * bi + i] * (int32_t)W[o * bi + i]);
                A[b * bo + o] += sum;
            }
    }
}

#ifdef __SSE2__
#include <emmintrin.h>

static inline __m128i widen_lo(__m128i v) { return _mm_srai_epi16(_mm_unpacklo_epi8(v, v), 8); }
static inline __m128i widen_hi(__m128i v) { return _mm_srai_epi16(_mm_unpackhi_epi8(v, v), 8); }

/* [sum of r0, sum of r1, sum of r2, sum of r3], each over its four int32 lanes */
static inline __m128i hsum4(__m128i r0, __m128i r1, __m128i r2, __m128i r3)
{
    __m128i x = _mm_add_epi32(_mm_unpacklo_epi32(r0, r1), _mm_unpackhi_epi32(r0, r1));
    __m128i y = _mm_add_epi32(_mm_unpacklo_epi32(r2, r3), _mm_unpackhi_epi32(r2, r3));
    return _mm_add_epi32(_mm_unpacklo_epi64(x, y), _mm_unpackhi_epi64(x, y));
}

static void gemm_8x8(uint32_t *acc, const int8_t *inp, const int8_t *wgt, const int64_t *a, const int64_t *s,
                     const int64_t *w, int64_t n, int64_t batch)
{
    for (int64_t k = 0; k < n; k++) {
        uint32_t *A = acc + a[k] * 8 * batch;
        const int8_t *I = inp + s[k] * 8 * batch, *W = wgt + w[k] * 64;
        __m128i row[8];   /* the 8 weight rows as int16 */
        for (int q = 0; q < 4; q++) {
            __m128i v = _mm_loadu_si128((const __m128i *)(W + 16 * q));
            row[2 * q] = widen_lo(v);
            row[2 * q + 1] = widen_hi(v);
        }
        for (int64_t b = 0; b < batch; b++) {
            __m128i x = widen_lo(_mm_loadl_epi64((const __m128i *)(I + 8 * b)));
            __m128i lo = hsum4(_mm_madd_epi16(x, row[0]), _mm_madd_epi16(x, row[1]), _mm_madd_epi16(x, row[2]),
                               _mm_madd_epi16(x, row[3]));
            __m128i hi = hsum4(_mm_madd_epi16(x, row[4]), _mm_madd_epi16(x, row[5]), _mm_madd_epi16(x, row[6]),
                               _mm_madd_epi16(x, row[7]));
            __m128i *dst = (__m128i *)(A + 8 * b);
            _mm_storeu_si128(dst, _mm_add_epi32(_mm_loadu_si128(dst), lo));
            _mm_storeu_si128(dst + 1, _mm_add_epi32(_mm_loadu_si128(dst + 1), hi));
        }
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_PATH 1

/* hsum4 on each 128-bit half: [r0..r3 sums of the low half | r0..r3 sums of the high half] */
__attribute__((target("avx2"))) static inline __m256i hsum4_x2(__m256i r0, __m256i r1, __m256i r2, __m256i r3)
{
    __m256i x = _mm256_add_epi32(_mm256_unpacklo_epi32(r0, r1), _mm256_unpackhi_epi32(r0, r1));
    __m256i y = _mm256_add_epi32(_mm256_unpacklo_epi32(r2, r3), _mm256_unpackhi_epi32(r2, r3));
    return _mm256_add_epi32(_mm256_unpacklo_epi64(x, y), _mm256_unpackhi_epi64(x, y));
}

/* gemm_8x8 with two batch rows per 256-bit register (the same weight rows in both halves); an
 * odd last row goes through the SSE2 code's arithmetic on one half. */
__attribute__((target("avx2"))) static void gemm_8x8_avx2(uint32_t *acc, const int8_t *inp, const int8_t *wgt,
                                                          const int64_t *a, const int64_t *s, const int64_t *w,
                                                          int64_t n, int64_t batch)
{
    for (int64_t k = 0; k < n; k++) {
        uint32_t *A = acc + a[k] * 8 * batch;
        const int8_t *I = inp + s[k] * 8 * batch, *W = wgt + w[k] * 64;
        __m256i row[8];   /* weight row o as int16, in both halves */
        for (int o = 0; o < 8; o++)
            row[o] = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(W + 8 * o))));
        int64_t b = 0;
        for (; b + 1 < batch; b += 2) {
            __m256i x = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(I + 8 * b)));   /* rows b, b+1 */
            __m256i lo = hsum4_x2(_mm256_madd_epi16(x, row[0]), _mm256_madd_epi16(x, row[1]),
                                  _mm256_madd_epi16(x, row[2]), _mm256_madd_epi16(x, row[3]));
            __m256i hi = hsum4_x2(_mm256_madd_epi16(x, row[4]), _mm256_madd_epi16(x, row[5]),
                                  _mm256_madd_epi16(x, row[6]), _mm256_madd_epi16(x, row[7]));
            /* row b: [lo.low | hi.low], row b+1: [lo.high | hi.high] */
            __m256i r0 = _mm256_permute2x128_si256(lo, hi, 0x20), r1 = _mm256_permute2x128_si256(lo, hi, 0x31);
            __m256i *d0 = (__m256i *)(A + 8 * b), *d1 = (__m256i *)(A + 8 * (b + 1));
            _mm256_storeu_si256(d0, _mm256_add_epi32(_mm256_loadu_si256(d0), r0));
            _mm256_storeu_si256(d1, _mm256_add_epi32(_mm256_loadu_si256(d1), r1));
        }
        if (b < batch) {
            __m256i x = _mm256_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(I + 8 * b)));   /* row b, zeros */
            __m256i lo = hsum4_x2(_mm256_madd_epi16(x, row[0]), _mm256_madd_epi16(x, row[1]),
                                  _mm256_madd_epi16(x, row[2]), _mm256_madd_epi16(x, row[3]));
            __m256i hi = hsum4_x2(_mm256_madd_epi16(x, row[4]), _mm256_madd_epi16(x, row[5]),
                                  _mm256_madd_epi16(x, row[6]), _mm256_madd_epi16(x, row[7]));
            __m256i *d0 = (__m256i *)(A + 8 * b);
            _mm256_storeu_si256(d0, _mm256_add_epi32(_mm256_loadu_si256(d0), _mm256_permute2x128_si256(lo, hi, 0x20)));
        }
    }
}
#endif
#endif

void vta_gemm(uint32_t *acc, const int8_t *inp, const int8_t *wgt, const int64_t *a, const int64_t *s,
              const int64_t *w, int64_t n, int64_t batch, int64_t bi, int64_t bo)
{
#ifdef __SSE2__
    if (bi == 8 && bo == 8) {
#ifdef HAVE_AVX2_PATH
        if (batch > 1 && __builtin_cpu_supports("avx2")) {
            gemm_8x8_avx2(acc, inp, wgt, a, s, w, n, batch);
            return;
        }
#endif
        gemm_8x8(acc, inp, wgt, a, s, w, n, batch);
        return;
    }
#endif
    gemm_any(acc, inp, wgt, a, s, w, n, batch, bi, bo);
}

/* The ALU loop nest of one instruction (spec section 5), iteration by iteration in program
 * order, so an iteration that reads what an earlier one wrote, or repeats its destination, sees
 * exactly the sequential semantics: acc[a[k]] = op(acc[a[k]], imm or acc[s[k]]) lane by lane.
 * `op` is VTA_ALU_* below (vta_sim/native/__init__.py maps the ISA's opcodes onto them). */
#ifndef VTA_ALU_SHIFT_CAP
#error "build through vta_sim.native: it defines VTA_ALU_SHIFT_CAP from vta_sim.isa"
#endif

enum { VTA_ALU_MIN, VTA_ALU_MAX, VTA_ALU_ADD, VTA_ALU_SHR, VTA_ALU_MUL, VTA_ALU_REQ };

#ifndef VTA_REQ_SHIFT_BITS
#error "build through vta_sim.native: it defines REQ's field widths and clamp from vta_sim.isa"
#endif

/* REQ (docs/isa-extensions.md): p = x * m exact in 64 bits (|p| <= 2^62), a right shift by n
 * that rounds to nearest with ties up ((p >> n) + bit n-1 of p; n = 0 keeps p), the zero point
 * added and the sum clamped to the output element's range, all on the 64-bit value. */
static inline int32_t req_lane(int32_t x, int32_t m, int shift, int64_t zp)
{
    int64_t p = (int64_t)x * (int64_t)m;
    int64_t v = shift ? (p >> shift) + ((p >> (shift - 1)) & 1) : p;
    v += zp;
    return (int32_t)(v < VTA_REQ_OUT_MIN ? VTA_REQ_OUT_MIN : v > VTA_REQ_OUT_MAX ? VTA_REQ_OUT_MAX : v);
}

/* REQ's immediate field: shift in bits [0, VTA_REQ_SHIFT_BITS), the signed zero point above it. */
static void req_loop(int32_t *acc, const int64_t *a, const int64_t *s, int64_t n, int64_t lanes, int32_t imm)
{
    uint32_t raw = (uint32_t)imm;
    int shift = (int)(raw & ((1u << VTA_REQ_SHIFT_BITS) - 1));
    int64_t zp = (int64_t)((raw >> VTA_REQ_SHIFT_BITS) & ((1u << VTA_REQ_ZP_BITS) - 1));
    if (zp >> (VTA_REQ_ZP_BITS - 1)) zp -= (int64_t)1 << VTA_REQ_ZP_BITS;
    for (int64_t k = 0; k < n; k++) {
        int32_t *dst = acc + a[k] * lanes;
        const int32_t *src = acc + s[k] * lanes;
        for (int64_t l = 0; l < lanes; l++) dst[l] = req_lane(dst[l], src[l], shift, zp);
    }
}

static inline int32_t alu_lane(int op, int32_t x, int32_t y)
{
    switch (op) {
    case VTA_ALU_MIN: return x < y ? x : y;
    case VTA_ALU_MAX: return x > y ? x : y;
    case VTA_ALU_ADD: return (int32_t)((uint32_t)x + (uint32_t)y);
    case VTA_ALU_MUL: return (int32_t)((uint32_t)x * (uint32_t)y);
    default: {      /* SHR: right by y >= 0, left by -y, at most VTA_ALU_SHIFT_CAP places; arithmetic */
        int64_t amount = y < 0 ? -(int64_t)y : y;
        if (amount > VTA_ALU_SHIFT_CAP) amount = VTA_ALU_SHIFT_CAP;
        return y >= 0 ? (int32_t)(x >> amount) : (int32_t)((uint32_t)x << amount);
    }
    }
}

/* One loop per op and operand kind, so that the lane loop holds no switch. */
#define ALU_LOOP(OP, Y)                                                                   \
    for (int64_t k = 0; k < n; k++) {                                                    \
        int32_t *dst = acc + a[k] * lanes;                                               \
        const int32_t *src = acc + s[k] * lanes;                                         \
        (void)src;                                                                       \
        for (int64_t l = 0; l < lanes; l++) dst[l] = alu_lane(OP, dst[l], Y);            \
    }
#define ALU_CASE(OP)                                                                      \
    case OP:                                                                             \
        if (use_imm) { ALU_LOOP(OP, imm) } else { ALU_LOOP(OP, src[l]) }                 \
        break;

/* For VTA_ALU_REQ, `imm` is REQ's immediate field (shift and zero point) and use_imm is ignored. */
void vta_alu(int32_t *acc, const int64_t *a, const int64_t *s, int64_t n, int64_t lanes, int op, int use_imm,
             int32_t imm)
{
    switch (op) {
    case VTA_ALU_REQ: req_loop(acc, a, s, n, lanes, imm); break;
    ALU_CASE(VTA_ALU_MIN)
    ALU_CASE(VTA_ALU_MAX)
    ALU_CASE(VTA_ALU_ADD)
    ALU_CASE(VTA_ALU_MUL)
    default: ALU_CASE(VTA_ALU_SHR)
    }
}
