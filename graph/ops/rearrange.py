"""Blocks that only move or keep elements: a Reshape (Flatten before a classifier) between a
DequantizeLinear and a QuantizeLinear of the same scale runs on the int8 tensor; a bare
dequantize -> quantize pair of one scale is dropped. Neither is a layer of the report."""
from __future__ import annotations

from . import same_scale
from .base import OpRule, claims_op

RULES = (
    OpRule(kind="reshape", float_ops=("relax.reshape",), claims=claims_op("relax.reshape"),
           plan=same_scale.plan, emit=same_scale.emit, layer=False),
    OpRule(kind="requantise_identity", float_ops=("relax.dequantize",),
           claims=claims_op("relax.dequantize"), plan=same_scale.plan, emit=same_scale.emit,
           layer=False),
)
