"""Fixed-point requantisation: a real multiplier per output channel as exact int32 ALU work.

Quantisers write float scales: an output is y = clip(round(acc * M_c) + zp, lo, hi) with
M_c = s_x * s_w[c] / s_y. VTA-8 has a 32-bit wrapping MUL, an arithmetic SHR, ADD and MIN/MAX,
so M_c becomes an integer m_c = round(M_c * 2^(k+s)) split in two parts that each fit beside
the accumulator in one 32-bit product:

    a = min(max(acc, a_min[c]), a_max[c])                    clamp: keeps the products in range
    p = a * m_hi[c] + ((a * m_lo[c]) >> k)                   m_c = m_hi * 2^k + m_lo, 0 <= m_lo < 2^k
    v = (((p >> t) + 2^(s-t-1)) >> (s - t))                  round to nearest (ties up)
    y = clip(v + zp, lo, hi)

`(p + 2^(s-1)) >> s == ((p >> t) + 2^(s-t-1)) >> (s-t)` exactly for 0 <= t < s, so the rounding
constant fits the ALU's 16-bit immediate (t = max(0, s - 15)) without losing anything.

Why it cannot overflow (`choose` checks every step with Python integers):
- the clamp bounds are where the output already saturates: for acc >= a_max the result is
  hi anyway, for acc <= a_min it is lo (the sequence is monotonic in acc because m >= 0), so
  clamping changes nothing and |a| <= A_c, the channel's saturation range; where the
  accumulator cannot reach that far (a tiny multiplier; its bound comes from the weights), A_c
  is that bound instead. Both bounds are found by bisection, never by stepping;
- k is chosen so that max_c A_c * 2^k < 2^30, hence |a * m_lo| < A_c * 2^k < 2^30;
- s is the largest with A_c * m_hi[c] + A_c + 2^(s-1) < 2^31 for every channel, hence every
  partial sum of p and the rounding add stay below 2^31 (|(a * m_lo) >> k| <= A_c).
The precision of the multiplier is then about log2(M) + k + s bits (22-24 for typical conv
layers), which is what agreement with onnxruntime needs (see docs/graph.md). It falls as
61 - 2 log2(A) with the reach A: a multiplier of 1e-7 with A = 2^26 keeps 9 bits, a few LSB
at the very bound, where real accumulators never are.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vta_sim.errors import CompileError
from .bounds import INT8_MAX, INT8_MIN, INT32_MAX

#: The ALU immediate is a signed 16-bit field: the rounding constant 2^(s-t-1) <= 2^14.
MAX_ROUND_SHIFT = 15
#: Products stay below 2^30 so that their sum with the other part stays below 2^31.
PRODUCT_BITS = 30
#: The largest accumulator magnitude: the ALU's registers are int32.
ACC_LIMIT = INT32_MAX


@dataclass(frozen=True)
class ScaledRequant:
    """The compile-time part (immediates) of a fixed-point requantisation; the per-channel
    vectors (`ChannelParams`) are kernel inputs, so layers of one shape share a kernel."""
    k: int             # the low part's shift
    t: int             # pre-shift before rounding (keeps the rounding constant in 16 bits)
    s: int             # total shift after the products
    zero_point: int    # output zero point, added after the shift
    lo: int = INT8_MIN
    hi: int = INT8_MAX
    ties_even: bool = False   # ties to even, as ONNX rounds (average pools, whose ties are exact)
    step: bool = False        # a per-channel output step after the shift (ChannelParams.s_*)

    def __post_init__(self):
        if not (0 <= self.k <= 31 and 0 <= self.t < max(self.s, 1) and 1 <= self.s <= 31
                and self.s - self.t <= MAX_ROUND_SHIFT):
            raise CompileError(f"fixed-point shifts k={self.k}, t={self.t}, s={self.s} outside the "
                               f"ALU's range (0 <= k <= 31, 1 <= s <= 31, 0 <= t < s, "
                               f"s - t <= {MAX_ROUND_SHIFT})")
        if not INT8_MIN <= self.lo <= self.hi <= INT8_MAX or not INT8_MIN <= self.zero_point <= INT8_MAX:
            raise CompileError(f"clip [{self.lo}, {self.hi}] / zero point {self.zero_point} outside int8")

    @property
    def rounding(self) -> int:
        return 1 << (self.s - self.t - 1)


@dataclass(frozen=True)
class ChannelParams:
    """Per-output-channel int32 vectors: the clamp bounds and the two multiplier parts, and for
    a ScaledRequant with `step` the output step clamp(acc + s_bias, s_min, s_max), added after
    the shift (0 where s_min = s_max = 0: graph.qdq places it for channels with three outputs)."""
    a_min: np.ndarray
    a_max: np.ndarray
    m_hi: np.ndarray
    m_lo: np.ndarray
    s_bias: np.ndarray | None = None
    s_min: np.ndarray | None = None
    s_max: np.ndarray | None = None

    def arrays(self) -> tuple:
        step = () if self.s_bias is None else (self.s_bias, self.s_min, self.s_max)
        return (self.a_min, self.a_max, self.m_hi, self.m_lo) + step


def round_shift(p, r: ScaledRequant):
    """round(p / 2^s) + zp, before the final clip: the one rounding every fixed-point
    requantisation ends with (conv/dense epilogues, the scaled add, average pools).

    Ties go up, or with `ties_even` to even: u = p >> t, q = u >> (s-t), then
    (u + 2^(s-t-1) - 1 + (q - ((q >> 1) << 1))) >> (s-t), the parity taken with shifts, a
    negation and adds as the ALU has them (no AND). The tie is judged on u: where t > 0 drops
    non-zero bits of p, a value just above a tie counts as one (exact ties, the case that
    matters, have those bits zero)."""
    u = p >> r.t
    if not r.ties_even:
        return ((u + r.rounding) >> (r.s - r.t)) + r.zero_point
    q = u >> (r.s - r.t)
    parity = q + ((q >> 1) << 1) * -1
    return ((u + parity + (r.rounding - 1)) >> (r.s - r.t)) + r.zero_point


def _sequence(a, m_hi, m_lo, r: ScaledRequant):
    """The sequence after the clamp, before the final clip, on int64 arrays (no product
    exceeds 2^62: |a| < 2^31 and m_hi, m_lo < 2^31)."""
    return round_shift(a * m_hi + ((a * m_lo) >> r.k), r)


def _first_reaching(reach, outside) -> np.ndarray:
    """Per channel, the least b in [0, reach] with outside(b) true (reach where none is):
    bisection, which needs outside monotonic in b (the sequence is, because m >= 0)."""
    low, high = np.zeros_like(reach), reach.copy()
    while np.any(low < high):
        mid = (low + high) // 2
        hit, open_ = outside(mid), low < high
        high = np.where(open_ & hit, mid, high)
        low = np.where(open_ & ~hit, mid + 1, low)
    return low


def _saturation_bounds(reach, m_hi, m_lo, r: ScaledRequant) -> tuple:
    """(a_min, a_max) per channel: the accumulator values past which the output is lo / hi, or
    +-reach where it never gets there within the accumulator's reach (clamping there changes
    nothing either). Found by bisection: about 32 steps per bound, whatever the multiplier."""
    a_max = _first_reaching(reach, lambda b: _sequence(b, m_hi, m_lo, r) >= r.hi)
    a_min = -_first_reaching(reach, lambda b: _sequence(-b, m_hi, m_lo, r) <= r.lo)
    return a_min, a_max


def saturating_multiplier(zero_point: int, lo: int, hi: int) -> int:
    """The least multiplier M for which every accumulator a != 0 saturates: round(a M) + zp is
    past hi for a >= 1 and past lo for a <= -1, whatever the rounding."""
    return max(hi - zero_point, zero_point - lo) + 1


def capped_multipliers(multipliers, zero_point: int, lo: int, hi: int) -> np.ndarray:
    """The real multipliers as float64 per channel, each at most `saturating_multiplier` (which
    gives the same outputs); CompileError naming the channel of a negative or non-finite one."""
    mult = np.asarray(multipliers, np.float64).reshape(-1)
    bad = np.flatnonzero(~np.isfinite(mult) | (mult < 0))
    if bad.size:
        raise CompileError(f"requantisation multiplier {mult[bad[0]]!r} of channel {bad[0]} is not a "
                           "finite non-negative number")
    return np.minimum(mult, saturating_multiplier(zero_point, lo, hi))


def choose(multipliers, zero_point: int = 0, lo: int = INT8_MIN, hi: int = INT8_MAX,
           acc_bound=None, ties_even: bool = False) -> tuple[ScaledRequant, ChannelParams]:
    """The fixed-point form of per-channel real multipliers (see the module docstring).

    `acc_bound` (per channel or one value): no accumulator (bias included) of the channel
    exceeds it in magnitude; the QDQ pass knows it from the weights. It bounds the clamp range
    of tiny multipliers, which would otherwise saturate only past int32. Without it the
    accumulator may take any int32 value.

    A multiplier of `saturating_multiplier(zero_point, lo, hi)` or more saturates every non-zero
    accumulator (an output scale near 0), so it is encoded as that value: the same result for
    every integer accumulator, and no multiplier is too large to encode.

    Refuses (CompileError, naming the channel) a multiplier that is negative or not finite, and
    multipliers so small (without a bound) that no split keeps the products within int32.
    Channels with multiplier 0 (all-zero weights) give zp."""
    mult = capped_multipliers(multipliers, zero_point, lo, hi)
    limit = ACC_LIMIT if acc_bound is None else np.minimum(
        np.broadcast_to(np.asarray(acc_bound, np.float64), mult.shape), ACC_LIMIT)
    if np.any(np.asarray(limit) < 0):
        raise CompileError(f"accumulator bound {acc_bound!r} is negative")
    span = max(hi - zero_point, zero_point - lo) + 2
    # A_c: no clamped accumulator of channel c exceeds it (a channel with M_c = 0 is clamped to 0)
    with np.errstate(divide="ignore"):
        saturates = np.where(mult > 0, np.ceil(span / np.where(mult > 0, mult, 1)) + 1, 0)
    reach = np.minimum(saturates, limit).astype(np.int64)
    limit = np.broadcast_to(np.asarray(limit, np.float64), mult.shape).astype(np.int64)
    while True:
        r, m_hi, m_lo = _encode(mult, reach, zero_point, lo, hi, ties_even)
        # the encoded multiplier may be a little smaller than the real one: a channel that does
        # not saturate within its reach, and could go beyond it, needs a wider reach
        short = (reach < limit) & (mult > 0) & ((_sequence(reach, m_hi, m_lo, r) < hi)
                                                | (_sequence(-reach, m_hi, m_lo, r) > lo))
        if not short.any():
            break
        reach = np.where(short, np.minimum(limit, 2 * reach), reach)
    a_min, a_max = _saturation_bounds(reach, m_hi, m_lo, r)
    return r, ChannelParams(*(v.astype(np.int32) for v in (a_min, a_max, m_hi, m_lo)))


def _encode(mult, reach, zero_point: int, lo: int, hi: int, ties_even: bool) -> tuple:
    """(ScaledRequant, m_hi, m_lo): the largest shifts whose products stay in int32 for
    clamped accumulators within +-reach."""
    top = int(reach.max(initial=0))
    k = PRODUCT_BITS - top.bit_length()
    if k < 0:
        raise CompileError(f"requantisation multiplier {mult[mult > 0].min():.3g} is too small: the "
                           f"accumulator range it saturates at ({top}) leaves no room for the product; "
                           "give the accumulator's bound (acc_bound)")
    for s in range(31, 0, -1):
        m = np.round(mult * 2.0 ** (k + s))
        if m.max(initial=0) >= 2.0 ** 62:
            continue
        m = m.astype(np.int64)
        m_hi = m >> k
        if int((reach * m_hi + reach).max(initial=0)) + (1 << (s - 1)) >= 1 << 31:
            continue
        r = ScaledRequant(k, max(0, s - MAX_ROUND_SHIFT), s, zero_point, lo, hi, ties_even)
        return r, m_hi, m & ((1 << k) - 1)
    raise CompileError(f"requantisation multipliers {mult.min():.3g}..{mult.max():.3g} cannot be "
                       "encoded in int32 fixed point: the largest saturates on every non-zero "
                       "accumulator")


def requantize_ref(acc: np.ndarray, r: ScaledRequant, params: ChannelParams, axis: int = 1) -> np.ndarray:
    """The int8 result of the sequence on int64 accumulators (bias already added), channel on `axis`."""
    if r.step != (params.s_bias is not None):
        raise CompileError(f"requantisation step={r.step} with{'out' if params.s_bias is None else ''} "
                           "step vectors (ChannelParams.s_bias, s_min, s_max)")
    shape = [1] * acc.ndim
    shape[axis] = -1
    a_min, a_max, m_hi, m_lo, *step = (v.astype(np.int64).reshape(shape) for v in params.arrays())
    acc = acc.astype(np.int64)
    a = np.minimum(np.maximum(acc, a_min), a_max)
    extra = np.minimum(np.maximum(acc + step[0], step[1]), step[2]) if step else 0
    return np.clip(_sequence(a, m_hi, m_lo, r) + extra, r.lo, r.hi).astype(np.int8)


#: A sum's multipliers m = m_hi * 2^SPLIT + m_lo: both parts fit the ALU's signed 16-bit
#: immediate, so the scaled add multiplies by immediates (docs/ops.md).
SPLIT = 15


def choose_sum(multipliers, reach: int, zero_point: int = 0, lo: int = INT8_MIN, hi: int = INT8_MAX
               ) -> tuple[ScaledRequant, tuple]:
    """(ScaledRequant with k = SPLIT, integer multipliers m_i) for y = clip(round(sum_i x_i M_i) + zp)
    over terms |x_i| <= reach: p = sum_i x_i m_i with m_i = round(M_i 2^s), then `round_shift`.

    s is the largest with sum_i reach m_i + 2^(s-1) < 2^31, so no partial sum leaves int32.
    Refuses a multiplier that is negative or not finite, or so large that s = 1 overflows."""
    mult = np.asarray(multipliers, np.float64).reshape(-1)
    if not np.all(np.isfinite(mult) & (mult >= 0)) or not mult.any():
        raise CompileError(f"sum multipliers {mult.tolist()}: need finite non-negative numbers, not all 0")
    for s in range(31, 0, -1):
        m = [int(v) for v in np.round(mult * 2.0 ** s)]
        if reach * sum(m) + (1 << (s - 1)) < 1 << 31:
            return ScaledRequant(SPLIT, max(0, s - MAX_ROUND_SHIFT), s, zero_point, lo, hi), tuple(m)
    raise CompileError(f"sum multipliers {mult.tolist()} cannot be encoded in int32 fixed point: "
                       f"terms of up to {reach} overflow even at shift 1")
