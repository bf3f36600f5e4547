"""`vta-sim sweep` and the search behind `vta-sim conv2d|gemm --tune N` (docs/dse.md)."""
from __future__ import annotations

import sys

from . import area as areas, report, spec as specs
from .cluster import connect
from .sweep import run_sweep
from .tune import TuneResult
from .tune import tune as tune_on


def cmd_sweep(args) -> int:
    spec = specs.load(args.spec)       # refuse a bad spec or --area before a cluster starts
    area = areas.parse_area(args.area, args.place_and_route) if args.area else None
    if args.place_and_route and not area:
        raise areas.AreaError("--place-and-route needs --area ecp5")
    if area and area.model and (why := areas.stale(area.target)):
        print(f"vta-sim sweep: warning: {why}", file=sys.stderr)
    with connect(args.scheduler, args.workers) as client:
        s = run_sweep(spec, args.out, client, retries=args.retries, progress=not args.quiet, area=area)
    print(f"sweep {args.spec}: {s.points} points ({s.skipped} already in {args.out}): "
          f"{s.feasible} feasible, {s.infeasible} infeasible, {s.failed} failed, {s.unverified} not bit-exact")
    if args.report:
        figures = report.write(args.out, spec, args.report)
        print(f"figures: {', '.join(str(v) for k, v in figures.items() if k != 'front')}")
        for label, sram, cycles in figures["front"]:
            print(f"  Pareto: {sram / 1024:8.1f} KiB SRAM {cycles:>12,} cycles  {label}")
    if not s.ok:
        print(f"vta-sim sweep: FAILED: {s.failed} point(s) failed and {s.unverified} were not bit-exact "
              f"(see the error and verified columns of {args.out})", file=sys.stderr)
    return 0 if s.ok else 1


def tune(workload: str, shape: dict, config, vthreads: int, trials: int, seed: int = 0, db=None,
         scheduler: str | None = None, workers: int | None = None) -> TuneResult:
    """The tuner `vta-sim conv2d|gemm --tune N` finds through the plugin registry: dse.tune.tune
    on a cluster of its own (LocalCluster, or `scheduler`)."""
    with connect(scheduler, workers) as client:
        return tune_on(workload, shape, config, vthreads, trials, client, seed=seed, db=db)


def register(subparsers) -> None:
    p = subparsers.add_parser("sweep", help="design-space exploration: a grid of configs x workloads "
                              "on a Dask cluster, one CSV row per point (docs/dse.md)")
    p.add_argument("spec", help="sweep spec JSON: base, configs, workloads, vthreads, seed")
    p.add_argument("--out", required=True, help="results CSV; rows stream in, and a rerun resumes it")
    p.add_argument("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786 (default: a local cluster)")
    p.add_argument("--workers", type=int, help="local cluster worker processes (default: one per core)")
    p.add_argument("--retries", type=int, default=2, help="reruns of a point whose worker died or raised (default 2)")
    p.add_argument("--area", choices=areas.AREA_CHOICES,
                   help="add LUT/FF/DSP/BRAM per point: Yosys synthesis for ecp5 or xc7 (once per hardware "
                        "config, cached), or the area model fitted on it (model = model:ecp5)")
    p.add_argument("--place-and-route", action="store_true",
                   help="with --area ecp5: nextpnr's Fmax per config, the clock of latency_us")
    p.add_argument("--report", metavar="DIR", help="write the Pareto and sensitivity figures here "
                   "(with --area also pareto_area.png and pareto.csv)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)
