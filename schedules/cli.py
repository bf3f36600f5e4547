"""`vta-sim gemm`, `vta-sim conv2d` and `vta-sim resnet18`: the argparse front of
`schedules.measure` (compile with TVM, simulate, verify, report)."""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from vta_sim import backends
from vta_sim.errors import CompileError

from . import vta_conv2d as vc
from . import vta_dense as vd
from .measure import layer_shape, report, run_resnet18, run_vta, table


# ----------------------------------------------------------------------------- subcommands
def _common(p):
    p.add_argument("--config", default="1x8x8", help="1x8x8 (default), 8x8x8 or a JSON file")
    p.add_argument("--backend", default="sim", choices=backends.names(), help="sim (default) or rtl")
    p.add_argument("--vthreads", type=int, default=2, choices=(1, 2), help="virtual threads (default 2)")
    p.add_argument("--trace", help="write a timeline: Chrome/Perfetto JSON, or a PNG if it ends in .png")
    p.add_argument("--json", help="write the figures as JSON here")
    p.add_argument("--seed", type=int, default=0, help="random data seed")


def _write_json(path, data):
    if path:
        Path(path).write_text(json.dumps(data, indent=2))
        print(f"figures written to {path}")


def _finish(figures: dict, args) -> int:
    print(report(figures))
    if figures.get("trace"):
        print(f"  timeline written to {figures['trace']}")
    _write_json(args.json, figures)
    return 0 if figures["verified"] else 1


def _tuner():
    """The search behind --tune: `tune` of the plugin that provides one (dse.cli, `vta-sim sweep`).

    Found through the plugin registry because dse sits above schedules: schedules never imports it."""
    from vta_sim.cli import load_plugins

    plugins = load_plugins()
    for plugin in plugins:
        if plugin.module is not None and hasattr(plugin.module, "tune"):
            return plugin.module.tune
    broken = "; ".join(f"{p.module_name}: {p.error}" for p in plugins if p.error)
    raise CompileError("--tune needs the design-space exploration plugin (dse, `vta-sim sweep`), "
                       "which is not installed" + (f" or failed to load ({broken})" if broken else "")
                       + "; run `pip install -e '.[dev]'`")


def _run(workload: str, shape: dict, tiles, args) -> int:
    """run_vta with the given tiles, or with the best of `--tune N` simulator trials."""
    tuned = None
    if args.tune:
        if tiles is not None:
            raise CompileError("--tune searches the tiles: give --tune or --tiles, not both")
        tuned = _tuner()(workload, shape, config=args.config, vthreads=args.vthreads, trials=args.tune,
                         seed=args.seed, db=args.tuning_db, scheduler=args.scheduler, workers=args.workers)
        tiles = tuned.best_tiles
    figures = run_vta(workload, shape, args.config, args.vthreads, args.backend, tiles, args.trace, args.seed)
    if tuned:
        print(tuned.summary())
        figures["tuning"] = tuned.to_json()
    return _finish(figures, args)


def cmd_gemm(args) -> int:
    tiles = vd.DenseTiles(*args.tiles, args.vthreads, args.split) if args.tiles else None
    return _run("gemm", {"m": args.m, "k": args.k, "n": args.n}, tiles, args)


def _conv_shape(args) -> dict:
    if args.layer:
        return layer_shape(args.layer)
    missing = [k for k in ("h", "ic", "oc", "k") if getattr(args, k) is None]
    if missing:
        raise CompileError("give --layer resnet18.C<n> or all of --h --ic --oc --k "
                           f"(missing: {', '.join('--' + m for m in missing)})")
    return {"h": args.h, "w": args.w or args.h, "ic": args.ic, "oc": args.oc, "k": args.k,
            "pad": args.pad, "stride": args.stride}


def cmd_conv2d(args) -> int:
    try:
        shape = _conv_shape(args)
    except KeyError as exc:
        raise CompileError(str(exc.args[0])) from None
    if args.batch:
        shape["batch"] = args.batch
    tiles = (vc.ConvTiles(*args.tiles, args.vthreads, args.split, args.batch_blocks)
             if args.tiles else None)
    return _run("conv2d", shape, tiles, args)


