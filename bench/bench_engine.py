"""The simulator on the programs this project compiles: the workloads of the Apache VTA fsim
comparison (docs/simulator.md, "Against Apache VTA's fsim").

    PYTHONPATH=. python bench/bench_engine.py [--only c5,resnet18,resnet18-8x8x8,digits] [--repeats 3] [--json F]

Each workload is compiled (through the kernel cache, graph.cache) and run once with a recording
backend that keeps every program it is handed; then only `Simulator.run` over those programs is
timed, best of `--repeats`, as wall time and as CPU time (`time.process_time`, less sensitive to
other jobs on a shared machine). Cycles, statistics and DRAM are checked equal on every repeat.
`VTA_SIM_ENGINE=reference` times the Python reference engine instead of the compiled one.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from graph.run import load_case, run_model
from schedules.measure import layer_shape, run_vta
from table import print_table, write_json
from vta_sim import Simulator
from vta_sim.config import Config


class Recorder:
    """A backend that runs programs on the simulator and keeps (config, image, addr, count)."""

    def __init__(self, cfg: Config):
        self.sim = Simulator(cfg)
        self.programs = []

    def run(self, image, insn_addr, insn_count, trace=False):
        self.programs.append((np.array(image, dtype=np.uint8), insn_addr, insn_count))
        return self.sim.run(image, insn_addr=insn_addr, insn_count=insn_count, trace=trace)


def _c5(rec):
    run_vta("conv2d", layer_shape("C5"), rec.sim.cfg, 2, backend=rec)


def _model(name):
    def record(rec):
        result = run_model(load_case(name), rec.sim.cfg, backend=rec)
        if not result.verified:
            raise SystemExit(f"{name} on {rec.sim.cfg.name}: not verified")
    return record


WORKLOADS = {  # name -> (label, config, how to record its programs)
    "c5": ("ResNet-18 C5 layer", "1x8x8", _c5),
    "resnet18": ("whole ResNet-18 224x224", "1x8x8", _model("resnet18")),
    "resnet18-8x8x8": ("whole ResNet-18 224x224", "8x8x8", _model("resnet18")),
    "digits": ("digits CNN, batch 360", "1x8x8", _model("digits")),
}


def measure(name: str, repeats: int) -> dict:
    label, config, record = WORKLOADS[name]
    cfg = Config.load(config)
    rec = Recorder(cfg)
    record(rec)
    expected = None
    wall = cpu = float("inf")
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        results = [Simulator(cfg).run(image, insn_addr=addr, insn_count=count) for image, addr, count in rec.programs]
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
        seen = [(r.cycles, r.stats, r.dram.tobytes()) for r in results]
        if expected is not None and seen != expected:
            raise SystemExit(f"{name}: a repeat gave different cycles, statistics or DRAM")
        expected = seen
    insns = sum(count for _, _, count in rec.programs)
    cycles = sum(c for c, _, _ in expected)
    return {"workload": name, "label": label, "config": config, "programs": len(rec.programs),
            "instructions": insns, "cycles": cycles, "wall_s": wall, "cpu_s": cpu,
            "insns_per_s": insns / wall, "cycles_per_s": cycles / wall}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(WORKLOADS), help=f"comma-separated: {', '.join(WORKLOADS)}")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json")
    args = p.parse_args(argv)
    rows = [measure(name, args.repeats) for name in args.only.split(",")]
    print_table(rows, [("workload", 26, lambda r: r["label"]), ("config", 6, lambda r: r["config"]),
                       ("progs", 5, lambda r: f"{r['programs']}"), ("insns", 7, lambda r: f"{r['instructions']:,}"),
                       ("cycles", 12, lambda r: f"{r['cycles']:,}"), ("wall s", 7, lambda r: f"{r['wall_s']:.3f}"),
                       ("cpu s", 7, lambda r: f"{r['cpu_s']:.3f}"), ("insns/s", 9, lambda r: f"{r['insns_per_s']:,.0f}"),
                       ("Mcycles/s", 9, lambda r: f"{r['cycles_per_s'] / 1e6:.2f}")])
    write_json(args.json, rows)

if __name__ == "__main__":
    main()
