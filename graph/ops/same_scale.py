"""Ops whose QDQ block keeps its input's scale and zero point: the op runs on the int8 tensor
unchanged (max_pool2d, reshape) or the block is dropped (dequantize -> quantize)."""
from __future__ import annotations

from dataclasses import dataclass

from tvm import relax

from .base import Emitter, QdqBlock, Refusal
from .qdq_read import QdqGraph, dq_input, output_scale, single_use


@dataclass(frozen=True)
class SameScalePlan:
    x: relax.Expr            # the int8 input
    op: relax.Call | None    # the call to repeat on it (None: the block is its input)


def plan(g: QdqGraph, block: QdqBlock) -> SameScalePlan:
    """The op's input and call, where its input's scale and zero point are its output's."""
    identity = g.call(block.body, "relax.dequantize") is not None
    source = block.q.args[0] if identity else block.inner.args[0]
    x, sx, zx, _ = dq_input(g, source, "input", zero_point_ok=True)
    sy, zy = output_scale(g, block.q)
    if (sx, zx) != (sy, zy):
        raise Refusal(f"input scale/zero point {sx:g}/{zx} and output {sy:g}/{zy:g} differ")
    if identity:
        return SameScalePlan(x, None)
    single_use(g, block.q.args[0])
    return SameScalePlan(x, block.inner)


def repeated(em: Emitter, p: SameScalePlan) -> relax.Call:
    """The op's call on its int8 input."""
    assert p.op is not None
    return relax.Call(p.op.op, [em.visit(p.x)] + list(p.op.args[1:]), p.op.attrs)


def emit(em: Emitter, p: SameScalePlan) -> relax.Expr:
    return em.visit(p.x) if p.op is None else repeated(em, p)
