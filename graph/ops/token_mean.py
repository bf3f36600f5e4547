"""mean: a transformer classifier's mean over its tokens (ReduceMean over axis 1 of a (N, T, D)
tensor) on the ALU (requantisation.token_mean).

QDQ block:  quantize(mean(dq(x), axis=[1]))  ->  call_pure_packed("vta.token_mean_int", x_q, params)
            (graph.ops.packed_form: params the MeanParams as one int64 constant; the CPU build
            calls requantisation.token_mean.reference, the accelerator runs
            schedules.vta_token_mean); keepdims=1 is a reshape after it
Pattern:    that call
Spec:       TokenMeanSpec(shape, MeanParams); kernel schedules.vta_token_mean.token_mean_kernel
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tvm import relax

from requantisation import token_mean as rq_mean
from requantisation.token_mean import MeanParams
from schedules import vta_token_mean
from schedules.op_kernel import OpKernel
from vta_sim.config import Config
from vta_sim.errors import CompileError

from .base import Emitter, OpRule, QdqBlock, Read, Refusal, op_name
from .packed_form import PackedForm, to_int8
from .qdq_read import QdqGraph, dq_input, known_shape, output_scale, single_use, static_shape
from .relax_read import ValueOf

FORM = PackedForm("vta.token_mean_int", lambda x, params: rq_mean.reference(x, MeanParams.unpacked(params)))
FORM.register()


@dataclass(frozen=True)
class TokenMeanSpec:
    shape: tuple[int, ...]          # (N, T, D)
    params: MeanParams
    op: str = field(default="mean", init=False)
    macs = 0

    def describe(self) -> str:
        n, t, d = self.shape
        return f"{n}x{d} mean of {t} tokens"

    def input_shapes(self) -> list[Any]:
        return [self.shape]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return vta_token_mean.misfit(cfg, self.shape[1])

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        n, _, d = self.shape
        return vta_token_mean.token_mean_kernel(cfg, n, self.params, d)

    def reference(self, x: np.ndarray) -> np.ndarray:
        return rq_mean.reference(x, self.params)


@dataclass(frozen=True)
class TokenMeanPlan:
    x: relax.Expr
    params: MeanParams
    shape: tuple[int, ...]            # the input's (N, T, D)
    keepdims: bool


def _token_mean(call: Any) -> bool:
    """A mean over axis 1 of a 3-d tensor (the other means are the average pool's)."""
    if op_name(call) != "relax.mean" or call.args[0].ty.shape is None or len(call.args[0].ty.shape) != 3:
        return False
    return call.attrs.axis is not None and [int(a) % 3 for a in call.attrs.axis] == [1]


def claims(g: QdqGraph, body: Any) -> Any:
    return body if _token_mean(g.val(body)) else None


def is_layer(g: QdqGraph, call: relax.Call) -> bool:
    return _token_mean(call)


def plan(g: QdqGraph, block: QdqBlock) -> TokenMeanPlan:
    call = block.inner
    single_use(g, block.body, block.relu)
    x, scale_in, zero_in, _ = dq_input(g, call.args[0], "input", zero_point_ok=True, uint8_ok=True)
    shape = tuple(known_shape(call.args[0]))
    scale_out, zero_out = output_scale(g, block.q)
    if block.q.attrs.out_dtype != "int8":
        raise Refusal(f"a {block.q.attrs.out_dtype} output: the mean over tokens writes int8")
    lo = max(-128, zero_out) if block.relu is not None else -128
    try:
        params = rq_mean.choose(scale_in, zero_in, scale_out, zero_out, shape[1], lo)
    except CompileError as exc:
        raise Refusal(str(exc)) from None
    return TokenMeanPlan(x, params, shape, bool(call.attrs.keepdims))


def emit(em: Emitter, p: TokenMeanPlan) -> relax.Expr:
    n, _, d = p.shape
    call = relax.call_pure_packed(FORM.symbol, to_int8(em, em.visit(p.x)),
                                  relax.const(p.params.packed(), "int64"), ty_args=relax.TensorType((n, d), "int8"))
    out = em.root(call)
    return relax.op.reshape(out, (n, 1, d)) if p.keepdims else out


def read(root: Any, value_of: ValueOf) -> Read:
    x, params = FORM.read(root, value_of)
    shape = tuple(static_shape(x))
    if len(shape) != 3 or math.prod(shape) == 0:
        raise Refusal(f"a mean over tokens of shape {shape}")
    return Read(TokenMeanSpec(shape, MeanParams.unpacked(params)))


RULE = OpRule(
    kind="mean", float_ops=("relax.mean",), onnx_ops=(), claims=claims, plan=plan, emit=emit,
    relu=True, patterns=lambda main: {"vta.token_mean": FORM.pattern()}, read=read, activations=FORM.activations,
    is_layer=is_layer, cpu_reason="its input or output is not quantised (no DequantizeLinear/QuantizeLinear around it)")
