"""The ops the graph level offloads, each a typed description that implements `AcceleratorOp`.

A spec is what a kernel is compiled for and its cache key: the shape and the requantisation,
never the weights (kernel inputs). Every spec answers the same questions, so the partitioner,
the kernel cache, the verification and the per-layer comparison call the interface and never
ask which op it is: does it fit (`misfit`), the compiled kernel (`kernel`), its independent
numpy int64 result (`reference`), its activations' shapes, its name and MACs for the report.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np

from intrinsics.errors import CompileError
from requantisation import Requant, rule
from requantisation.add import AddParams, RescaleParams, ScaledAddParams, add_ref, rescale_ref, scaled_add_ref
from requantisation.bounds import INT8_MIN
from schedules import vta_eltwise, vta_ops, vta_pool
from schedules import vta_workloads as wl
from schedules.op_kernel import OpKernel
from schedules.vta_conv2d import CONV2D, ConvShape
from schedules.vta_dense import DENSE, DenseShape
from schedules.vta_pool import PoolShape
from vta_sim.config import Config
from vta_sim.isa import MAX_PAD
from vta_sim.result import RunResult

from . import inplace
from .report import chained


class AcceleratorOp(Protocol):
    """What every offloaded op provides (ConvSpec, DenseSpec, PoolSpec, AddSpec, ConcatSpec)."""

    op: str                                   # the report's name: conv2d, avg_pool, dense, max_pool, add, concat

    @property
    def macs(self) -> int: ...               # multiply-accumulates counted for the model's total

    def describe(self) -> str: ...           # the report's shape column

    def input_shapes(self) -> list: ...      # the activations' plain shapes, in the kernel's order

    def misfit(self, cfg: Config, vthreads: int) -> str | None: ...   # why it cannot be laid out

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel: ...     # compiled, any shape

    def reference(self, *arrays) -> np.ndarray: ...                  # numpy int64, activations first


def _refusal(choose: Callable[[], object]) -> str | None:
    """The schedules' own reason a layout is refused (None: it fits), without compiling."""
    try:
        choose()
    except CompileError as exc:      # the reason the report gives for keeping the op on the CPU
        return str(exc)
    return None


class _HostPadded:
    """Convs and max-pools whose padding the host may do instead of the DMA.

    The DMA pads with 0, at most isa.MAX_PAD per side. Where padding must hold something else
    (a conv input's zero point; a max-pool's -128, the int8 minimum, so that padding never wins
    a max) or is wider, the host pads the input in DRAM and the kernel runs unpadded."""

    extra = 0          # rows and columns the host adds at the bottom and right (ceil_mode pools)

    def host_value(self) -> int | None:
        raise NotImplementedError

    def kernel_shape(self):
        """The shape the kernel computes: the spec's, or its host-padded input with no padding."""
        s = self.shape
        if self.host_value() is None:
            return s
        grow = 2 * s.pad + self.extra
        return dataclasses.replace(s, h=s.h + grow, w=s.w + grow, pad=0)

    def padded(self, x: np.ndarray) -> np.ndarray:
        """The input as the kernel reads it (host-padded where the DMA cannot pad)."""
        value = self.host_value()
        if value is None:
            return x
        pad, extra = self.shape.pad, self.extra
        return np.pad(x, ((0, 0), (0, 0), (pad, pad + extra), (pad, pad + extra)), constant_values=value)

    def _host_padded(self, kernel: OpKernel) -> OpKernel:
        if self.host_value() is None:
            return kernel
        pack = kernel.pack
        return dataclasses.replace(kernel, pack=lambda x, *rest: pack(self.padded(x), *rest))


@dataclass(frozen=True)
class ConvSpec(_HostPadded):
    shape: ConvShape
    requant: Requant
    pad_value: int = 0        # the input's zero point: what padding holds
    op: str = "conv2d"        # "avg_pool": graph.qdq's average pool, a depthwise conv of ones

    @property
    def macs(self) -> int:
        return self.shape.macs()

    def describe(self) -> str:
        s = self.shape
        kind = "" if s.groups == 1 else " dw" if s.groups == s.ic else f" g{s.groups}"
        return f"{s.k}x{s.k}/{s.stride}{kind} {s.ic}->{s.oc} {s.h}x{s.w}"

    def input_shapes(self) -> list:
        s = self.shape
        return [(s.n, s.ic, s.h, s.w)]

    def host_value(self) -> int | None:
        return self.pad_value if self.pad_value or self.shape.pad > MAX_PAD else None

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return _refusal(lambda: CONV2D.choose_tiles(cfg, self.kernel_shape(), vthreads, self.requant))

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        s = self.kernel_shape()
        return self._host_padded(vta_ops.conv2d_kernel(cfg, s.n, s.h, s.w, s.ic, s.oc, s.k, s.pad, s.stride,
                                                       self.requant, vthreads=vthreads, groups=s.groups))

    def reference(self, x, w, b, *channel) -> np.ndarray:
        s = self.kernel_shape()
        return rule.reference(wl.conv2d_acc(self.padded(x), w, b, s.pad, s.stride, s.groups), self.requant, channel)


