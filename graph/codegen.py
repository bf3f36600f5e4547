"""`relax.ext.vta`: the BYOC codegen that compiles each offloaded region through the TensorIR path.

RunCodegen calls it once per build with every function marked `Codegen: "vta"`. Each function
wraps one composite (graph.partition): the stamp of the composite's last call names its layer,
whose spec and constants the partitioner read (`VtaBuild.reads`); a kernel for that spec is
compiled (or taken from the `KernelCache`: a ResNet has 20 convs but 11
distinct shapes), and a packed function named by the region's global symbol is registered.
`R.call_dps_packed` calls it from the VM with the region's inputs and its output tensor; it runs
the kernel on the chosen backend, checks the result against the numpy reference of the op and
appends a `LayerRun` to the build's log. Nothing is compiled at call time.

The codegen returns no runtime modules: the regions are Python packed functions, found by name
in the global registry when the VM first calls them.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np
import tvm
from tvm import relax

from intrinsics.host import callback_scope
from vta_sim.config import Config
from vta_sim.errors import CompileError
from vta_sim.result import RunResult

from . import inplace, kernels, ops
from .ops.base import AcceleratorOp
from .ops.qdq_read import bindings
from .ops.relax_read import extern_symbol, value_lookup
from .partition import LAYER_ATTR
from .errors import GraphError

_ACTIVE: contextvars.ContextVar = contextvars.ContextVar("vta_codegen_build")


@dataclass
class LayerRun:
    """One call of an offloaded region."""
    region: "Region"
    result: RunResult
    verified: bool
    seconds: float
    output: np.ndarray | None = field(default=None, repr=False)   # what it wrote, for replay
    chained: tuple = ()                   # per input taken from a producer's stored tensor: (the
                                          # producer's symbol, "as stored" or "padded")


@dataclass
class Region:
    symbol: str
    layer: ops.LayerStamp                 # the layer it runs
    spec: AcceleratorOp
    constants: tuple                      # weights, bias (numpy), the kernel's trailing inputs
    order: tuple                          # region parameter index of each kernel input
    kernel: object                        # schedules.op_kernel.OpKernel
    build: "VtaBuild"
    store_to: tuple | None = None         # (ConcatPlacement, slot): its output is stored in that slice
    placement: object = None              # a Concat's inplace.ConcatPlacement
    parts: tuple = ()                     # a fused region's layers, first to last (graph.fusion)
    inputs_from: dict = field(default_factory=dict)   # {kernel input: the region whose stored output it is}
                                                      # (chain_regions)
    stored: np.ndarray | None = field(default=None, repr=False)   # its packed output, while a consumer needs it

    def __call__(self, *args) -> None:
        """DPS entry: (*inputs, output) TVM tensors."""
        *inputs, out = args
        if self.build.replay is not None:          # timing the host's share: no kernel runs
            if self.store_to is not None:
                self.store_to[0].stored.add(self.store_to[1])
            out.copyfrom(self.build.replay[self.symbol].pop(0))
            return
        arrays = [inputs[i].numpy() for i in self.order]
        where = {} if self.placement is None else {"placement": self.placement}
        if self.store_to is not None:
            where["out"] = self.store_to[0].view(self.store_to[1])
        t0 = time.perf_counter()
        feeds = self.build.chains.get(self.symbol) is not None      # a consumer takes what this one stores
        if feeds and getattr(self.kernel, "merges_heads", False):
            where["rows"] = True                      # the heads stored merged, as the consumer loads them
        stored = {i: p.stored for i, p in self.inputs_from.items() if p.stored is not None}
        if stored and hasattr(self.kernel, "run_stored"):       # a dense's data
            result_array, result, how = self.kernel.run_stored(stored[0], *arrays, *self.constants,
                                                               backend=self.build.backend, trace=self.build.trace)
            hows = {0: how}
        else:
            if stored:                                # an attention's Q and K
                where["stored"] = stored
            result_array, result = self.kernel(*arrays, *self.constants, backend=self.build.backend,
                                               trace=self.build.trace, **where)
            hows = getattr(self.kernel, "stored_how", {}) if stored else {}
        chained = tuple((self.inputs_from[i].symbol, hows[i]) for i in sorted(stored))
        for i in stored:
            self.inputs_from[i].stored = None
        if feeds:
            self.stored = self.kernel.last_packed
        seconds = time.perf_counter() - t0
        if self.store_to is not None:
            self.store_to[0].stored.add(self.store_to[1])
        verified = bool(np.array_equal(result_array, self.spec.reference(*arrays,
                                                                         *self.constants)))
        if tuple(out.shape) != result_array.shape:
            raise GraphError(f"region {self.symbol}: kernel output {result_array.shape} does not "
                             f"match the graph's {tuple(out.shape)}")
        out.copyfrom(np.ascontiguousarray(result_array))
        self.build.log.append(LayerRun(self, result, verified, seconds, result_array, chained))
        if self.build.progress:
            self.build.progress(len(self.build.log), self.build.expected_runs,
                                f"{self.spec.op} {self.describe()}: {result.cycles:,} cycles")

    def describe(self) -> str:
        """The spec's shape, and how the host lays it out for its kernel where it does (a conv
        run as a dense over im2col rows: "... im2col")."""
        layout = getattr(self.kernel, "layout", "")
        return f"{self.spec.describe()} {layout}" if layout else self.spec.describe()


@dataclass
class VtaBuild:
    """What one model build compiles: its config and options, regions, and the run log."""
    cfg: Config
    vthreads: int
    backend: str
    trace: bool
    cache: "kernels.KernelCache"
    reads: dict                            # {layer id: Read or reason} (graph.partition.read_layers)
    progress: object = None                # callable(done, total, text) or None
    regions: dict = field(default_factory=dict)
    log: list = field(default_factory=list)
    expected_runs: int = 0                 # accelerator layers per run of the model
    failure: Exception | None = None       # what relax.ext.vta raised, before TVM's FFI wrapped it
    replay: dict | None = None             # {symbol: [outputs]}: regions return these, run nothing
    chains: dict = field(default_factory=dict)   # {producer symbol: consumer symbol} (chain_regions)


@contextlib.contextmanager
def active(build: VtaBuild):
    """Make `build` the target of `relax.ext.vta` while RunCodegen runs; what the codegen raised
    (`build.failure`) leaves instead of TVM's RuntimeError (intrinsics.host.callback_scope)."""
    build.failure = None
    with callback_scope(_ACTIVE, build, lambda: build.failure):
        yield build


