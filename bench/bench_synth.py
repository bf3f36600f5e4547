"""Synthesis of vta_top: resources, Fmax and the critical path of each configuration.

  python bench/bench_synth.py [--runs 1x8x8:ecp5 8x8x8:xilinx ...] [--json bench/results/synth.json]
  python bench/bench_synth.py --runs 1x8x8:ecp5:vta_dma_read 1x8x8:ecp5:vta_store ...

A third field places one module alone (`vta-sim hw synth --module`, hw/synth.py's wrapper):
its Fmax and critical path in seconds to minutes, the loop for timing work.

1x8x8 is synthesised (Yosys synth_ecp5) and placed and routed (nextpnr-ecp5) on an LFE5UM-85F;
8x8x8 does not fit an ECP5 (512 multipliers, about 4 Mbit of SRAM), so it gets Yosys'
synth_xilinx estimate (xc7), as does 1x8x8 for comparison. Results are cached in build/synth/ by
the hash of the RTL, header and target: a second run prints the table at once (wall 0 s).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hw.build import TOPLEVEL
from hw.synth import summary, synth_config

DEFAULT_RUNS = ("1x8x8:ecp5", "1x8x8:xilinx", "8x8x8:xilinx")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", default=list(DEFAULT_RUNS), help="CONFIG:TARGET[:MODULE]")
    ap.add_argument("--json", help="write every result here")
    args = ap.parse_args(argv)
    rows = []
    for run in args.runs:
        cfg, target, *module = run.split(":")
        t0 = time.perf_counter()
        res = synth_config(cfg, target, progress=lambda line, run=run: print(f"  [{run}] {line}", file=sys.stderr, flush=True),
                           module=module[0] if module else TOPLEVEL)
        res["wall_s"] = round(time.perf_counter() - t0, 1)
        rows.append(res)
        print(summary(res))
    print(f"\n{'config':<7} {'target':<7} {'module':<14} {'LUT':>8} {'FF':>8} {'DSP':>5} {'BRAM':>6} {'Fmax MHz':>9} "
          f"{'yosys s':>8} {'nextpnr s':>9}")
    for r in rows:
        fmax = f"{r['fmax_mhz']:.1f}" if r.get("fmax_mhz") is not None else "-"
        print(f"{r['config']:<7} {r['target']:<7} {r.get('module', TOPLEVEL):<14} {r['lut']:>8,} {r['ff']:>8,} {r['dsp']:>5g} {r['bram']:>6g} "
              f"{fmax:>9} {r.get('yosys_s', 0):>8} {r.get('nextpnr_s', '-'):>9}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
