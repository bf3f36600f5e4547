"""softmax: the quantised softmax over the last axis on the ALU (requantisation.softmax).

QDQ block:  quantize(softmax(dq(x), axis=-1))  ->  call_pure_packed("vta.softmax_int", x_q, params)
            (graph.ops.packed_form: params the SoftmaxParams as one int64 constant; the CPU
            build calls requantisation.softmax.reference, the accelerator runs
            schedules.vta_softmax). The input's zero point cancels (max(q) - q); an int8 output.
Pattern:    that call
Spec:       SoftmaxSpec(shape, SoftmaxParams); kernel schedules.vta_softmax.softmax_kernel over
            the rows of the leading dims
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from requantisation import softmax as rq_softmax
from requantisation.softmax import SoftmaxParams
from schedules import vta_softmax
from schedules.op_kernel import OpKernel
from vta_sim.config import Config
from vta_sim.errors import CompileError

from .base import OpRule, QdqBlock, Read, Refusal
from .host_padding import viewed
from .packed_form import PackedForm, PackedPlan, RowSpec
from .qdq_read import QdqGraph, dq_input, known_shape, output_scale, single_use, static_shape
from .relax_read import ValueOf

FORM = PackedForm("vta.softmax_int", lambda x, params: rq_softmax.reference(x, SoftmaxParams.unpacked(params)))
FORM.register()


@dataclass(frozen=True)
class SoftmaxSpec(RowSpec):
    params: SoftmaxParams
    op: str = field(default="softmax", init=False)

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return vta_softmax.misfit(cfg, self.shape[-1])

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        flat = (self.rows, self.shape[-1])
        return viewed(vta_softmax.softmax_kernel(cfg, self.rows, self.params), [flat], self.shape)

    def reference(self, x: np.ndarray) -> np.ndarray:
        return rq_softmax.reference(x, self.params)


def claims(g: QdqGraph, body: Any) -> Any:
    return body if g.call(body, "relax.nn.softmax") is not None else None


def plan(g: QdqGraph, block: QdqBlock) -> PackedPlan:
    call = block.inner
    single_use(g, block.body, block.relu)
    if block.relu is not None:
        raise Refusal("a ReLU after a softmax (it changes nothing) is not folded")
    x, scale_in, _, _ = dq_input(g, call.args[0], "input", zero_point_ok=True, uint8_ok=True)
    shape = known_shape(call.args[0])
    axis = int(call.attrs.axis)
    if axis not in (-1, len(shape) - 1):
        raise Refusal(f"a softmax over axis {axis} of a {len(shape)}-d tensor: the accelerator's runs over the "
                      "last axis")
    scale_out, zero_out = output_scale(g, block.q)
    try:
        params = rq_softmax.choose(scale_in, scale_out, zero_out, shape[-1])
    except CompileError as exc:
        raise Refusal(str(exc)) from None
    return PackedPlan(x, params, shape)


def read(root: Any, value_of: ValueOf) -> Read:
    x, params = FORM.read(root, value_of)
    return Read(SoftmaxSpec(static_shape(x), SoftmaxParams.unpacked(params)))


RULE = OpRule(
    kind="softmax", float_ops=("relax.nn.softmax",), onnx_ops=("Softmax",), claims=claims, plan=plan,
    emit=FORM.emit_plan, patterns=lambda main: {"vta.softmax": FORM.pattern()}, read=read,
    activations=FORM.activations,
    cpu_reason="its input or output is not quantised (no DequantizeLinear/QuantizeLinear around it)")
