"""gelu: GELU as torch exports it (x * (1 + erf(x / sqrt2)) * 1/2) and quantize_static quantises
it, its four QDQ blocks fused into one ALU op (requantisation.gelu).

QDQ blocks: e = Q(erf(dq(x) / c)), a = Q(dq(e) + 1), m = Q(dq(x) * dq(a)), y = Q(dq(m) * 1/2)
            (the TorchScript exporter's order), or h = Q(dq(a) * 1/2), y = Q(dq(x) * dq(h))
            (torch.export's, "dynamo": the 1/2 first); operands of the add and the multiplies
            in either order; / c or * 1/c
            -> y = call_pure_packed("vta.gelu_int", x_q, params) (graph.ops.packed_form; the CPU
            build calls requantisation.gelu.reference, the accelerator runs schedules.vta_gelu).
            The layer is the chain's erf (the report's `gelu`); the block rewritten is the last
            multiply's quantize, so e, a and m die unless something else reads them.
Pattern:    that call
Spec:       GeluSpec(shape, GeluParams); kernel schedules.vta_gelu.gelu_kernel, elementwise
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from requantisation import gelu as rq_gelu
from requantisation.gelu import GeluChain, GeluParams
from schedules import vta_gelu
from schedules.op_kernel import OpKernel
from vta_sim.config import Config
from vta_sim.errors import CompileError

from .base import OpRule, QdqBlock, Read, Refusal
from .packed_form import PackedForm, PackedPlan
from .qdq_read import QdqGraph, dq_input, known_shape, output_scale, static_shape
from .relax_read import ValueOf

FORM = PackedForm("vta.gelu_int", lambda x, params: rq_gelu.reference(x, GeluParams.unpacked(params)))
FORM.register()


@dataclass(frozen=True)
class GeluSpec:
    shape: tuple[int, ...]
    params: GeluParams
    op: str = field(default="gelu", init=False)
    macs = 0

    def describe(self) -> str:
        return f"{'x'.join(map(str, self.shape))} ({self.params.mismatches}/256 off float)"

    def input_shapes(self) -> list[Any]:
        return [self.shape]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return None          # elementwise: cut into as many tiles as it needs

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        return vta_gelu.gelu_kernel(cfg, self.shape, self.params)

    def reference(self, x: np.ndarray) -> np.ndarray:
        return rq_gelu.reference(x, self.params)


@dataclass(frozen=True)
class Chain:
    """The four blocks of one GELU, found from its last quantize's body."""
    x_dq: Any           # dq(x) feeding the erf's divide
    divisor: float
    erf: Any            # the erf call's var: the report's layer
    e_q: Any            # the four quantize calls
    a_q: Any
    m_q: Any
    one: float
    half: float
    half_first: bool    # dynamo's order: m_q is h = Q(dq(a) * 1/2)


def _split(g: QdqGraph, call: Any) -> tuple[Any, float] | None:
    """(the other operand, the constant) of a binary call with one scalar constant operand."""
    for other, c in ((call.args[0], call.args[1]), (call.args[1], call.args[0])):
        value = g.const(c)
        if value is not None and value.size == 1:
            return other, float(value.reshape(()))
    return None


def _quantized(g: QdqGraph, e: Any) -> Any:
    """The quantize call whose output `dq(...)` `e` dequantises, or None."""
    dq = g.call(e, "relax.dequantize")
    return None if dq is None else g.call(dq.args[0], "relax.quantize")


def _same_input(g: QdqGraph, a: Any, b: Any) -> bool:
    """Are `a` and `b` dequantisations of one int8 tensor with one scale?"""
    da, db = g.call(a, "relax.dequantize"), g.call(b, "relax.dequantize")
    if da is None or db is None or not da.args[0].same_as(db.args[0]):
        return False
    sa, sb = g.const(da.args[1]), g.const(db.args[1])
    return sa is not None and sb is not None and np.array_equal(sa, sb)


def onnx_tensors(erf: Any, producers: dict[str, Any], consumers: dict[str, Any]) -> tuple[list[str] | None, str | None]:
    """(the int8 input, the int8 output) of the ONNX GELU chain an Erf node is in: the input
    behind its Div's DequantizeLinear, the output of the last Mul's QuantizeLinear
    (graph.layer_agreement compares the fused layer with onnxruntime on them)."""
    div = producers.get(erf.input[0])
    dq = div is not None and producers.get(div.input[0])
    x = dq.input[0] if dq and dq.op_type == "DequantizeLinear" else None
    name = erf.output[0]
    for op in ("QuantizeLinear", "DequantizeLinear", "Add", "QuantizeLinear", "DequantizeLinear", "Mul",
               "QuantizeLinear", "DequantizeLinear", "Mul", "QuantizeLinear"):
        users = [n for n in consumers.get(name, []) if n.op_type == op]
        if len(users) != 1:
            return ([x] if x else None), None
        name = users[0].output[0]
    return ([x] if x else None), name