def _composite(func):
    """The composite function a `Codegen: "vta"` wrapper calls."""
    for block in func.body.blocks:
        for binding in block.bindings:
            value = binding.value
            if isinstance(value, relax.Function) and value.attrs and "Composite" in value.attrs:
                return value
    raise GraphError(f"{func.attrs['global_symbol']}: no composite function inside")


def _regions(mod):
    """The `Codegen: "vta"` functions of a partitioned module."""
    return [func for _, func in mod.functions_items()
            if isinstance(func, relax.Function) and func.attrs and func.attrs.get("Codegen") == "vta"]


def _read(func, reads: dict) -> tuple:
    """(layer stamp, Read, composite, root, value_of) of a `Codegen: "vta"` function."""
    comp = _composite(func)
    value_of = value_lookup(comp)
    root = value_of(comp.body.body)
    stamp = ops.stamp_of(root)
    layer_id = int(func.attrs[LAYER_ATTR]) if LAYER_ATTR in func.attrs else None
    read = reads.get(layer_id)
    if stamp is None or not isinstance(read, ops.Read) or read.spec.op != reads[stamp.id].spec.op:
        raise GraphError(f"{func.attrs['global_symbol']}: no layer the partitioner read")
    return ops.LayerStamp(layer_id, stamp.kind), read, comp, root, value_of


def offloaded_specs(mod, reads: dict) -> list:
    """The spec of every region of a partitioned module that RunCodegen will hand to
    `relax.ext.vta`, so their kernels can be compiled ahead (graph.cache.fill)."""
    return [_read(func, reads)[1].spec for func in _regions(mod)]


def _region(build: VtaBuild, func) -> Region:
    symbol = str(func.attrs["global_symbol"])
    layer, read, comp, root, value_of = _read(func, build.reads)
    params = list(comp.params)
    order = tuple(params.index(v) for v in ops.BY_KIND[layer.kind].activations(root, value_of))
    kernel = build.cache.get(build.cfg, read.spec, build.vthreads)
    return Region(symbol, layer, read.spec, read.constants, order, kernel, build)