@dataclass(frozen=True)
class DenseSpec:
    shape: DenseShape
    requant: Requant
    op: str = field(default="dense", init=False)

    @property
    def macs(self) -> int:
        return self.shape.macs()

    def describe(self) -> str:
        s = self.shape
        return f"{s.m}x{s.k} . {s.k}x{s.n}"

    def input_shapes(self) -> list:
        return [(self.shape.m, self.shape.k)]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return _refusal(lambda: DENSE.choose_tiles(cfg, self.shape, vthreads, self.requant))

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        s = self.shape
        return vta_ops.dense_kernel(cfg, s.m, s.k, s.n, self.requant, vthreads=vthreads)

    def reference(self, x, w, b, *channel) -> np.ndarray:
        return rule.reference(wl.dense_acc(x, w, b), self.requant, channel)


@dataclass(frozen=True)
class PoolSpec(_HostPadded):
    shape: PoolShape
    ceil_extra: int = 0       # ceil_mode: rows/columns of -128 the host adds at the bottom/right
    op: str = field(default="max_pool", init=False)
    macs = 0

    @property
    def extra(self) -> int:
        return self.ceil_extra

    def describe(self) -> str:
        s = self.shape
        return f"{s.k}x{s.k}/{s.stride} pad {s.pad}{' ceil' if self.ceil_extra else ''} {s.c}x{s.h}x{s.w}"

    def input_shapes(self) -> list:
        s = self.shape
        return [(s.n, s.c, s.h, s.w)]

    def host_value(self) -> int | None:
        return INT8_MIN if self.shape.pad or self.ceil_extra else None

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return _refusal(lambda: vta_pool.plan(cfg, self.kernel_shape()))

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        s = self.kernel_shape()
        return self._host_padded(vta_pool.max_pool_kernel(cfg, s.n, s.c, s.h, s.w, s.k, s.stride, s.pad))

    def reference(self, x) -> np.ndarray:
        s = self.kernel_shape()
        return vta_pool.max_pool_ref(self.padded(x), s.k, s.stride, s.pad)


@dataclass(frozen=True)
class AddSpec:
    shape: tuple              # (n, c, h, w)
    params: AddParams | ScaledAddParams
    op: str = field(default="add", init=False)
    macs = 0

    def describe(self) -> str:
        p, (_, c, h, w) = self.params, self.shape
        if isinstance(p, ScaledAddParams):
            return f"(a{-p.zero_a:+d})Ma+(b{-p.zero_b:+d})Mb {c}x{h}x{w}"
        return f"(a<<{p.shift_a}) + (b<<{p.shift_b}) >> {p.shift} {c}x{h}x{w}"

    def input_shapes(self) -> list:
        return [self.shape, self.shape]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return None      # an add is cut into as many flat tiles as it needs: it always fits

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        return vta_eltwise.eltwise_kernel(cfg, self.shape, self.params)

    def reference(self, a, b) -> np.ndarray:
        p = self.params
        if isinstance(p, ScaledAddParams):
            return scaled_add_ref(a, b, p)
        return add_ref(a, b, p.shift_a, p.shift_b, p.shift, p.lo, p.hi)


@dataclass(frozen=True)
class RescaleSpec:
    """One Concat input moved into the Concat's scale (requantisation.add.RescaleParams) on the
    ALU: a part of a ConcatSpec, compiled and cached as a kernel of its own."""
    shape: tuple              # (n, c, h, w)
    params: RescaleParams
    op: str = field(default="rescale", init=False)
    macs = 0

    def describe(self) -> str:
        p, (_, c, h, w) = self.params, self.shape
        return f"(a{-p.zero:+d})M {c}x{h}x{w}"

    def input_shapes(self) -> list:
        return [self.shape]

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        return None      # cut into as many flat tiles as it needs, as the add

    def kernel(self, cfg: Config, vthreads: int) -> OpKernel:
        return vta_eltwise.eltwise_kernel(cfg, self.shape, self.params)

    def reference(self, a) -> np.ndarray:
        return rescale_ref(a, self.params)


