"""Requantisation by REQ (docs/isa-extensions.md): one 31-bit multiplier per channel, one shift.

    y = clip(floor((acc * m_c + 2^(n-1)) / 2^n) + zp, lo, hi)      (acc with its bias, int32)

REQ computes the product exactly in 64 bits, so a single multiplier per channel carries the
whole precision: `choose` takes the largest n that keeps every m_c = round(M_c * 2^n) below
2^31, so the largest multiplier keeps 31 significant bits and a channel 2^k times smaller keeps
31 - k. Nothing is clamped beforehand (the fixed-point form's a_min/a_max existed only to keep
32-bit products in range), and a bias near 2^31 needs no special case.

REQ clamps to int8 itself; clip bounds narrower than int8 (a fused ReLU at a zero point other
than -128) are a MAX and a MIN after it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vta_sim import isa
from vta_sim.errors import CompileError

from .bounds import INT8_MAX, INT8_MIN
from .fixed_point import capped_multipliers

#: m_c stays below 2^31: REQ's multiplier lane is a signed int32.
MULTIPLIER_BITS = 31
#: The largest shift `choose` picks: with |acc * m| <= 2^62 the rounding add then stays below
#: 2^63, so an int64 form of the rule (the CPU build's Relax) cannot overflow either.
MAX_SHIFT = 62


@dataclass(frozen=True)
class MultiplyShift:
    """The compile-time part of a REQ requantisation; the per-channel multipliers m are a kernel
    input, so layers of one shape share a kernel."""
    shift: int
    zero_point: int
    lo: int = INT8_MIN
    hi: int = INT8_MAX

    def __post_init__(self):
        if not 0 <= self.shift <= MAX_SHIFT:
            raise CompileError(f"REQ shift {self.shift}: accepted 0..{MAX_SHIFT}")
        if not isa.REQ_ZP_MIN <= self.zero_point <= isa.REQ_ZP_MAX:
            raise CompileError(f"REQ zero point {self.zero_point}: accepted "
                               f"{isa.REQ_ZP_MIN}..{isa.REQ_ZP_MAX}")
        if not INT8_MIN <= self.lo <= self.hi <= INT8_MAX:
            raise CompileError(f"clip [{self.lo}, {self.hi}] outside int8")

    @property
    def rounding(self) -> int:
        return (1 << (self.shift - 1)) if self.shift else 0


def choose(multipliers, zero_point: int = 0, lo: int = INT8_MIN,
           hi: int = INT8_MAX) -> tuple[MultiplyShift, np.ndarray]:
    """(MultiplyShift, m as int32 per channel) of real per-channel multipliers.

    A multiplier of `fixed_point.saturating_multiplier` or more saturates every non-zero
    accumulator, so it is encoded as that value (same outputs). Refuses (CompileError, naming
    the channel) a negative or non-finite multiplier."""
    mult = capped_multipliers(multipliers, zero_point, lo, hi)
    top = float(mult.max(initial=0.0))
    shift = MAX_SHIFT
    if top > 0:
        # the largest n with round(top * 2^n) < 2^31 (frexp: top = f 2^e, 0.5 <= f < 1)
        _, e = np.frexp(top)
        shift = min(MAX_SHIFT, MULTIPLIER_BITS - int(e))
        while shift > 0 and np.round(top * 2.0 ** shift) >= 2.0 ** MULTIPLIER_BITS:
            shift -= 1
    m = np.round(mult * 2.0 ** shift).astype(np.int64)
    return MultiplyShift(shift, zero_point, lo, hi), m.astype(np.int32)


def from_power_of_two(shift: int, lo: int = INT8_MIN, hi: int = INT8_MAX) -> MultiplyShift:
    """The REQ form of the power-of-two rule clip((acc + bias) >> shift, lo, hi): REQ with every
    multiplier 1 rounds half up, floor((p + 2^(n-1)) / 2^n), so the floor is REQ of the bias
    lowered by 2^(n-1) (`power_of_two_vectors`). One instruction instead of the shift and the
    clamp's MAX and MIN, each a pass over the tile (docs/ops.md, "Requantisation by REQ")."""
    return MultiplyShift(shift, 0, lo, hi)


def power_of_two_vectors(bias: np.ndarray, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """(bias - 2^(shift-1), ones): the per-channel vectors REQ reads for `from_power_of_two`, new
    arrays. CompileError where a lowered bias leaves int32."""
    bias = np.asarray(bias)
    lowered = bias.astype(np.int64) - ((1 << (shift - 1)) if shift else 0)
    if lowered.size and lowered.min() < np.iinfo(np.int32).min:
        channel = int(np.argmin(lowered))
        raise CompileError(f"bias {int(bias.reshape(-1)[channel])} of channel {channel}: lowered by REQ's "
                           f"rounding constant 2^{shift - 1} it leaves int32")
    return lowered.astype(np.int32), np.ones(bias.shape, np.int32)


def req_lanes(x: np.ndarray, m: np.ndarray | int, shift: int, zero_point: int, lo: int = -128,
              hi: int = 127) -> np.ndarray:
    """REQ's lanes (docs/isa-extensions.md) in numpy int64: clamp(round_half_up(x m / 2^shift) +
    zero_point, lo, hi), m broadcasting against x (|x m| <= 2^62, so the product is exact)."""
    p = np.asarray(x, np.int64) * np.asarray(m, np.int64)
    v = p if shift == 0 else (p >> shift) + ((p >> (shift - 1)) & 1)
    return np.clip(v + zero_point, lo, hi)


def requantize_ref(acc: np.ndarray, r: MultiplyShift, m: np.ndarray, axis: int = 1) -> np.ndarray:
    """The int8 output of int32 accumulators (bias added), channel on `axis`: the contract's
    arithmetic in numpy int64."""
    shape = [1] * np.ndim(acc)
    shape[axis] = -1
    return req_lanes(acc, np.asarray(m, np.int64).reshape(shape), r.shift, r.zero_point, r.lo, r.hi).astype(np.int8)
