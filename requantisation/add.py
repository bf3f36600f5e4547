"""The quantised residual add's requantisation: y = clip(((a << sa) + (b << sb) + round) >> shift,
lo, hi), or with zero points and any scales y = clip(round((a - za) M_a + (b - zb) M_b) + zy,
lo, hi), as TFLite's quantised ADD does; and its one-operand form, which moves a Concat input
into the output's scale. The scaled forms come two ways: `ReqSumParams` ends in one REQ
instruction (docs/isa-extensions.md), what the graph level chooses; `ScaledAddParams` /
`RescaleParams` are the base ISA's fixed-point sequence.

`program()` gives the ALU work: the int8 operands' loads into ACC (LOAD ACC_8BIT sign-extends
them into int32 entries) and the stages, ending with `stages.tail`. The schedule is
schedules.vta_eltwise.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from vta_sim.errors import CompileError

from . import fixed_point
from .bounds import INT32_MAX, INT32_MIN, INT8_MAX, INT8_MIN
from . import multiply_shift
from .fixed_point import ScaledRequant, round_shift
from .multiply_shift import MultiplyShift
from .rule import rounding_constant
from .stages import Stage, clip, req_clip, tail

#: The rounding constant 1 << (shift - 1) is an ALU immediate: signed 16 bits.
MAX_SHIFT = fixed_point.MAX_ROUND_SHIFT
#: |x - zero point| of an int8 x with an int8 zero point.
OPERAND_REACH = INT8_MAX - INT8_MIN


@dataclass(frozen=True)
class AddParams:
    shift_a: int
    shift_b: int
    shift: int
    lo: int
    hi: int

    def program(self) -> tuple:
        """(loads, stages): the ACC_8BIT loads as (block, operand), then the ALU chain as
        `Stage`s (in place into x; y an immediate or an earlier block)."""
        stages, terms = [], []
        for name, shift in (("a", self.shift_a), ("b", self.shift_b)):
            terms.append(f"{name}_acc")
            if shift:
                stages.append(Stage(f"{name}_shl", "shl", terms[-1], shift))
                terms[-1] = stages[-1].name
        stages.append(Stage("sum", "add", terms[0], terms[1]))
        if self.shift:
            stages += tail(ScaledRequant(0, 0, self.shift, 0, self.lo, self.hi), "sum")
        else:
            stages += clip("sum", self.lo, self.hi)
        return (("a_acc", "a"), ("b_acc", "b")), tuple(stages)


class _ScaledClamp:
    """The clamp bounds of a program that ends with its requantisation's clip (a ScaledRequant's
    tail, or REQ and its clip)."""

    requant: ScaledRequant | MultiplyShift

    @property
    def lo(self) -> int:
        return self.requant.lo

    @property
    def hi(self) -> int:
        return self.requant.hi


@dataclass(frozen=True)
class ScaledAddParams(_ScaledClamp):
    """y = clip(round((a - zero_a) M_a + (b - zero_b) M_b) + zp, lo, hi) with M = m / 2^s
    (fixed_point.choose_sum): an operand's product is a*m_hi << SPLIT plus a*m_lo, both by
    16-bit immediates, so each operand is loaded twice (a copy costs as much as a load)."""
    zero_a: int
    zero_b: int
    m_a: int
    m_b: int
    requant: ScaledRequant         # k = fixed_point.SPLIT; t, s, zero point, lo, hi

    def program(self) -> tuple:
        return _scaled_program((("a", self.zero_a, self.m_a), ("b", self.zero_b, self.m_b)), self.requant)


@dataclass(frozen=True)
class RescaleParams(_ScaledClamp):
    """y = clip(round((a - zero) M) + zp, lo, hi): one operand of the scaled add, alone. A
    Concat input whose scale or zero point differs from the Concat's output is moved into the
    output's with it (a ReLU after the Concat folds into lo)."""
    zero: int
    m: int
    requant: ScaledRequant         # k = fixed_point.SPLIT; t, s, zero point, lo, hi

    def program(self) -> tuple:
        return _scaled_program((("a", self.zero, self.m),), self.requant)


