"""Layers fused into the program of the layer before them: one accelerator region and one
program where the graph had two layers, or a layer and integer work on its output.

- **A dense's bias add.** torch exports a linear layer on tokens as MatMul and a separate Add of
  the bias, and `quantize_static` quantises both, so the bias add is a requantised add of a
  constant: integer glue on the CPU between two accelerator layers (an add of a constant is no
  layer of the report). Fused, it is ALU immediates, an ADD of a per-channel entry and a REQ on
  the dense's accumulator (schedules.fused_epilogue.ConstantAddStep), bit for bit the glue.
- **A scale by a constant** (graph.ops.scale: attention's 1/sqrt(d) on Q), moved into the
  program of the dense that made its input through the Reshapes and Transposes between.
- **A GELU** whose only input is a dense's output (graph.ops.gelu's chain).
- **A softmax** after Q.K^T, and a mask's add between them: the matmul computed transposed,
  S^T = K.Q^T, so its accumulator holds the softmax's row groups (MatmulSoftmaxSpec).
- **A post-norm LayerNorm** and the residual add before it (AddLayerNormSpec), and then the
  dense before them (DenseAddLayerNormSpec): the dense computed transposed, so the LayerNorm
  runs on its accumulator (schedules.dense_layer_norm).

The bias add and the scale always move (they were CPU work); the others only where the fused
kernel takes no more cycles than the layers it replaces (`_fused`), and the report's notes say
why where it does not. `fuse_epilogues` rewrites a partitioned, code-generated `main`: the calls
and the glue become one call of a new region that takes the first layer's inputs and returns
the last one's output; what they computed in between, which nothing else read, is gone from the
graph. The report names a fused layer by its parts (`dense5+gelu1`, op `dense+gelu`) and lists a
dense's `epilogue`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tvm
from tvm import relax

from requantisation import multiply_shift
from requantisation.add import ReqSumParams
from requantisation.relax import read_add, read_rescale
from schedules import column_slice, dense_layer_norm
from schedules.fused_epilogue import ConstantAddStep, GeluStep, dense_epilogue_kernel
from schedules.vta_layer_norm import add_layer_norm_kernel
from vta_sim.config import Config
from vta_sim.errors import CompileError

from . import ops
from .ops.add import AddSpec
from .ops.dense import DenseSpec
from .ops.gelu import GeluSpec
from .ops.layer_norm import LayerNormSpec
from .ops.matmul import MatmulSpec
from .ops.qdq_read import bindings
from .ops.softmax import SoftmaxSpec
from .attention import JOIN, AttentionSpec, MatmulSoftmaxSpec
from .ops.host_padding import viewed
from .ops.relax_read import Constant, extern_symbol, value_lookup

#: What the report's `epilogue` calls a fused bias add, and a fused scale (graph.ops.scale).
BIAS, SCALE = "bias add", "scale"


@dataclass(frozen=True)
class ConstantAdd:
    """The requantised add of a constant per output channel, (y - z_y) f_y + C[channel], REQ; with
    no C (`per_channel` None) the rescale by a constant, (y - z_y) f_y, REQ (graph.ops.scale)."""
    params: ReqSumParams
    per_channel: tuple | None          # C: (b - z_b) f_b per output channel, int

    @property
    def label(self) -> str:
        return SCALE if self.per_channel is None else BIAS

    def reference(self, y: np.ndarray) -> np.ndarray:
        zero, factor = self.params.zeros[0], self.params.factors[0]
        total = (y.astype(np.int64) - zero) * factor + np.asarray(self.per_channel or 0, np.int64)
        return multiply_shift.requantize_ref(total, self.params.requant, np.array([self.params.m]), axis=0)


@dataclass(frozen=True)
class FusedDenseSpec:
    """A dense and the steps (ConstantAdd for a bias add or a scale, GeluSpec) on its output, one
    kernel; `weight_heads` > 0: its output stored as that many heads' matmul weights
    (schedules.column_slice.into_weight_blocks: attention's Q; with `transposed`, transposed by
    the GEMM core: attention's V; graph.codegen.chain_regions)."""
    dense: DenseSpec
    steps: tuple
    weight_heads: int = 0
    transposed: bool = False
    op: str = field(init=False)

    def __post_init__(self):
        gelu = any(isinstance(s, GeluSpec) for s in self.steps)
        object.__setattr__(self, "op", f"dense{JOIN}gelu" if gelu else "dense")

    @property
    def macs(self) -> int:
        return self.dense.macs

    @property
    def epilogue(self) -> list:
        return [s.label if isinstance(s, ConstantAdd) else s.op for s in self.steps]

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
                      ConstantAddStep(cfg, step.params, None if step.per_channel is None else
                                      np.asarray(step.per_channel, np.int64), blocks)
                      for step in self.steps)
        kernel = dense_epilogue_kernel(cfg, s.m, s.k, s.n, self.dense.requant, steps, vthreads, s.row_term,
                                       one_block=bool(self.weight_heads), transpose=self.transposed,
                                       weight_blocks=self.transposed)
        if self.weight_heads and self.transposed:
            kernel = dataclasses.replace(kernel, weight_heads=self.weight_heads)
        elif self.weight_heads:
            kernel = column_slice.into_weight_blocks(kernel, self.weight_heads, s.m, s.n)
        return viewed(kernel, [(s.m, s.k)], (*self.dense.rows, s.n)) if self.dense.rows else kernel

    def reference(self, *args: np.ndarray) -> np.ndarray:
        y = self.dense.reference(*args)
        for step in self.steps:
            y = step.reference(y)
        return y


