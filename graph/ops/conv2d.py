"""conv2d: a convolution (plain, grouped, depthwise) and its requantisation on the GEMM core.

QDQ block:  quantize(relu?(conv2d(dq(x), dq(W)) (+ bias)))  ->  graph.ops.linear's integer form
Pattern:    conv2d(pad?(x), W) + a requantisation form (requantisation.relax.linear_pattern)
Spec:       ConvSpec(ConvShape, Requant, pad_value); kernel schedules.vta_ops.conv2d_kernel
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from tvm import relax
from tvm.relax.dpl import is_const, is_op, wildcard

from requantisation import Requant, rule
from requantisation.relax import linear_pattern, read_linear
from schedules import vta_ops
from schedules import vta_workloads as wl
from schedules.op_kernel import OpKernel
from schedules.vta_conv2d import CONV2D, ConvShape
from vta_sim.config import Config
from vta_sim.isa import MAX_PAD

from . import linear
from .base import Pow2Quantised, Emitter, OpRule, QdqBlock, Read, Unsupported, op_name
from .host_padding import HostPadded, layout_refusal
from .qdq_read import QdqGraph, ints, static_shape
from .relax_read import ValueOf, const, explicit_pad


@dataclass(frozen=True)
class ConvSpec(HostPadded):
    shape: ConvShape
    requant: Requant
    pad_value: int = 0        # the input's zero point: what padding holds
    op: str = "conv2d"

    @property
    def macs(self) -> int:
        return self.shape.macs()

    def describe(self) -> str:
        s = self.shape
        kind = "" if s.groups == 1 else " dw" if s.groups == s.ic else f" g{s.groups}"
        return f"{s.k}x{s.k}/{s.stride}{kind} {s.ic}->{s.oc} {s.h}x{s.w}"

    def input_shapes(self) -> list[Any]:
        s = self.shape
        return [(s.n, s.ic, s.h, s.w)]

    def host_value(self) -> int | None:
        return self.pad_value if self.pad_value or self.shape.pad > MAX_PAD else None

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return layout_refusal(lambda: CONV2D.choose_tiles(cfg, self.kernel_shape(), vthreads, self.requant))

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        return self.host_padded(vta_ops.conv2d_kernel_for(cfg, self.kernel_shape(), self.requant, vthreads))

    def reference(self, x: np.ndarray, w: np.ndarray, b: np.ndarray, *channel: np.ndarray) -> np.ndarray:
        s = self.kernel_shape()
        return rule.reference(wl.conv2d_acc(self.padded(x), w, b, s.pad, s.stride, s.groups), self.requant, channel)


def accumulate(em: Emitter, x: relax.Expr, weight: relax.Expr, p: linear.LinearPlan) -> relax.Expr:
    """The int32 convolution with the float call's attributes; an input zero point pads
    explicitly with it (the input's real zero)."""
    at = p.op.attrs
    padding = ints(at.padding)
    if p.pad_value and any(padding):
        top, left, bottom, right = padding
        x = em.emit(relax.op.nn.pad(x, [0, 0, 0, 0, top, bottom, left, right], pad_value=float(p.pad_value)))
        padding = [0, 0, 0, 0]
    return relax.op.nn.conv2d(x, weight, strides=list(at.strides), padding=padding,
                              dilation=list(at.dilation), groups=int(at.groups),
                              data_layout=at.data_layout, kernel_layout=at.kernel_layout,
                              out_layout=at.out_layout, out_dtype="int32")


#: the per-channel vectors broadcast over NCHW's channels
VECTOR_SHAPE = (1, -1, 1, 1)


def plan(g: QdqGraph, block: QdqBlock) -> linear.LinearPlan:
    return linear.plan(g, block, 0, accumulate, VECTOR_SHAPE)


def read_conv(root: Any, value_of: ValueOf, spec: type = ConvSpec) -> Read:
    """A requantised conv block read back into `spec` (ConvSpec, or the average pool's)."""
    acc, vectors, requant = read_linear(root, value_of)
    a = acc.attrs
    x, wgt = acc.args
    pad, pad_value = ints(a.padding), 0
    padded = value_of(x)
    if op_name(padded) == "relax.nn.pad":           # an input zero point: pad with it
        x, pad, pad_value = padded.args[0], explicit_pad(padded), int(padded.attrs.pad_value)
    n, ic, h, w = static_shape(x)
    weight = const(wgt)
    oc, _, kh, kw = weight.shape
    _check_attrs(kh, kw, a, pad, ic, oc)
    shape = ConvShape(n, h, w, ic, oc, kh, pad[0], ints(a.strides)[0], int(a.groups))
    return Read(spec(shape, requant, pad_value), (weight, *vectors))


def activations(root: Any, value_of: ValueOf) -> list[Any]:
    """The conv's input, before its explicit pad."""
    x = read_linear(root, value_of)[0].args[0]
    padded = value_of(x)
    return [padded.args[0] if op_name(padded) == "relax.nn.pad" else x]


def _check_attrs(kh: int, kw: int, a: Any, pads: list[Any], ic: int, oc: int) -> None:
    strides, dil, groups = ints(a.strides), ints(a.dilation), int(a.groups)
    if kh != kw:
        raise Unsupported(f"kernel {kh}x{kw} is not square")
    if len(set(pads)) != 1 or len(set(strides)) != 1:
        raise Unsupported(f"padding {pads} / strides {strides} differ between the axes")
    if set(dil) != {1}:
        raise Unsupported(f"dilation {dil}: only 1-dilated convs")
    if groups != 1 and ic != oc:
        raise Unsupported(f"groups {groups} with {ic} input and {oc} output channels: grouped convs "
                          "take as many output as input channels per group")
    if (a.data_layout, a.kernel_layout) != ("NCHW", "OIHW"):
        raise Unsupported(f"layout {a.data_layout}/{a.kernel_layout}: NCHW/OIHW only")


def pattern() -> Any:
    """A conv (its explicit pad joins it) and its requantisation."""
    return linear_pattern(is_op("relax.nn.conv2d")(is_op("relax.nn.pad")(wildcard()) | wildcard(), is_const()))


def macs(call: relax.Call) -> int:
    """Multiply-accumulates of a conv2d call from its shapes (0 where TVM left them unknown)."""
    if call.ty.shape is None:
        return 0
    _, per, kh, kw = (int(d) for d in call.args[1].ty.shape)
    return int(np.prod([int(d) for d in call.ty.shape])) * per * kh * kw


RULE = OpRule(
    kind="conv2d", float_ops=("relax.nn.conv2d",), onnx_ops=("Conv",),
    claims=linear.claims("relax.nn.conv2d"), plan=plan, emit=linear.emit, relu=True, uint8_out=True,
    patterns=lambda main: {"vta.conv2d": pattern()}, read=read_conv, activations=activations, macs=macs,
    pow2={"Conv": Pow2Quantised(weight=1, bias=2)})
