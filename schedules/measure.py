"""Measure one workload on VTA-8: compile with TVM, run, verify against the numpy int64
reference, and report cycles against the ideal (MACs / MACs-per-cycle) and the roofline bound
(max of those compute cycles and the layer's compulsory DRAM bytes / bus bytes per cycle), GEMM
utilisation, module busy percentages and bytes moved.

`run_vta(...)` returns the figures as a dict (docs/compiler.md); the CLIs (`vta-sim gemm`,
`conv2d`, `resnet18`), the comparison (baselines) and the sweeps (dse) all call it.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from vta_sim.errors import CompileError
from requantisation import PowerOfTwo
from vta_sim.config import Config
from vta_sim.result import BYTES_STATS as BYTES_KEYS, busy_fraction

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
    op = vo.conv2d_kernel(cfg, s.n, s.h, s.w, s.ic, s.oc, s.k, s.pad, s.stride, PowerOfTwo(shift),
                          vthreads, tiles)
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
    op = vo.dense_kernel(cfg, s.m, s.k, s.n, PowerOfTwo(shift), vthreads, tiles)
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
        "tiles_from": op.tile_source.describe(),
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
    return 100 * busy_fraction(figures["stats"], module, figures["cycles"])


def report(figures: dict) -> str:
    f = figures
    shape = " ".join(f"{k}={v}" for k, v in f["shape"].items())
    tiles = " ".join(f"{k}={v}" for k, v in f["tiles"].items())
    lines = [
        f"{f['workload']} {shape} on {f['config']} ({f['backend']}), {f['vthreads']} virtual "
        f"thread(s); tiles {tiles} ({f['tiles_from']})",
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
