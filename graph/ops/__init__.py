"""The graph level's ops, one module each, and the registry the passes ask.

Every op is an `OpRule` (graph.ops.base) defined in its own module: its QDQ rule (`plan` and
`emit`, side by side), its partition pattern, its reader into a typed `AcceleratorOp` spec
(which owns its kernel, reference, MACs and name), and its reason for staying on the CPU. The
QDQ pass (graph.qdq), the partitioner (graph.partition), the codegen and the report only walk
the graph and ask this registry; none of them names an op.

Adding an accelerator op is adding a module here (and its kernel in `schedules/` where it needs
a new one) and its `RULE` to `RULES`.

Order matters where two rules could claim one QDQ block or one Relax op: conv2d and dense claim
their bias add before `add` sees it; `matmul` (two activations) is asked before `dense` (a
constant weight) about a matmul.
"""
from __future__ import annotations

from typing import Any

from . import (add, avg_pool, concat, conv2d, cpu_only, dense, gelu, layer_norm, matmul, max_pool, other_ranks, rearrange, scale,
               softmax, token_mean, univariate)
from .base import Decision, LayerStamp, OpRule, Pow2Quantised, Read, Refusal, Unsupported, op_name, stamp, stamp_of
from .qdq_read import QdqGraph, bindings

RULES: tuple[OpRule, ...] = (conv2d.RULE, matmul.RULE, dense.RULE, token_mean.RULE, avg_pool.RULE, max_pool.RULE, add.RULE, concat.RULE,
                             softmax.RULE, layer_norm.RULE, gelu.RULE, *univariate.RULES,
                             *rearrange.RULES, scale.RULE, *cpu_only.RULES, *other_ranks.RULES)
BY_KIND: dict[str, OpRule] = {r.kind: r for r in RULES}

__all__ = ["RULES", "BY_KIND", "Decision", "LayerStamp", "OpRule", "Read", "Refusal", "Unsupported", "stamp", "stamp_of",
           "block_rule", "layer_rule", "onnx_kinds", "frontend_refusal", "pow2_quantised",
           "Pow2Quantised"]


def block_rule(g: QdqGraph, body: Any) -> tuple[OpRule, Any] | None:
    """(rule, the layer's var) of the first rule with a QDQ form that claims `quantize(body)`."""
    for rule in RULES:
        if rule.claims is not None:
            layer = rule.claims(g, body)
            if layer is not None:
                return rule, layer
    return None


def layer_rule(g: QdqGraph, call: Any) -> OpRule | None:
    """The rule whose report layer `call` (a call of the float graph) is, if any."""
    name = op_name(call)
    return next((r for r in RULES if r.layer and name in r.float_ops and r.is_layer(g, call)), None)


def frontend_refusal(main: Any) -> str | None:
    """Why TVM cannot compile a call of `main` its ONNX frontend imported (None: nothing)."""
    for binding in bindings(main):
        name = op_name(binding.value)
        for rule in RULES:
            if rule.frontend_refusal is not None and name in rule.float_ops:
                reason = rule.frontend_refusal(binding.value)
                if reason is not None:
                    return reason
    return None


def pow2_quantised() -> dict[str, Pow2Quantised]:
    """ONNX op type -> how graph.quantize's power-of-two quantiser wraps it."""
    return {t: q for r in RULES for t, q in r.pow2.items()}


def onnx_kinds() -> dict[str, str]:
    """ONNX op type -> the kind of the layer it becomes."""
    return {t: r.kind for r in RULES for t in r.onnx_ops}
