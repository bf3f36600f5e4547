"""`vta-sim gemm`, `vta-sim conv2d` and `vta-sim resnet18`: compile with TVM, simulate, verify.

Each run compiles the packed workload with its VTA schedule, runs it on random int8 data,
checks the result bit-exact against the numpy int64 reference and reports compile/simulation
time, cycles against the ideal (MACs / MACs-per-cycle) and the roofline bound (max of those
compute cycles and the layer's compulsory DRAM bytes / bus bytes per cycle), GEMM-core
utilisation, module busy percentages and bytes moved.

`run_vta(...)` returns the same figures as a dict for other tools (the comparison column).
"""
from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from intrinsics.errors import CompileError
from vta_sim import backends
from vta_sim.config import Config
from vta_sim.result import BYTES_STATS as BYTES_KEYS

from . import vta_conv2d as vc
from . import vta_dense as vd
from . import vta_ops as vo
from . import vta_workloads as wl
from .layers import TABLE_LAYERS, get_layer


def default_shift(reduction: int) -> int:
    """A right shift that keeps requantised outputs of random int8 data mostly unsaturated."""
    spread = (128 / math.sqrt(3)) ** 2 * math.sqrt(reduction)
    return max(0, min(31, round(math.log2(spread)) - 6))


def layer_shape(name: str) -> dict:
    """run_vta's conv2d shape of a ResNet-18 layer ('resnet18.C5'); KeyError names the accepted ones."""
    layer = get_layer(name)
    return {"h": layer.H, "w": layer.H, "ic": layer.IC, "oc": layer.OC, "k": layer.K,
            "pad": layer.pad, "stride": layer.stride}


def op_shape(cfg, workload: str, shape: dict):
    """The schedule's shape (vta_conv2d.ConvShape or vta_dense.DenseShape) of a run_vta shape dict."""
    if workload == "conv2d":
        return vc.ConvShape(shape.get("batch", cfg.BATCH), shape["h"], shape.get("w", shape["h"]),
                            shape["ic"], shape["oc"], shape["k"], shape.get("pad", 0), shape.get("stride", 1))
    return vd.DenseShape(shape["m"], shape["k"], shape["n"])


def _conv_case(cfg, shape, vthreads, tiles, rng):
    s = op_shape(cfg, "conv2d", shape)
    shift = default_shift(s.ic * s.k * s.k)
    op = vo.conv2d_kernel(cfg, s.n, s.h, s.w, s.ic, s.oc, s.k, s.pad, s.stride, vo.Requant(shift), vthreads, tiles)
    x = rng.integers(-128, 128, (s.n, s.ic, s.h, s.w), dtype=np.int8)
    w = rng.integers(-128, 128, (s.oc, s.ic, s.k, s.k), dtype=np.int8)
    b = rng.integers(-(1 << (shift + 4)), 1 << (shift + 4), (s.oc,), dtype=np.int32)
    nb, ib, ob = vc.blocks(cfg, s)
    n, ic, oc = nb * cfg.BATCH, ib * cfg.BLOCK_IN, ob * cfg.BLOCK_OUT
    # Compulsory traffic at whole-block granularity (what the packed layouts must move).
    compulsory = n * ic * s.h * s.w + oc * ic * s.k * s.k + oc * cfg.BATCH * 4 + s.n * s.oc * s.oh * s.ow
    return dict(shape=s, op=op, inputs=(x, w, b),
                reference=lambda: wl.conv2d_ref(x, w, b, s.pad, s.stride, shift), compulsory=compulsory)


