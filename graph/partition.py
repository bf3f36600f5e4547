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


#: Composite name -> pattern, in matching order. The max-pool comes first: its check looks at
#: its producer (a ReLU makes zero padding exact), which must not be fused away yet.
PATTERNS = {
    "vta.max_pool": is_op("relax.nn.max_pool2d")(wildcard()),
    "vta.conv2d": _requant(is_op("relax.nn.conv2d")(wildcard(), is_const())),
    "vta.dense": _requant(is_op("relax.matmul")(wildcard(), is_const())),
    "vta.add": _requant(is_op("relax.add")(_widened(), _widened())),
}


def refusals(main) -> dict:
    """{layer call: why it stays on the CPU} for every pattern match VTA-8 does not take.

    Computed on the function before partitioning, with the same `ops.check` the partitioner
    uses, so the report's reasons are the partitioner's."""
    var2val = dict(relax.analysis.get_var2val(main))
    value_of = lambda e: var2val.get(e, e) if isinstance(e, relax.Var) else e  # noqa: E731
    out = {}
    for block in main.body.blocks:
        for binding in block.bindings:
            root = binding.value
            if any(p.match(root, var2val) for p in PATTERNS.values()):
                reason = ops.check(root, value_of)
                if reason is not None:
                    out[ops.layer_call(root, value_of)] = reason
    return out


def partition(mod):
    """`mod` with each accelerator-runnable op wrapped in a `Codegen: "vta"` function."""
    var2val = dict(relax.analysis.get_var2val(mod["main"]))

    def check(ctx) -> bool:
        def value_of(e):
            if isinstance(e, relax.Var):
                return ctx.matched_bindings.get(e, var2val.get(e, e))
            return e
        return ops.check(ctx.matched_expr, value_of) is None

    patterns = [relax.transform.FusionPattern(name, pattern, check=check)
                for name, pattern in PATTERNS.items()]
    return relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=True)(mod)
