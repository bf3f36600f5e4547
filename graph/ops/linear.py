"""What conv2d, dense and the average pool share: a GEMM block `x (*) W + bias'` and its
requantisation, planned from the QDQ block and emitted as graph.qdq's integer form

    astype_i8(clip(((x_q (*) W_q : int32) + bias') >> shift, lo, hi))          power of two
    requantisation.relax's multiply-shift form (REQ: 64-bit product, rounding shift, + zp_y, clip)

With power-of-two multipliers s_x s_w / s_y = 2^-shift and no zero points the requantisation is
`(acc + bias') >> shift` with `bias' = round(b / (s_x s_w)) + 2^(shift-1)` (round to nearest
folded into the bias). Float scales, per-channel weight scales and zero points take the
multiply-shift form (requantisation.multiply_shift.choose: one REQ instruction per output
tile on the accelerator, docs/isa-extensions.md); an input zero point folds `-zp_x * sum(W)`
into the bias and pads explicitly with zp_x; uint8 tensors are read as int8 - 128 on the CPU
side. A ReLU between the op and its quantize raises the clip's floor.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from tvm import relax
from tvm.ir.expr import Constant

from vta_sim.errors import CompileError
from requantisation import Requant
from requantisation import multiply_shift
from requantisation import relax as rq_relax
from requantisation.bounds import INT8_MAX, INT8_MIN
from requantisation.rule import PowerOfTwo, rounding_constant

from .base import Emitter, QdqBlock, Refusal
from .qdq_read import UINT8_OFFSET, QdqGraph, dq_input, output_scale, pow2_shift, single_use

#: (emitter, int8 input, int8 weight const, plan) -> the int32 accumulator call
Accumulate = Callable[[Emitter, relax.Expr, relax.Expr, "LinearPlan"], relax.Expr]


@dataclass(frozen=True)
class LinearPlan:
    """The integer replacement of a GEMM block."""
    x: relax.Expr                 # the int8 (or uint8) input
    op: relax.Call                # the float call whose attributes the integer one keeps
    weight: np.ndarray            # int8, in the op's layout
    bias: np.ndarray              # int32 bias' per output channel
    requant: Requant
    channel: tuple[np.ndarray, ...]  # the requantisation's per-channel vectors after the bias
    pad_value: int                # the input's zero point: what padding holds
    x_uint8: bool
    y_uint8: bool
    accumulate: Accumulate
    vector_shape: tuple[Any, ...]           # how a per-channel vector broadcasts over the accumulator
    squeeze: list[Any] | None = None   # reshape the output to this (a global mean that keeps no dims)


def claims(op: str) -> Callable[[QdqGraph, Any], Any]:
    """A rule's `claims` for a GEMM op `op`: the op itself, or under its bias add."""
    def claim(g: QdqGraph, body: Any) -> Any:
        if g.call(body, op) is not None:
            return body
        add = g.call(body, "relax.add")
        return next((a for a in add.args if g.call(a, op) is not None), None) if add is not None else None
    return claim


def weight_of(g: QdqGraph, wexpr: Any, out_axis: int) -> tuple[Any, ...]:
    """(int8 weight in the op's layout, per-output-channel scales) of a dequantized constant;
    `out_axis` is the weight's output-channel axis (negative: from the end)."""
    transposed = g.call(wexpr, "relax.permute_dims")
    wdq = g.call(transposed.args[0] if transposed is not None else wexpr, "relax.dequantize")
    if wdq is None or not isinstance(g.val(wdq.args[0]), Constant):
        raise Refusal("its weight is not a quantised constant (no DequantizeLinear on a constant)")
    weight = g.val(wdq.args[0]).value.numpy()
    if weight.dtype != np.int8:
        raise Refusal(f"its weights are {weight.dtype}; the accelerator takes int8")
    zero = g.const(wdq.args[2])
    if zero is None or np.any(zero != 0):
        raise Refusal("its weights have a non-zero zero point; the accelerator's GEMM takes "
                      "symmetric weights")
    scales = g.const(wdq.args[1])
    if scales is None:
        raise Refusal("its weight scale is not a constant")
    scale = scales.reshape(-1)
    axis = int(wdq.attrs.axis) % weight.ndim
    if transposed is not None:
        axes = [int(a) for a in transposed.attrs.axes]
        weight, axis = np.transpose(weight, axes), axes.index(axis)
    out_axis %= weight.ndim
    channels = weight.shape[out_axis]
    if scale.size == 1:
        scale = np.full(channels, scale[0])
    elif scale.size != channels or axis != out_axis:
        raise Refusal(f"its weight scales run along axis {axis}, not the output channels")
    return weight, scale


