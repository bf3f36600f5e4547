"""From an `OpSpec` to its compiled accelerator kernel and its numpy reference.

The kernels come from the schedules (`schedules.vta_ops` for conv2d/dense, `vta_pool`,
`vta_eltwise`); the references are their independent numpy int64 implementations. The cache
is keyed by config, spec and virtual threads: the weights are kernel inputs, so layers of the
same shape share one compiled kernel.
"""
from __future__ import annotations

import dataclasses
import functools

import numpy as np

from intrinsics.errors import CompileError
from requantisation import add as rq_add
from requantisation import rule
from requantisation.bounds import INT8_MIN
from schedules import vta_conv2d, vta_dense, vta_eltwise, vta_ops, vta_pool
from schedules import vta_workloads as wl
from vta_sim.config import Config
from vta_sim.isa import MAX_PAD

from . import cache, ops


def host_padding(spec) -> tuple[int, int | None]:
    """(pad the kernel's DMA does, value the host pads with first or None).

    The DMA pads with 0, at most isa.MAX_PAD per side. Where padding must hold something else
    (a conv input's zero point; a max-pool's -128, the int8 minimum, so that padding never wins
    a max) or is wider, the host pads the input in DRAM and the kernel runs unpadded."""
    pad = spec.shape.pad
    if isinstance(spec, ops.PoolSpec) and (pad or spec.ceil_extra):
        return 0, INT8_MIN
    if isinstance(spec, ops.ConvSpec) and (spec.pad_value or pad > MAX_PAD):
        return 0, spec.pad_value
    return pad, None


def _extra(spec) -> int:
    """Rows and columns a ceil_mode max-pool adds at the bottom and right (ops.PoolSpec)."""
    return spec.ceil_extra if isinstance(spec, ops.PoolSpec) else 0


def _pad_input(x: np.ndarray, spec, value: int) -> np.ndarray:
    pad, extra = spec.shape.pad, _extra(spec)
    return np.pad(x, ((0, 0), (0, 0), (pad, pad + extra), (pad, pad + extra)), constant_values=value)


def _kernel_shape(spec):
    """The shape the kernel computes: the spec's, or its host-padded input with no padding."""
    _, value = host_padding(spec)
    s = spec.shape
    if value is None:
        return s
    grow = 2 * s.pad + _extra(spec)
    return dataclasses.replace(s, h=s.h + grow, w=s.w + grow, pad=0)


def misfit(cfg: Config, spec, vthreads: int) -> str | None:
    """Why `spec`'s kernel cannot be laid out on `cfg` (None: it can), without compiling it.

    The schedules' own tile choice for the shape compile_kernel compiles, asked at partition
    time so that a layer too big for the SRAMs stays on the CPU with this reason instead of
    aborting the build when its kernel compiles."""
    s = _kernel_shape(spec) if isinstance(spec, (ops.ConvSpec, ops.PoolSpec)) else spec.shape
    try:
        if isinstance(spec, ops.ConvSpec):
            vta_conv2d.CONV2D.choose_tiles(cfg, s, vthreads, spec.requant)
        elif isinstance(spec, ops.PoolSpec):
            vta_pool.plan(cfg, s)
        elif isinstance(spec, ops.DenseSpec):
            vta_dense.DENSE.choose_tiles(cfg, s, vthreads, spec.requant)
    except CompileError as exc:      # the reason the report gives for keeping it on the CPU
        return str(exc)
    return None      # an add is cut into as many flat tiles as it needs: it always fits


def compile_kernel(cfg: Config, spec, vthreads: int):
    """The OpKernel of `spec` (inputs: the activations, then the spec's constants)."""
    if isinstance(spec, (ops.ConvSpec, ops.PoolSpec)):
        s = _kernel_shape(spec)
        if isinstance(spec, ops.ConvSpec):
            kernel = vta_ops.conv2d_kernel(cfg, s.n, s.h, s.w, s.ic, s.oc, s.k, s.pad, s.stride, spec.requant,
                                           vthreads=vthreads, groups=s.groups)
        else:
            kernel = vta_pool.max_pool_kernel(cfg, s.n, s.c, s.h, s.w, s.k, s.stride, s.pad)
        _, value = host_padding(spec)
        if value is not None:
            pack = kernel.pack
            kernel = dataclasses.replace(kernel, pack=lambda x, *rest: pack(_pad_input(x, spec, value), *rest))
        return kernel
    if isinstance(spec, ops.DenseSpec):
        s = spec.shape
        return vta_ops.dense_kernel(cfg, s.m, s.k, s.n, spec.requant, vthreads=vthreads)
    if isinstance(spec, ops.AddSpec):
        return vta_eltwise.eltwise_kernel(cfg, spec.shape, spec.params)
    raise TypeError(f"no kernel for {spec!r}")


def reference(spec, *arrays):
    """The numpy int64 result of `spec` on plain arrays (activations, then constants)."""
    if isinstance(spec, (ops.ConvSpec, ops.PoolSpec)):
        s, (_, value) = _kernel_shape(spec), host_padding(spec)
        x = arrays[0] if value is None else _pad_input(arrays[0], spec, value)
        if isinstance(spec, ops.PoolSpec):
            return vta_pool.max_pool_ref(x, s.k, s.stride, s.pad)
        w, b, *channel = arrays[1:]
        return rule.reference(wl.conv2d_acc(x, w, b, s.pad, s.stride, s.groups), spec.requant, channel)
    if isinstance(spec, ops.DenseSpec):
        x, w, b, *channel = arrays
        return rule.reference(wl.dense_acc(x, w, b), spec.requant, channel)
    if isinstance(spec, ops.AddSpec):
        a, b = arrays
        p = spec.params
        if isinstance(p, rq_add.ScaledAddParams):
            return rq_add.scaled_add_ref(a, b, p)
        return rq_add.add_ref(a, b, p.shift_a, p.shift_b, p.shift, p.lo, p.hi)
    raise TypeError(f"no reference for {spec!r}")


def input_vars(spec, root, value_of) -> list:
    """The composite's activation parameters in the kernel's input order."""
    if isinstance(spec, ops.PoolSpec):
        return [root.args[0]]
    if isinstance(spec, ops.AddSpec):
        return list(ops.add_operands(root, value_of))
    acc = ops.layer_call(root, value_of)
    x = value_of(acc.args[0])
    return [x.args[0] if ops.op_name(x) == "relax.nn.pad" else acc.args[0]]


class KernelCache:
    """Compiled kernels by (config, spec, vthreads), so a shape is compiled once per process, and
    across processes through the on-disk cache (graph.cache)."""

    def __init__(self):
        self._kernels: dict = {}
        self.hits = 0

    def cold_jobs(self, cfg: Config, specs, vthreads: int) -> list:
        """A job per distinct kernel among `specs` that is in neither this cache nor on disk:
        each compiles it into the disk cache (for graph.cache.fill)."""
        text, jobs, seen = cfg.to_text(), [], set()
        for spec in specs:
            if (cfg, spec, vthreads) in self._kernels or spec in seen or not cache.missing_kernel(text, spec, vthreads):
                continue
            seen.add(spec)
            jobs.append(functools.partial(cache.op_kernel, text, spec, vthreads,
                                          functools.partial(compile_kernel, cfg, spec, vthreads)))
        return jobs

    def get(self, cfg: Config, spec, vthreads: int):
        key = (cfg, spec, vthreads)
        if key in self._kernels:
            self.hits += 1
        else:
            self._kernels[key] = cache.op_kernel(cfg.to_text(), spec, vthreads,
                                                 lambda: compile_kernel(cfg, spec, vthreads))
        return self._kernels[key]
