"""The QDQ pass: QuantizeLinear/DequantizeLinear around float ops -> integer ops.

TVM's ONNX frontend imports a QDQ model as `quantize(op(dequantize(x_q), dequantize(W_q)) + b)`
in float. Wherever the scales allow the accelerator's requantisation, this pass rewrites the
block into the integer graph the accelerator runs and the CPU build reproduces bit for bit.
What each op's block becomes is its rule's (graph/ops/<op>.py: `plan` decides, `emit` writes);
this pass only walks the function and asks the registry:

1. every `quantize(relu?(body))` binding: the rule that claims `body` plans it, or says why not;
2. every layer of the float graph, in order, gets a `Decision` (its id, name, whether it became
   integer ops, the reason if not, its MACs);
3. the rewrite emits each plan's integer block, and stamps the call each layer ends in (the
   integer block's last call, or the float call left on the CPU) with the layer's id and kind
   (graph.ops.base.stamp), which the partitioner, the codegen and the report read.

Anything a rule refuses (a weight zero point, an average pool whose divisor changes at the
border, an op with no integer form) stays in float on the CPU, and its `Decision` says why.
"""
from __future__ import annotations

from typing import Any

import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator

from . import ops
from .errors import GraphError
from .ops.base import Decision, LayerStamp, OpRule, QdqBlock, Refusal, op_name, stamp
from .ops.qdq_read import QdqGraph, bindings

__all__ = ["Decision", "lower_qdq", "plan"]

NOT_QUANTISED = "not quantised: no QuantizeLinear/DequantizeLinear around it"


def _out_dtype_refusal(rule: OpRule, dtype: str) -> None:
    if dtype not in (("int8", "uint8") if rule.uint8_out else ("int8",)):
        raise Refusal(f"its output is {dtype}; this op writes int8 on the accelerator"
                      + (" (uint8 is mapped for conv2d and dense only)" if dtype == "uint8" else ""))


def plan(func: relax.Function) -> tuple[dict, list, dict]:
    """({quantize var: (rule, plan, layer var)}, decisions in graph order, {layer var: Decision})."""
    g = QdqGraph(func)
    plans: dict = {}
    outcome: dict = {}           # layer var -> None (integer) or why it stays in float
    quantised: set = set()       # vars a quantize reads: no rule claimed them, but they are quantised
    rearranged: set = set()      # vars a rule of no report layer (graph.ops.rearrange) lowered
    for binding in bindings(func):
        q = binding.value
        if op_name(q) != "relax.quantize":
            continue
        quantised.add(q.args[0])
        body, relu = q.args[0], None
        if g.call(body, "relax.nn.relu") is not None:
            relu, body = body, g.val(body).args[0]
        found = ops.block_rule(g, body)
        if found is None or (relu is not None and not found[0].relu):
            continue
        rule, layer = found
        try:
            _out_dtype_refusal(rule, q.attrs.out_dtype)
            plans[binding.var] = (rule, rule.plan(g, QdqBlock(binding.var, q, body, relu, g.val(body), layer)),
                                  layer)
            outcome[layer] = None
            if not rule.layer:
                rearranged.add(layer)
        except Refusal as why:
            if rule.layer:
                outcome[layer] = str(why)
    decisions, by_var, counts = [], {}, {}
    for binding in bindings(func):
        rule = ops.layer_rule(g, binding.value)
        if rule is None or binding.var in rearranged:
            continue
        index = counts[rule.kind] = counts.get(rule.kind, 0) + 1
        if binding.var in outcome:
            reason = outcome[binding.var]
        else:
            reason = NOT_QUANTISED if rule.plan is not None and binding.var not in quantised else rule.cpu_reason
        decision = Decision(len(decisions), f"{rule.kind}{index}", rule.kind, reason is None, reason,
                            rule.macs(binding.value))
        decisions.append(decision)
        by_var[binding.var] = decision
    return plans, decisions, by_var


class _Emitter:
    """What an op's `emit` writes with: the rewriter's builder, and the layer's stamp."""

    def __init__(self, rewriter: Any, layer: LayerStamp | None):
        self.rewriter, self.layer = rewriter, layer

    def visit(self, expr: relax.Expr) -> relax.Expr:
        return self.rewriter.visit_expr(expr)

    def emit(self, expr: relax.Expr) -> relax.Var:
        return self.rewriter.builder_.emit(expr)

    def root(self, call: relax.Expr) -> relax.Var:
        return self.emit(call if self.layer is None else stamp(call, self.layer))


@mutator
class _Rewriter(PyExprMutator):
    """Emits each planned quantize binding's integer replacement, stamps each float layer; the
    rest is copied."""

    def __init__(self, mod: tvm.IRModule, plans: dict, layers: dict):
        super().__init__(mod)
        self.plans, self.layers = plans, layers

    def _stamp(self, layer_var: Any) -> LayerStamp | None:
        d = self.layers.get(layer_var)
        return None if d is None else LayerStamp(d.id, d.op)

    def visit_var_binding_(self, binding: relax.VarBinding) -> None:
        planned = self.plans.get(binding.var)
        if planned is not None:
            rule, p, layer_var = planned
            self.set_var_remap(binding.var, self._bind(binding, rule.emit(_Emitter(self, self._stamp(layer_var)), p)))
            return
        d = self.layers.get(binding.var)
        if d is None or d.integer:       # an integer layer's float call is dead once its block is emitted
            return super().visit_var_binding_(binding)
        value = self.visit_expr(binding.value)
        self.set_var_remap(binding.var, self._bind(binding, stamp(value, LayerStamp(d.id, d.op))))

    def _bind(self, binding: relax.VarBinding, expr: relax.Expr) -> relax.Var:
        """`expr` bound in the binding's place (an output of the dataflow block stays one)."""
        output = self.builder_.current_block_is_dataflow() and not isinstance(binding.var, relax.DataflowVar)
        if isinstance(expr, relax.Var) and not output:
            return expr
        return self.builder_.emit_output(expr) if output else self.builder_.emit(expr)


def lower_qdq(mod: tvm.IRModule) -> tuple:
    """(integer IRModule, decisions): the QDQ blocks of `mod["main"]` as integer ops, every layer
    stamped (graph.ops.base.stamp)."""
    if not any(gv.name_hint == "main" for gv in mod.get_global_vars()):
        raise GraphError("the module has no main function")
    plans, decisions, layers = plan(mod["main"])
    rewriter = _Rewriter(mod, plans, layers)
    func = rewriter.visit_expr(mod["main"])
    out = rewriter.builder_.get()    # main's callees kept: the frontend's TE functions (pad, maximum, ...)
    out["main"] = func
    out = relax.transform.DeadCodeElimination(["main"])(out)
    return out, decisions
