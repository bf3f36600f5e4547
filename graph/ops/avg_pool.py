"""avg_pool: an average pool (AveragePool, GlobalAveragePool, a mean over H and W) as the
integer graph computes it.

QDQ block:  quantize(avg_pool2d(dq(x)) | mean(dq(x), [2, 3]))  ->  a depthwise conv2d of ones
            (its padding holds the input's zero point, the real zero), then the fixed-point
            requantisation by s_x / (s_y k^2), ties to even, with -k^2 zp_x folded into the
            bias (global pools: k = H = W); docs/ops.md
Pattern:    conv2d's (the same integer form), taken where the layer's stamp says avg_pool
Spec:       AvgPoolSpec, a ConvSpec that counts no MACs (a model's MACs are its convolutions'
            and dense layers')
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm import relax

from vta_sim.errors import CompileError
from requantisation import add as rq_add
from requantisation import fixed_point
from requantisation.bounds import INT8_MAX, INT8_MIN

from . import conv2d, linear
from .base import OpRule, QdqBlock, Read, Refusal, op_name
from .conv2d import ConvSpec
from .qdq_read import QdqGraph, dq_input, ints, known_shape, output_scale, single_use
from .relax_read import ValueOf

FLOAT_OPS = ("relax.nn.avg_pool2d", "relax.mean", "relax.nn.adaptive_avg_pool2d")


@dataclass(frozen=True)
class AvgPoolSpec(ConvSpec):
    op: str = field(default="avg_pool", init=False)

    @property
    def macs(self) -> int:
        return 0


def claims(g: QdqGraph, body: Any) -> Any:
    return body if op_name(g.val(body)) in ("relax.nn.avg_pool2d", "relax.mean") else None


def window(pool: relax.Call, h: int, w: int) -> tuple[Any, ...]:
    """(k, stride, pad) of an average pool (avg_pool2d, or a global mean over H and W), or refuse
    what the depthwise form cannot hold exactly."""
    if op_name(pool) == "relax.mean":
        axes = sorted(int(a) % 4 for a in pool.attrs.axis)
        if axes != [2, 3]:
            raise Refusal(f"a mean over axes {axes}: only the global average pool (over H and W)")
        if h != w:
            raise Refusal(f"a global average pool over {h}x{w}: the accelerator's windows are square")
        return h, 1, 0
    a = pool.attrs
    size, strides, pads = ints(a.pool_size), ints(a.strides), ints(a.padding)
    if len(set(size)) != 1 or len(set(strides)) != 1 or len(set(pads)) != 1 or set(ints(a.dilation)) != {1} \
            or a.layout != "NCHW":
        raise Refusal(f"window {size}, strides {strides}, padding {pads}: square, equal on all sides, "
                      "undilated NCHW windows only")
    k, stride, pad = size[0], strides[0], pads[0]
    if pad and not a.count_include_pad:
        raise Refusal("count_include_pad=0 with padding: the divisor changes at the borders")
    if a.ceil_mode and any((d + 2 * pad - k) % stride for d in (h, w)):
        raise Refusal("ceil_mode adds partial windows at the border, whose divisor differs")
    return k, stride, pad


def plan(g: QdqGraph, block: QdqBlock) -> linear.LinearPlan:
    pool = block.inner
    x, sx, zx, _ = dq_input(g, pool.args[0], "input", zero_point_ok=True)
    single_use(g, block.body)
    shape = known_shape(x)
    if len(shape) != 4:
        raise Refusal(f"a mean over a {len(shape)}-d tensor: the accelerator's average pool takes NCHW "
                      "tensors (a mean over H and W)")
    _, c, h, w = shape
    k, stride, pad = window(pool, h, w)
    sy, zy = output_scale(g, block.q)
    count = k * k
    try:
        requant, params = fixed_point.choose(np.full(c, sx / (sy * count)), zy, INT8_MIN, INT8_MAX,
                                             acc_bound=count * rq_add.OPERAND_REACH, ties_even=True)
    except CompileError as exc:
        raise Refusal(f"its requantisation multiplier cannot be encoded: {exc}") from None
    weight = np.ones((c, 1, k, k), np.int8)
    op = relax.op.nn.conv2d(x, relax.const(weight), strides=[stride, stride], padding=[pad] * 4, groups=c)
    # MnasNet's x.mean([2, 3]) keeps no dims: the pool's (N, C, 1, 1) is reshaped to its shape
    squeeze = None if op_name(pool) != "relax.mean" or pool.attrs.keepdims else [int(d) for d in pool.ty.shape]
    return linear.LinearPlan(x, op, weight, np.full(c, -count * zx, np.int32), requant, params.arrays(), zx,
                             False, False, conv2d.accumulate, conv2d.VECTOR_SHAPE, squeeze)


def read(root: Any, value_of: ValueOf) -> Read:
    return conv2d.read_conv(root, value_of, AvgPoolSpec)


RULE = OpRule(
    kind="avg_pool", float_ops=FLOAT_OPS, onnx_ops=("AveragePool", "GlobalAveragePool", "ReduceMean"),
    claims=claims, plan=plan, emit=linear.emit,
    patterns=lambda main: {"vta.avg_pool": conv2d.pattern()}, read=read, activations=conv2d.activations)
