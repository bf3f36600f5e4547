"""Partition an integer Relax module between VTA-8 and the CPU with Relax's BYOC machinery.

`FuseOpsByPattern(PATTERNS, annotate_codegen=True)` wraps every match in a function with the
`Codegen: "vta"` attribute; `RunCodegen` hands those to `relax.ext.vta` (graph.codegen), which
compiles each once and replaces its call by `R.call_dps_packed` of the compiled region.

Each match stays its own region rather than being merged with its neighbours by
MergeCompositeFunctions: every region is one accelerator program with its own DRAM image, so
merging would buy nothing and would hide the per-layer cycle counts the report shows.
"""
from __future__ import annotations

from tvm import relax
from tvm.relax.dpl import is_const, is_op, wildcard

from . import ops


def _requant(acc):
    """astype(clip(right_shift(add(acc, bias), shift), lo, hi)): graph.qdq's requantisation."""
    x = is_op("relax.add")(acc, is_const())
    x = is_op("relax.right_shift")(x, is_const())
    x = is_op("relax.clip")(x, wildcard(), wildcard())
    return is_op("relax.astype")(x)


def _widened():
    return is_op("relax.left_shift")(is_op("relax.astype")(wildcard()), is_const())


#: Composite name -> pattern, in matching order.
PATTERNS = {
    "vta.conv2d": _requant(is_op("relax.nn.conv2d")(wildcard(), is_const())),
    "vta.dense": _requant(is_op("relax.matmul")(wildcard(), is_const())),
    "vta.add": _requant(is_op("relax.add")(_widened(), _widened())),
    "vta.max_pool": is_op("relax.nn.max_pool2d")(wildcard()),
}


def _checker(value_of, refusals: dict):
    def check(ctx) -> bool:
        root = ctx.matched_expr
        reason = ops.check(root, lambda e: value_of(e, ctx))
        if reason is not None:
            refusals[ops.layer_call(root, lambda e: value_of(e, ctx))] = reason
        return reason is None
    return check


def partition(mod, refusals: dict | None = None):
    """`mod` with each accelerator-runnable op wrapped in a `Codegen: "vta"` function.

    `refusals` (optional) collects, per layer call (`ops.layer_call`), why an op stays on the CPU."""
    refusals = {} if refusals is None else refusals
    var2val = dict(relax.analysis.get_var2val(mod["main"]))

    def value_of(e, ctx):
        if isinstance(e, relax.Var):
            return ctx.matched_bindings.get(e, var2val.get(e, e))
        return e

    check = _checker(value_of, refusals)
    patterns = [relax.transform.FusionPattern(name, pattern, check=check)
                for name, pattern in PATTERNS.items()]
    return relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=True)(mod)
