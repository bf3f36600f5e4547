"""Whole models through the graph level: digits end to end (training included) and ResNet-18.

    python bench/bench_model.py [--skip-digits] [--skip-resnet18] [--img docs/img]

Prints wall-clock figures for the acceptance targets (digits end to end <= 30 s; ResNet-18
compile <= 30 s and simulate <= 30 s on the 2-core machine) and draws the per-layer breakdown
of ResNet-18 (docs/img/resnet18_layers.png).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from graph.kernels import KernelCache  # noqa: E402
from graph.models import digits, resnet18  # noqa: E402
from graph.report import summary, table  # noqa: E402
from graph.run import ModelCase, run_model  # noqa: E402

OP_COLOURS = {"conv2d": "#4e79a7", "dense": "#f28e2b", "max_pool": "#59a14f", "add": "#e15759"}


def bench_digits() -> None:
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as cache:
        d = digits.load(cache_dir=cache)
        trained = time.perf_counter() - t0
        result = run_model(ModelCase("digits", d.qdq, d.x_test, d.y_test), "1x8x8", cache=KernelCache())
    total = time.perf_counter() - t0
    print(table(result.layers))
    print(summary(result))
    print(f"digits end to end: {total:.1f} s (training, quantisation and ONNX export {trained:.1f} s, "
          f"compile {result.compile_s:.1f} s, CPU build {result.cpu_compile_s:.1f} s, simulate "
          f"{result.run_s:.1f} s)\n")


def bench_resnet18(img_dir: Path) -> None:
    t0 = time.perf_counter()
    case = ModelCase("resnet18", resnet18.load(), resnet18.images(1))
    result = run_model(case, "1x8x8", cache=KernelCache())
    total = time.perf_counter() - t0
    print(table(result.layers))
    print(summary(result))
    print(f"resnet18: compile {result.compile_s:.1f} s (limit 30), simulate {result.run_s:.1f} s "
          f"(limit 30), {total:.1f} s in all\n")
    draw_layers(result, img_dir / "resnet18_layers.png")


def draw_layers(result, path: Path) -> None:
    """Cycles per accelerator layer coloured by op, utilisation on a second axis."""
    rows = [r for r in result.layers if r["target"] == "vta"]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    xs = range(len(rows))
    ax.bar(xs, [r["cycles"] / 1e6 for r in rows], color=[OP_COLOURS[r["op"]] for r in rows])
    ax.set_ylabel("cycles (millions)")
    ax.set_xticks(list(xs), [r["name"] for r in rows], rotation=70, fontsize=8)
    util = ax.twinx()
    util.plot([x for x, r in zip(xs, rows) if r["utilization"] is not None],
              [100 * r["utilization"] for r in rows if r["utilization"] is not None], "k.-")
    util.set_ylabel("GEMM utilisation %")
    util.set_ylim(0, 105)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in OP_COLOURS.values()]
    ax.legend(handles, OP_COLOURS, loc="upper right")
    ax.set_title(f"ResNet-18 on VTA-8 {result.config.name}: {result.total_cycles:,} cycles, "
                 f"{result.frames_per_second:.1f} frames/s at {result.clock.mhz:g} MHz "
                 f"(avg-pool on the CPU)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"per-layer breakdown written to {path}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--skip-digits", action="store_true")
    p.add_argument("--skip-resnet18", action="store_true")
    p.add_argument("--img", default="docs/img", help="where the per-layer picture goes")
    args = p.parse_args()
    if not args.skip_digits:
        bench_digits()
    if not args.skip_resnet18:
        bench_resnet18(Path(args.img))


if __name__ == "__main__":
    main()
