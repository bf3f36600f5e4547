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
from tvm.relax.dpl import is_const, is_op, is_tuple, wildcard

from requantisation.relax import add_pattern, linear_pattern, rescale_pattern

from . import ops


#: Composite name -> pattern. A conv's explicit pad (its input's zero point) joins the conv.
PATTERNS = {
    "vta.max_pool": is_op("relax.nn.max_pool2d")(wildcard()),
    "vta.conv2d": linear_pattern(is_op("relax.nn.conv2d")(is_op("relax.nn.pad")(wildcard()) | wildcard(),
                                                          is_const())),
    "vta.dense": linear_pattern(is_op("relax.matmul")(wildcard(), is_const())),
    "vta.add": add_pattern(),
}


def _patterns(main) -> dict:
    """PATTERNS and a `vta.concat` per concat arity in `main`: a channel concat whose inputs
    are taken as they are or through their RESCALE block, which joins the region."""
    arities = sorted({len(b.value.args[0].fields) for block in main.body.blocks for b in block.bindings
                      if ops.op_name(b.value) == "relax.concat" and isinstance(b.value.args[0], relax.Tuple)})
    def fields(k):       # a pattern object per field: a DPL pattern matches one expression
        return is_tuple([rescale_pattern() | wildcard() for _ in range(k)])
    return {**PATTERNS, **{f"vta.concat{k}": is_op("relax.concat")(fields(k)) for k in arities}}


def refusals(main, misfit) -> dict:
    """{layer call: why it stays on the CPU} for every pattern match VTA-8 does not take.

    Computed on the function before partitioning, with the same `ops.check` (and `misfit`, as
    in `partition`) the partitioner uses, so the report's reasons are the partitioner's."""
    var2val = dict(relax.analysis.get_var2val(main))
    value_of = ops.value_lookup(main)
    patterns = _patterns(main).values()
    out = {}
    for block in main.body.blocks:
        for binding in block.bindings:
            root = binding.value
            if any(p.match(root, var2val) for p in patterns):
                reason = ops.check(root, value_of, misfit)
                if reason is not None:
                    out[ops.layer_call(root, value_of)] = reason
    return out


def partition(mod, misfit):
    """`mod` with each accelerator-runnable op wrapped in a `Codegen: "vta"` function.

    `misfit(spec)` says why an op's shape does not fit the accelerator (`spec.misfit` for the
    build's config), so such a layer stays on the CPU instead of failing its kernel compile."""
    main = mod["main"]

    def check(ctx) -> bool:
        return ops.check(ctx.matched_expr, ops.value_lookup(main, ctx.matched_bindings), misfit) is None

    patterns = [relax.transform.FusionPattern(name, pattern, check=check)
                for name, pattern in _patterns(main).items()]
    return relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=True)(mod)