def fused_region(first: Region, second: Region | None, spec: AcceleratorOp) -> Region:
    """The region that runs `first` and what follows it (`second`'s layer, or None for glue that
    is no layer, a bias add) as one kernel of `spec` (graph.fusion), on `first`'s inputs and
    constants."""
    build = first.build
    kernel = build.cache.get(build.cfg, spec, build.vthreads)
    parts = (first.parts or (first.layer,)) + ((second.layer,) if second is not None else ())
    tail = second.layer.kind if second is not None else "bias"
    return Region(f"{first.symbol}_{tail}", first.layer, spec, first.constants, first.order, kernel, build,
                  parts=parts)


def place_concats(main, regions: dict) -> None:
    """Give each Concat region its placement (graph.inplace) and each producer region that can
    store its output straight into a Concat's slice the slot it stores into, in graph order; a
    producer stores into one Concat's tensor only (a later Concat reading it places its copy)."""
    var2val = dict(relax.analysis.get_var2val(main))
    for block in main.body.blocks:
        for binding in block.bindings:
            region = regions.get(extern_symbol(binding.value))
            if region is None or not hasattr(region.kernel, "placement"):    # writes no slices
                continue
            placement = region.placement = region.kernel.placement()
            args = binding.value.args[1].fields
            for j, slot in enumerate(placement.slots):
                if slot.writer != inplace.HOST or region.spec.rescales[j] is not None:
                    continue
                value = var2val.get(args[region.order[j]])
                producer = regions.get(extern_symbol(value))
                if producer is None:
                    slot.reason = f"made on the CPU ({ops.op_name(value)})" if value is not None else "a model input"
                elif producer.store_to is not None:
                    slot.reason = f"its producer {producer.symbol} already stores into another concat's tensor"
                elif producer.placement is not None:
                    slot.reason = f"its producer {producer.symbol} is a concat, whose own tensor holds it"
                else:
                    slot.reason = slot.fits(producer.kernel)
                    if slot.reason is None:
                        slot.writer = inplace.PRODUCER
                        producer.store_to = (placement, j)


def chain_regions(main, regions: dict) -> None:
    """Link each region whose kernel takes its first input as packed rows (a dense's data,
    `OpKernel.rows_in`) to the region that computes that input, where that one's kernel stores
    its output so (`rows_out`), or, after the head merge, stores the heads merged so (an
    attention's: `merges_heads`): the consumer then runs on the tensor the producer's programs
    stored, as device DRAM would keep it between the programs, and the host neither unpacks nor
    packs it (`Region.__call__`; `OpKernel.run_stored`). A producer feeds one consumer so; a
    region storing into a Concat's tensor, or a Concat, is not linked."""
    value_of = value_lookup(main)
    build = next(iter(regions.values())).build if regions else None
    for binding in bindings(main):
        consumer = regions.get(extern_symbol(binding.value))
        if (consumer is None or not getattr(consumer.kernel, "rows_in", False) or consumer.placement is not None
                or getattr(consumer.kernel, "layout", "")):
            continue
        x = binding.value.args[1].fields[consumer.order[0]]
        producer = regions.get(extern_symbol(value_of(x))) if isinstance(x, relax.Var) else None
        if producer is None or not getattr(producer.kernel, "rows_out", False) or getattr(producer.kernel, "layout", ""):
            producer = _merged_heads(x, value_of, regions)
        if (producer is None or producer.store_to is not None
                or producer.placement is not None or producer.symbol in build.chains
                or consumer.build.cfg.BLOCK_IN != consumer.build.cfg.BLOCK_OUT):
            continue
        consumer.inputs_from[0] = producer
        build.chains[producer.symbol] = consumer.symbol
    for binding in bindings(main):         # an attention's Q and K, from the projections' programs
        consumer = regions.get(extern_symbol(binding.value))
        if consumer is None or not hasattr(consumer.kernel, "keys_misfit") or consumer.kernel.keys_misfit():
            continue
        fields = binding.value.args[1].fields
        values = len(consumer.order) - 1                  # V: the attention kernel's last input
        for index, axes in ((1, [0, 2, 3, 1]), (0, [0, 2, 1, 3]), (values, [0, 2, 1, 3])):   # K^T, Q, V
            producer = _split_heads(fields[consumer.order[index]], axes, value_of, regions)
            if producer is None or producer.symbol in build.chains:
                continue
            if index != 1:             # Q, V: the program stores the heads' weight blocks (V's transposed)
                heads = int(fields[consumer.order[index]].ty.shape[1])
                spec = dataclasses.replace(producer.spec, weight_heads=heads, transposed=index == values)
                try:
                    producer.kernel = build.cache.get(build.cfg, spec, build.vthreads)
                except CompileError:
                    continue
            consumer.inputs_from[index] = producer
            build.chains[producer.symbol] = consumer.symbol


