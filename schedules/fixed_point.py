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
  clamping changes nothing and |a| <= A_c, the channel's saturation range;
- k is chosen so that max_c A_c * 2^k < 2^30, hence |a * m_lo| < A_c * 2^k < 2^30;
- s is the largest with A_c * m_hi[c] + A_c + 2^(s-1) < 2^31 for every channel, hence every
  partial sum of p and the rounding add stay below 2^31 (|(a * m_lo) >> k| <= A_c).
The precision of the multiplier is then about log2(M) + k + s bits (22-24 for typical conv
layers), which is what agreement with onnxruntime needs (see docs/graph.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from intrinsics.errors import CompileError

INT8_MIN, INT8_MAX = -128, 127
#: The ALU immediate is a signed 16-bit field: the rounding constant 2^(s-t-1) <= 2^14.
MAX_ROUND_SHIFT = 15
#: Products stay below 2^30 so that their sum with the other part stays below 2^31.
PRODUCT_BITS = 30


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
    """Per-output-channel int32 vectors: the clamp bounds and the two multiplier parts."""
    a_min: np.ndarray
    a_max: np.ndarray
    m_hi: np.ndarray
    m_lo: np.ndarray

    def arrays(self) -> tuple:
        return (self.a_min, self.a_max, self.m_hi, self.m_lo)


def _apply_int(a: int, m_hi: int, m_lo: int, r: ScaledRequant) -> int:
    """The sequence on one clamped accumulator value, in Python integers (no wrap)."""
    p = a * m_hi + ((a * m_lo) >> r.k)
    return (((p >> r.t) + r.rounding) >> (r.s - r.t)) + r.zero_point


def _saturation_bounds(m: int, m_hi: int, m_lo: int, r: ScaledRequant, guess: float) -> tuple:
    """(a_min, a_max): the accumulator values past which the output is lo / hi."""
    if m == 0:
        return 0, 0
    a_max = max(0, math.floor(guess * (r.hi - r.zero_point + 1)))
    while _apply_int(a_max, m_hi, m_lo, r) < r.hi:
        a_max += 1
    while a_max > 0 and _apply_int(a_max - 1, m_hi, m_lo, r) >= r.hi:
        a_max -= 1
    a_min = min(0, math.ceil(-guess * (r.zero_point - r.lo + 1)))
    while _apply_int(a_min, m_hi, m_lo, r) > r.lo:
        a_min -= 1
    while a_min < 0 and _apply_int(a_min + 1, m_hi, m_lo, r) <= r.lo:
        a_min += 1
    return a_min, a_max


def choose(multipliers, zero_point: int = 0, lo: int = INT8_MIN, hi: int = INT8_MAX
           ) -> tuple[ScaledRequant, ChannelParams]:
    """The fixed-point form of per-channel real multipliers (see the module docstring).

    Refuses (CompileError, naming the channel) a multiplier that is negative, not finite, or
    so small or large that no split keeps the products within int32."""
    mult = np.asarray(multipliers, np.float64).reshape(-1)
    bad = np.flatnonzero(~np.isfinite(mult) | (mult < 0))
    if bad.size:
        raise CompileError(f"requantisation multiplier {mult[bad[0]]!r} of channel {bad[0]} is not a "
                           "finite non-negative number")
    if mult.max(initial=0) == 0:
        raise CompileError("every requantisation multiplier is 0")
    span = max(hi - zero_point, zero_point - lo) + 2
    # A_c: no clamped accumulator of channel c exceeds it (a channel with M_c = 0 is clamped to 0)
    reach = [int(math.ceil(span / v)) + 1 if v > 0 else 0 for v in mult]
    k = PRODUCT_BITS - max(reach).bit_length()
    if k < 0:
        raise CompileError(f"requantisation multiplier {mult[mult > 0].min():.3g} is too small: the "
                           f"accumulator range it saturates at ({max(reach)}) leaves no room for the product")
    for s in range(31, 0, -1):
        m = [int(v) for v in np.round(mult * 2.0 ** (k + s))]
        m_hi = [v >> k for v in m]
        if max(a * h + a for a, h in zip(reach, m_hi)) + (1 << (s - 1)) >= 1 << 31:
            continue
        r = ScaledRequant(k, max(0, s - MAX_ROUND_SHIFT), s, zero_point, lo, hi)
        m_lo = [v & ((1 << k) - 1) for v in m]
        bounds = [_saturation_bounds(mv, h, low, r, 2.0 ** (k + s) / mv if mv else 0.0)
                  for mv, h, low in zip(m, m_hi, m_lo)]
        for c, ((a_min, a_max), a) in enumerate(zip(bounds, reach)):
            if max(-a_min, a_max) > a:
                raise CompileError(f"internal: channel {c}'s clamp bounds [{a_min}, {a_max}] exceed the "
                                   f"range {a} the shifts were chosen for")
        params = ChannelParams(*(np.array(v, np.int32) for v in
                                 ([a for a, _ in bounds], [b for _, b in bounds], m_hi, m_lo)))
        return r, params
    raise CompileError(f"requantisation multipliers {mult.min():.3g}..{mult.max():.3g} cannot be "
                       "encoded in int32 fixed point")


def requantize_ref(acc: np.ndarray, r: ScaledRequant, params: ChannelParams, axis: int = 1) -> np.ndarray:
    """The int8 result of the sequence on int64 accumulators (bias already added), channel on `axis`."""
    shape = [1] * acc.ndim
    shape[axis] = -1
    a_min, a_max, m_hi, m_lo = (v.astype(np.int64).reshape(shape) for v in params.arrays())
    a = np.minimum(np.maximum(acc.astype(np.int64), a_min), a_max)
    p = a * m_hi + ((a * m_lo) >> r.k)
    v = (((p >> r.t) + r.rounding) >> (r.s - r.t)) + r.zero_point
    return np.clip(v, r.lo, r.hi).astype(np.int8)
