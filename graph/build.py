"""Build an integer Relax module twice: all on the CPU (the bit-exact reference), and with the
accelerator's ops offloaded (graph.partition + graph.codegen), both run by relax.VirtualMachine.
"""
from __future__ import annotations

import functools
import itertools
import os
import time
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax

from vta_sim.config import Config

from . import cache as disk_cache
from . import codegen, fusion, ops
from .ops.qdq_read import bindings
from .ops.relax_read import extern_symbol
from .errors import GraphError
from .kernels import KernelCache
from .partition import partition, read_layers

_BUILDS = itertools.count()


@dataclass
class Layer:
    """One layer of the compiled graph, in execution order."""
    name: str
    op: str
    target: str                  # "vta" or "cpu"
    reason: str | None           # why it runs on the CPU
    symbol: str | None = None    # the offloaded region's packed function
    macs: int = 0                # multiply-accumulates (conv2d and dense layers)


#: LLVM's optimisation level for the integer graph's builds (the CPU reference and the accelerator
#: graph's host code). -O1 runs ResNet-18 as fast as -O3 (0.86 s against 0.91 s a frame) and builds
#: quicker (2.7 s against 3.0 s; the small encoder's 1.5 s against 4.4 s); -O0 builds ResNet-18 in
#: 0.9 s but runs a frame ten times slower. `$VTA_CPU_OPT_LEVEL` overrides it: the test suite,
#: which builds about 170 small graphs once each and runs them on a few inputs, sets 0.
CPU_OPT_LEVEL = 1


def cpu_target() -> dict:
    """The LLVM target of the integer graph's builds, at $VTA_CPU_OPT_LEVEL (read at each call),
    else CPU_OPT_LEVEL."""
    raw = os.environ.get("VTA_CPU_OPT_LEVEL", "")
    if raw not in ("", "0", "1", "2", "3"):
        raise GraphError(f"VTA_CPU_OPT_LEVEL={raw!r}: accepted 0, 1, 2 or 3 (LLVM's optimisation level)")
    return {"kind": "llvm", "opt-level": int(raw) if raw else CPU_OPT_LEVEL}


def _executable(mod):
    return disk_cache.vm_executable(mod, cpu_target())


def _vm(mod) -> relax.VirtualMachine:
    return relax.VirtualMachine(_executable(mod), tvm.cpu())


def _outputs(vm, x) -> list:
    """`main` run on `x` (one array, or {input name: array} in the order of its parameters): its
    output tensors, one for a model with one output, in the graph's order for several."""
    args = list(x.values()) if isinstance(x, dict) else [x]
    out = vm["main"](*(tvm.runtime.tensor(np.ascontiguousarray(a)) for a in args))
    return [out.numpy()] if hasattr(out, "numpy") else [_array(o) for o in out]


def _array(value) -> np.ndarray:
    if not hasattr(value, "numpy"):
        raise GraphError("the model returns a nested tuple of tensors; outputs that are tensors are supported")
    return value.numpy()


def _single_output(vm, x) -> np.ndarray:
    """The first output of `main` run on `x`."""
    return _outputs(vm, x)[0]


class CpuModel:
    """The integer graph built for `llvm`: the reference the accelerator must match bit for bit."""

    def __init__(self, mod):
        t0 = time.perf_counter()
        self.vm = _vm(mod)
        self.compile_s = time.perf_counter() - t0

    @staticmethod
    def cold_jobs(mod) -> list:
        """The build of `mod` as a disk-cache job, unless it is cached (for graph.cache.fill)."""
        return [lambda: _executable(mod)] if disk_cache.missing_vm(mod, cpu_target()) else []

    def run(self, x) -> np.ndarray:
        """The model's first output on `x`."""
        return _single_output(self.vm, x)

    def run_all(self, x) -> list:
        """Every output of the model on `x`, in the graph's order."""
        return _outputs(self.vm, x)


