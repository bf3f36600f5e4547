"""Verilated RTL throughput (native testbench, optionally the cocotb one) against the Python simulator.

  python bench/bench_rtl.py [--gemms 400] [--layers C4,C11] [--config 1x8x8] [--cocotb]
                            [--json bench/results/rtl.json]

1. A stream of 1024-iteration GEMM instructions (bench_sim.py's 1x8x8 program) on the simulator and on the
   RTL through the native testbench (hw/native), and with --cocotb through the cocotb bench too.
2. ResNet-18 layers compiled by the compiler path (schedules), run with --backend rtl and sim:
   bit-exactness against the layer's numpy reference, both cycle counts, cycles/s of each.
Wall times are of the run alone (the layers' compile time is left out); the models are built
first (cached in build/hw), outside the timing. Simulated cycles per second = CYCLES / wall time;
the RTL rows also give it per CPU second, which a machine shared with other jobs does not change.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from bench_sim import gemm_stream

from hw import native
from hw.backend import RTLBackend
from hw.build import build
from vta_sim import Simulator


def _cpu() -> float:
    """CPU seconds of this process and its children (the cocotb bench runs in a child)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _timed(run):
    wall, cpu = time.perf_counter(), _cpu()
    result = run()
    return result, time.perf_counter() - wall, _cpu() - cpu


class TimedRTL(RTLBackend):
    """RTLBackend adding up the wall and CPU seconds of its runs: a layer's time on the RTL
    without the compile and the host-side packing around it."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.wall = self.cpu = 0.0

    def run(self, *args, **kwargs):
        result, wall, cpu = _timed(lambda: super(TimedRTL, self).run(*args, **kwargs))
        self.wall += wall
        self.cpu += cpu
        return result


def stream(label, cfg, prog, testbenches):
    sim, t_sim, _ = _timed(lambda: Simulator(cfg).run(prog.image, prog.insn_addr, prog.insn_count))
    rows = []
    for tb in testbenches:
        backend = RTLBackend(cfg, testbench=tb)
        rtl, wall, cpu = _timed(lambda: backend.run(prog.image, prog.insn_addr, prog.insn_count))  # noqa: B023
        rows.append({"bench": f"{label} ({tb})", "cycles_sim": sim.cycles, "cycles_rtl": rtl.cycles,
                     "verified_rtl": bool((sim.dram == rtl.dram).all() and sim.stats == rtl.stats),
                     "wall_sim_s": t_sim, "wall_rtl_s": wall, "cpu_rtl_s": cpu})
    return rows


def layer(name, config):
    from schedules.measure import layer_shape, run_vta

    shape = layer_shape(f"resnet18.{name}")
    sim = run_vta("conv2d", shape, config, 2, "sim")
    rtl = TimedRTL(config)
    f = run_vta("conv2d", shape, config, 2, rtl)
    return {"bench": f"resnet18.{name} (native)", "cycles_sim": sim["cycles"], "cycles_rtl": f["cycles"],
            "verified_rtl": f["verified"] and f["stats"] == sim["stats"], "wall_sim_s": sim["sim_s"],
            "wall_rtl_s": rtl.wall, "cpu_rtl_s": rtl.cpu}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--gemms", type=int, default=400)
    p.add_argument("--layers", default="C4,C11", help="ResNet-18 layers for the compiler path ('' to skip)")
    p.add_argument("--config", default="1x8x8")
    p.add_argument("--cocotb", action="store_true", help="also time the cocotb testbench on the GEMM stream")
    p.add_argument("--json")
    args = p.parse_args(argv)
    testbenches = ["native"] + (["cocotb"] if args.cocotb else [])
    for config in {"1x8x8", args.config}:   # the GEMM stream is a 1x8x8 program
        native.build(config)
        if args.cocotb:
            build(config)
    rows = stream(f"GEMM stream, {args.gemms} x 1024", "1x8x8", gemm_stream(args.gemms), testbenches)
    rows += [layer(name, args.config) for name in filter(None, args.layers.split(","))]
    print(f"{'benchmark':<36} {'cycles sim':>11} {'cycles rtl':>11} {'equal':>5} {'sim s':>7} {'rtl s':>7} "
          f"{'rtl Mcyc/s':>10} {'per CPU s':>9} {'sim Mcyc/s':>10}")
    for r in rows:
        r["rtl_cycles_per_s"] = r["cycles_rtl"] / r["wall_rtl_s"]
        r["sim_cycles_per_s"] = r["cycles_sim"] / r["wall_sim_s"]
        same = r["cycles_sim"] == r["cycles_rtl"] and r["verified_rtl"]
        print(f"{r['bench']:<36} {r['cycles_sim']:>11,} {r['cycles_rtl']:>11,} {'yes' if same else 'NO':>5} "
              f"{r['wall_sim_s']:>7.2f} {r['wall_rtl_s']:>7.2f} {r['rtl_cycles_per_s'] / 1e6:>10.2f} "
              f"{r['cycles_rtl'] / r['cpu_rtl_s'] / 1e6:>9.2f} "
              f"{r['sim_cycles_per_s'] / 1e6:>10.2f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rows, indent=2))
    ok = all(r["cycles_sim"] == r["cycles_rtl"] and r["verified_rtl"] for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
