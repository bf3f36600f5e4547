"""Verilated RTL throughput against the Python simulator, on the same programs.

  python bench/bench_rtl.py [--gemms 40] [--layer C4] [--config 1x8x8] [--json bench/results/rtl.json]

1. A stream of 1024-iteration GEMM instructions (bench_sim.py's program, fewer of them).
2. A ResNet-18 layer compiled by the compiler path (schedules), run with --backend rtl and sim:
   bit-exactness against the layer's numpy reference, and both cycle counts.
RTL wall time includes starting the simulator process (about 1 s); the model is built first
(cached in build/hw), outside the timing. Simulated cycles per second = CYCLES / wall time.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench_sim import gemm_stream

from hw.backend import RTLBackend
from hw.build import build
from vta_sim import Simulator


def compare(label, cfg, image, addr, count):
    t0 = time.perf_counter()
    sim = Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    t_sim = time.perf_counter() - t0
    t0 = time.perf_counter()
    rtl = RTLBackend(cfg).run(image, insn_addr=addr, insn_count=count)
    t_rtl = time.perf_counter() - t0
    return {"bench": label, "instructions": count, "cycles_sim": sim.cycles, "cycles_rtl": rtl.cycles,
            "dram_equal": bool((sim.dram == rtl.dram).all()), "wall_sim_s": t_sim, "wall_rtl_s": t_rtl,
            "rtl_cycles_per_s": rtl.cycles / t_rtl, "sim_cycles_per_s": sim.cycles / t_sim}


def layer(name, config):
    from schedules.cli import run_vta
    from schedules.layers import get_layer

    lay = get_layer(name)
    shape = {"h": lay.H, "w": lay.H, "ic": lay.IC, "oc": lay.OC, "k": lay.K, "pad": lay.pad, "stride": lay.stride}
    row = {"bench": f"resnet18.{name} (compiled)"}
    for backend in ("sim", "rtl"):
        t0 = time.perf_counter()
        f = run_vta("conv2d", shape, config, 2, backend)
        row[f"wall_{backend}_s"] = time.perf_counter() - t0
        row[f"cycles_{backend}"] = f["cycles"]
        row[f"verified_{backend}"] = f["verified"]
    row["rtl_cycles_per_s"] = row["cycles_rtl"] / row["wall_rtl_s"]
    row["sim_cycles_per_s"] = row["cycles_sim"] / row["wall_sim_s"]
    return row


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--gemms", type=int, default=40)
    p.add_argument("--layer", default="C4", help="ResNet-18 layer for the compiler path ('' to skip)")
    p.add_argument("--config", default="1x8x8")
    p.add_argument("--json")
    args = p.parse_args(argv)
    build(args.config)
    rows = []
    prog = gemm_stream(args.gemms)
    rows.append(compare(f"GEMM stream, {args.gemms} x 1024 iterations", "1x8x8", prog.image,
                        prog.insn_addr, prog.insn_count))
    if args.layer:
        rows.append(layer(args.layer, args.config))
    print(f"{'benchmark':<36} {'cycles sim':>11} {'cycles rtl':>11} {'sim s':>7} {'rtl s':>7} "
          f"{'rtl kcyc/s':>10} {'sim kcyc/s':>10}")
    for r in rows:
        print(f"{r['bench']:<36} {r['cycles_sim']:>11,} {r['cycles_rtl']:>11,} {r['wall_sim_s']:>7.2f} "
              f"{r['wall_rtl_s']:>7.2f} {r['rtl_cycles_per_s'] / 1e3:>10.1f} {r['sim_cycles_per_s'] / 1e3:>10.1f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rows, indent=2))
    ok = all(r["cycles_sim"] == r["cycles_rtl"] for r in rows) and all(
        r.get("dram_equal", True) and r.get("verified_rtl", True) for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