def _dense_case(cfg, shape, vthreads, tiles, rng):
    s = op_shape(cfg, "gemm", shape)
    shift = default_shift(s.k)
    op = vo.dense_kernel(cfg, s.m, s.k, s.n, vo.Requant(shift), vthreads, tiles)
    a = rng.integers(-128, 128, (s.m, s.k), dtype=np.int8)
    w = rng.integers(-128, 128, (s.n, s.k), dtype=np.int8)
    b = rng.integers(-(1 << (shift + 4)), 1 << (shift + 4), (s.n,), dtype=np.int32)
    mb, kb, nb = (x * blk for x, blk in zip(vd.blocks(cfg, s), (cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT)))
    compulsory = mb * kb + nb * kb + nb * cfg.BATCH * 4 + s.m * s.n
    return dict(shape=s, op=op, inputs=(a, w, b), reference=lambda: wl.dense_ref(a, w, b, shift),
                compulsory=compulsory)


CASES = {"conv2d": _conv_case, "gemm": _dense_case, "dense": _dense_case}


def run_vta(workload: str, shape: dict, config="1x8x8", vthreads: int = 2, backend: str = "sim",
            tiles=None, trace: str | None = None, seed: int = 0) -> dict:
    """Compile, simulate and verify one workload; returns the JSON figures (see docs/compiler.md).

    workload: "conv2d" (shape keys h, w, ic, oc, k, pad, stride, batch) or "gemm" (m, k, n).
    """
    if workload not in CASES:
        raise CompileError(f"unknown workload {workload!r}; accepted: {', '.join(CASES)}")
    cfg = Config.load(config)
    t0 = time.perf_counter()
    case = CASES[workload](cfg, shape, vthreads, tiles, np.random.default_rng(seed))
    compile_s = time.perf_counter() - t0
    op = case["op"]
    t0 = time.perf_counter()
    out, result = op(*case["inputs"], backend=backend, trace=bool(trace))
    sim_s = time.perf_counter() - t0
    verified = bool(np.array_equal(out, case["reference"]()))
    ideal = op.macs / cfg.macs_per_cycle
    roofline = max(ideal, case["compulsory"] / cfg.bus_bytes)
    stats = {k: int(v) for k, v in result.stats.items()}
    figures = {
        "workload": workload, "shape": dict(vars(case["shape"])), "tiles": dict(vars(op.tiles)),
        "verified": verified, "cycles": int(result.cycles), "ideal_cycles": ideal,
        "roofline_cycles": roofline, "utilization": ideal / result.cycles,
        "compile_s": compile_s, "sim_s": sim_s, "vthreads": op.tiles.vthreads,
        "config": cfg.name, "backend": backend, "dram_bytes": sum(stats.get(k, 0) for k in BYTES_KEYS),
        "compulsory_bytes": case["compulsory"], "stats": stats,
    }
    if trace and result.trace is not None:
        save = result.trace.save_png if str(trace).endswith(".png") else result.trace.save_json
        save(trace)
        figures["trace"] = str(trace)
    return figures


def busy(figures: dict, module: str) -> float:
    return 100 * figures["stats"].get(f"{module}_busy_cycles", 0) / max(figures["cycles"], 1)


def report(figures: dict) -> str:
    f = figures
    shape = " ".join(f"{k}={v}" for k, v in f["shape"].items())
    tiles = " ".join(f"{k}={v}" for k, v in f["tiles"].items())
    lines = [
        f"{f['workload']} {shape} on {f['config']} ({f['backend']}), {f['vthreads']} virtual "
        f"thread(s); tiles {tiles}",
        f"  verified bit-exact     {'yes' if f['verified'] else 'NO'}",
        f"  compile / simulate     {f['compile_s']:.2f} s / {f['sim_s']:.2f} s",
        f"  cycles                 {f['cycles']:,}",
        f"  ideal cycles           {f['ideal_cycles']:,.0f}   (GEMM utilisation {100 * f['utilization']:.1f} %)",
        f"  roofline bound         {f['roofline_cycles']:,.0f}   ({100 * f['roofline_cycles'] / f['cycles']:.1f} % of it reached)",
        "  busy load/compute/store " + " / ".join(f"{busy(f, m):.1f} %" for m in ("load", "compute", "store")),
        f"  DRAM bytes moved       {f['dram_bytes']:,}  (compulsory {f['compulsory_bytes']:,}): "
        + ", ".join(f"{k.split('_')[0]} {f['stats'].get(k, 0):,}" for k in BYTES_KEYS),
    ]
    return "\n".join(lines)


