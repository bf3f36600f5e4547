"""Sweep throughput: a 1,000-point grid of cheap GEMMs on a local Dask cluster, points per second.

    python bench/bench_sweep.py --workers 1 2 [--out build/bench_sweep]

The grid: 5 GEMM shapes x 2 thread counts x 100 configs (DMA_READ_LATENCY x LOG_BUS_WIDTH x
GEMM_PIPELINE), every point compiled with TVM, simulated and verified. The time counts the
whole `vta-sim sweep` run (cluster start included); results go to a fresh CSV per run.
Figures in docs/dse.md.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from dse.cluster import connect
from dse.spec import from_dict
from dse.sweep import run_sweep

SPEC = {"base": "1x8x8",
        "configs": {"DMA_READ_LATENCY": [4, 8, 16, 32, 64], "LOG_BUS_WIDTH": [5, 6, 7, 8],
                    "GEMM_PIPELINE": [2, 4, 8, 16, 32]},
        "workloads": ["gemm:8x32x32", "gemm:16x32x32", "gemm:8x64x32", "gemm:8x32x64", "gemm:16x16x16"],
        "vthreads": [1, 2]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--out", default="build/bench_sweep")
    args = ap.parse_args()
    spec = from_dict(SPEC)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for n in args.workers:
        csv_path = out / f"sweep_{n}w.csv"
        csv_path.unlink(missing_ok=True)
        t0 = time.perf_counter()
        with connect(workers=n) as client:
            s = run_sweep(spec, csv_path, client, progress=False)
        wall = time.perf_counter() - t0
        results.append({"workers": n, "points": s.points, "feasible": s.feasible, "failed": s.failed,
                        "seconds": round(wall, 1), "points_per_s": round(s.points / wall, 2)})
        print(json.dumps(results[-1]), flush=True)
    (out / "bench_sweep.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
