"""conv2d: a convolution (plain, grouped, depthwise) and its requantisation on the GEMM core.

QDQ block:  quantize(relu?(conv2d(dq(x), dq(W)) (+ bias)))  ->  graph.ops.linear's integer form
Pattern:    conv2d(pad?(x), W) + a requantisation form (requantisation.relax.linear_pattern)
Spec:       ConvSpec(ConvShape, Requant, pad_value); kernel schedules.vta_ops.conv2d_kernel, or
            for a conv with few input channels (a network's first layer) the dense kernel on
            the host's im2col of the input where the cycle model says that is cheaper
            (`im2col_pays`; the im2col is host work).
"""
from __future__ import annotations

import dataclasses
import functools
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
from schedules.vta_dense import DENSE, DenseShape
from vta_sim.config import Config
from vta_sim.errors import CompileError
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
        if self.im2col(cfg, vthreads):
            return None
        return layout_refusal(lambda: CONV2D.choose_tiles(cfg, self.kernel_shape(), vthreads, self.requant))

    def im2col(self, cfg: Config, vthreads: int) -> bool:
        """Whether the kernel runs as a dense over the host's im2col of the input (`im2col_pays`)."""
        return im2col_pays(cfg, self.kernel_shape(), self.requant, vthreads)

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        if self.im2col(cfg, vthreads):
            return self.im2col_kernel(cfg, vthreads)
        return self.host_padded(vta_ops.conv2d_kernel_for(cfg, self.kernel_shape(), self.requant, vthreads))

    def im2col_kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        """The conv as schedules.vta_ops.dense_kernel on (n*oh*ow, ic*k*k) rows: the host pads
        the input with `pad_value` and gathers each output pixel's receptive field, (ic, kh, kw)
        in the weight's OIHW order, into one row (`im2col`; host work, not accelerator cycles);
        the weight is viewed as (oc, ic*k*k) in the same order, the bias and the requantisation's
        per-channel vectors pass unchanged, and the (n*oh*ow, oc) output goes back to NCHW.
        The dense kernel pads the columns to whole blocks, so the reduction fills the core."""
        s, d = self.shape, im2col_shape(self.shape)
        kernel = vta_ops.dense_kernel(cfg, d.m, d.k, d.n, self.requant, vthreads=vthreads)
        pack, unpack = kernel.pack, kernel.unpack

        def pack_im2col(x: np.ndarray, w: np.ndarray, *rest: np.ndarray) -> tuple[Any, ...]:
            return pack(im2col(x, s, self.pad_value), np.asarray(w).reshape(s.oc, d.k), *rest)

        def unpack_nchw(y: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(unpack(y).reshape(s.n, s.oh, s.ow, s.oc).transpose(0, 3, 1, 2))
        return dataclasses.replace(kernel, op=self.op, pack=pack_im2col, unpack=unpack_nchw, layout="im2col",
                                   rows_in=False, rows_out=False)    # rows of pixels, not of the plain tensors

    def reference(self, x: np.ndarray, w: np.ndarray, b: np.ndarray, *channel: np.ndarray) -> np.ndarray:
        s = self.kernel_shape()
        return rule.reference(wl.conv2d_acc(self.padded(x), w, b, s.pad, s.stride, s.groups), self.requant, channel)


def im2col_shape(s: ConvShape) -> DenseShape:
    """The dense an (ungrouped) conv is as im2col: a row per output pixel, a column per (ic, kh, kw)."""
    return DenseShape(s.n * s.oh * s.ow, s.ic * s.k * s.k, s.oc)


def im2col(x: np.ndarray, s: ConvShape, pad_value: int = 0) -> np.ndarray:
    """NCHW `x` -> (n*oh*ow, ic*k*k): row (b, y, x) holds the receptive field of that output
    pixel, the input padded with `pad_value`, columns in (ic, kh, kw) order. Host work: the
    rows repeat each input element about k*k/stride^2 times."""
    p, k, st = s.pad, s.k, s.stride
    xp = np.pad(np.asarray(x), ((0, 0), (0, 0), (p, p), (p, p)), constant_values=pad_value)
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    win = win[:, :, :(s.oh - 1) * st + 1:st, :(s.ow - 1) * st + 1:st]      # (n, ic, oh, ow, k, k)
    return np.ascontiguousarray(win.transpose(0, 2, 3, 1, 4, 5)).reshape(s.n * s.oh * s.ow, s.ic * k * k)


@functools.lru_cache(maxsize=256)
def im2col_pays(cfg: Config, s: ConvShape, requant: Requant, vthreads: int) -> bool:
    """Whether conv `s` (the shape the conv kernel would compute: ConvSpec.kernel_shape) is
    cheaper as a dense over the host's im2col of its input.

    The conv kernel reduces over input-channel blocks one tap at a time: a conv with 3 input
    channels (an RGB image) fills 3 of the 8 lanes of every GEMM cycle, k*k times. As im2col
    the reduction is (ic, kh, kw) packed, ceil(ic*k*k / BLOCK_IN) blocks instead of
    ceil(ic / BLOCK_IN)*k*k (7x7x3: 19 blocks, not 49). The price is a larger input: the host
    writes about k*k/stride^2 copies of each element, which the dense kernel then loads.

    The cycle model decides: each kernel's estimated cycles with its best tiles (the ones
    choose_tiles would pick), the dense one charged one bus beat per extra byte the host writes
    beyond the conv's own (block-padded) input. Only ungrouped convs whose packed reduction has
    fewer blocks are considered (otherwise the GEMM work cannot shrink); a conv that does not fit
    the buffers at all takes im2col where the dense fits."""
    if s.groups != 1:
        return False
    d, bi = im2col_shape(s), cfg.BLOCK_IN
    if -(-d.k // bi) >= -(-s.ic // bi) * s.k * s.k:
        return False

    def cycles(op: Any, shape: Any) -> float:
        try:
            return float(op.estimate_cycles(cfg, shape, op.choose_tiles(cfg, shape, vthreads, requant), requant))
        except CompileError:
            return float("inf")
    conv_input = s.n * -(-s.ic // bi) * bi * s.h * s.w
    extra = max(0, d.m * -(-d.k // bi) * bi - conv_input)
    dense = cycles(DENSE, d) + extra / cfg.bus_bytes
    return dense < cycles(CONV2D, s)


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
