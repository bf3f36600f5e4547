"""From an `OpSpec` to its compiled accelerator kernel and its numpy reference.

The kernels come from the schedules (`schedules.vta_ops` for conv2d/dense, `vta_pool`,
`vta_eltwise`); the references are their independent numpy int64 implementations. The cache
is keyed by config, spec and virtual threads: the weights are kernel inputs, so layers of the
same shape share one compiled kernel.
"""
from __future__ import annotations

from schedules import vta_eltwise, vta_ops, vta_pool
from schedules import vta_workloads as wl
from vta_sim.config import Config

from . import ops


def compile_kernel(cfg: Config, spec, vthreads: int):
    """The OpKernel of `spec` (inputs: the activations, then the spec's constants)."""
    if isinstance(spec, ops.ConvSpec):
        return vta_ops.conv2d_kernel(cfg, spec.n, spec.h, spec.w, spec.ic, spec.oc, spec.k, spec.pad,
                                     spec.stride, spec.requant, vthreads=vthreads)
    if isinstance(spec, ops.DenseSpec):
        return vta_ops.dense_kernel(cfg, spec.m, spec.k, spec.n, spec.requant, vthreads=vthreads)
    if isinstance(spec, ops.PoolSpec):
        return vta_pool.max_pool_kernel(cfg, spec.n, spec.c, spec.h, spec.w, spec.k, spec.stride, spec.pad)
    if isinstance(spec, ops.AddSpec):
        r = spec.requant
        return vta_eltwise.add_kernel(cfg, spec.n, spec.c, spec.h, spec.w, spec.ka, spec.kb, r.shift,
                                      r.lo, r.hi)
    raise TypeError(f"no kernel for {spec!r}")


def reference(spec, *arrays):
    """The numpy int64 result of `spec` on plain arrays (activations, then constants)."""
    if isinstance(spec, ops.ConvSpec):
        x, w, b = arrays
        r = spec.requant
        return wl.conv2d_ref(x, w, b, spec.pad, spec.stride, r.shift, r.lo, r.hi)
    if isinstance(spec, ops.DenseSpec):
        x, w, b = arrays
        r = spec.requant
        return wl.dense_ref(x, w, b, r.shift, r.lo, r.hi)
    if isinstance(spec, ops.PoolSpec):
        (x,) = arrays
        return vta_pool.max_pool_ref(x, spec.k, spec.stride, spec.pad)
    if isinstance(spec, ops.AddSpec):
        a, b = arrays
        r = spec.requant
        return vta_eltwise.add_ref(a, b, spec.ka, spec.kb, r.shift, r.lo, r.hi)
    raise TypeError(f"no reference for {spec!r}")


def input_vars(spec, root, value_of) -> list:
    """The composite's activation parameters in the kernel's input order."""
    if isinstance(spec, ops.PoolSpec):
        return [root.args[0]]
    acc = ops.layer_call(root, value_of)
    if isinstance(spec, ops.AddSpec):
        return [value_of(value_of(t).args[0]).args[0] for t in acc.args]
    return [acc.args[0]]


class KernelCache:
    """Compiled kernels by (config, spec, vthreads), so a shape is compiled once per process."""

    def __init__(self):
        self._kernels: dict = {}
        self.hits = 0

    def get(self, cfg: Config, spec, vthreads: int):
        key = (cfg, spec, vthreads)
        if key in self._kernels:
            self.hits += 1
        else:
            self._kernels[key] = compile_kernel(cfg, spec, vthreads)
        return self._kernels[key]
