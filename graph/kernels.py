"""The compiled kernels of a model's offloaded ops, each compiled once.

Each spec (graph.ops) compiles its own kernel (a ConcatSpec: its parts'); this cache is keyed by config, spec and virtual
threads: the weights are kernel inputs, so layers of the same shape share one compiled kernel,
and across processes the on-disk cache (graph.cache) keeps them.
"""
from __future__ import annotations

import functools

from vta_sim.config import Config

from . import cache


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
        for spec in _compiled(specs):
            if (cfg, spec, vthreads) in self._kernels or spec in seen or not cache.missing_kernel(text, spec, vthreads):
                continue
            seen.add(spec)
            jobs.append(functools.partial(cache.op_kernel, text, spec, vthreads,
                                          functools.partial(spec.kernel, cfg, vthreads)))
        return jobs

    def get(self, cfg: Config, spec, vthreads: int):
        if hasattr(spec, "parts"):           # a ConcatSpec: its rescale kernels, each cached
            return spec.assemble(cfg, {part: self.get(cfg, part, vthreads) for part in spec.parts})
        key = (cfg, spec, vthreads)
        if key in self._kernels:
            self.hits += 1
        else:
            self._kernels[key] = cache.op_kernel(cfg.to_text(), spec, vthreads,
                                                 lambda: spec.kernel(cfg, vthreads))
        return self._kernels[key]


def _compiled(specs):
    """The specs that compile a kernel: each spec, or the parts of one made of parts."""
    for spec in specs:
        yield from getattr(spec, "parts", (spec,))
