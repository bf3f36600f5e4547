"""Build an integer Relax module twice: all on the CPU (the bit-exact reference), and with the
accelerator's ops offloaded (graph.partition + graph.codegen), both run by relax.VirtualMachine.
"""
from __future__ import annotations

import functools
import itertools
import time
from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax

from vta_sim.config import Config

from . import cache as disk_cache
from . import codegen, ops
from .errors import GraphError
from .kernels import KernelCache
from .partition import partition
from .partition import refusals as partition_refusals

_BUILDS = itertools.count()
#: Relax ops that are layers of the report when they run on the CPU, by layer kind.
CPU_LAYERS = {"relax.nn.conv2d": "conv2d", "relax.matmul": "dense", "relax.nn.max_pool2d": "max_pool",
              "relax.mean": "avg_pool", "relax.nn.avg_pool2d": "avg_pool",
              "relax.nn.adaptive_avg_pool2d": "avg_pool", "relax.sigmoid": "sigmoid", "relax.nn.silu": "silu",
              "relax.nn.softmax": "softmax", "relax.concat": "concat"}
#: Why the ops with no integer form on VTA-8 stay on the CPU (in float, between their QDQ pairs).
CPU_ONLY = {
    "sigmoid": "no integer form here: the ALU (MIN, MAX, ADD, SHR, MUL) has no exp or table lookup",
    "silu": "no integer form here: x * sigmoid(x) needs exp or a table lookup",
    "softmax": "no integer form here: exp and a divide",
    "concat": "no accelerator pattern matched (an integer channel concat of int8 NCHW tensors is one)",
}


@dataclass
class Layer:
    """One layer of the compiled graph, in execution order."""
    name: str
    op: str
    target: str                  # "vta" or "cpu"
    reason: str | None           # why it runs on the CPU
    symbol: str | None = None    # the offloaded region's packed function
    macs: int = 0                # multiply-accumulates (conv2d and dense layers; ops.call_macs)


def _executable(mod):
    return disk_cache.vm_executable(mod, lambda m: tvm.compile(m, target="llvm"))


def _vm(mod) -> relax.VirtualMachine:
    return relax.VirtualMachine(_executable(mod), tvm.cpu())


def _single_output(vm, x: np.ndarray) -> np.ndarray:
    out = vm["main"](tvm.runtime.tensor(x))
    if not hasattr(out, "numpy"):
        raise GraphError("the model returns more than one tensor; one output is supported")
    return out.numpy()


class CpuModel:
    """The integer graph built for `llvm`: the reference the accelerator must match bit for bit."""

    def __init__(self, mod):
        t0 = time.perf_counter()
        self.vm = _vm(mod)
        self.compile_s = time.perf_counter() - t0

    @staticmethod
    def cold_jobs(mod) -> list:
        """The build of `mod` as a disk-cache job, unless it is cached (for graph.cache.fill)."""
        return [lambda: _executable(mod)] if disk_cache.missing_vm(mod) else []

    def run(self, x: np.ndarray) -> np.ndarray:
        return _single_output(self.vm, x)


class VtaModel:
    """The integer graph with its accelerator ops offloaded; `run` also returns the layer runs."""

    def __init__(self, mod, cfg: Config, vthreads: int = 2, backend: str = "sim", trace: bool = False,
                 cache: KernelCache | None = None, progress=None, qdq_decisions=(), also=()):
        t0 = time.perf_counter()
        text = cfg.to_text()

        @functools.cache
        def misfit(spec) -> str | None:
            """Asked for every matched op, twice; a kernel already in the disk cache compiled, so
            it fits (the tile choice over every candidate costs tens of ms per conv)."""
            return None if not disk_cache.missing_kernel(text, spec, vthreads) else spec.misfit(cfg, vthreads)
        cpu_reasons = _cpu_reasons(mod["main"], qdq_decisions, misfit)
        parted = _unique_symbols(partition(mod, misfit), f"vta{next(_BUILDS)}_")
        self.build = codegen.VtaBuild(cfg, vthreads, backend, trace, cache or KernelCache(), progress)
        disk_cache.fill(self.build.cache.cold_jobs(cfg, codegen.offloaded_specs(parted), vthreads) + list(also))
        with codegen.active(self.build):
            self.mod = relax.transform.RunCodegen()(parted)
        self.partitioned = parted
        codegen.place_concats(self.mod["main"], self.build.regions)
        self.vm = _vm(self.mod)
        self.layers = _layers(self.mod["main"], self.build.regions, cpu_reasons)
        self.build.expected_runs = sum(layer.target == "vta" for layer in self.layers)
        self.compile_s = time.perf_counter() - t0

    def run(self, x: np.ndarray) -> tuple[np.ndarray, list]:
        self.build.log.clear()
        out = _single_output(self.vm, x)
        return out, list(self.build.log)

    def host_seconds(self, x: np.ndarray, runs: list, repeats: int = 5) -> float:
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


def _layer_calls(main):
    """(kind, call) of each layer of `main` in execution order; offloaded regions have kind None."""
    var2val = dict(relax.analysis.get_var2val(main))
    for block in main.body.blocks:
        for binding in block.bindings:
            call, name = binding.value, ops.op_name(binding.value)
            if ops.extern_symbol(call) is not None:
                yield None, call
            elif name == "relax.nn.conv2d":
                yield ops.conv_kind(call), call
            elif name in CPU_LAYERS:
                yield CPU_LAYERS[name], call
            elif name == "relax.add" and _is_residual(call, var2val):
                yield "add", call


def _cpu_reasons(main, qdq_decisions, misfit) -> dict:
    """{kind: [reason of the kind's i-th layer]}: why each layer would stay on the CPU, from the
    QDQ pass (float layers) or the partitioner's check (integer layers VTA-8 does not take)."""
    refused = partition_refusals(main, misfit)
    float_reasons = {d.name: d.reason for d in qdq_decisions if not d.integer}
    reasons: dict = {}
    for kind, call in _layer_calls(main):
        index = len(reasons.setdefault(kind, [])) + 1
        reason = float_reasons.get(f"{kind}{index}") or refused.get(call)
        reasons[kind].append(reason or CPU_ONLY.get(kind, "no accelerator pattern matched"))
    return reasons


def _layers(main, regions: dict, cpu_reasons: dict) -> list:
    """The report's layers in execution order, with where each runs and why."""
    layers, counts = [], {}
    for kind, call in _layer_calls(main):
        symbol = ops.extern_symbol(call)
        kind = regions[symbol].spec.op if symbol else kind
        counts[kind] = counts.get(kind, 0) + 1
        name = f"{kind}{counts[kind]}"
        if symbol:
            spec = regions[symbol].spec
            macs = spec.macs if spec.op in ("conv2d", "dense") else 0
            layers.append(Layer(name, kind, "vta", None, symbol, macs))
        else:
            layers.append(Layer(name, kind, "cpu", cpu_reasons[kind][counts[kind] - 1], macs=ops.call_macs(call)))
    return layers


def _is_residual(call, var2val) -> bool:
    """An add of two activations: shifted or scaled int8 operands (integer forms) or two
    dequantized ones."""
    kinds = {ops.op_name(var2val.get(a, a)) for a in call.args}
    return kinds in ({"relax.left_shift"}, {"relax.dequantize"}, {"relax.multiply"})