#: REQ sums: the operands' ratio in factors below 2^FACTOR_BITS (16-bit signed ALU immediates),
#: the scale in REQ's 31-bit multiplier. |sum| <= 2 * 255 * 2^15 < 2^24: no int32 overflow.
FACTOR_BITS = 15


@dataclass(frozen=True)
class ReqSumParams(_ScaledClamp):
    """y = REQ(sum_i (x_i - zeros[i]) factors[i], m): clip(round(sum * m / 2^shift) + zp, lo, hi).

    Two operands: an add, each real multiplier M_i = factors[i] m / 2^shift, the ratio of the two
    in 15-bit factors (the best of its approximations with such denominators); one operand: a rescale, factor 1, the whole multiplier in m (31 bits).
    ALU work per entry: an ACC_8BIT load, ADD -zero and MUL factor (immediates) per operand, the
    sum's ADD, one REQ whose multiplier entry `m` (a kernel input) stays in its register."""
    zeros: tuple[int, ...]
    factors: tuple[int, ...]
    m: int
    requant: MultiplyShift

    def program(self) -> tuple:
        loads, stages, terms = [], [], []
        for name, zero, factor in zip("ab", self.zeros, self.factors):
            if factor == 0:        # an operand that vanishes at the output's scale is not loaded
                continue
            loads.append((f"{name}_acc", name))
            term = f"{name}_acc"
            if zero:
                stages.append(Stage(f"{name}_zp", "add", term, -zero))
                term = stages[-1].name
            if factor != 1:
                stages.append(Stage(f"{name}_mul", "mul", term, factor))
                term = stages[-1].name
            terms.append(term)
        if len(terms) == 2:
            stages.append(Stage("sum", "add", terms[0], terms[1]))
            terms = ["sum"]
        r = self.requant
        stages.append(Stage("req", "req", terms[0], "m", (r.shift, r.zero_point)))
        return tuple(loads), tuple(stages) + req_clip("req", r.lo, r.hi)


def choose_req_sum(multipliers, zeros, zero_point: int, lo: int = INT8_MIN, hi: int = INT8_MAX) -> ReqSumParams:
    """The REQ form of round(sum_i (x_i - zeros[i]) M_i) + zero_point, clipped: one or two int8
    operands. CompileError where a multiplier is not a finite number >= 0 or all are 0."""
    mult = np.asarray(multipliers, np.float64).reshape(-1)
    if not np.all(np.isfinite(mult)) or np.any(mult < 0) or not mult.any():
        raise CompileError(f"multipliers {mult.tolist()}: need finite values >= 0, not all 0")
    if mult.size == 1:
        factors, scale = (1,), float(mult[0])
    else:
        # the larger operand's factor c in [2^14, 2^15): the one whose partner round(r c) is
        # nearest to r c, the ratio's best approximation with such denominators
        big = float(mult.max())
        ratios = mult / big
        c = np.arange(1 << (FACTOR_BITS - 1), 1 << FACTOR_BITS)
        err = np.abs(np.round(np.outer(ratios, c)) - np.outer(ratios, c)).max(axis=0)
        best = int(c[int(np.argmin(err))])
        factors = tuple(int(round(r * best)) for r in ratios)
        scale = big / best
    requant, (m,) = multiply_shift.choose([scale], zero_point, lo, hi)
    return ReqSumParams(tuple(int(z) for z in zeros), factors, int(m), requant)


def req_sum_ref(xs, p: ReqSumParams) -> np.ndarray:
    """REQ's sum in int64: the contract's rounding on sum_i (x_i - zero_i) factor_i."""
    total = sum((x.astype(np.int64) - z) * f for x, z, f in zip(xs, p.zeros, p.factors))
    return multiply_shift.requantize_ref(total, p.requant, np.array([p.m]), axis=0)


