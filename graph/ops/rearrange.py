"""Blocks that only move or keep elements: a Reshape (Flatten before a classifier), a Transpose
(attention's head split and merge) or a Gather
at constant indices (a transformer's [CLS] token: a slice) between a DequantizeLinear and a
QuantizeLinear of the same scale runs on the int8 tensor; a bare dequantize -> quantize pair of
one scale is dropped. None is a layer of the report (graph.qdq leaves the blocks these rules
lower out of it; a Gather whose scales differ stays a `gather` row on the CPU with its reason)."""
from __future__ import annotations

from typing import Any

from . import same_scale
from .base import OpRule, claims_op
from .qdq_read import QdqGraph


def _constant_index(g: QdqGraph, body: Any) -> Any:
    """A take of a quantised activation at constant indices (a slice), not a lookup by ids."""
    call = g.call(body, "relax.take")
    if call is None or g.const(call.args[1]) is None or not g.quantised_activation(call.args[0]):
        return None
    return body


RULES = (
    OpRule(kind="reshape", float_ops=("relax.reshape",), claims=claims_op("relax.reshape"),
           plan=same_scale.plan, emit=same_scale.emit, layer=False),
    OpRule(kind="transpose", float_ops=("relax.permute_dims",), claims=claims_op("relax.permute_dims"),
           plan=same_scale.plan, emit=same_scale.emit, layer=False),
    OpRule(kind="slice", float_ops=("relax.take",), claims=_constant_index, plan=same_scale.plan,
           emit=same_scale.emit, layer=False),
    OpRule(kind="requantise_identity", float_ops=("relax.dequantize",),
           claims=claims_op("relax.dequantize"), plan=same_scale.plan, emit=same_scale.emit,
           layer=False),
)
