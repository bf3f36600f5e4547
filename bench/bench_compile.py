"""Compile and simulation time of the TVM compiler path, per layer and end to end.

  python bench/bench_compile.py [--config 1x8x8]

Issue-3 targets on the 2-core machine: compiling one layer under 5 s, simulating it under
10 s, and the whole `vta-sim resnet18` command under 2 minutes. Also times the two dense
acceptance shapes (1x1024x1024 on 1x8x8, 64x512x512 on 8x8x8), the stem C1 (224x224, 3
channels padded to 8) and the classifier-shaped dense 1x512x1000 (N not a multiple of 8).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from schedules.measure import run_resnet18, run_vta  # noqa: E402
from schedules.layers import TABLE_LAYERS  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="1x8x8")
    args = ap.parse_args()
    rows = run_resnet18(args.config, 2, progress=None, layers=("C1",) + TABLE_LAYERS)
    dense = [("gemm 1x1024x1024 1x8x8", run_vta("gemm", {"m": 1, "k": 1024, "n": 1024}, "1x8x8")),
             ("gemm 64x512x512 8x8x8", run_vta("gemm", {"m": 64, "k": 512, "n": 512}, "8x8x8")),
             ("gemm 1x512x1000 1x8x8", run_vta("gemm", {"m": 1, "k": 512, "n": 1000}, "1x8x8"))]
    print(f"{'workload':<26}{'compile s':>10}{'simulate s':>11}{'verified':>9}")
    for name, f in [(f"resnet18.{r['layer']} {r['vthreads']} thr.", r) for r in rows] + dense:
        print(f"{name:<26}{f['compile_s']:>10.2f}{f['sim_s']:>11.2f}{'yes' if f['verified'] else 'NO':>9}")
    figures = [f for _, f in dense] + rows
    worst_compile = max(f["compile_s"] for f in figures)
    worst_sim = max(f["sim_s"] for f in figures)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "vta_sim", "resnet18", "--config", args.config],
                          cwd=ROOT, capture_output=True, text=True)
    total = time.perf_counter() - t0
    print(f"`vta-sim resnet18` wall time: {total:.1f} s (exit {proc.returncode})")
    checks = {f"slowest compile {worst_compile:.2f} s < 5 s": worst_compile < 5,
              f"slowest simulation {worst_sim:.2f} s < 10 s": worst_sim < 10,
              f"vta-sim resnet18 {total:.1f} s < 120 s": total < 120 and proc.returncode == 0}
    for text, ok in checks.items():
        print(f"  [{'PASS' if ok else 'FAIL'}] {text}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
