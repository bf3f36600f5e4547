"""Partition an integer Relax module between VTA-8 and the CPU with Relax's BYOC machinery.

`read_layers` reads every stamped layer of the integer graph once, with its rule's reader
(graph/ops/<op>.py): a typed spec and its constants (`Read`), or the reason VTA-8 does not take
it (an attribute, a shape that does not fit the config: `misfit`). `partition` then runs
`FuseOpsByPattern(annotate_codegen=True)` with every rule's patterns, each match taken only
where its stamp names a layer of that rule that was read; every match becomes a function with
the `Codegen: "vta"` attribute, which `RunCodegen` hands to `relax.ext.vta` (graph.codegen) with
the reads, so no spec is read twice.

Each match stays its own region rather than being merged with its neighbours by
MergeCompositeFunctions: every region is one accelerator program with its own DRAM image, so
merging would buy nothing and would hide the per-layer cycle counts the report shows.
"""
from __future__ import annotations

from typing import Any, Callable

import tvm
from tvm import relax
from tvm.relax.expr_functor import PyExprMutator, mutator

from vta_sim.errors import CompileError

from . import ops
from .errors import GraphError
from .ops.qdq_read import bindings
from .ops.relax_read import value_lookup

Misfit = Callable[[Any], "str | None"]


def read_layers(main: relax.Function, misfit: Misfit) -> dict:
    """{layer id: Read, or why VTA-8 does not take it} for every stamped layer call of `main`
    whose rule has a reader; `misfit(spec)` says why a readable op does not fit the build."""
    value_of = value_lookup(main)
    out: dict = {}
    for binding in bindings(main):
        layer = ops.stamp_of(binding.value)
        rule = ops.BY_KIND.get(layer.kind) if layer is not None else None
        if rule is None or rule.read is None:
            continue
        try:
            read = rule.read(binding.value, value_of)
            out[layer.id] = misfit(read.spec) or read
        except CompileError as exc:      # an attribute or requantisation range VTA-8 does not take
            out[layer.id] = str(exc)
    return out


def partition(mod: Any, reads: dict) -> Any:
    """`mod` with each layer `reads` holds a `Read` for wrapped in a `Codegen: "vta"` function."""
    main = mod["main"]

    def taken(kind: str) -> Callable[[Any], bool]:
        def check(ctx: Any) -> bool:
            layer = ops.stamp_of(ctx.matched_expr)
            return layer is not None and layer.kind == kind and isinstance(reads.get(layer.id), ops.Read)
        return check

    patterns = [relax.transform.FusionPattern(name, pattern, check=taken(rule.kind))
                for rule in ops.RULES if rule.patterns is not None
                for name, pattern in rule.patterns(main).items()]
    parted = relax.transform.FuseOpsByPattern(patterns, bind_constants=True, annotate_codegen=True)(mod)
    return _one_function_per_layer(parted, reads)


#: The attribute naming the layer a `Codegen: "vta"` function runs.
LAYER_ATTR = "vta.layer"


def _one_function_per_layer(mod: Any, reads: dict) -> Any:
    """`mod` with a `Codegen: "vta"` function of its own for every offloaded layer, carrying
    the layer's id (`LAYER_ATTR`).

    FuseOpsByPattern makes one function of structurally equal matches (two residual adds of one
    shape and one requantisation), and spans are not part of structural equality, so such a
    function carries only the first layer's stamp. Matches replace their layers in place, in
    graph order: the calls of `main`, in order, are the read layers whose stamps left `main`,
    in order. Each call gets a copy of its function named for its layer (the spec is the same:
    that is why they were one)."""
    main = mod["main"]
    left = {s.id for b in bindings(main) if (s := ops.stamp_of(b.value)) is not None}
    offloaded = iter([i for i, r in reads.items() if isinstance(r, ops.Read) and i not in left])
    functions = {gv: f for gv, f in mod.functions_items()}

    @mutator
    class PerLayer(PyExprMutator):
        def visit_call_(self, call: relax.Call) -> relax.Expr:
            func = functions.get(call.op) if isinstance(call.op, relax.GlobalVar) else None
            if func is None or not func.attrs or func.attrs.get("Codegen") != "vta":
                return super().visit_call_(call)
            layer = next(offloaded)
            name = f"{call.op.name_hint}_layer{layer}"
            copy = func.with_attr(LAYER_ATTR, layer).with_attr("global_symbol", name)
            return relax.Call(self.builder_.add_func(copy, name), [self.visit_expr(a) for a in call.args],
                              call.attrs, call.ty_args)

    rewriter = PerLayer(mod)
    new_main = rewriter.visit_expr(main)
    if next(offloaded, None) is not None:
        raise GraphError("FuseOpsByPattern left fewer accelerator calls than layers it took")
    built = rewriter.builder_.get()
    kept = {gv: f for gv, f in built.functions_items()
            if not (isinstance(f, relax.Function) and f.attrs and f.attrs.get("Codegen") == "vta"
                    and LAYER_ATTR not in f.attrs)}         # the shared originals: no call is left
    kept[built.get_global_var("main")] = new_main
    return tvm.IRModule(kept, attrs=built.attrs)