def _split_heads(b, perm: list, value_of, regions: dict):
    """The dense region whose output `b` is after the head split (a Reshape to (1, tokens,
    heads, d) and a Transpose `perm`: (0, 2, 3, 1) for K^T, (0, 2, 1, 3) for Q), where that
    region stores its rows (`rows_out`); else None. (Q's must be a fused dense, whose kernel
    can store weight blocks instead.)"""
    moving = {kind: set(ops.BY_KIND[kind].float_ops) for kind in ("reshape", "transpose")}
    permute = _bound(b, value_of)
    if not _op_in(permute, moving["transpose"]) or not isinstance(permute.args[0], relax.Var):
        return None
    axes = [int(a) for a in permute.attrs.axes] if permute.attrs.axes is not None else None
    reshape = value_of(permute.args[0])
    if axes != perm or not _op_in(reshape, moving["reshape"]) or not isinstance(reshape.args[0], relax.Var):
        return None
    region = regions.get(extern_symbol(value_of(reshape.args[0])))
    if (region is None or not getattr(region.kernel, "rows_out", False) or getattr(region.kernel, "layout", "")
            or region.store_to is not None or region.placement is not None):
        return None
    split = [int(d) for d in permute.args[0].ty.shape]           # (1, tokens, heads, d)
    rows = [int(d) for d in reshape.args[0].ty.shape]             # (1, tokens, heads x d)
    if len(split) != 4 or split[0] != 1 or rows[-1] != split[2] * split[3]:
        return None
    if perm == [0, 2, 1, 3] and not hasattr(region.spec, "weight_heads"):
        return None
    return region


def _merged_heads(x, value_of, regions: dict):
    """The attention region whose output `x` is after the head merge (a Transpose (0, 2, 1, 3)
    and a Reshape joining the heads' columns), where its kernel can store the heads merged
    (graph.attention.AttentionKernel.merges_heads); else None."""
    moving = {kind: set(ops.BY_KIND[kind].float_ops) for kind in ("reshape", "transpose")}
    reshape = value_of(x) if isinstance(x, relax.Var) else None
    if not _op_in(reshape, moving["reshape"]) or not isinstance(reshape.args[0], relax.Var):
        return None
    permute = value_of(reshape.args[0])
    if not _op_in(permute, moving["transpose"]) or not isinstance(permute.args[0], relax.Var):
        return None
    axes = [int(a) for a in permute.attrs.axes] if permute.attrs.axes is not None else None
    region = regions.get(extern_symbol(value_of(permute.args[0])))
    if axes != [0, 2, 1, 3] or region is None or not getattr(region.kernel, "merges_heads", False):
        return None
    if region.kernel.merge_misfit() is not None:
        return None
    heads_shape = [int(d) for d in permute.args[0].ty.shape]        # (1, heads, tokens, d)
    merged = [int(d) for d in x.ty.shape]
    if merged[-1] != heads_shape[1] * heads_shape[3] or int(np.prod(merged)) != int(np.prod(heads_shape)):
        return None
    return region


def _bound(x, value_of):
    """The value `x` is bound to, through bindings of one var to another (what graph.fusion
    leaves where it moved a scale into the program before it); None for what is no var."""
    seen = 0
    while isinstance(x, relax.Var) and seen < 16:
        value = value_of(x)
        if not isinstance(value, relax.Var) or value.same_as(x):
            return value if not value.same_as(x) else None
        x, seen = value, seen + 1
    return None


def _op_in(value, names: set) -> bool:
    return isinstance(value, relax.Call) and getattr(value.op, "name", "") in names


@tvm.register_global_func("relax.ext.vta")
def _codegen(functions, _options, _constant_names):
    build = _ACTIVE.get(None)
    if build is None:
        raise GraphError("relax.ext.vta runs inside graph.build (it needs a config and options)")
    total = len(functions)
    for done, func in enumerate(functions):
        try:
            region = _region(build, func)
        except Exception as exc:
            build.failure = exc
            raise
        if build.progress:
            build.progress(done + 1, total, f"{region.spec.op} {region.spec.describe()}")
        build.regions[region.symbol] = region
        tvm.register_global_func(region.symbol, region, override=True)
    return []
