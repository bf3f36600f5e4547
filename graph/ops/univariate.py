"""tanh, sigmoid, ONNX's Gelu (gelu_erf, and gelu_tanh for approximate="tanh"): a quantised
function of one int8 tensor on the ALU as its exact sum of ramps (requantisation.univariate).
torch's Erf chain of four quantised steps is graph.ops.gelu; a single Gelu node has one
rounding, so it is a function of one int8 input like any other.

QDQ block:  quantize(f(dq(x)))  ->  call_pure_packed("vta.tanh_int" | "vta.sigmoid_int" | ..., x_q, params)
            (graph.ops.packed_form: params the RampParams as one int64 constant, the function
            among them; the CPU build calls requantisation.univariate.reference, the
            accelerator runs schedules.vta_univariate). The ramps equal onnxruntime's QDQ
            block on all 256 inputs.
Pattern:    that call
Spec:       UnivariateSpec(shape, RampParams); kernel schedules.vta_univariate.univariate_kernel
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from requantisation import univariate as rq_uv
from requantisation.univariate import RampParams
from schedules import vta_univariate
from schedules.op_kernel import OpKernel
from vta_sim.config import Config
from vta_sim.errors import CompileError

from .base import OpRule, QdqBlock, Read, Refusal, claims_op
from .packed_form import PackedForm, PackedPlan
from .qdq_read import QdqGraph, dq_input, known_shape, output_scale, single_use, static_shape
from .relax_read import ValueOf

FORMS = {name: PackedForm(f"vta.{name}_int", lambda x, params: rq_uv.reference(x, RampParams.unpacked(params)))
         for name in rq_uv.FUNCTIONS}
for _form in FORMS.values():
    _form.register()


@dataclass(frozen=True)
class UnivariateSpec:
    shape: tuple[int, ...]
    params: RampParams
    macs = 0

    @property
    def op(self) -> str:
        return self.params.name

    def describe(self) -> str:
        return f"{'x'.join(map(str, self.shape))} ({self.params.segments} ramps)"

    def input_shapes(self) -> list[Any]:
        return [self.shape]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        if vta_univariate.tile_entries(cfg, self.params) < 1:
            return f"{self.params.segments} ramps leave no ACC for a tile"
        return None

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        return vta_univariate.univariate_kernel(cfg, self.shape, self.params)

    def reference(self, x: np.ndarray) -> np.ndarray:
        return rq_uv.reference(x, self.params)


def _plan(name: str) -> Callable[[QdqGraph, QdqBlock], PackedPlan]:
    def plan(g: QdqGraph, block: QdqBlock) -> PackedPlan:
        single_use(g, block.body)
        x, scale_x, zero_x, _ = dq_input(g, block.inner.args[0], "input", zero_point_ok=True, uint8_ok=True)
        scale_y, zero_y = output_scale(g, block.q)
        try:
            params = rq_uv.choose(name, scale_x, zero_x, scale_y, zero_y)
        except CompileError as exc:
            raise Refusal(str(exc)) from None
        return PackedPlan(x, params, tuple(known_shape(block.inner.args[0])))
    return plan


def _read(form: PackedForm) -> Callable[[Any, ValueOf], Read]:
    def read(root: Any, value_of: ValueOf) -> Read:
        x, params = form.read(root, value_of)
        return Read(UnivariateSpec(tuple(static_shape(x)), RampParams.unpacked(params)))
    return read


def _rule(name: str, onnx_op: str, relax_op: str) -> OpRule:
    form = FORMS[name]
    return OpRule(kind=name, float_ops=(relax_op,), onnx_ops=(onnx_op,), claims=claims_op(relax_op),
                  plan=_plan(name), emit=form.emit_plan, patterns=lambda main: {f"vta.{name}": form.pattern()},
                  read=_read(form), activations=form.activations,
                  cpu_reason="its input or output is not quantised (no DequantizeLinear/QuantizeLinear around it)")


#: ONNX Gelu names both GELUs; graph.layer_agreement tells them apart by its `approximate`.
RULES = (_rule("tanh", "Tanh", "relax.tanh"), _rule("sigmoid", "Sigmoid", "relax.sigmoid"),
         _rule("gelu_erf", "Gelu", "relax.nn.gelu"), _rule("gelu_tanh", "Gelu", "relax.nn.gelu_tanh"))
