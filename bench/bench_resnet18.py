"""ResNet-18 C2-C11 through the TVM compiler path, one and two virtual threads side by side.

  python bench/bench_resnet18.py [--config 1x8x8] [--json bench/results/resnet18.json]

Prints both columns (cycles, GEMM-core utilisation) per layer, the two-thread speed-up, and
the issue-3 acceptance checks: every layer verified bit-exact with 1 and 2 threads; a mean
utilisation of at least 80 % over the 3x3 layers with 2 threads; every layer faster with 2
threads unless its 1-thread run is already within 5 % of the roofline bound. The stem C1
(3 channels padded to 8, one thread: two tiles do not fit the INP SRAM) is reported below the
table, outside the checks.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from schedules.measure import run_resnet18  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="1x8x8")
    ap.add_argument("--json", help="write both runs' figures here")
    args = ap.parse_args()
    runs = {v: run_resnet18(args.config, v, progress=None) for v in (1, 2)}
    print(f"ResNet-18 on {args.config}: cycles and GEMM-core utilisation, 1 vs 2 virtual threads")
    print(f"{'layer':<6}{'roofline':>11}{'cycles 1T':>12}{'util 1T':>9}{'cycles 2T':>12}{'util 2T':>9}"
          f"{'speed-up':>10}{'2T tiles':>28}")
    faster_ok = True
    for one, two in zip(runs[1], runs[2]):
        ok = two["cycles"] < one["cycles"] or one["cycles"] <= 1.05 * one["roofline_cycles"]
        faster_ok &= ok
        t = two["tiles"]
        print(f"{one['layer']:<6}{one['roofline_cycles']:>11,.0f}{one['cycles']:>12,}"
              f"{100 * one['utilization']:>8.1f}%{two['cycles']:>12,}{100 * two['utilization']:>8.1f}%"
              f"{one['cycles'] / two['cycles']:>9.3f}x"
              f"{'  oc%d x rows%d x ic%d / %s' % (t['oc_blocks'], t['rows'], t['ic_blocks'], t['split']):>28}"
              + ("" if ok else "  <- not faster"))
    (c1,) = run_resnet18(args.config, 2, progress=None, layers=("C1",))
    print(f"C1 (stem) roofline {c1['roofline_cycles']:,.0f}, {c1['cycles']:,} cycles, "
          f"{100 * c1['utilization']:.1f} % utilisation, {c1['vthreads']} thread(s), "
          f"{'verified' if c1['verified'] else 'MISMATCH'}")
    three = {v: [r["utilization"] for r in runs[v] if r["shape"]["k"] == 3] for v in runs}
    mean = {v: 100 * sum(u) / len(u) for v, u in three.items()}
    verified = c1["verified"] and all(r["verified"] for rows in runs.values() for r in rows)
    print(f"mean utilisation of the 3x3 layers: {mean[1]:.1f} % (1 thread), {mean[2]:.1f} % (2 threads)")
    checks = {"all layers (and C1) bit-exact with 1 and 2 threads": verified,
              "3x3 mean utilisation with 2 threads >= 80 %": mean[2] >= 80,
              "2 threads faster on every layer (or 1 thread within 5 % of roofline)": faster_ok}
    for text, ok in checks.items():
        print(f"  [{'PASS' if ok else 'FAIL'}] {text}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"1": runs[1], "2": runs[2], "C1": c1}, indent=2))
        print(f"figures written to {args.json}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