def table(rows: list) -> str:
    head = (f"{'layer':<6}{'verified':>9}{'cycles':>12}{'ideal':>12}{'roofline':>12}{'util %':>8}"
            f"{'load %':>8}{'comp %':>8}{'store %':>8}{'compile s':>10}{'sim s':>7}")
    out = [head]
    for f in rows:
        out.append(f"{f['layer']:<6}{'yes' if f['verified'] else 'NO':>9}{f['cycles']:>12,}"
                   f"{f['ideal_cycles']:>12,.0f}{f['roofline_cycles']:>12,.0f}{100 * f['utilization']:>8.1f}"
                   + "".join(f"{busy(f, m):>8.1f}" for m in ("load", "compute", "store"))
                   + f"{f['compile_s']:>10.2f}{f['sim_s']:>7.2f}")
    return "\n".join(out)


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


def run_resnet18(config="1x8x8", vthreads=2, backend="sim", trace=None, seed=0, progress=print,
                 layers=TABLE_LAYERS) -> list:
    """run_vta over the ResNet-18 table (C2-C11 unless `layers` names others, e.g. ("C1",));
    each figure dict gains its `layer` name."""
    rows = []
    for name in layers:
        path = None
        if trace:
            p = Path(trace)
            path = str(p.with_name(f"{p.stem}_{name}{p.suffix}"))
        f = run_vta("conv2d", layer_shape(name), config, vthreads, backend, trace=path, seed=seed)
        rows.append({"layer": name, **f})
        if progress:
            progress(f"  {name}: {f['cycles']:,} cycles, {100 * f['utilization']:.1f} % utilisation, "
                     f"{'verified' if f['verified'] else 'MISMATCH'}")
    return rows


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
                   "build/tuning/tiles.json)")
    p.add_argument("--scheduler", help="with --tune: a Dask scheduler address (default: a local cluster)")
    p.add_argument("--workers", type=int, help="with --tune: local Dask workers (default: one per core)")


def register(subparsers) -> None:
    p = subparsers.add_parser("gemm", help="compile and run a packed int8 GEMM with requantisation")
    p.add_argument("--m", type=int, required=True)
    p.add_argument("--k", type=int, required=True)
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--tiles", type=int, nargs=3, metavar=("ROWS", "COLS", "K_BLOCKS"),
                   help="override the automatic tiles (in blocks); any positive tile up to the "
                        "shape, remainder tiles are padded")
    p.add_argument("--split", default="n", choices=("m", "n"), help="dimension the threads divide")
    _common(p)
    _tune_args(p)
    p.set_defaults(func=cmd_gemm)

    p = subparsers.add_parser("conv2d", help="compile and run a blocked int8 conv2d with requantisation")
    p.add_argument("--layer", help="a ResNet-18 layer, e.g. resnet18.C5")
    for name in ("h", "w", "ic", "oc", "k"):
        p.add_argument(f"--{name}", type=int)
    p.add_argument("--pad", type=int, default=0)
    p.add_argument("--stride", type=int, default=1)
    p.add_argument("--batch", type=int, help="batch (default: the config's BATCH)")
    p.add_argument("--tiles", type=int, nargs=3, metavar=("OC_BLOCKS", "ROWS", "IC_BLOCKS"),
                   help="override the automatic tiles; any positive tile up to the shape, "
                        "remainder tiles are padded")
    p.add_argument("--batch-blocks", type=int, help="with --tiles: batch blocks per tile "
                   "(default: the whole batch)")
    p.add_argument("--split", default="h", choices=("h", "oc"), help="dimension the threads divide")
    _common(p)
    _tune_args(p)
    p.set_defaults(func=cmd_conv2d)

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
