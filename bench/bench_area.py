"""Synthesise the configs the area model (dse/area.py) is fitted and validated on; write its data.

  python bench/bench_area.py --target xilinx [--configs fit heldout] [--out dse/data/area_xilinx.json]

Each config is 1x8x8 with a few keys overridden (GEMM shape, buffers, queues); Yosys only (no
place-and-route), cached in build/synth/ by the same key as `vta-sim hw synth`, so a rerun answers
at once and a sweep with `--area` reuses these runs. The JSON it writes is what `--area model`
fits (dse.area.FIT_CONFIGS) and what docs/dse.md's error table is measured on (HELDOUT_CONFIGS). Run it
again after an RTL change: the JSON records the hash of the RTL's logic (hw.build.rtl_digest) it was
synthesised from, and `--area model` warns and tests/dse/test_dse_area.py fails when the RTL has moved on.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from dse.area import DATA_DIR, FIT_CONFIGS, HELDOUT_CONFIGS, config_of, features
from hw.build import rtl_digest
from hw.synth import synth_config


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", choices=("ecp5", "xilinx"), required=True)
    ap.add_argument("--roles", nargs="+", choices=("fit", "heldout"), default=["fit", "heldout"])
    ap.add_argument("--out", help="data JSON (default dse/data/area_TARGET.json); rows are merged into it")
    args = ap.parse_args(argv)
    out = Path(args.out or DATA_DIR / f"area_{args.target}.json")
    digest = rtl_digest()
    data = json.loads(out.read_text()) if out.exists() else {}
    if data.get("rtl_hash") != digest:      # rows of other hardware are not merged with these
        data = {"target": args.target, "rtl_hash": digest, "rows": []}
    rows = {json.dumps(r["overrides"], sort_keys=True): r for r in data["rows"]}
    rtl = subprocess.run(["git", "log", "-1", "--format=%h", "--", "hw/rtl"], capture_output=True,
                         text=True).stdout.strip()   # the commit that last changed the RTL
    todo = [(role, o) for role, configs in (("fit", FIT_CONFIGS), ("heldout", HELDOUT_CONFIGS))
            if role in args.roles for o in configs]
    for role, overrides in todo:
        cfg = config_of(overrides)
        t0 = time.perf_counter()
        res = synth_config(cfg, args.target, pnr=False)
        print(f"{role:<8} {cfg.name:<40} LUT {res['lut']:>7,} FF {res['ff']:>7,} DSP {res['dsp']:>5g} "
              f"BRAM {res['bram']:>6g}  ({time.perf_counter() - t0:.0f} s)", flush=True)
        rows[json.dumps(overrides, sort_keys=True)] = {
            "overrides": overrides, "features": features(cfg), "rtl_commit": rtl,
            **{k: res[k] for k in ("lut", "ff", "dsp", "bram")}}
        data["rows"] = list(rows.values())
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
