"""add: a residual add of two int8 activations on the ALU.

QDQ block:  quantize(relu?(dq(a) + dq(b)))  ->
            astype_i8(clip(((a << ka) + (b << kb) + rnd) >> shift, lo, hi))   scales 2^k apart, no zero points
            tail((a - za) m_a + (b - zb) m_b)                                 any scales and zero points
            (requantisation.add; a ReLU clips at the real zero)
Pattern:    either form (requantisation.relax.add_pattern)
Spec:       AddSpec(shape, AddParams | ScaledAddParams, operands); kernel
            schedules.vta_eltwise.eltwise_kernel (elementwise: a tensor of another rank, a
            transformer's (B, T, D), is one NCHW row of channels to it). An operand that
            broadcasts to the output's shape (an attention mask (1, 1, 1, T) added to the scores
            (1, H, T, T)) is broadcast by the host as it packs it: every packed operand is a copy
            of the output's size anyway, and the ALU work is one entry per output entry either way.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm import relax

from vta_sim.errors import CompileError
from requantisation import relax as rq_relax
from requantisation.add import (AddParams, ReqSumParams, ScaledAddParams, add_ref, check_params, choose_req_sum,
                                req_sum_ref, scaled_add_ref)
from requantisation.bounds import INT8_MAX, INT8_MIN
from schedules import vta_eltwise
from schedules.op_kernel import OpKernel
from vta_sim.config import Config

from .base import claims_op, Pow2Quantised, Emitter, OpRule, QdqBlock, Read, Refusal, Unsupported
from .qdq_read import QdqGraph, dq_input, known_shape, output_scale, pow2_exponent, single_use, static_shape
from .host_padding import viewed
from .relax_read import ValueOf


@dataclass(frozen=True)
class AddSpec:
    shape: tuple[Any, ...]              # (n, c, h, w), or any shape: the add runs on flat tiles
    params: AddParams | ScaledAddParams | ReqSumParams
    operands: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None   # a's and b's shapes where
                                        # one broadcasts to `shape`; None: both are `shape`
    op: str = field(default="add", init=False)
    macs = 0

    def describe(self) -> str:
        p, dims = self.params, "x".join(map(str, self.shape[1:]))
        if self.operands is not None:
            dims += " (" + " + ".join("x".join(map(str, s)) for s in self.operands) + ")"
        if isinstance(p, ReqSumParams):
            return f"(a{-p.zeros[0]:+d})Ma+(b{-p.zeros[1]:+d})Mb {dims}"
        if isinstance(p, ScaledAddParams):
            return f"(a{-p.zero_a:+d})Ma+(b{-p.zero_b:+d})Mb {dims}"
        return f"(a<<{p.shift_a}) + (b<<{p.shift_b}) >> {p.shift} {dims}"

    def input_shapes(self) -> list[Any]:
        return list(self.operands) if self.operands is not None else [self.shape, self.shape]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return None      # an add is cut into as many flat tiles as it needs: it always fits

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        # a CNN's NCHW add in channel blocks; a broadcast add (attention's (1, H, T, T) scores, few
        # "channels" that would pad to whole blocks) runs flat, as any other rank does
        if len(self.shape) == 4 and self.operands is None:
            kernel = vta_eltwise.eltwise_kernel(cfg, self.shape, self.params)
        else:
            nchw = (1, math.prod(self.shape), 1, 1)       # elementwise: any rank is one long channel row
            kernel = viewed(vta_eltwise.eltwise_kernel(cfg, nchw, self.params), [nchw, nchw], self.shape)
        if self.operands is None:
            return kernel
        pack, shapes = kernel.pack, self.operands

        def pack_broadcast(a: np.ndarray, b: np.ndarray) -> tuple[Any, ...]:
            return pack(*(np.broadcast_to(x.reshape(s), self.shape) for x, s in zip((a, b), shapes)))
        return dataclasses.replace(kernel, pack=pack_broadcast)

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.broadcast_to(a, self.shape), np.broadcast_to(b, self.shape)
        p = self.params
        if isinstance(p, ReqSumParams):
            return req_sum_ref((a, b), p)
        if isinstance(p, ScaledAddParams):
            return scaled_add_ref(a, b, p)
        return add_ref(a, b, p.shift_a, p.shift_b, p.shift, p.lo, p.hi)


@dataclass(frozen=True)
class AddPlan:
    a: relax.Expr
    b: relax.Expr
    params: AddParams | ScaledAddParams | ReqSumParams


def is_layer(g: QdqGraph, call: relax.Call) -> bool:
    """An add of two quantised activations (a bias add or an add of a constant is not a layer)."""
    return all(g.quantised_activation(a) for a in call.args)


def plan(g: QdqGraph, block: QdqBlock) -> AddPlan:
    """The power-of-two form where the scales allow it (ratios 2^k, zero points 0), else the
    fixed-point form with zero points and any scales (requantisation.add)."""
    single_use(g, block.body, block.relu)
    shapes = [tuple(known_shape(arg)) for arg in block.inner.args]
    if shapes[0] != shapes[1] and _broadcast(*shapes) is None:
        raise Refusal(f"a broadcasting add ({'x'.join(map(str, shapes[0]))} + {'x'.join(map(str, shapes[1]))}) "
                      "where both operands broadcast: the accelerator adds to one operand's shape")
    (a, sa, za, _), (b, sb, zb, _) = (dq_input(g, arg, "operand", zero_point_ok=True) for arg in block.inner.args)
    sy, zy = output_scale(g, block.q)
    lo = max(INT8_MIN, zy) if block.relu is not None else INT8_MIN   # a ReLU clips at the real zero
    if not (za or zb or zy):
        try:
            ka = -pow2_exponent(sa / sy, "operand scale / output scale")
            kb = -pow2_exponent(sb / sy, "operand scale / output scale")
            low = min(ka, kb, 0)
            params: AddParams | ReqSumParams = AddParams(ka - low, kb - low, -low, lo, INT8_MAX)
            check_params(params)
            return AddPlan(a, b, params)
        except (Refusal, CompileError):
            pass
    try:
        params = choose_req_sum([sa / sy, sb / sy], (za, zb), zy, lo, INT8_MAX)
        check_params(params)
    except CompileError as exc:
        raise Refusal(f"its scales do not fit the integer add: {exc}") from None
    loaded = vta_eltwise.operands(params)
    if len(loaded) != 2:
        gone = "a" if "a" not in loaded else "b"
        raise Refusal(f"operand {gone} vanishes at the output's scale (scale ratio "
                      f"{(sa if gone == 'a' else sb) / sy:.3g}; an attention mask of -3.4e38 does this): "
                      "an add of one operand stays on the CPU")
    return AddPlan(a, b, params)


def emit(em: Emitter, p: AddPlan) -> relax.Expr:
    form, values = rq_relax.add_values(p.params)
    return em.root(rq_relax.emit(form, {"a": em.visit(p.a), "b": em.visit(p.b)}, values, em.emit))


def _broadcast(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The output shape where one operand's shape is it and the other broadcasts to it, else None."""
    try:
        out = tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None
    return out if out in (tuple(a), tuple(b)) else None


def read(root: Any, value_of: ValueOf) -> Read:
    operands, params, _ = rq_relax.read_add(root, value_of)
    check_params(params)
    a, b = (tuple(static_shape(x)) for x in operands)
    if a == b:
        return Read(AddSpec(a, params))
    out = _broadcast(a, b)
    if out is None:
        raise Unsupported(f"operands of shapes {a} and {b}: one must be the output's shape")
    return Read(AddSpec(out, params, (a, b)))


def activations(root: Any, value_of: ValueOf) -> list[Any]:
    return list(rq_relax.read_add(root, value_of)[0])


RULE = OpRule(
    kind="add", float_ops=("relax.add",), onnx_ops=("Add",), claims=claims_op("relax.add"), plan=plan, emit=emit, relu=True,
    patterns=lambda main: {"vta.add": rq_relax.add_pattern()}, read=read, activations=activations,
    is_layer=is_layer, pow2={"Add": Pow2Quantised()})