def plan(g: QdqGraph, block: QdqBlock, out_axis: int, accumulate: Accumulate, vector_shape: tuple[Any, ...]) -> LinearPlan:
    """The block `quantize(relu?(op(dq(x), dq(W)) (+ bias)))` as integer ops, else Refusal."""
    bias, op_var = None, block.layer
    if not block.layer.same_as(block.body):
        add = g.val(block.body)
        bias = g.const(next(a for a in add.args if not a.same_as(block.layer)))
        if bias is None:
            raise Refusal("its bias is not a constant")
    op = g.val(op_var)
    single_use(g, *(v for v in (op_var, block.body if bias is not None else None, block.relu) if v is not None))
    x, sx, zx, x_uint8 = dq_input(g, op.args[0], "input", zero_point_ok=True, uint8_ok=True)
    weight, sw = weight_of(g, op.args[1], out_axis)
    sy, zy = output_scale(g, block.q)
    y_uint8 = block.q.attrs.out_dtype == "uint8"
    zy -= UINT8_OFFSET if y_uint8 else 0
    channels = sw.size
    acc_bias = np.zeros(channels) if bias is None else bias.reshape(-1) / (sx * sw)
    if acc_bias.size != channels:
        raise Refusal(f"its bias has {acc_bias.size} values for {channels} output channels")
    reduce = tuple(a for a in range(weight.ndim) if a != out_axis % weight.ndim)
    sums = weight.astype(np.int64).sum(axis=reduce)
    acc_bias = np.round(acc_bias) - zx * sums             # real zero of the input is x_q = zp_x
    lo = max(INT8_MIN, zy) if block.relu is not None else INT8_MIN
    multipliers = sx * sw / sy
    shift = common_pow2_shift(multipliers)
    channel: tuple[np.ndarray, ...] = ()
    if shift is not None and zy == 0:
        requant: Requant = PowerOfTwo(shift, lo, INT8_MAX)
        acc_bias = acc_bias + rounding_constant(shift)
    else:
        try:
            requant, m = multiply_shift.choose(multipliers, zy, lo, INT8_MAX)
        except CompileError as exc:
            raise Refusal(f"its requantisation multipliers cannot be encoded: {exc}") from None
        channel = (m,)
    if np.abs(acc_bias).max(initial=0) >= 2 ** 31:
        raise Refusal("its bias does not fit int32 at scale s_x*s_w")
    return LinearPlan(x, op, weight, acc_bias.astype(np.int32), requant, channel, zx, x_uint8, y_uint8,
                      accumulate, vector_shape)


def common_pow2_shift(multipliers: np.ndarray) -> int | None:
    """n when every multiplier is the same 2^-n with 0 <= n <= 31, else None."""
    first = float(multipliers[0])
    if not np.all(multipliers == first):
        return None
    try:
        return pow2_shift(first, "multiplier")
    except Refusal:
        return None


def emit(em: Emitter, p: LinearPlan) -> relax.Expr:
    """The op, + bias, then the power-of-two or the fixed-point requantisation."""
    x = em.visit(p.x)
    if p.x_uint8:
        x = em.emit(relax.op.astype(_shifted(x, -UINT8_OFFSET), "int8"))
    acc = em.emit(p.accumulate(em, x, relax.const(p.weight, "int8"), p))
    vectors = (np.asarray(p.bias),) + p.channel
    form, values = rq_relax.linear_values(p.requant, vectors)
    out = em.root(rq_relax.emit(form, {"acc": acc}, values, em.emit, p.vector_shape))
    if p.squeeze is not None:
        return relax.op.reshape(out, p.squeeze)
    if not p.y_uint8:
        return out
    return relax.op.astype(_shifted(out, UINT8_OFFSET), "uint8")


def _shifted(x: relax.Expr, offset: int) -> relax.Expr:
    """x + offset in int16: the CPU-side map between uint8 and int8 views of one tensor."""
    return relax.op.add(relax.op.astype(x, "int16"), relax.const(offset, "int16"))
