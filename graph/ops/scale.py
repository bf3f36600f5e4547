"""scale: the multiply of an activation by a constant scalar (attention's 1/sqrt(d) on Q as
torch exports it) as an integer rescale instead of float arithmetic on the CPU.

QDQ block:  quantize(dq(x) * c), c a constant scalar > 0 (or a dequantised one) ->
            y = clip(round((x - z_x) m / 2^n) + z_y), the REQ form of one operand
            (requantisation.add.choose_req_sum with M = s_x c / s_y; REQ rounds as the convs'
            epilogues do, so within 1 LSB of onnxruntime's float32 arithmetic).
No layer of the report: like a bias add it is integer glue, which graph.fusion moves into the
program of the dense that made x, through the head split's Reshape and Transpose between them
(a scalar commutes with both). Where no such dense is, it runs on the CPU as integer ops.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tvm import relax

from requantisation import relax as rq_relax
from requantisation.add import ReqSumParams, choose_req_sum
from vta_sim.errors import CompileError

from .base import Emitter, OpRule, QdqBlock, Refusal
from .qdq_read import QdqGraph, dq_input, output_scale, single_use


@dataclass(frozen=True)
class ScalePlan:
    x: relax.Expr
    params: ReqSumParams


def _operands(g: QdqGraph, call: Any) -> tuple[Any, float] | None:
    """(the activation, the constant) of a multiply of a quantised activation by a scalar."""
    if call is None:
        return None
    values = [g.const(a) for a in call.args]
    if sum(v is not None for v in values) != 1:
        return None
    k = 0 if values[0] is not None else 1
    c = values[k]
    if c is None or c.size != 1 or not g.quantised_activation(call.args[1 - k]):
        return None
    return call.args[1 - k], float(c.reshape(-1)[0])


def claims(g: QdqGraph, body: Any) -> Any:
    return body if _operands(g, g.call(body, "relax.multiply")) is not None else None


def plan(g: QdqGraph, block: QdqBlock) -> ScalePlan:
    single_use(g, block.body)
    found = _operands(g, block.inner)
    assert found is not None
    arg, c = found
    x, sx, zx, _ = dq_input(g, arg, "operand", zero_point_ok=True)
    sy, zy = output_scale(g, block.q)
    if block.q.attrs.out_dtype != "int8":
        raise Refusal("a scale quantised to uint8 stays in float on the CPU")
    if not c > 0:
        raise Refusal(f"a multiply by {c:g}: the integer rescale takes a positive constant")
    try:
        return ScalePlan(x, choose_req_sum([sx * c / sy], (zx,), zy))
    except CompileError as exc:
        raise Refusal(f"its multiplier cannot be encoded: {exc}") from None


def emit(em: Emitter, p: ScalePlan) -> relax.Expr:
    form, values = rq_relax.rescale_values(p.params)
    return rq_relax.emit(form, {"a": em.visit(p.x)}, values, em.emit)


RULE = OpRule(kind="scale", float_ops=("relax.multiply",), claims=claims, plan=plan, emit=emit, layer=False)
