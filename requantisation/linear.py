"""The fixed-point requantisation of a conv's or dense layer's channels, huge biases included.

`choose` is `fixed_point.choose` for the output channels of a GEMM op, plus the numeric corner
case quantize_static produces: a channel whose bias' is so large (a tiny input scale widened
the weight scale to keep the bias in int32) that no fixed-point multiplier fits beside it. Such
a channel outputs at most a few values over its reach; it is re-encoded exactly
(`_few_valued`), and a channel with more values is held to `HUGE_BIAS_LSB` of the real
multiplier (`_check_left_to_choose`) or refused.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from vta_sim.errors import CompileError

from . import fixed_point
from .bounds import INT8_MAX


def choose(multipliers, bias, reach, zy: int, lo: int) -> tuple:
    """(ScaledRequant, ChannelParams, bias'') of channels with real multipliers `multipliers`,
    accumulator biases `bias` (bias' = round(b / (s_x s_w)) - zp_x sum(W)), accumulators within
    +-`reach`, output zero point `zy` and clip floor `lo`; CompileError where no encoding holds."""
    multipliers, bias, few = _few_valued(multipliers, bias, reach, zy, lo)
    requant, params = fixed_point.choose(multipliers, zy, lo, INT8_MAX, acc_bound=reach + np.abs(bias))
    params = _clamped(params, few, bias)
    requant = dataclasses.replace(requant, step=bool(few.steps))
    _check_left_to_choose(requant, params, multipliers, bias, reach, zy, lo, few)
    return requant, params, bias


#: A bias' this large leaves the fixed-point sequence (products below 2^31) no room for M.
HUGE_BIAS = 1 << 24
#: How far (LSB) `fixed_point.choose` may put such a channel off the real multiplier: 1, the
#: agreement every offloaded layer keeps with onnxruntime.
HUGE_BIAS_LSB = 1


@dataclass
class _FewValued:
    """Channels re-encoded by `_few_valued`: {channel: (n0, n0 + 1)} clamp bounds of the
    sequence, and {channel: t2} where a third value n0 + 2 starts (the output step)."""
    bounds: dict
    steps: dict


def _few_valued(mult, bias, reach, zy: int, lo: int) -> tuple:
    """(multipliers, biases, _FewValued): the channels that output at most three values
    re-encoded exactly.

    quantize_static keeps a bias in int32 by widening the weight scales when the input's scale
    is tiny (GoogLeNet's and ShuffleNet's classifiers at 64x64 with random weights: 3e-14), so a
    channel may have M = 3e-8 and bias' near 2^31: no fixed-point encoding fits. Over the
    channel's accumulators (|acc| <= reach) its output clip(round(M (acc + bias')) + zy) then
    takes a few values n0, n0 + 1, n0 + 2, stepping at acc = t1 and t2 (exact arithmetic):
    M' = 1, bias'' = n0 + 1 - t1 and the sequence's clamp to [n0, n0 + 1] (`_clamped`) give the
    first step; the output step [acc >= t2] (ChannelParams.s_*) the second. Over +-reach only
    these steps exist, so every accumulator gives the same output. (A fixed-point M' cannot
    place both steps: they lie 1/M ~ 2^24 apart, which needs 24 bits of M' where the products
    leave 13.) Only channels whose bias' exceeds HUGE_BIAS are touched; four values or more
    are left to `fixed_point.choose`, and `_check_left_to_choose` holds its encoding to them."""
    mult, bias, reach = (np.array(v, np.float64) for v in np.broadcast_arrays(mult, bias, reach))
    done = _FewValued({}, {})
    for c in _huge_bias(mult, bias):
        real = _RealChannel(mult[c], bias[c], zy, lo)
        r = int(reach[c])
        n0, n1 = real.out(-r), real.out(r)
        if n1 - n0 > 2:
            continue
        mult[c], bias[c], done.bounds[int(c)] = 1.0, n0 + 1 - min(real.first(n0), r + 1), (n0, n0 + 1)
        if n1 - n0 == 2:
            done.steps[int(c)] = real.first(n0 + 1)
    return mult, bias, done


def _huge_bias(mult, bias) -> np.ndarray:
    """The channels `_few_valued` looks at: bias' above HUGE_BIAS, a multiplier above 0."""
    return np.flatnonzero((np.abs(bias) > HUGE_BIAS) & (mult > 0))


