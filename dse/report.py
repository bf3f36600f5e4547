"""The architect's pictures of a sweep: the Pareto front of cycles against on-chip SRAM, and each
workload's sensitivity to each swept key.

A design is a hardware config (the swept key values). Its cycles on a workload are those of its
best thread count (software is free to choose), and its total is over the workloads of the spec:
only designs on which every workload is feasible have one.
"""
from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the headless backend
from matplotlib.ticker import FuncFormatter  # noqa: E402

from vta_sim.errors import VTAError  # noqa: E402

from . import report_area  # noqa: E402
from .spec import Spec  # noqa: E402


def read_rows(path: str | Path) -> list:
    """The feasible, verified rows of a results CSV, with cycles and SRAM bytes as integers."""
    with Path(path).open(newline="") as f:
        return [{**r, "cycles": int(r["cycles"]), "sram_bytes": int(r["sram_bytes"])}
                for r in csv.DictReader(f) if r["feasible"] == "True" and r["verified"] == "True"]


def best_cycles(rows: list, spec: Spec) -> dict:
    """{(design, workload): the fewest cycles over thread counts}; design = swept key values."""
    best: dict = {}
    for r in rows:
        k = (tuple(r[key] for key in spec.keys), r["workload"])
        best[k] = min(best.get(k, r["cycles"]), r["cycles"])
    return best


def designs(rows: list, spec: Spec) -> list:
    """[(design, sram_bytes, total cycles)] of the designs that run every workload."""
    best = best_cycles(rows, spec)
    sram = {tuple(r[key] for key in spec.keys): r["sram_bytes"] for r in rows}
    names = [w.name for w in spec.workloads]
    return [(d, sram[d], sum(best[(d, w)] for w in names)) for d in sram if all((d, w) in best for w in names)]


def pareto(points: list) -> list:
    """The designs no other design beats on both SRAM bytes and cycles, by increasing SRAM."""
    front = []
    for d in sorted(points, key=lambda p: (p[1], p[2])):
        if not front or d[2] < front[-1][2]:
            front.append(d)
    return front


def _short(key: str) -> str:
    """LOG_INP_BUFF_SIZE -> INP, LOG_BUS_WIDTH -> BUS_WIDTH: labels that fit beside a point."""
    return key.removeprefix("LOG_").removesuffix("_BUFF_SIZE")


def _label(spec: Spec, design: tuple) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(spec.keys, design))


def plot_pareto(rows: list, spec: Spec, path: Path) -> list:
    """Total cycles against on-chip SRAM bytes, the front highlighted and labelled; returns the front."""
    points = designs(rows, spec)
    front = pareto(points)
    fig, ax = plt.subplots(figsize=(9, 5.5))
    ax.scatter([p[1] / 1024 for p in points], [p[2] for p in points], s=18, color="0.6", label="design")
    ax.plot([p[1] / 1024 for p in front], [p[2] for p in front], "o-", color="C3", label="Pareto front")
    for d, sram, cycles in front:
        ax.annotate(" ".join(f"{_short(k)}={v}" for k, v in zip(spec.keys, d)), (sram / 1024, cycles),
                    fontsize=7, xytext=(5, 5), textcoords="offset points", color="C3")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlabel("on-chip SRAM (KiB)")
    ax.set_ylabel(f"cycles, sum over {len(spec.workloads)} workload(s)")
    ax.set_title(f"{len(points)} designs on base {spec.base}: cycles vs SRAM")
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return front


def plot_sensitivity(rows: list, spec: Spec, path: Path) -> None:
    """One panel per swept key: per workload, the median cycles over the other keys at each value,
    relative to the median at the key's first value (1.0 = no effect)."""
    best = best_cycles(rows, spec)
    swept = [k for k in spec.keys if len(spec.configs[k]) > 1] or list(spec.keys)
    fig, axes = plt.subplots(1, max(len(swept), 1), figsize=(4.2 * max(len(swept), 1), 3.8), squeeze=False)
    for ax, key in zip(axes[0], swept):
        i = spec.keys.index(key)
        values = list(dict.fromkeys(spec.configs[key]))   # a list of designs repeats values
        for w in spec.workloads:
            at = defaultdict(list)
            for (design, name), cycles in best.items():
                if name == w.name:
                    at[design[i]].append(cycles)
            med = [statistics.median(at[str(v)]) if at[str(v)] else None for v in values]
            ref = next((m for m in med if m), None)
            if ref:
                ax.plot([str(v) for v in values], [m / ref if m else float("nan") for m in med],
                        "o-", label=w.name)
        ax.set_title(key, fontsize=9)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3f}"))
        ax.set_xlabel("value")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("cycles relative to the first value")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(results: str | Path, spec: Spec, out_dir: str | Path) -> dict:
    """Both figures under `out_dir`: {"pareto": path, "sensitivity": path, "front": designs}; with
    area columns also pareto_area.png and pareto.csv (dse.report_area)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = read_rows(results)
    if not rows:
        raise VTAError(f"{results}: no feasible, bit-exact point to plot")
    paths = {"pareto": out / "sweep_pareto.png", "sensitivity": out / "sweep_sensitivity.png"}
    front = plot_pareto(rows, spec, paths["pareto"])
    plot_sensitivity(rows, spec, paths["sensitivity"])
    paths.update(report_area.write(rows, spec, out))
    return {**paths, "front": [(_label(spec, d), sram, cycles) for d, sram, cycles in front]}
