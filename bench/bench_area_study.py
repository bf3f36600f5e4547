"""The cost study of docs/dse.md: a finished sweep's rows with area columns, the cost figures,
and the table of the Pareto front.

  vta-sim sweep bench/specs/study_resnet18.json --out resnet18_sim.csv --workers 2
  python bench/bench_area_study.py bench/specs/study_resnet18.json resnet18_sim.csv \\
      --area ecp5 --place-and-route --out resnet18_area.csv --report docs/img/study_resnet18

Equivalent to sweeping with the same `--area` (dse.sweep.area_columns on each row), without
simulating again: the whole-model points take minutes each. `ecp5 --place-and-route` synthesises
each hardware config once (dse.area.synthesise: Yosys, and nextpnr where the design fits the
LFE5UM-85F; cached in build/synth/, so the second model's study synthesises nothing), `model` asks
the area model. The front's table adds which of the LFE5UM-85F's resources each design fills most
(dse.area.ECP5_85F).
"""
from __future__ import annotations

import argparse
import csv
import sys

from dse import area as areas
from dse import report, spec as specs
from dse.point import point_config
from dse.spec import Point
from dse.sweep import area_columns, columns
from vta_sim.errors import ConfigError


def with_area(spec, rows: list, area) -> list:
    out, synthesised = [], {}
    for r in rows:
        point = Point(r["base"], tuple((k, int(r[k])) for k in spec.keys), specs.parse_workload(r["workload"]),
                      int(r["vthreads"]), spec.seed)
        live = {**r, "feasible": r["feasible"] == "True", "cycles": int(r["cycles"] or 0),
                "frames": int(r["frames"] or 0)}
        try:
            cfg = point_config(point)
            if area.model:
                figures = areas.predict(cfg, area.target)
            else:
                k = areas.key(cfg, area)
                if k not in synthesised:
                    print(f"synthesising {cfg.name} ({area.source})", file=sys.stderr, flush=True)
                    synthesised[k] = areas.synthesise(cfg, area)
                figures = synthesised[k]
            reason = None
        except ConfigError as exc:
            cfg, figures, reason = exc, None, f"ConfigError: {exc}"
        out.append({**r, **area_columns(live, cfg, figures, reason, area)})
    return out


def limit(row: dict) -> str:
    """The ECP5-85F resource the design fills most, as a share."""
    share = {k: float(row[k]) / cap for k, cap in areas.ECP5_85F.items() if k != "ff"}
    worst = max(share, key=share.get)
    return f"{worst.upper()} {share[worst]:.0%}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("spec")
    ap.add_argument("results", help="the sweep's CSV (without area columns)")
    ap.add_argument("--area", default="model", choices=areas.AREA_CHOICES)
    ap.add_argument("--place-and-route", action="store_true", help="with --area ecp5: nextpnr's Fmax where it fits")
    ap.add_argument("--out", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args(argv)
    spec, area = specs.load(args.spec), areas.parse_area(args.area, args.place_and_route)
    if area.model and (why := areas.stale(area.target)):
        print(f"warning: {why}", file=sys.stderr)
    with open(args.results, newline="") as f:
        rows = with_area(spec, list(csv.DictReader(f)), area)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, columns(spec, area))
        writer.writeheader()
        writer.writerows(rows)
    figures = report.write(args.out, spec, args.report)
    with open(figures["pareto_csv"], newline="") as f:
        front = list(csv.DictReader(f))
    print("| shape | INP/WGT/ACC KiB | LUT | FF | DSP | BRAM | clock MHz | cycles | frames/s | frames/s per 1k LUT "
          "| frames/s per DSP | ECP5-85F limit |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in front:
        kib = "/".join(f"{float(r[k]):g}" for k in ("inp_kib", "wgt_kib", "acc_kib"))
        fps = [float(r[k]) if r[k] else None for k in ("frames_per_s", "frames_per_s_per_klut", "frames_per_s_per_dsp")]
        text = [f"{v:.3g}" if v is not None else "-" for v in fps]
        print(f"| {r['shape']} | {kib} | {float(r['lut']):,.0f} | {float(r['ff']):,.0f} | {float(r['dsp']):g} | "
              f"{float(r['bram']):g} | {float(r['clock_mhz']):g} | {int(r['cycles']):,} | {' | '.join(text)} | "
              f"{limit(r)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
