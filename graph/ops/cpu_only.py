"""Layers with no integer form on VTA-8 yet: they stay in float on the CPU, between their QDQ
pairs, and the report says why."""
from __future__ import annotations

from typing import Any

from tvm import relax

from .base import OpRule
from .qdq_read import QdqGraph

#: Relax ops of an attention mask's arithmetic (ONNX Cast, Unsqueeze, Sub, Mul, Where, Expand).
MASK_OPS = ("relax.astype", "relax.expand_dims", "relax.subtract", "relax.multiply", "relax.where",
            "relax.broadcast_to")
#: What the walk back to the model's integer input passes through besides them.
_THROUGH = MASK_OPS + ("relax.quantize", "relax.dequantize")


def _float_out(call: Any) -> bool:
    return str(getattr(getattr(call, "ty", None), "dtype", "")).startswith("float")


def _integer_input(e: Any) -> bool:
    """Is `e` a parameter of the function (a model input) of an integer or boolean dtype?"""
    dtype = str(getattr(getattr(e, "ty", None), "dtype", ""))
    return isinstance(e, relax.Var) and (dtype.startswith(("int", "uint")) or dtype == "bool")


def from_integer_input(g: QdqGraph, call: relax.Call, depth: int = 8) -> bool:
    """Is `call` float arithmetic on an integer model input (an attention mask) through at most
    `depth` mask-arithmetic ops (and Q/DQ pairs)? Only the mask's arithmetic is a report layer;
    its integer reshapes (Unsqueeze, Expand of the int64 mask) and GELU's and the query scale's
    Mul are not."""
    if not _float_out(call):
        return False
    todo, seen = [(call, 0)], set()
    while todo:
        value, level = todo.pop()
        for arg in getattr(value, "args", ()):
            if not isinstance(arg, relax.Var) or arg in seen:
                continue
            seen.add(arg)
            bound = g.value.get(arg)
            if bound is None:
                if _integer_input(arg):
                    return True
            elif level < depth and isinstance(bound, relax.Call) and bound.op.name in _THROUGH:
                todo.append((bound, level + 1))
    return False


RULES = (
    OpRule(kind="silu", float_ops=("relax.nn.silu",),
           cpu_reason="no integer form here: x * sigmoid(x) needs exp or a table lookup"),
    OpRule(kind="gather", float_ops=("relax.take",), is_layer=lambda g, call: _float_out(call),
           cpu_reason="a lookup by index (token ids into an embedding table, a token of a sequence): the "
                      "accelerator's loads take addresses fixed when its program is built"),
    OpRule(kind="mask", float_ops=MASK_OPS, is_layer=from_integer_input,
           cpu_reason="attention-mask arithmetic on an integer model input (Cast, Sub, Mul, Where after "
                      "its Unsqueeze/Expand): float, once per sequence, no MACs"),
)
