"""Any quantised function of one int8 tensor (Tanh, Sigmoid, ONNX's Gelu, ...), exactly, in the ALU's
arithmetic: a sum of ramps.

An int8 input has 256 values, so onnxruntime's QDQ block y = Q(f(DQ(q))) (float32, ties to
even) is a table T of 256 int8 outputs. It is matched exactly by a continuous piecewise-linear
function in fixed point,

    y(q) = clamp(floor((K + sum_i d_i max(q - b_i, 0)) / 2^F), lo, hi)

(the first breakpoint b_0 = -128, so the first term is the first segment's line), whose
segments `fit` finds greedily from the left: each runs as far as one integer slope at 2^-F
keeps every q inside [T(q), T(q) + 1) 2^F. Smooth functions take tens of segments; each costs
one ramp on the ALU (schedules.vta_univariate). The table is the only use of the float function,
so y equals it on all 256 inputs (onnxruntime's own float32 evaluation may still round a
near-tie the other way: 1 LSB).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import math

import numpy as np

from vta_sim.errors import CompileError

from .bounds import INT8_MAX, INT8_MIN

#: The fraction bits of the sum: slopes resolve 2^-12 of an output step per input step.
FRACTION = 12
#: Every partial sum stays below 2^30 (the ALU wraps at 32 bits).
SUM_LIMIT = 1 << 30


def _sigmoid(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32)
    return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


_erf = np.frompyfunc(math.erf, 1, 1)


def _gelu_erf(x: np.ndarray) -> np.ndarray:
    """ONNX Gelu (approximate="none"): 0.5 x (1 + erf(x / sqrt 2)), each step rounded to float32."""
    f32 = np.float32
    x = x.astype(f32)
    e = _erf((x * f32(1 / math.sqrt(2))).astype(np.float64)).astype(f32)
    return (f32(0.5) * x * (f32(1) + e)).astype(f32)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    """ONNX Gelu (approximate="tanh"): 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))."""
    f32 = np.float32
    x = x.astype(f32)
    inner = f32(math.sqrt(2 / math.pi)) * (x + f32(0.044715) * x * x * x)
    return (f32(0.5) * x * (f32(1) + np.tanh(inner.astype(f32)))).astype(f32)


#: The functions by the name the report and the packed parameters use, in float32 as onnxruntime
#: computes them (the packed parameters hold the index: new functions go at the end).
FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "tanh": lambda x: np.tanh(x.astype(np.float32)).astype(np.float32),
    "sigmoid": _sigmoid,
    "gelu_erf": _gelu_erf,
    "gelu_tanh": _gelu_tanh,
}


@dataclass(frozen=True)
class RampParams:
    function: int           # index into FUNCTIONS
    k: int                  # K: the value at q = -128 (at 2^F), the rounding inside it
    lo: int
    hi: int
    breaks: tuple[int, ...]     # b_i, from -128 up
    slopes: tuple[int, ...]     # d_i (at 2^F per input step)

    @property
    def name(self) -> str:
        return list(FUNCTIONS)[self.function]

    @property
    def segments(self) -> int:
        return len(self.breaks)

    def packed(self) -> np.ndarray:
        return np.array([self.function, self.k, self.lo, self.hi, self.segments, *self.breaks, *self.slopes], np.int64)

    @classmethod
    def unpacked(cls, values: np.ndarray) -> "RampParams":
        v = [int(x) for x in np.asarray(values).reshape(-1)]
        if len(v) < 5 or len(v) != 5 + 2 * v[4]:
            raise CompileError(f"ramp constant of {len(v)} values: 5 + 2 x its segment count expected")
        n = v[4]
        return cls(v[0], v[1], v[2], v[3], tuple(v[5:5 + n]), tuple(v[5 + n:]))

    def describe(self) -> str:
        return f"{self.name}, {self.segments} ramps"


def table(name: str, scale_x: float, zero_x: int, scale_y: float, zero_y: int, lo: int = INT8_MIN,
          hi: int = INT8_MAX) -> np.ndarray:
    """onnxruntime's QDQ block on every int8 input -128..127: dequantise in float32, the function
    in float32, quantise with ties to even and clamp (int64)."""
    f32 = np.float32
    q = np.arange(INT8_MIN, INT8_MAX + 1)
    x = (q.astype(f32) - f32(zero_x)) * f32(scale_x)
    y = FUNCTIONS[name](x)
    return np.clip(np.rint(y / f32(scale_y)) + zero_y, lo, hi).astype(np.int64)


def fit(target: np.ndarray, fraction: int = FRACTION) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """(K, breaks, slopes) of the ramps whose floor is `target` (256 integers for q = -128..127)
    at every q. Greedy: a segment from its start value extends while some integer slope keeps
    every q of it inside [T(q), T(q) + 1) 2^F; the next starts where it ends, continuously."""
    one = 1 << fraction
    lower, upper = target * one, (target + 1) * one - 1
    start, value = 0, int((lower[0] + upper[0]) // 2)
    k, breaks, slopes, previous = value, [], [], 0
    n = len(target)
    while start < n - 1:
        lo_m, hi_m, end, best = -(1 << 40), 1 << 40, start, None
        for u in range(start + 1, n):
            d = u - start
            lo_m = max(lo_m, -((value - int(lower[u])) // d))        # ceil((lower - value) / d)
            hi_m = min(hi_m, (int(upper[u]) - value) // d)
            if lo_m > hi_m:
                break
            end, best = u, (lo_m, hi_m)
        assert best is not None                                     # one step always fits
        slope = (best[0] + best[1]) // 2
        breaks.append(start - 128)
        slopes.append(slope - previous)
        value += slope * (end - start)
        start, previous = end, slope
    return k, tuple(breaks), tuple(slopes)


def reference(q: np.ndarray, p: RampParams) -> np.ndarray:
    """The ramps of int8 q, elementwise, in int64 as the ALU computes them: int8."""
    u = np.asarray(q).astype(np.int64)
    total = np.full_like(u, p.k)
    for b, d in zip(p.breaks, p.slopes):
        total = total + d * np.maximum(u - b, 0)
    return np.clip(total >> FRACTION, p.lo, p.hi).astype(np.int8)


def choose(name: str, scale_x: float, zero_x: int, scale_y: float, zero_y: int, lo: int = INT8_MIN,
           hi: int = INT8_MAX) -> RampParams:
    """The ramps of `name` (a key of FUNCTIONS) for these scales and zero points; CompileError
    naming what does not fit."""
    if name not in FUNCTIONS:
        raise CompileError(f"function {name!r}: accepted {', '.join(FUNCTIONS)}")
    for what, v in (("input scale", scale_x), ("output scale", scale_y)):
        if not (np.isfinite(v) and v > 0):
            raise CompileError(f"{name} {what} {v}: a positive finite value is needed")
    target = table(name, scale_x, zero_x, scale_y, zero_y, lo, hi)
    k, breaks, slopes = fit(target)
    p = RampParams(list(FUNCTIONS).index(name), k, lo, hi, breaks, slopes)
    partial = np.abs(np.cumsum([abs(k)] + [abs(d) * 255 for d in slopes])).max()
    if partial >= SUM_LIMIT:
        raise CompileError(f"{name}: its ramps' partial sums reach {partial}, past the ALU's 2^30")
    if not np.array_equal(reference(np.arange(INT8_MIN, INT8_MAX + 1), p), target):
        raise CompileError(f"internal: {name}'s ramps miss its table")
    return p