def cmd_resnet18(args) -> int:
    t0 = time.perf_counter()
    print(f"ResNet-18 C2-C11 on {args.config}, {args.vthreads} virtual thread(s)")
    rows = run_resnet18(args.config, args.vthreads, args.backend, args.trace, args.seed)
    print(table(rows))
    three = [r["utilization"] for r in rows if r["shape"]["k"] == 3]
    print(f"mean GEMM utilisation of the 3x3 layers: {100 * sum(three) / len(three):.1f} %; "
          f"total {time.perf_counter() - t0:.1f} s")
    _write_json(args.json, rows)
    return 0 if all(r["verified"] for r in rows) else 1


def _tune_args(p):
    p.add_argument("--tune", type=int, metavar="N", help="search tiles, threads and split with N "
                   "simulator trials on a Dask cluster (default tiles first), keep the best in the "
                   "tuning database and run with it (docs/dse.md)")
    p.add_argument("--tuning-db", help="with --tune: the database file (default $VTA_TUNING_DB or "
                   "tuning/tiles.json in the cache root, docs/dse.md)")
    p.add_argument("--scheduler", help="with --tune: a Dask scheduler address (default: a local cluster)")
    p.add_argument("--workers", type=int, help="with --tune: local Dask workers (default: one per core)")


def _tiling_args(p, tiles: tuple, splits: tuple, func) -> None:
    """A TiledOp subcommand's --tiles (in blocks) and --split, then the common and tuning options."""
    p.add_argument("--tiles", type=int, nargs=3, metavar=tiles,
                   help="override the automatic tiles (in blocks); any positive tile up to the "
                        "shape, remainder tiles are padded")
    p.add_argument("--split", default=splits[0], choices=splits, help="dimension the threads divide")
    _common(p)
    _tune_args(p)
    p.set_defaults(func=func)


def register(subparsers) -> None:
    p = subparsers.add_parser("gemm", help="compile and run a packed int8 GEMM with requantisation")
    for name in ("m", "k", "n"):
        p.add_argument(f"--{name}", type=int, required=True)
    _tiling_args(p, ("ROWS", "COLS", "K_BLOCKS"), ("n", "m"), cmd_gemm)

    p = subparsers.add_parser("conv2d", help="compile and run a blocked int8 conv2d with requantisation")
    p.add_argument("--layer", help="a ResNet-18 layer, e.g. resnet18.C5")
    for name in ("h", "w", "ic", "oc", "k"):
        p.add_argument(f"--{name}", type=int)
    p.add_argument("--pad", type=int, default=0)
    p.add_argument("--stride", type=int, default=1)
    p.add_argument("--batch", type=int, help="batch (default: the config's BATCH)")
    p.add_argument("--batch-blocks", type=int, help="with --tiles: batch blocks per tile "
                   "(default: the whole batch)")
    _tiling_args(p, ("OC_BLOCKS", "ROWS", "IC_BLOCKS"), ("h", "oc"), cmd_conv2d)

    p = subparsers.add_parser("resnet18", help="the ResNet-18 conv layers C2-C11 in one table")
    _common(p)
    p.set_defaults(func=cmd_resnet18)


def demo(out_dir: str, config: str = "1x8x8") -> bool:
    """`vta-sim demo`'s compiler part: resnet18.C5 on `config`, two virtual threads, timeline."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    print(f"conv2d resnet18.C5 compiled with TVM on {config}, two virtual threads:")
    figures = run_vta("conv2d", layer_shape("resnet18.C5"), config=config, vthreads=2, trace=str(out / "demo_conv2d_C5_timeline.png"))
    print(report(figures))
    print(f"  timeline written to {figures.get('trace')}")
    return figures["verified"]


def main(argv=None) -> int:
    """Standalone entry (python -m schedules.cli ...), the same subcommands as vta-sim."""
    parser = argparse.ArgumentParser(prog="schedules.cli")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)