@dataclass(frozen=True)
class ConcatSpec:
    """A Concat along the channels, written in place: its output is one DRAM tensor whose
    channel-block slices the producers store. An input already in the output's scale and zero
    point costs nothing (its producer's STORE goes to its slice); each other input is rescaled
    into them on the ALU (`RescaleSpec`), storing its slice, and its cycles are the Concat's.
    Every slice but the last must start on a channel block (`misfit`)."""
    shapes: tuple             # (n, c_i, h, w) per input, in order
    rescales: tuple           # RescaleParams per input, or None: already in the output's scale
    op: str = field(default="concat", init=False)
    macs = 0

    def describe(self) -> str:
        _, _, h, w = self.shapes[0]
        moved = sum(r is not None for r in self.rescales)
        return f"{'+'.join(str(s[1]) for s in self.shapes)} {h}x{w}, {moved} rescaled"

    def input_shapes(self) -> list:
        return list(self.shapes)

    def misfit(self, cfg: Config, vthreads: int) -> str | None:
        offset = 0
        for i, (_, c, _, _) in enumerate(self.shapes):
            if offset % cfg.BLOCK_OUT:
                return (f"concat input {i} starts at channel {offset}, not a multiple of the "
                        f"{cfg.BLOCK_OUT}-channel block: its slice of the output is not whole "
                        "channel blocks, so it cannot be stored in place")
            offset += c
        return None

    @property
    def parts(self) -> tuple:
        """The kernels it runs: one RescaleSpec per distinct rescaled input."""
        return tuple(dict.fromkeys(RescaleSpec(s, r) for s, r in zip(self.shapes, self.rescales)
                                   if r is not None))

    def assemble(self, cfg: Config, kernels: dict) -> "ConcatKernel":
        """The Concat's kernel from its parts' compiled kernels {RescaleSpec: OpKernel}."""
        return ConcatKernel(self, kernels, cfg)

    def kernel(self, cfg: Config, vthreads: int) -> "ConcatKernel":
        return self.assemble(cfg, {part: part.kernel(cfg, vthreads) for part in self.parts})

    def reference(self, *arrays) -> np.ndarray:
        return np.concatenate([x if r is None else rescale_ref(x, r) for x, r in zip(arrays, self.rescales)],
                              axis=1)


@dataclass
class ConcatKernel:
    """A ConcatSpec's run into its DRAM tensor (graph.inplace.ConcatPlacement): each rescaled
    input's program on the accelerator, back to back (their cycles, statistics and traces
    summed), storing its slice; slices their producers stored are not touched (their inputs
    are not even read); the host places the rest. The output is the tensor unpacked."""
    spec: ConcatSpec
    kernels: dict             # RescaleSpec -> OpKernel
    cfg: Config
    tile_source = None

    @property
    def compile_s(self) -> float:
        return sum(k.compile_s for k in self.kernels.values())

    def rescale(self, j: int) -> OpKernel | None:
        """The program that moves input j into the output's scale (None: it is in it)."""
        r = self.spec.rescales[j]
        return None if r is None else self.kernels[RescaleSpec(self.spec.shapes[j], r)]

    def placement(self) -> inplace.ConcatPlacement:
        """A placement with no producers known (graph.codegen.place_concats adds them)."""
        return inplace.ConcatPlacement.alone(self.cfg, self.spec.shapes,
                                            [self.rescale(j) for j in range(len(self.spec.shapes))])

    def __call__(self, *arrays, backend="sim", trace: bool = False, placement=None) -> tuple:
        placement = placement or self.placement()
        results = []
        for j, (x, slot) in enumerate(zip(arrays, placement.slots)):
            kernel = self.rescale(j)
            if slot.writer == inplace.RESCALE:
                results.append(kernel(x, backend=backend, trace=trace, out=placement.view(j))[1])
            elif slot.writer == inplace.HOST:
                if kernel is not None:
                    x, result = kernel(x, backend=backend, trace=trace)
                    results.append(result)
                placement.place(j, x)
        stats: dict = {}
        for result in results:
            for key, value in result.stats.items():
                stats[key] = stats.get(key, 0) + value
        total = RunResult(np.zeros(0, np.uint8), sum(int(r.cycles) for r in results), stats,
                          chained(results, self.cfg.name) if trace else None, backend)
        return placement.output(), total
