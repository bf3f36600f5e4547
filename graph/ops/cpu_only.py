"""Layers with no integer form on VTA-8 yet: they stay in float on the CPU, between their QDQ
pairs, and the report says why."""
from __future__ import annotations

from .base import OpRule

RULES = (
    OpRule(kind="sigmoid", float_ops=("relax.sigmoid",),
           cpu_reason="no integer form here: the ALU (MIN, MAX, ADD, SHR, MUL) has no exp or table lookup"),
    OpRule(kind="silu", float_ops=("relax.nn.silu",),
           cpu_reason="no integer form here: x * sigmoid(x) needs exp or a table lookup"),
    OpRule(kind="softmax", float_ops=("relax.nn.softmax",),
           cpu_reason="no integer form here: exp and a divide"),
)