def choose_rescale(zero: int, multiplier: float, zero_point: int, lo: int = INT8_MIN,
                   hi: int = INT8_MAX) -> RescaleParams:
    """The cheapest rescale of an int8 operand that gives the real multiplier's result,
    clip(floor((a - zero) M + 1/2) + zp, lo, hi), for every one of the 256 operand values.

    An operand has only 256 values, so the least shift s whose m = round(M 2^s) is below 2^15
    (one multiplier part: one load and one MUL, fixed_point.SPLIT) and exact on all of them is
    searched for; where none is, `fixed_point.choose_sum`'s two-part encoding (about 22 bits,
    exact but at rare ties) is taken."""
    a = np.arange(INT8_MIN, INT8_MAX + 1, dtype=np.int64) - zero
    num, den = Fraction(float(multiplier)).as_integer_ratio()
    want = np.array([(2 * v * num + den) // (2 * den) for v in a.tolist()], np.int64) + zero_point
    want = np.clip(want, lo, hi)
    for s in range(1, fixed_point.SPLIT + fixed_point.MAX_ROUND_SHIFT + 1):
        m = round(multiplier * 2 ** s)
        if m >= 1 << fixed_point.SPLIT:
            break
        r = ScaledRequant(fixed_point.SPLIT, max(0, s - fixed_point.MAX_ROUND_SHIFT), s, zero_point, lo, hi)
        if m and np.array_equal(np.clip(round_shift(a * m, r), lo, hi), want):
            return RescaleParams(zero, m, r)
    r, (m,) = fixed_point.choose_sum([multiplier], OPERAND_REACH, zero_point, lo, hi)
    return RescaleParams(zero, m, r)


def _scaled_program(operands, requant: ScaledRequant) -> tuple:
    """(loads, stages) of round(sum_i (x_i - zero_i) m_i / 2^s) + zp, clipped, over
    `operands` (name, zero, m): each part of a multiplier (m_hi << SPLIT, m_lo) its own load."""
    loads, stages, terms = [], [], []
    split = requant.k
    for name, zero, m in operands:
        for part, factor in (("hi", m >> split), ("lo", m & ((1 << split) - 1))):
            if not factor:
                continue
            block = f"{name}_{part}_acc"
            loads.append((block, name))
            chain = [Stage(f"{name}_{part}_zp", "add", block, -zero)] if zero else []
            chain.append(Stage(f"{name}_{part}_mul", "mul", chain[-1].name if chain else block, factor))
            if part == "hi":
                chain.append(Stage(f"{name}_hi_shl", "shl", chain[-1].name, split))
            stages += chain
            terms.append(chain[-1].name)
    for i, term in enumerate(terms[1:]):
        stages.append(Stage(f"sum{i}", "add", terms[0] if i == 0 else f"sum{i - 1}", term))
    return tuple(loads), tuple(stages) + tail(requant, stages[-1].name)


def check_params(p) -> None:
    """Refuse what the ALU cannot compute exactly in int32 with 16-bit immediates."""
    if isinstance(p, ReqSumParams):
        _check_req_sum(p)
        return
    if isinstance(p, ScaledAddParams):
        _check_scaled(p.requant, (("zero_a", p.zero_a, p.m_a), ("zero_b", p.zero_b, p.m_b)))
        return
    if isinstance(p, RescaleParams):
        _check_scaled(p.requant, (("zero", p.zero, p.m),))
        return
    if not isinstance(p, AddParams):
        raise CompileError(f"add parameters {p!r}: expected AddParams, ScaledAddParams, RescaleParams "
                           "or ReqSumParams")
    for name in ("shift_a", "shift_b", "shift"):
        if not isinstance(getattr(p, name), (int, np.integer)):
            raise CompileError(f"{name} = {getattr(p, name)!r}: must be an integer")
    if not 0 <= p.shift <= MAX_SHIFT:
        raise CompileError(f"shift = {p.shift}: the rounding constant 1 << (shift - 1) is a signed "
                           f"16-bit ALU immediate, so shift must be in 0..{MAX_SHIFT}")
    for name, v in (("shift_a", p.shift_a), ("shift_b", p.shift_b)):
        if v < 0:
            raise CompileError(f"{name} = {v}: operand shifts are left shifts, use 0 or more")
    scale = (1 << p.shift_a) + (1 << p.shift_b)
    top = INT8_MAX * scale + rounding_constant(p.shift)
    bottom = INT8_MIN * scale
    if top > INT32_MAX or bottom < INT32_MIN:
        raise CompileError(f"shift_a = {p.shift_a}, shift_b = {p.shift_b}: the sum of two shifted "
                           f"int8 values reaches [{bottom}, {top}], outside int32; use smaller shifts")
    if not INT8_MIN <= p.lo <= p.hi <= INT8_MAX:
        raise CompileError(f"clip [{p.lo}, {p.hi}]: need {INT8_MIN} <= lo <= hi <= {INT8_MAX} "
                           "(the result is stored as int8)")


def _check_req_sum(p: ReqSumParams) -> None:
    """One or two operands with int8 zero points, factors that are ALU immediates, m a REQ
    multiplier, and no partial sum outside int32."""
    if not 1 <= len(p.zeros) == len(p.factors) <= 2:
        raise CompileError(f"zeros {p.zeros}, factors {p.factors}: one or two operands, a factor each")
    for zero, factor in zip(p.zeros, p.factors):
        if not INT8_MIN <= zero <= INT8_MAX or not 0 <= factor < 1 << FACTOR_BITS:
            raise CompileError(f"zero point {zero}, factor {factor}: need an int8 zero point and "
                               f"0 <= factor < {1 << FACTOR_BITS}")
    if not 0 <= p.m < 1 << multiply_shift.MULTIPLIER_BITS:
        raise CompileError(f"REQ multiplier {p.m}: need 0 <= m < 2^{multiply_shift.MULTIPLIER_BITS}")
    if OPERAND_REACH * sum(p.factors) > INT32_MAX:
        raise CompileError(f"factors {p.factors}: their sum over int8 operands leaves int32")


def _check_scaled(r: ScaledRequant, operands) -> None:
    """`operands` (zero point's name, zero point, m): int8 zero points, m >= 0 not all 0, and
    no partial sum outside int32."""
    for name, zero, _ in operands:
        if not INT8_MIN <= zero <= INT8_MAX:
            raise CompileError(f"{name} = {zero}: an int8 zero point is in [{INT8_MIN}, {INT8_MAX}]")
    ms = [m for _, _, m in operands]
    if r.k != fixed_point.SPLIT or min(ms) < 0 or not sum(ms):
        raise CompileError(f"multipliers {', '.join(map(str, ms))} with split {r.k}: need m >= 0, "
                           f"not {'both ' if len(ms) == 2 else ''}0, split {fixed_point.SPLIT}")
    top = OPERAND_REACH * sum(ms) + (1 << (r.s - 1))
    if top > INT32_MAX:
        raise CompileError(f"multipliers {', '.join(map(str, ms))} at shift {r.s}: the sum reaches {top}, "
                           "outside int32 (use fixed_point.choose_sum)")


def add_ref(a: np.ndarray, b: np.ndarray, shift_a: int, shift_b: int, shift: int,
            lo: int = INT8_MIN, hi: int = INT8_MAX) -> np.ndarray:
    """The quantised add in int64 with round-half-up: the op's definition."""
    total = (a.astype(np.int64) << shift_a) + (b.astype(np.int64) << shift_b)
    return np.clip((total + rounding_constant(shift)) >> shift, lo, hi).astype(np.int8)


def scaled_add_ref(a: np.ndarray, b: np.ndarray, p: ScaledAddParams) -> np.ndarray:
    """The scaled add in int64: ((a - zero_a) m_a + (b - zero_b) m_b), rounded as every
    fixed-point requantisation is (fixed_point.round_shift), clipped."""
    total = (a.astype(np.int64) - p.zero_a) * p.m_a + (b.astype(np.int64) - p.zero_b) * p.m_b
    return np.clip(round_shift(total, p.requant), p.lo, p.hi).astype(np.int8)


def rescale_ref(a: np.ndarray, p: RescaleParams) -> np.ndarray:
    """The rescale in int64: (a - zero) m, rounded as every fixed-point requantisation is, clipped."""
    return np.clip(round_shift((a.astype(np.int64) - p.zero) * p.m, p.requant), p.lo, p.hi).astype(np.int8)
