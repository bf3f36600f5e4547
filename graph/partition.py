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


def _round_shift(p):
    """fixed_point.round_shift after `p`: pre-shift, (the parity of ties to even,) round, shift,
    + zp (graph.qdq._round_shift)."""
    u = is_op("relax.right_shift")(p, is_const())
    q = is_op("relax.right_shift")(u, is_const())
    half = is_op("relax.left_shift")(is_op("relax.right_shift")(q, is_const()), is_const())
    even = is_op("relax.add")(u, is_op("relax.add")(q, is_op("relax.multiply")(half, is_const())))
    rounded = is_op("relax.add")(u | even, is_const())
    return is_op("relax.add")(is_op("relax.right_shift")(rounded, is_const()), is_const())


def _stored(value):
    return is_op("relax.astype")(is_op("relax.clip")(value, wildcard(), wildcard()))


def _requant(acc):
    """graph.qdq's requantisations after `acc` (see graph.ops._requant_chain): the power-of-two
    shift, or the fixed-point sequence."""
    biased = is_op("relax.add")(acc, is_const())
    pow2 = is_op("relax.right_shift")(biased, is_const())
    a = is_op("relax.minimum")(is_op("relax.maximum")(biased, is_const()), is_const())
    low = is_op("relax.right_shift")(is_op("relax.multiply")(a, is_const()), is_const())
    p = is_op("relax.add")(is_op("relax.multiply")(a, is_const()), low)
    return _stored(pow2 | _round_shift(p))


def _widened():
    return is_op("relax.left_shift")(is_op("relax.astype")(wildcard()), is_const())


def _scaled_term():
    """(x - zero point) * multiplier of one operand of the scaled add."""
    return is_op("relax.multiply")(is_op("relax.add")(is_op("relax.astype")(wildcard()), is_const()), is_const())


#: Composite name -> pattern. A conv's explicit pad (its input's zero point) joins the conv.
PATTERNS = {
    "vta.max_pool": is_op("relax.nn.max_pool2d")(wildcard()),
    "vta.conv2d": _requant(is_op("relax.nn.conv2d")(is_op("relax.nn.pad")(wildcard()) | wildcard(),
                                                    is_const())),
    "vta.dense": _requant(is_op("relax.matmul")(wildcard(), is_const())),
    "vta.add": _requant(is_op("relax.add")(_widened(), _widened()))
               | _stored(_round_shift(is_op("relax.add")(_scaled_term(), _scaled_term()))),
}


def refusals(main, misfit) -> dict:
    """{layer call: why it stays on the CPU} for every pattern match VTA-8 does not take.

    Computed on the function before partitioning, with the same `ops.check` (and `misfit`, as
    in `partition`) the partitioner uses, so the report's reasons are the partitioner's."""
    var2val = dict(relax.analysis.get_var2val(main))
    value_of = ops.value_lookup(main)
    out = {}
    for block in main.body.blocks:
        for binding in block.bindings:
            root = binding.value
            if any(p.match(root, var2val) for p in PATTERNS.values()):
                reason = ops.check(root, value_of, misfit)
                if reason is not None:
                    out[ops.layer_call(root, value_of)] = reason
    return out


def partition(mod, misfit):
    """`mod` with each accelerator-runnable op wrapped in a `Codegen: "vta"` function.

    `misfit(spec)` says why an op's shape does not fit the accelerator (graph.kernels.misfit for
    the build's config), so such a layer stays on the CPU instead of failing its kernel compile."""
    main = mod["main"]

    def check(ctx) -> bool:
        return ops.check(ctx.matched_expr, ops.value_lookup(main, ctx.matched_bindings), misfit) is None

    patterns = [relax.transform.FusionPattern(name, pattern, check=check)
                for name, pattern in PATTERNS.items()]
    return relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=True)(mod)
