"""Epilogues fused into the dense before them: one accelerator region and one program where the
graph had a dense, then integer work on its output.

- **The bias add.** torch exports a linear layer on tokens as MatMul and a separate Add of the
  bias, and `quantize_static` quantises both, so the bias add is a requantised add of a
  constant: integer glue on the CPU between two accelerator layers (it is not a layer of its
  own in the report: an add of a constant). Fused, it is three ALU instructions and a REQ on
  the dense's accumulator (schedules.fused_epilogue.ConstantAddStep), bit for bit the glue.
- **The GELU** whose only input is that dense's output (graph.ops.gelu's chain).

`fuse_epilogues` rewrites a partitioned, code-generated `main`: the dense's call, the glue and
the GELU's call become one call of a new region that takes the dense's inputs and returns the
last fused step's output; what they computed in between, which nothing else read, is gone
from the graph. The report keeps the dense's row (`dense5`, or `dense5+gelu1` with op
`dense+gelu` when a GELU is fused) and says what its epilogue holds (`epilogue`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tvm
from tvm import relax

from requantisation import multiply_shift
from requantisation.add import ReqSumParams
from requantisation.relax import read_add
from schedules.fused_epilogue import ConstantAddStep, GeluStep, dense_epilogue_kernel
from vta_sim.config import Config
from vta_sim.errors import CompileError

from .ops.dense import DenseSpec
from .ops.gelu import GeluSpec
from .ops.host_padding import viewed
from .ops.relax_read import Constant, extern_symbol, value_lookup

#: The op of a fused layer joins its parts' ops with this; its name joins their names.
JOIN = "+"
#: What the report's `epilogue` calls a fused bias add.
BIAS = "bias add"


@dataclass(frozen=True)
class ConstantAdd:
    """The requantised add of a constant per output channel: (y - z_y) f_y + C[channel], REQ."""
    params: ReqSumParams
    per_channel: tuple                 # C: (b - z_b) f_b per output channel, int

    def reference(self, y: np.ndarray) -> np.ndarray:
        (zero, _), (factor, _) = self.params.zeros, self.params.factors
        total = (y.astype(np.int64) - zero) * factor + np.asarray(self.per_channel, np.int64)
        return multiply_shift.requantize_ref(total, self.params.requant, np.array([self.params.m]), axis=0)


@dataclass(frozen=True)
class FusedDenseSpec:
    """A dense and the steps (ConstantAdd, GeluSpec) on its output, one kernel."""
    dense: DenseSpec
    steps: tuple
    op: str = field(init=False)

    def __post_init__(self):
        gelu = any(isinstance(s, GeluSpec) for s in self.steps)
        object.__setattr__(self, "op", f"dense{JOIN}gelu" if gelu else "dense")

    @property
    def macs(self) -> int:
        return self.dense.macs

    @property
    def epilogue(self) -> list:
        return [BIAS if isinstance(s, ConstantAdd) else s.op for s in self.steps]

    def describe(self) -> str:
        return f"{self.dense.describe()}, {', '.join(self.epilogue)}"

    def input_shapes(self) -> list[Any]:
        return self.dense.input_shapes()

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return None

    def kernel(self, cfg: Config, vthreads: int):
        s = self.dense.shape
        blocks = -(-s.n // cfg.BLOCK_OUT)
        steps = tuple(GeluStep(cfg, step.params) if isinstance(step, GeluSpec) else
                      ConstantAddStep(cfg, step.params, np.asarray(step.per_channel, np.int64), blocks)
                      for step in self.steps)
        kernel = dense_epilogue_kernel(cfg, s.m, s.k, s.n, self.dense.requant, steps, vthreads, s.row_term)
        return viewed(kernel, [(s.m, s.k)], (*self.dense.rows, s.n)) if self.dense.rows else kernel

    def reference(self, *args: np.ndarray) -> np.ndarray:
        y = self.dense.reference(*args)
        for step in self.steps:
            y = step.reference(y)
        return y


def _dense(region) -> tuple | None:
    """(its DenseSpec, steps so far) where a region is a dense (fused or not) that stores its
    output for the graph alone, else None."""
    if region is None or region.store_to is not None or region.placement is not None:
        return None
    if isinstance(region.spec, DenseSpec):
        return region.spec, ()
    if isinstance(region.spec, FusedDenseSpec) and region.spec.op == "dense":
        return region.spec.dense, region.spec.steps
    return None


def _constant(e: Any, value_of) -> np.ndarray | None:
    e = value_of(e)
    if isinstance(e, relax.Call) and len(e.args) == 1:      # a constant cast to the sum's type
        e = value_of(e.args[0])
    return np.asarray(e.value.numpy()) if isinstance(e, Constant) else None


def _bias_add(binding, value_of, regions: dict, uses: dict) -> tuple | None:
    """(dense call binding var, its region, ConstantAdd) where `binding` ends a requantised add
    of a dense's output and a constant per output channel, else None."""
    value = binding.value
    if not (isinstance(value, relax.Call) and getattr(value.ty, "dtype", None) == "int8"):
        return None
    try:
        (a, b), params, _ = read_add(value, value_of)
    except CompileError:
        return None
    if not isinstance(params, ReqSumParams) or len(params.zeros) != 2:
        return None
    region = regions.get(extern_symbol(value_of(a)))
    found = _dense(region)
    bias = _constant(b, value_of)
    if found is None or bias is None or uses.get(a) != 1:
        return None
    n = found[0].shape.n
    if bias.size != n or bias.shape[-1] != n:
        return None
    per_channel = (bias.reshape(-1).astype(np.int64) - params.zeros[1]) * params.factors[1]
    if np.abs(per_channel).max(initial=0) >= 2 ** 31:
        return None
    return a, region, ConstantAdd(params, tuple(int(v) for v in per_channel))


