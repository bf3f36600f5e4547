"""Simulator throughput: simulated cycles and instructions per second of wall time.

  python bench/bench_sim.py [--gemms 2000] [--json bench/results/sim.json]

1. A stream of GEMM instructions of 1024 micro-op iterations each (8 uops x 8 x 16 loops) over
   resident INP/WGT tiles: the issue's "1024-cycle-plus GEMM stream" (target: >= 1 M cycles/s).
2. Short instructions: 64-iteration GEMMs, where per-instruction overhead dominates.
3. The hand-written 56x56x64->64 3x3 convolution of examples/blocked_conv2d.py (1x8x8, 2 vthreads).
4. The double-buffered 64x4096x128 GEMM of vta_sim/blocked_gemm.py (1x8x8, 2 vthreads): the
   issue's acceptance program (target: >= 3 M cycles/s).
Only `Simulator.run` is timed (not building the program); best of 3 runs, wall and CPU time.
`VTA_SIM_ENGINE=reference` times the Python reference engine instead of the compiled one.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from vta_sim import Simulator, packing
from vta_sim.blocked_gemm import blocked_gemm, random_operands
from vta_sim.runtime import Runtime, UopKernel
from table import print_table, write_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))  # scripts, not a package
from blocked_conv2d import conv2d  # noqa: E402


def gemm_stream(n_gemms: int, iters=(8, 16), n_uops=8):
    rt = Runtime("1x8x8")
    rng = np.random.default_rng(0)
    a = rt.array(rng.integers(-128, 128, (256, 1, 1, 8), dtype=np.int8), "inp")
    w = rt.array(rng.integers(-128, 128, (64, 1, 8, 8), dtype=np.int8), "wgt")
    rt.load_2d(a, 0, 256, 1, 256, 0)
    rt.load_2d(w, 0, 64, 1, 64, 0)
    rt.dep_push("load", "compute")
    rt.dep_pop("load", "compute")
    k = UopKernel()
    with k.loop(iters[0], dst=16, src=16):
        with k.loop(iters[1], dst=1, wgt=1):
            for u in range(n_uops):
                k.uop(0, u, u)
    for _ in range(n_gemms):
        rt.gemm(k)
    return rt.build()


def timed(program, repeats=3):
    """Best wall and best CPU time (`process_time`: less sensitive to other jobs) of `repeats` runs."""
    wall = cpu = float("inf")
    result = None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        result = Simulator("1x8x8").run(program.image, insn_addr=program.insn_addr, insn_count=program.insn_count)
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    return wall, cpu, result


def row(label: str, program) -> dict:
    wall, cpu, res = timed(program)
    return {"bench": label, "instructions": program.insn_count, "cycles": res.cycles, "wall_s": wall, "cpu_s": cpu,
            "cycles_per_s": res.cycles / wall, "insns_per_s": program.insn_count / wall}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--gemms", type=int, default=2000)
    p.add_argument("--json")
    args = p.parse_args(argv)
    rows = []
    for label, prog in (("GEMM stream, 1024 iterations/insn", gemm_stream(args.gemms)),
                        ("GEMM stream, 64 iterations/insn", gemm_stream(args.gemms, (2, 4), 8))):
        rows.append(row(label, prog))
    rt = Runtime("1x8x8")
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 64, 56, 56), dtype=np.int8)
    k = rng.integers(-128, 128, (64, 64, 3, 3), dtype=np.int8)
    cfg = rt.cfg
    conv2d(rt, packing.pack_nchw(x, cfg.BATCH, cfg.BLOCK_IN)[0], packing.pack_oihw(k, cfg.BLOCK_OUT, cfg.BLOCK_IN), 1, 1, 10, 2)
    rows.append(row("conv2d 56x56x64->64 3x3 (hand-written)", rt.last_program))
    rt = Runtime("1x8x8")
    blocked_gemm(rt, *random_operands(rt.cfg, 64, 4096, 128), vthreads=2)
    rows.append(row("double-buffered GEMM 64x4096x128", rt.last_program))
    print_table(rows, [("benchmark", 42, lambda r: r["bench"]), ("insns", 7, lambda r: f"{r['instructions']:,}"),
                       ("cycles", 12, lambda r: f"{r['cycles']:,}"), ("wall s", 8, lambda r: f"{r['wall_s']:.3f}"),
                       ("cpu s", 8, lambda r: f"{r['cpu_s']:.3f}"),
                       ("Mcycles/s", 10, lambda r: f"{r['cycles_per_s'] / 1e6:.2f}"),
                       ("insns/s", 9, lambda r: f"{r['insns_per_s']:,.0f}")])
    write_json(args.json, rows)

if __name__ == "__main__":
    main()
