"""layer_norm: the quantised LayerNormalization over the last axis on the ALU
(requantisation.layer_norm).

QDQ block:  quantize(layer_norm(dq(x), gamma, beta, axes=[-1], eps))  ->
            call_pure_packed("vta.layer_norm_int", x_q, params) (graph.ops.packed_form: params
            the LayerNormParams, per-element G_i and B_i included, as one int64 constant; the CPU
            build calls requantisation.layer_norm.reference, the accelerator runs
            schedules.vta_layer_norm). gamma and beta are constants (dequantised weights or
            floats); the input's zero point cancels (D q - sum(q)); an int8 output.
Pattern:    that call
Spec:       LayerNormSpec(shape, LayerNormParams); kernel schedules.vta_layer_norm over the rows
            of the leading dims
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from requantisation import layer_norm as rq_ln
from requantisation.layer_norm import LayerNormParams
from schedules import vta_layer_norm
from schedules.op_kernel import OpKernel
from vta_sim.config import Config
from vta_sim.errors import CompileError

from .base import OpRule, QdqBlock, Read, Refusal
from .host_padding import viewed
from .packed_form import PackedForm, PackedPlan, RowSpec
from .qdq_read import QdqGraph, dq_input, known_shape, output_scale, single_use, static_shape
from .relax_read import ValueOf

FORM = PackedForm("vta.layer_norm_int", lambda x, params: rq_ln.reference(x, LayerNormParams.unpacked(params)))
FORM.register()


@dataclass(frozen=True)
class LayerNormSpec(RowSpec):
    params: LayerNormParams
    op: str = field(default="layer_norm", init=False)

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return vta_layer_norm.misfit(cfg, self.shape[-1])

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        flat = (self.rows, self.shape[-1])
        return viewed(vta_layer_norm.layer_norm_kernel(cfg, self.rows, self.params), [flat], self.shape)

    def reference(self, x: np.ndarray) -> np.ndarray:
        return rq_ln.reference(x, self.params)


def claims(g: QdqGraph, body: Any) -> Any:
    return body if g.call(body, "relax.nn.layer_norm") is not None else None


def _constant(g: QdqGraph, e: Any, what: str, length: int) -> np.ndarray:
    value = g.const(e)
    if value is None:
        raise Refusal(f"its {what} is not a constant")
    if value.size not in (1, length):
        raise Refusal(f"its {what} has {value.size} values for rows of {length}")
    return np.broadcast_to(value.reshape(-1), (length,)).astype(np.float64)


def plan(g: QdqGraph, block: QdqBlock) -> PackedPlan:
    call = block.inner
    single_use(g, block.body, block.relu)
    if block.relu is not None:
        raise Refusal("a ReLU after a layer norm is not folded")
    x, scale_x, _, _ = dq_input(g, call.args[0], "input", zero_point_ok=True, uint8_ok=True)
    shape = known_shape(call.args[0])
    axes = [int(a) % len(shape) for a in call.attrs.axes]
    if axes != [len(shape) - 1]:
        raise Refusal(f"a layer norm over axes {axes} of a {len(shape)}-d tensor: the accelerator's normalises "
                      "the last axis")
    length = shape[-1]
    gamma = _constant(g, call.args[1], "gamma", length) if call.attrs.scale else np.ones(length)
    beta = _constant(g, call.args[2], "beta", length) if call.attrs.center else np.zeros(length)
    scale_y, zero_y = output_scale(g, block.q)
    try:
        params = rq_ln.choose(scale_x, gamma, beta, float(call.attrs.epsilon), scale_y, zero_y)
    except CompileError as exc:
        raise Refusal(str(exc)) from None
    return PackedPlan(x, params, shape)


def read(root: Any, value_of: ValueOf) -> Read:
    x, params = FORM.read(root, value_of)
    return Read(LayerNormSpec(static_shape(x), LayerNormParams.unpacked(params)))


RULE = OpRule(
    kind="layer_norm", float_ops=("relax.nn.layer_norm",), onnx_ops=("LayerNormalization",), claims=claims,
    plan=plan, emit=FORM.emit_plan, patterns=lambda main: {"vta.layer_norm": FORM.pattern()}, read=read,
    activations=FORM.activations,
    cpu_reason="its input or output is not quantised (no DequantizeLinear/QuantizeLinear around it)")