@dataclass(frozen=True)
class AddLayerNormSpec:
    """A residual add (REQ sum of two operands of one shape) and the post-norm LayerNorm of its
    output, one ALU program (schedules.vta_layer_norm.add_layer_norm_kernel)."""
    add: AddSpec
    layer_norm: LayerNormSpec
    op: str = field(default=f"add{JOIN}layer_norm", init=False)
    macs = 0

    def describe(self) -> str:
        return f"{self.add.describe()}, {self.layer_norm.describe()}"

    def input_shapes(self) -> list[Any]:
        return self.add.input_shapes()

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return None

    def kernel(self, cfg: Config, vthreads: int):
        ln = self.layer_norm
        flat = (ln.rows, ln.shape[-1])
        kernel = add_layer_norm_kernel(cfg, ln.rows, ln.params, self.add.params)
        return viewed(kernel, [flat, flat], ln.shape)

    def reference(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.layer_norm.reference(self.add.reference(a, b))


@dataclass(frozen=True)
class DenseAddLayerNormSpec:
    """A dense (with its bias adds), the residual add after it and the post-norm LayerNorm, one
    program: the dense computed transposed so that the LayerNorm runs on its accumulator
    (schedules.dense_layer_norm). Inputs: the dense's, then the residual; `first`: the add's
    operand (0 or 1) the dense's output is."""
    dense: DenseSpec
    bias_adds: tuple                   # ConstantAdd, in order
    add_norm: AddLayerNormSpec
    first: int
    op: str = field(default=f"dense{JOIN}add{JOIN}layer_norm", init=False)

    @property
    def macs(self) -> int:
        return self.dense.macs

    @property
    def links(self) -> tuple:
        """Per later part (the add, the LayerNorm), its operand the part before computed."""
        return (self.first, 0)

    @property
    def epilogue(self) -> list:
        return [*(s.label for s in self.bias_adds), "add", "layer_norm"]

    def describe(self) -> str:
        return f"{self.dense.describe()}, {', '.join(self.epilogue)}"

    def input_shapes(self) -> list[Any]:
        return [*self.dense.input_shapes(), self.add_norm.input_shapes()[1 - self.first]]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return dense_layer_norm.misfit(cfg)

    def kernel(self, cfg: Config, vthreads: int):
        s, ln = self.dense.shape, self.add_norm.layer_norm
        adds = tuple((c.params, None if c.per_channel is None else np.asarray(c.per_channel, np.int64))
                     for c in self.bias_adds)
        kernel = dense_layer_norm.dense_add_layer_norm_kernel(cfg, s.m, s.k, s.n, self.dense.requant,
                                                              self.add_norm.add.params, self.first, ln.params,
                                                              adds, vthreads)
        rows = self.dense.rows or (s.m,)
        return viewed(kernel, [(s.m, s.k), (s.m, s.n)], (*rows, s.n))

    def reference(self, x: np.ndarray, residual: np.ndarray, *constants: np.ndarray) -> np.ndarray:
        y = self.dense.reference(x, *constants)
        for step in self.bias_adds:
            y = step.reference(y)
        y = y.reshape(residual.shape)
        return self.add_norm.reference(*((y, residual) if self.first == 0 else (residual, y)))


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


def _lookups(mod) -> tuple:
    """`main`, its value lookup and its readers' count per var."""
    main = mod["main"]
    return main, value_lookup(main), _uses(main)


def _uses(main) -> dict:
    uses: dict = {}
    for binding in bindings(main):
        for v in relax.analysis.free_vars(binding.value):
            uses[v] = uses.get(v, 0) + 1
    for v in relax.analysis.free_vars(main.body.body):
        uses[v] = uses.get(v, 0) + 1
    return uses


def fuse_epilogues(mod, regions: dict, make_region, declined: list | None = None) -> Any:
    """`mod` with the fusions of the module docstring made, each one call of the region
    `make_region(first, last layer or None, spec)` returns (registered by its symbol); `regions` gains the new regions. The calls and glue they replace are left
    unused and removed. `declined` gains (the layers' stamps, why) of each pair of layers
    not fused."""
    changed, declined = False, declined if declined is not None else []
    for step in (_fuse_bias_adds, _fuse_scales, _fuse_gelus, _fuse_softmaxes, _fuse_attention, _fuse_layer_norms,
                 _fuse_dense_layer_norms):
        mod, did = step(mod, regions, make_region, declined)
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


def _fused(declined, make_region, first, second, spec, middle=None):
    """The fused region, registered by its symbol; None where its kernel cannot be built (the
    epilogue's scratch does not fit ACC beside the dense's tiles) or, fusing a layer `second`,
    where it takes more cycles than the two layers' kernels: the layers then run as the graph
    has them, which is correct, only not fused. (The cycles of a program do not depend on its
    data: each kernel runs once on zeros to count them.)"""
    layers = [r for r in (first, middle, second) if r is not None]
    stamps = tuple(p for r in layers for p in (r.parts or (r.layer,)))
    try:
        region = make_region(first, second, spec)
    except CompileError as exc:
        declined.append((stamps, f"its kernel cannot be built: {exc}"))
        return None
    if middle is not None:        # a third layer between (a mask's add)
        region.parts = (*region.parts[:-1], middle.layer, region.parts[-1])
    if second is not None:
        fused, apart = _cycles(region), sum(_cycles(r) for r in layers)
        if fused > apart:
            declined.append((stamps, f"{fused:,} cycles as one program, {apart:,} as {len(layers)} layers"))
            return None
    tvm.register_global_func(region.symbol, region, override=True)
    return region


def _cycles(region) -> int:
    """The cycles of one run of a region's kernel (on zeros, with its constants)."""
    inputs = [np.zeros(shape, np.int8) for shape in region.spec.input_shapes()]
    _, result = region.kernel(*inputs, *region.constants, backend="sim")
    return int(result.cycles)


def _fused_call(region, dense_call, ty):
    return relax.call_dps_packed(relax.ExternFunc(region.symbol), dense_call.args[1], ty)


def _fuse_bias_adds(mod, regions: dict, make_region, declined: list) -> tuple:
    main, value_of, uses = _lookups(mod)
    replace: dict = {}
    for binding in bindings(main):
        found = _bias_add(binding, value_of, regions, uses)
        if found is None:
            continue
        a, region, add = found
        dense, steps = _dense(region)
        fused = _fused(declined, make_region, region, None, FusedDenseSpec(dense, (*steps, add)))
        if fused is None:
            continue
        regions[fused.symbol] = fused
        replace[binding.var] = _fused_call(fused, value_of(a), binding.value.ty)
    return (_replaced(mod, replace), True) if replace else (mod, False)


def _one_input_layers(main, regions: dict, uses: dict, kind: type):
    """(binding, region, its input var) of each call of a region whose spec is a `kind`, with
    one activation, which nothing else reads."""
    for binding in bindings(main):
        region = regions.get(extern_symbol(binding.value))
        if region is None or not isinstance(region.spec, kind):
            continue
        x = [f for f in binding.value.args[1].fields if isinstance(f, relax.Var)]
        if len(x) == 1 and uses.get(x[0]) == 1:
            yield binding, region, x[0]


def _fuse_gelus(mod, regions: dict, make_region, declined: list) -> tuple:
    main, value_of, uses = _lookups(mod)
    replace: dict = {}
    for binding, second, x in _one_input_layers(main, regions, uses, GeluSpec):
        first = regions.get(extern_symbol(value_of(x)))
        found = _dense(first)
        if found is None:
            continue
        dense, steps = found
        n = dense.shape.n
        if int(np.prod(second.spec.shape)) != dense.shape.m * n or second.spec.shape[-1] != n:
            continue
        fused = _fused(declined, make_region, first, second, FusedDenseSpec(dense, (*steps, second.spec)))
        if fused is None:
            continue
        regions[fused.symbol] = fused
        replace[binding.var] = _fused_call(fused, value_of(x), binding.value.ty)
    return (_replaced(mod, replace), True) if replace else (mod, False)


def _rearranging(value) -> bool:
    """A call that only moves a tensor's elements (the head split's Reshape and Transpose)."""
    moving = ops.BY_KIND["reshape"].float_ops + ops.BY_KIND["transpose"].float_ops
    return isinstance(value, relax.Call) and getattr(value.op, "name", "") in moving


def _fuse_scales(mod, regions: dict, make_region, declined: list) -> tuple:
    """A rescale by a constant (graph.ops.scale) of a dense's output, seen through Reshapes and
    Transposes of it (a scalar commutes with them), moved into the dense's program: the dense's
    call becomes the fused region's, the rescale's result is the rearranged tensor."""
    main, value_of, uses = _lookups(mod)
    replace: dict = {}
    for binding in bindings(main):
        value = binding.value
        if not (isinstance(value, relax.Call) and getattr(value.ty, "dtype", None) == "int8"):
            continue
        try:
            a, params = read_rescale(value, value_of)
        except CompileError:
            continue
        if not isinstance(params, ReqSumParams) or not isinstance(a, relax.Var):
            continue
        d = a
        while uses.get(d) == 1 and _rearranging(value_of(d)) and isinstance(value_of(d).args[0], relax.Var):
            d = value_of(d).args[0]
        region = regions.get(extern_symbol(value_of(d)))
        found = _dense(region)
        if found is None or uses.get(d) != 1 or d in replace:
            continue
        dense, steps = found
        fused = _fused(declined, make_region, region, None, FusedDenseSpec(dense, (*steps, ConstantAdd(params, None))))
        if fused is None:
            continue
        regions[fused.symbol] = fused
        replace[d] = _fused_call(fused, value_of(d), d.ty)
        replace[binding.var] = a
    return (_replaced(mod, replace), True) if replace else (mod, False)


def _fuse_softmaxes(mod, regions: dict, make_region, declined: list) -> tuple:
    """A softmax whose only input is a matmul's output (Q.K^T), or a mask's add to it (a
    REQ-sum add whose second operand has one value per key), into the matmul's program
    (MatmulSoftmaxSpec), where the matmul's bias and multipliers are one value for all."""
    main, value_of, uses = _lookups(mod)
    replace: dict = {}
    for binding, last, x in _one_input_layers(main, regions, uses, SoftmaxSpec):
        middle, mask_var, scores = regions.get(extern_symbol(value_of(x))), None, x
        if middle is not None and isinstance(middle.spec, AddSpec):
            found = _mask(middle, value_of(x), uses)
            if found is None:
                continue
            scores, mask_var = found
        else:
            middle = None
        first = regions.get(extern_symbol(value_of(scores)))
        if first is None or not isinstance(first.spec, MatmulSpec) or first.store_to is not None:
            continue
        if any(np.unique(c).size != 1 for c in first.constants):
            continue
        spec = MatmulSoftmaxSpec(first.spec, last.spec, middle.spec if middle else None)
        fused = _fused(declined, make_region, first, last, spec, middle)
        if fused is None:
            continue
        regions[fused.symbol] = fused
        call = value_of(scores)
        args = call.args[1] if mask_var is None else relax.Tuple([*call.args[1].fields, mask_var])
        if mask_var is not None:      # the mask: the kernel's input after the matmul's
            fused.order = (*first.order, len(call.args[1].fields))
        replace[binding.var] = relax.call_dps_packed(relax.ExternFunc(fused.symbol), args, binding.value.ty)
    return (_replaced(mod, replace), True) if replace else (mod, False)


def _fuse_attention(mod, regions: dict, make_region, declined: list) -> tuple:
    """A matmul whose first operand is the probabilities of a fused scores+softmax region (and
    nothing else reads them), run after it on the tensor it stored (AttentionSpec): always,
    as the bias adds are, for it takes a host copy out and no cycle more."""
    main, value_of, uses = _lookups(mod)
    replace: dict = {}
    for binding in bindings(main):
        second = regions.get(extern_symbol(binding.value))
        if second is None or type(second.spec) is not MatmulSpec or second.store_to is not None:
            continue
        fields = binding.value.args[1].fields
        p, v = fields[second.order[0]], fields[second.order[1]]
        first = regions.get(extern_symbol(value_of(p))) if isinstance(p, relax.Var) else None
        if first is None or not isinstance(first.spec, MatmulSoftmaxSpec) or uses.get(p) != 1:
            continue
        spec = AttentionSpec(first.spec, second.spec, len(first.constants))
        stamps = tuple(first.parts or (first.layer,)) + (second.layer,)
        try:
            fused = make_region(first, second, spec)
        except CompileError as exc:
            declined.append((stamps, f"its kernel cannot be built: {exc}"))
            continue
        call = value_of(p)
        fused.constants = (*first.constants, *second.constants)
        fused.order = (*first.order, len(call.args[1].fields))
        tvm.register_global_func(fused.symbol, fused, override=True)
        regions[fused.symbol] = fused
        replace[binding.var] = relax.call_dps_packed(relax.ExternFunc(fused.symbol),
                                                     relax.Tuple([*call.args[1].fields, v]), binding.value.ty)
    return (_replaced(mod, replace), True) if replace else (mod, False)


def _mask(add, call, uses: dict) -> tuple | None:
    """(the scores var, the mask var) of an add region `add` called by `call` that adds a mask
    with one value per key (its second operand broadcast along the queries) to the scores."""
    spec = add.spec
    if not isinstance(spec.params, ReqSumParams) or len(spec.params.zeros) != 2 or spec.operands is None:
        return None
    a_shape, b_shape = spec.operands
    if tuple(a_shape) != tuple(spec.shape) or len(b_shape) < 2 or b_shape[-2] != 1 or b_shape[-1] != spec.shape[-1]:
        return None
    fields = call.args[1].fields
    scores, mask = fields[add.order[0]], fields[add.order[1]]
    if not isinstance(scores, relax.Var) or uses.get(scores) != 1:
        return None
    return scores, mask


def _residual_add(region, norm: LayerNormSpec) -> bool:
    """Is `region` a residual add the post-norm LayerNorm `norm` can take into its program: a
    REQ sum of two operands of its size, stored for the graph alone?"""
    if region is None or not isinstance(region.spec, AddSpec) or region.store_to is not None:
        return False
    add = region.spec
    return (add.operands is None and isinstance(add.params, ReqSumParams) and len(add.params.zeros) == 2
            and int(np.prod(add.shape)) == int(np.prod(norm.shape)))


def _fuse_layer_norms(mod, regions: dict, make_region, declined: list) -> tuple:
    """A post-norm LayerNorm whose only input is a residual add of two operands of its shape
    (REQ sum), into one program (AddLayerNormSpec)."""
    main, value_of, uses = _lookups(mod)
    replace: dict = {}
    for binding, second, x in _one_input_layers(main, regions, uses, LayerNormSpec):
        first = regions.get(extern_symbol(value_of(x)))
        if not _residual_add(first, second.spec):
            continue
        fused = _fused(declined, make_region, first, second, AddLayerNormSpec(first.spec, second.spec))
        if fused is None:
            continue
        regions[fused.symbol] = fused
        replace[binding.var] = _fused_call(fused, value_of(x), binding.value.ty)
    return (_replaced(mod, replace), True) if replace else (mod, False)


def _residual_norm(binding, regions: dict, value_of, uses: dict) -> tuple | None:
    """(AddLayerNormSpec, the add's region where it is a layer of its own else None, the
    LayerNorm's region, the add's call) where `binding` ends a residual add and a post-norm
    LayerNorm: a fused add+layer_norm region, or a LayerNorm region whose only input is such
    an add's (the two not fused: it took more cycles)."""
    last = regions.get(extern_symbol(binding.value))
    if last is None or last.store_to is not None:
        return None
    if isinstance(last.spec, AddLayerNormSpec):
        return last.spec, None, last, binding.value
    if not isinstance(last.spec, LayerNormSpec):
        return None
    x = binding.value.args[1].fields[last.order[0]]
    add = regions.get(extern_symbol(value_of(x))) if isinstance(x, relax.Var) and uses.get(x) == 1 else None
    if not _residual_add(add, last.spec):
        return None
    return AddLayerNormSpec(add.spec, last.spec), add, last, value_of(x)


def _fuse_dense_layer_norms(mod, regions: dict, make_region, declined: list) -> tuple:
    """A dense (and its bias adds) whose only reader is a residual add before a post-norm
    LayerNorm, the two fused or not, into one program (DenseAddLayerNormSpec), where the dense's
    requantisation is one value for every channel and the program takes fewer cycles than the
    layers it replaces."""
    mod = relax.transform.DeadCodeElimination(["main"])(mod)     # the calls fused before: no readers
    main, value_of, uses = _lookups(mod)
    replace: dict = {}
    for binding in bindings(main):
        found = _residual_norm(binding, regions, value_of, uses)
        if found is None:
            continue
        add_norm, middle, last, add_call = found
        order = (middle or last).order
        fields = add_call.args[1].fields
        for first in (0, 1):
            y, residual = fields[order[first]], fields[order[1 - first]]
            if not isinstance(y, relax.Var) or uses.get(y) != 1:
                continue
            producer = regions.get(extern_symbol(value_of(y)))
            dense = _dense(producer)
            if dense is None or getattr(producer.spec, "weight_heads", 0):
                continue
            if dense[0].shape.row_term or any(np.unique(c).size != 1 for c in producer.constants[2:]):
                continue
            spec = DenseAddLayerNormSpec(*dense, add_norm, first)
            fused = _fused(declined, make_region, producer, last, spec, middle)
            if fused is None:
                break
            fused.parts = (*(producer.parts or (producer.layer,)), *(last.parts or (middle.layer, last.layer)))
            declined[:] = [d for d in declined if not set(d[0]) <= set(fused.parts)]    # fused after all
            call = value_of(y)
            fused.order = (*producer.order, len(call.args[1].fields))
            regions[fused.symbol] = fused
            replace[binding.var] = relax.call_dps_packed(relax.ExternFunc(fused.symbol),
                                                         relax.Tuple([*call.args[1].fields, residual]),
                                                         binding.value.ty)
            break
    return (_replaced(mod, replace), True) if replace else (mod, False)