def find(g: QdqGraph, body: Any) -> Chain | None:
    """The GELU chain ending in `body` (the last multiply), or None."""
    last = g.call(body, "relax.multiply")
    if last is None:
        return None
    split = _split(g, last)
    if split is None:                # dynamo's order: the last multiply is dq(x) * dq(h)
        for x_dq, h_dq in ((last.args[0], last.args[1]), (last.args[1], last.args[0])):
            h_q = _quantized(g, h_dq)
            hm = None if h_q is None else g.call(h_q.args[0], "relax.multiply")
            half = None if hm is None else _split(g, hm)
            if half is None:
                continue
            chain = _from_add(g, x_dq, half[0])
            if chain is not None:
                e_q, a_q, erf, divisor, one = chain
                return Chain(x_dq, divisor, erf, e_q, a_q, h_q, one, half[1], True)
        return None
    m_q = _quantized(g, split[0])
    mm = None if m_q is None else g.call(m_q.args[0], "relax.multiply")
    if m_q is None or mm is None:
        return None
    for x_dq, a_dq in ((mm.args[0], mm.args[1]), (mm.args[1], mm.args[0])):
        chain = _from_add(g, x_dq, a_dq)
        if chain is not None:
            e_q, a_q, erf, divisor, one = chain
            return Chain(x_dq, divisor, erf, e_q, a_q, m_q, one, split[1], False)
    return None


def _from_add(g: QdqGraph, x_dq: Any, a_dq: Any) -> tuple[Any, ...] | None:
    """(e's quantize, a's quantize, the erf's var, the divisor, the 1) where `a_dq` is
    dq(Q(dq(Q(erf(x_dq / c))) + 1)), else None."""
    a_q = _quantized(g, a_dq)
    add = None if a_q is None else g.call(a_q.args[0], "relax.add")
    one = None if add is None else _split(g, add)
    e_q = None if one is None else _quantized(g, one[0])
    erf = None if e_q is None else g.call(e_q.args[0], "relax.erf")
    if one is None or e_q is None or erf is None:
        return None
    inner = g.call(erf.args[0], "relax.divide")
    inner = inner if inner is not None else g.call(erf.args[0], "relax.multiply")
    c = None if inner is None else g.const(inner.args[1])
    if inner is None or c is None or c.size != 1 or not _same_input(g, inner.args[0], x_dq):
        return None
    value = float(c.reshape(()))
    divisor = value if inner.op.name == "relax.divide" else 1 / value
    return e_q, a_q, e_q.args[0], divisor, one[1]


def claims(g: QdqGraph, body: Any) -> Any:
    chain = find(g, body)
    return None if chain is None else chain.erf


def plan(g: QdqGraph, block: QdqBlock) -> PackedPlan:
    chain = find(g, block.body)
    if chain is None:
        raise Refusal("not torch's GELU chain")
    if block.relu is not None:
        raise Refusal("a ReLU after a GELU is not folded")
    x, scale_x, zero_x, _ = dq_input(g, chain.x_dq, "input", zero_point_ok=True, uint8_ok=True)
    (s_e, z_e), (s_a, z_a), (s_m, z_m) = (output_scale(g, q) for q in (chain.e_q, chain.a_q, chain.m_q))
    s_y, z_y = output_scale(g, block.q)
    for q in (chain.e_q, chain.a_q, chain.m_q):
        if q.attrs.out_dtype != "int8":
            raise Refusal(f"a {q.attrs.out_dtype} step inside the GELU chain: its int8 form is computed here")
    try:
        params = rq_gelu.choose(GeluChain(scale_x, zero_x, chain.divisor, s_e, z_e, chain.one, s_a, z_a, s_m, z_m,
                                          chain.half, s_y, z_y, chain.half_first))
    except CompileError as exc:
        raise Refusal(str(exc)) from None
    return PackedPlan(x, params, known_shape(chain.x_dq))


def read(root: Any, value_of: ValueOf) -> Read:
    x, params = FORM.read(root, value_of)
    return Read(GeluSpec(static_shape(x), GeluParams.unpacked(params)))


RULE = OpRule(
    kind="gelu", float_ops=("relax.erf",), onnx_ops=("Erf",), onnx_tensors=onnx_tensors, claims=claims, plan=plan,
    emit=FORM.emit_plan, patterns=lambda main: {"vta.gelu": FORM.pattern()}, read=read,
    activations=FORM.activations,
    cpu_reason="an erf outside torch's quantised GELU chain (Div, Erf, Add 1, then Mul x and Mul 1/2 in either order)")
