"""The requantisation as ALU instructions: the one stage list every accelerator op ends with.

A `Stage` is one ALU instruction per output tile. conv2d/dense (`epilogue`), the residual add
(`requantisation.add`) and the average pool (a depthwise conv of ones) all end with `tail`, the
rounding shift, zero point and clip of `fixed_point.round_shift`, so the rule is written once
here and once in numpy (`fixed_point.round_shift`), and a test holds the two together.
"""
from __future__ import annotations

from typing import NamedTuple

from .bounds import INT8_MAX, INT8_MIN
from .fixed_point import ScaledRequant
from .multiply_shift import MultiplyShift
from .rule import PowerOfTwo, Requant


class Stage(NamedTuple):
    """One requantisation step, one ALU instruction per output tile: block `name` = op(stage `x`,
    `y`), written in place into x's ACC storage. `y` is an immediate (int) or a tensor: a
    per-channel input (one ACC entry per channel block, like the bias) or an earlier stage. op
    "copy" puts stage `y` into a fresh ACC region (a scratch): a reset, then ADD tensor. op "req"
    is REQ with the multipliers `y` and `imm` = (shift, zero point)."""

    name: str
    op: str
    x: str | None
    y: int | str | None
    imm: tuple = ()


#: Per-channel int32 kernel inputs the epilogues read (after data and weight, in this order).
VECTORS = ("bias", "a_min", "a_max", "m_hi", "m_lo", "s_bias", "s_min", "s_max", "m")
#: The per-row int32 input of a dense with a row term (one ACC entry per row, its value in
#: every lane): a matmul's zero-point correction -z_b sum_k a[i, k] (graph.ops.matmul).
ROW = "row"


def epilogue(requant: Requant | None = None, row_term: bool = False) -> tuple:
    """conv2d/dense: the stages after the accumulator ("acc"), in program order. None gives the
    power-of-two stages' shape, which is all that footprint and cost need (they do not depend on
    the immediates). `row_term`: first an ADD of the per-row input `ROW` (dense only)."""
    stages = _epilogue(requant)
    if not row_term:
        return stages
    first, *rest = stages
    return (Stage("row_add", "add", "acc", ROW), first._replace(x="row_add"), *rest)


def _epilogue(requant: Requant | None) -> tuple:
    r = PowerOfTwo(0) if requant is None else requant
    if isinstance(r, PowerOfTwo):
        return (Stage("bias_add", "add", "acc", "bias"), Stage("shr", "shr", "bias_add", r.shift),
                Stage("clip_lo", "max", "shr", r.lo), Stage("clip_hi", "min", "clip_lo", r.hi))
    if isinstance(r, MultiplyShift):
        req = (Stage("bias_add", "add", "acc", "bias"), Stage("req", "req", "bias_add", "m", (r.shift, r.zero_point)))
        return req + req_clip("req", r.lo, r.hi)
    if not isinstance(r, ScaledRequant):
        raise TypeError(f"epilogue of {r!r}: expected a requantisation.Requant")
    # clamp, copy to a scratch, the two products: the copy is read before `mul_hi` overwrites
    # the clamped value in place (vta_common.schedule_epilogue keeps this order)
    # a step (r.step) is read off the biased accumulator before the clamp overwrites it
    step = (Stage("step", "copy", None, "bias_add"), Stage("step_add", "add", "step", "s_bias"),
            Stage("step_lo", "max", "step_add", "s_min"), Stage("step_hi", "min", "step_lo", "s_max"))
    stages = [Stage("bias_add", "add", "acc", "bias"), *(step if r.step else ()),
              Stage("clamp_lo", "max", "bias_add", "a_min"),
              Stage("clamp_hi", "min", "clamp_lo", "a_max"), Stage("copy", "copy", None, "clamp_hi"),
              Stage("mul_hi", "mul", "clamp_hi", "m_hi"),
              Stage("mul_lo", "mul", "copy", "m_lo"), Stage("shr_lo", "shr", "mul_lo", r.k),
              Stage("sum", "add", "mul_hi", "shr_lo")]
    return tuple(stages) + tail(r, "sum", "step_hi" if r.step else None)


def tail(r: ScaledRequant, source: str, step: str | None = None) -> tuple:
    """round(p / 2^s) + zp, clipped, after stage `source` holding p: `fixed_point.round_shift` as
    ALU instructions (a pre-shift keeps the rounding constant in 16 bits; with ties to even, the
    parity of q = u >> (s-t) as q - ((q >> 1) << 1), there being no AND), and stage `step` added
    after the shift where given. Steps that would add 0 or shift by 0 are left out."""
    stages = [Stage("pre_shr", "shr", source, r.t)] if r.t else []
    u = stages[-1].name if stages else source
    if r.ties_even:
        stages += [Stage("q", "copy", None, u), Stage("q_shr", "shr", "q", r.s - r.t),
                   Stage("half", "copy", None, "q_shr"), Stage("half_shr", "shr", "half", 1),
                   Stage("half_shl", "shl", "half_shr", 1), Stage("half_neg", "mul", "half_shl", -1),
                   Stage("parity", "add", "q_shr", "half_neg"), Stage("tie", "add", u, "parity")]
    steps = [("round", "add", r.rounding - r.ties_even), ("shr", "shr", r.s - r.t),
             *((("step_sum", "add", step),) if step else ()),
             ("zero_point", "add", r.zero_point), ("clip_lo", "max", r.lo), ("clip_hi", "min", r.hi)]
    last = stages[-1].name if stages else source
    for name, op, value in steps:
        if value == 0 and name in ("zero_point", "round"):
            continue
        stages.append(Stage(name, op, last, value))
        last = name
    return tuple(stages)


def req_clip(source: str, lo: int, hi: int) -> tuple:
    """After REQ (which clamps to int8 itself): a MAX where lo is above the int8 minimum (a ReLU),
    a MIN where hi is below the maximum; nothing for the int8 range."""
    stages, last = [], source
    if lo > INT8_MIN:
        stages.append(Stage("clip_lo", "max", last, lo))
        last = "clip_lo"
    if hi < INT8_MAX:
        stages.append(Stage("clip_hi", "min", last, hi))
    return tuple(stages)


def clip(source: str, lo: int, hi: int) -> tuple:
    """The clip alone (an add whose shift is 0)."""
    return (Stage("clip_lo", "max", source, lo), Stage("clip_hi", "min", "clip_lo", hi))


def vector_inputs(stages) -> tuple:
    """The per-channel inputs the stages read, in VECTORS order."""
    used = {st.y for st in stages}
    return tuple(v for v in VECTORS if v in used)


def scratch_regions(stages) -> int:
    """ACC regions of one output tile's size the stages need besides the accumulator."""
    return sum(st.op == "copy" for st in stages)
