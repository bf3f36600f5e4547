"""The requantisations an accelerator op ends with, as one typed union.

`PowerOfTwo`: y = clip((acc + bias) >> shift, lo, hi), the rounding folded into the bias (the
quantisers of graph.quantize, hand-written layers). `fixed_point.ScaledRequant`: a real
per-channel multiplier in int32 fixed point with a zero point (quantize_static's float scales),
as base-ISA ALU instructions. `multiply_shift.MultiplyShift`: the same multiplier as one REQ
instruction (docs/isa-extensions.md), 64-bit exact.
Every op takes a `Requant`; nothing else is accepted where one is expected.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vta_sim.errors import CompileError
from vta_sim.isa import ALU_SHIFT_CAP

from .bounds import INT8_MAX, INT8_MIN
from .fixed_point import ChannelParams, ScaledRequant, requantize_ref
from .multiply_shift import MultiplyShift
from .multiply_shift import requantize_ref as multiply_shift_ref

#: The largest right shift the ALU performs as asked (vta_sim.isa, the spec's shift cap).
MAX_SHIFT = ALU_SHIFT_CAP


def check_clip(lo: int, hi: int) -> None:
    """Refuse clip bounds the int8 store cannot honour."""
    if not INT8_MIN <= lo <= hi <= INT8_MAX:
        raise CompileError(f"clip bounds lo = {lo}, hi = {hi}: need {INT8_MIN} <= lo <= hi <= "
                           f"{INT8_MAX} (the result is stored as int8)")


def rounding_constant(shift: int) -> int:
    """What (x + it) >> shift adds to round x / 2^shift to nearest, ties up: the power-of-two
    forms' one rounding rule (folded into the bias for conv2d/dense, an ADD for the add)."""
    return (1 << (shift - 1)) if shift else 0


@dataclass(frozen=True)
class PowerOfTwo:
    """(acc + bias) >> shift, clipped to [lo, hi], stored int8; lo = 0 folds a ReLU."""

    shift: int
    lo: int = INT8_MIN
    hi: int = INT8_MAX

    def __post_init__(self):
        if not isinstance(self.shift, (int, np.integer)) or not 0 <= self.shift <= MAX_SHIFT:
            raise CompileError(f"shift = {self.shift}: the ALU shifts by 0..{MAX_SHIFT}")
        check_clip(self.lo, self.hi)


#: What every op's requantisation argument is.
Requant = PowerOfTwo | ScaledRequant | MultiplyShift


def as_requant(shift, lo: int = INT8_MIN, hi: int = INT8_MAX) -> Requant:
    """A workload's requantisation argument as a `Requant`: an int shift with its clip bounds,
    or a `Requant` that carries its own bounds."""
    if isinstance(shift, (int, np.integer)):
        return PowerOfTwo(int(shift), lo, hi)
    if not isinstance(shift, (PowerOfTwo, ScaledRequant, MultiplyShift)):
        raise CompileError(f"requantisation {shift!r}: expected a shift (int), a "
                           "requantisation.PowerOfTwo, ScaledRequant or MultiplyShift")
    if (lo, hi) != (INT8_MIN, INT8_MAX):
        raise CompileError(f"clip bounds lo = {lo}, hi = {hi} given beside {shift!r}: they belong "
                           "inside the requantisation")
    return shift


def reference(acc: np.ndarray, requant: Requant, channel: tuple = (), axis: int = 1) -> np.ndarray:
    """The int8 output of int64 accumulators (bias added) under any requantisation; `channel`
    holds a ScaledRequant's per-channel vectors (a_min, a_max, m_hi, m_lo) or a MultiplyShift's
    (m,), channel on `axis`."""
    if isinstance(requant, MultiplyShift):
        (m,) = channel
        return multiply_shift_ref(acc, requant, m, axis=axis)
    if isinstance(requant, ScaledRequant):
        return requantize_ref(acc, requant, ChannelParams(*channel), axis=axis)
    return np.clip(acc.astype(np.int64) >> requant.shift, requant.lo, requant.hi).astype(np.int8)