class _RealChannel:
    """One channel's output under its real multiplier M and bias', in exact arithmetic, before
    the zero point and clipped one past where the output clips (`out`), and where it steps."""

    def __init__(self, mult: float, bias: float, zy: int, lo: int):
        self.m, self.b = Fraction(float(mult)), int(bias)
        self.low, self.high = lo - zy, INT8_MAX - zy

    def out(self, acc: int) -> int:
        return min(max(math.floor(self.m * (acc + self.b) + Fraction(1, 2)), self.low - 1), self.high + 1)

    def first(self, n: int) -> int:
        """The least accumulator whose output exceeds n (it may lie past the reach)."""
        return math.ceil((n + Fraction(1, 2)) / self.m - self.b)


def _check_left_to_choose(requant, params, mult, bias, reach, zy: int, lo: int, few: _FewValued) -> None:
    """Refuse (CompileError) a channel with bias' above HUGE_BIAS that `_few_valued` left to
    `fixed_point.choose` (four output values or more) where the encoding is more than
    `HUGE_BIAS_LSB` off the real multiplier: its reach leaves the multiplier too few bits.
    Checked on both sides of every step of the real output and at both ends of the range: both
    outputs are monotone in the accumulator, so the largest difference is at one of them."""
    mult, bias, reach = np.broadcast_arrays(mult, bias, reach)
    for c in _huge_bias(mult, bias):
        if int(c) in few.bounds:
            continue
        real, r = _RealChannel(mult[c], bias[c], zy, lo), int(reach[c])
        steps = [real.first(n) for n in range(real.out(-r), real.out(r))]
        points = [-r, r] + steps + [t - 1 for t in steps]
        acc = np.array(points, np.int64)
        one = fixed_point.ChannelParams(*(v[c:c + 1] for v in params.arrays()))
        got = fixed_point.requantize_ref(acc + int(bias[c]), requant, one, axis=0).astype(np.int64)
        want = np.clip(np.array([real.out(int(a)) for a in points]) + zy, lo, INT8_MAX)
        worst = int(np.argmax(np.abs(got - want)))
        if abs(int(got[worst] - want[worst])) > HUGE_BIAS_LSB:
            raise CompileError(f"channel {int(c)} (multiplier {mult[c]:.3g}, bias' {int(bias[c])}, "
                               f"{real.out(r) - real.out(-r) + 1} output values) is encoded "
                               f"{abs(int(got[worst] - want[worst]))} LSB off the real multiplier at "
                               f"accumulator {points[worst]}: its reach leaves the multiplier too few bits")


def _clamped(params: fixed_point.ChannelParams, few: _FewValued, bias) -> fixed_point.ChannelParams:
    """`params` with the clamp bounds of `_few_valued`'s channels, and its output steps
    [acc >= t2] = clamp(acc + bias'' + s_bias, 0, 1) where there are any (0 elsewhere)."""
    a_min, a_max = params.a_min.copy(), params.a_max.copy()
    for c, (first, last) in few.bounds.items():
        a_min[c], a_max[c] = first, last
    if not few.steps:
        return dataclasses.replace(params, a_min=a_min, a_max=a_max)
    s_bias, s_max = np.zeros_like(a_min), np.zeros_like(a_max)
    for c, t2 in few.steps.items():
        s_bias[c], s_max[c] = 1 - t2 - int(bias[c]), 1
    return dataclasses.replace(params, a_min=a_min, a_max=a_max, s_bias=s_bias, s_min=np.zeros_like(a_min),
                               s_max=s_max)