class VtaModel:
    """The integer graph with its accelerator ops offloaded; `run` also returns the layer runs.
    `fuse`: each dense's bias add and a GELU after it run in the dense's program (graph.fusion)."""

    def __init__(self, mod, cfg: Config, qdq_decisions: list, vthreads: int = 2, backend: str = "sim",
                 trace: bool = False, cache: KernelCache | None = None, progress=None, also=(), fuse: bool = True):
        t0 = time.perf_counter()
        text = cfg.to_text()

        @functools.cache
        def misfit(spec) -> str | None:
            """Asked for every matched op, twice; a kernel already in the disk cache compiled, so
            it fits (the tile choice over every candidate costs tens of ms per conv)."""
            return None if not disk_cache.missing_kernel(text, spec, vthreads) else spec.misfit(cfg, vthreads)
        reads = read_layers(mod["main"], misfit)
        parted = _unique_symbols(partition(mod, reads), f"vta{next(_BUILDS)}_")
        self.build = codegen.VtaBuild(cfg, vthreads, backend, trace, cache or KernelCache(), reads, progress)
        disk_cache.fill(self.build.cache.cold_jobs(cfg, codegen.offloaded_specs(parted, reads), vthreads)
                        + list(also))
        with codegen.active(self.build):
            self.mod = relax.transform.RunCodegen()(parted)
        self.partitioned = parted
        codegen.place_concats(self.mod["main"], self.build.regions)
        declined: list = []
        if fuse:
            self.mod = fusion.fuse_epilogues(self.mod, self.build.regions, codegen.fused_region, declined)
        codegen.chain_regions(self.mod["main"], self.build.regions)
        names = {d.id: d.name for d in qdq_decisions}
        #: "layers: why" of each fusion graph.fusion declined, for the report
        self.fusions_declined = [f"{fusion.JOIN.join(names[s.id] for s in stamps)} not fused: {why}"
                                 for stamps, why in declined]
        self.vm = _vm(self.mod)
        self.layers = _layers(self.mod["main"], self.build.regions, qdq_decisions, reads)
        self.build.expected_runs = sum(layer.target == "vta" for layer in self.layers)
        self.compile_s = time.perf_counter() - t0

    def run(self, x) -> tuple[np.ndarray, list]:
        """(the model's first output on `x`, the runs of its offloaded layers)."""
        outs, runs = self.run_all(x)
        return outs[0], runs

    def run_all(self, x) -> tuple[list, list]:
        """(every output of the model on `x`, in the graph's order; the runs of its offloaded layers)."""
        self.build.log.clear()
        outs = _outputs(self.vm, x)
        return outs, list(self.build.log)

    def host_seconds(self, x, runs: list, repeats: int = 5) -> float:
        """The host's share of one run of `x`: the model run again with every offloaded region
        returning what it wrote in `runs` instead of running its kernel, so what is timed is the
        CPU layers, the integer glue between regions and the Relax VM (median of `repeats`)."""
        recorded: dict = {}
        for run in runs:
            recorded.setdefault(run.region.symbol, []).append(run.output)
        times = []
        try:
            for _ in range(repeats):
                self.build.replay = {k: list(v) for k, v in recorded.items()}
                t0 = time.perf_counter()
                _single_output(self.vm, x)
                times.append(time.perf_counter() - t0)
        finally:
            self.build.replay = None
            for region in self.build.regions.values():
                if region.placement is not None:
                    region.placement.stored.clear()
        return sorted(times)[len(times) // 2]


def _unique_symbols(mod, prefix: str):
    """Prefix each offloaded region's global symbol, so two builds in one process never share one."""
    for gv, func in list(mod.functions_items()):
        if isinstance(func, relax.Function) and func.attrs and func.attrs.get("Codegen") == "vta":
            mod[gv] = func.with_attr("global_symbol", prefix + str(func.attrs["global_symbol"]))
    return mod


def _layers(main, regions: dict, decisions: list, reads: dict) -> list:
    """The report's layers in execution order (the stamped calls and the offloaded regions of
    `main`), with where each runs and why: the QDQ pass's reason (a float layer), the
    partitioner's (an integer layer VTA-8 does not take), or the rule's."""
    by_id = {d.id: d for d in decisions}
    layers = []
    for binding in bindings(main):
        symbol = extern_symbol(binding.value)
        if symbol is not None:
            region = regions[symbol]
            spec = region.spec
            name = fusion.JOIN.join(by_id[p.id].name for p in region.parts) if region.parts else by_id[region.layer.id].name
            layers.append(Layer(name, spec.op, "vta", None, symbol, spec.macs))
            continue
        stamp = ops.stamp_of(binding.value)
        if stamp is None:
            continue
        d = by_id[stamp.id]
        refused = reads.get(stamp.id)
        reason = d.reason or (refused if isinstance(refused, str) else ops.BY_KIND[d.op].cpu_reason)
        layers.append(Layer(d.name, d.op, "cpu", reason, macs=d.macs))
    return layers