def _uses(main) -> dict:
    uses: dict = {}
    for block in main.body.blocks:
        for binding in block.bindings:
            for v in relax.analysis.free_vars(binding.value):
                uses[v] = uses.get(v, 0) + 1
    for v in relax.analysis.free_vars(main.body.body):
        uses[v] = uses.get(v, 0) + 1
    return uses


def fuse_epilogues(mod, regions: dict, make_region) -> Any:
    """`mod` with each dense's bias add and GELU (as the module docstring says) fused into one
    call of the region `make_region(first, last layer or None, spec)` returns (registered by
    its symbol); `regions` gains the new regions. The calls and glue they replace are left
    unused and removed."""
    changed = False
    for step in (_fuse_bias_adds, _fuse_gelus):
        mod, did = step(mod, regions, make_region)
        changed |= did
    return relax.transform.DeadCodeElimination(["main"])(mod) if changed else mod


def _replaced(mod, replace: dict):
    """`mod` with the values of the bindings of `replace` {var: new value} replaced in `main`."""
    main = mod["main"]
    blocks = []
    for block in main.body.blocks:
        new = [relax.VarBinding(b.var, replace[b.var]) if b.var in replace else b for b in block.bindings]
        blocks.append(relax.DataflowBlock(new) if isinstance(block, relax.DataflowBlock) else relax.BindingBlock(new))
    mod = tvm.IRModule(dict(mod.functions_items()), attrs=mod.attrs)
    mod["main"] = relax.Function(main.params, relax.SeqExpr(blocks, main.body.body), main.ret_ty,
                                 main.is_pure, main.attrs)
    return mod


def _fused(make_region, first, second, spec):
    """The fused region, registered by its symbol; None where its kernel cannot be built (the
    epilogue's scratch does not fit ACC beside the dense's tiles): the layers then run as the
    graph has them, which is correct, only not fused."""
    try:
        region = make_region(first, second, spec)
    except CompileError:
        return None
    tvm.register_global_func(region.symbol, region, override=True)
    return region


def _fused_call(region, dense_call, ty):
    return relax.call_dps_packed(relax.ExternFunc(region.symbol), dense_call.args[1], ty)


def _fuse_bias_adds(mod, regions: dict, make_region) -> tuple:
    main = mod["main"]
    value_of, uses, replace = value_lookup(main), _uses(main), {}
    for block in main.body.blocks:
        for binding in block.bindings:
            found = _bias_add(binding, value_of, regions, uses)
            if found is None:
                continue
            a, region, add = found
            dense, steps = _dense(region)
            fused = _fused(make_region, region, None, FusedDenseSpec(dense, (*steps, add)))
            if fused is None:
                continue
            regions[fused.symbol] = fused
            replace[binding.var] = _fused_call(fused, value_of(a), binding.value.ty)
    return (_replaced(mod, replace), True) if replace else (mod, False)


def _fuse_gelus(mod, regions: dict, make_region) -> tuple:
    main = mod["main"]
    value_of, uses, replace = value_lookup(main), _uses(main), {}
    for block in main.body.blocks:
        for binding in block.bindings:
            second = regions.get(extern_symbol(binding.value))
            if second is None or not isinstance(second.spec, GeluSpec):
                continue
            x = [f for f in binding.value.args[1].fields if isinstance(f, relax.Var)]
            if len(x) != 1 or uses.get(x[0]) != 1:
                continue
            first = regions.get(extern_symbol(value_of(x[0])))
            found = _dense(first)
            if found is None:
                continue
            dense, steps = found
            n = dense.shape.n
            if int(np.prod(second.spec.shape)) != dense.shape.m * n or second.spec.shape[-1] != n:
                continue
            fused = _fused(make_region, first, second, FusedDenseSpec(dense, (*steps, second.spec)))
            if fused is None:
                continue
            regions[fused.symbol] = fused
            replace[binding.var] = _fused_call(fused, value_of(x[0]), binding.value.ty)
    return (_replaced(mod, replace), True) if replace else (mod, False)
