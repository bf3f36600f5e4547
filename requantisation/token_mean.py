"""The quantised mean over tokens (ONNX ReduceMean over axis 1 of a (N, T, D) tensor: a
transformer classifier's pooling) in integers.

    y = clamp(round(s_x / (T s_y) * sum_t (x_t - z_x)) + z_y)

is REQ's arithmetic on the int32 sum with one multiplier m / 2^shift ~ s_x / (T s_y)
(`multiply_shift.choose`): exact in the sum, the multiplier rounded to 31 bits. onnxruntime
computes the mean in float32, so near-ties may round either way (1 LSB).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from vta_sim.errors import CompileError

from . import multiply_shift
from .bounds import INT8_MAX, INT8_MIN
from .multiply_shift import MultiplyShift

#: The ALU's immediates are signed 16-bit: the sum's zero-point term -T z_x is added in parts.
IMM_MAX = (1 << 15) - 1


@dataclass(frozen=True)
class MeanParams:
    length: int          # T, the tokens averaged
    zero_in: int         # z_x
    m: int               # REQ's multiplier
    shift: int
    zero_point: int
    lo: int = INT8_MIN
    hi: int = INT8_MAX

    @property
    def requant(self) -> MultiplyShift:
        return MultiplyShift(self.shift, self.zero_point, self.lo, self.hi)

    def offset_parts(self) -> list[int]:
        """-T z_x as immediates of at most 15 bits each (none where z_x is 0)."""
        total, parts = -self.length * self.zero_in, []
        while total:
            part = max(-IMM_MAX, min(IMM_MAX, total))
            parts.append(part)
            total -= part
        return parts

    def describe(self) -> str:
        return f"mean of {self.length} ({self.zero_in:+d}) x {self.m} >> {self.shift} {self.zero_point:+d}"

    def packed(self) -> np.ndarray:
        """The parameters as one int64 vector (the integer graph's constant)."""
        return np.array([getattr(self, f.name) for f in dataclasses.fields(self)], np.int64)

    @classmethod
    def unpacked(cls, values: np.ndarray) -> "MeanParams":
        return cls(*(int(v) for v in np.asarray(values).reshape(-1)))


def choose(scale_in: float, zero_in: int, scale_out: float, zero_out: int, length: int,
           lo: int = INT8_MIN, hi: int = INT8_MAX) -> MeanParams:
    """The integer mean over `length` tokens; CompileError naming what does not fit."""
    if length < 1:
        raise CompileError(f"a mean over {length} tokens: at least 1 is needed")
    if not (scale_in > 0 and scale_out > 0 and np.isfinite(scale_in) and np.isfinite(scale_out)):
        raise CompileError(f"scales {scale_in:g} (input) and {scale_out:g} (output): need finite values > 0")
    if 255 * length >= 1 << 31:
        raise CompileError(f"a mean over {length} tokens: the int32 sum could overflow")
    requant, (m,) = multiply_shift.choose([scale_in / (length * scale_out)], zero_out, lo, hi)
    return MeanParams(length, int(zero_in), int(m), requant.shift, requant.zero_point, lo, hi)


def reference(x: np.ndarray, p: MeanParams) -> np.ndarray:
    """int8 (..., T, D) -> int8 (..., D): the sum over T in int64, then REQ's rounding."""
    if x.shape[-2] != p.length:
        raise CompileError(f"a mean over {p.length} tokens given a tensor of {x.shape[-2]}")
    total = (np.asarray(x, np.int64) - p.zero_in).sum(axis=-2)
    return multiply_shift.req_lanes(total, p.m, p.shift, p.zero_point, p.lo, p.hi).astype(np.int8)
