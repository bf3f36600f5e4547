"""The cost side of a sweep (`--area` with `--report`): speed against LUTs, DSPs and block RAMs,
the Pareto front of speed against LUTs, and the front's designs as a CSV.

A design is a hardware config, as in dse.report; its speed is the total latency over the spec's
workloads at its clock (`latency_us`, best thread count each), or frames/s where the spec runs
one `model:` workload.
"""
from __future__ import annotations

import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the headless backend

from vta_sim.config import Config  # noqa: E402

from .area import ECP5_85F, RESOURCES  # noqa: E402
from .spec import Spec  # noqa: E402

FRONT_COLUMNS = ("design", "shape", "inp_kib", "wgt_kib", "acc_kib", *RESOURCES, "fmax_mhz", "clock_mhz",
                 "clock_source", "area_source", "cycles", "latency_us", "frames_per_s", "frames_per_s_per_klut",
                 "frames_per_s_per_dsp")


def _config(base: str, spec: Spec, design: tuple) -> Config:
    b = Config.load(base)
    return Config.from_dict({**b.to_dict(), **{k: int(v) for k, v in zip(spec.keys, design)}}, name="design")


def design_costs(rows: list, spec: Spec) -> list:
    """One dict per design that runs every workload and has its area: FRONT_COLUMNS' values."""
    best: dict = {}
    for r in rows:
        if r.get("lut") in (None, ""):
            continue
        d = tuple(r[k] for k in spec.keys)
        k = (d, r["workload"])
        if k not in best or r["cycles"] < best[k]["cycles"]:
            best[k] = r
    names = [w.name for w in spec.workloads]
    one_model = len(spec.workloads) == 1 and spec.workloads[0].kind == "model"
    out = []
    for d in {d for d, _ in best}:
        if not all((d, w) in best for w in names):
            continue
        rs = [best[(d, w)] for w in names]
        cfg = _config(rs[0]["base"], spec, d)
        kib = {n: cfg.buffers[n].depth * cfg.buffers[n].entry_bytes / 1024 for n in ("inp", "wgt", "acc")}
        row = {"design": ", ".join(f"{k}={v}" for k, v in zip(spec.keys, d)),
               "shape": f"{cfg.BATCH}x{cfg.BLOCK_IN}x{cfg.BLOCK_OUT}", **{f"{n}_kib": v for n, v in kib.items()},
               **{res: float(rs[0][res]) for res in RESOURCES}, "fmax_mhz": rs[0]["fmax_mhz"],
               "clock_mhz": float(rs[0]["clock_mhz"]), "clock_source": rs[0]["clock_source"],
               "area_source": rs[0]["area_source"],
               "cycles": sum(r["cycles"] for r in rs), "latency_us": sum(float(r["latency_us"]) for r in rs)}
        fps = float(rs[0]["frames_per_s"]) if one_model and rs[0].get("frames_per_s") else None
        row.update(frames_per_s=fps, frames_per_s_per_klut=fps and fps / row["lut"] * 1000,
                   frames_per_s_per_dsp=fps and row["dsp"] and fps / row["dsp"])
        out.append(row)
    return sorted(out, key=lambda r: (r["lut"], r["latency_us"]))


def front(costs: list) -> list:
    """The designs no other design beats on both LUTs and latency, by increasing LUTs."""
    out = []
    for c in costs:
        if not out or c["latency_us"] < out[-1]["latency_us"]:
            out.append(c)
    return out


def _label(c: dict) -> str:
    return f"{c['shape']} I{c['inp_kib']:g}/W{c['wgt_kib']:g}/A{c['acc_kib']:g} KiB"


def plot(costs: list, best: list, spec: Spec, path: Path) -> None:
    """Speed against LUTs (the front labelled), then against DSPs and block RAMs; for ECP5 the
    LFE5UM-85F's capacity as a dashed line."""
    fps = all(c["frames_per_s"] for c in costs)
    y = (lambda c: c["frames_per_s"]) if fps else (lambda c: c["latency_us"])  # noqa: E731
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.2), gridspec_kw={"width_ratios": [2, 1, 1]})
    for ax, res in zip(axes, ("lut", "dsp", "bram")):
        ax.scatter([c[res] for c in costs], [y(c) for c in costs], s=16, color="0.6", label="design")
        ax.plot([c[res] for c in best], [y(c) for c in best], "o" + ("-" if res == "lut" else ""),
                color="C3", label="Pareto front (LUT)")
        ax.set_xlabel({"lut": "LUTs", "dsp": "DSP blocks", "bram": "block RAMs"}[res])
        if all(c["area_source"].endswith("ecp5") for c in costs):
            ax.axvline(ECP5_85F[res], color="C0", ls="--", lw=1, label="LFE5UM-85F")
        ax.grid(alpha=0.3)
    for c in best:
        axes[0].annotate(_label(c), (c["lut"], y(c)), fontsize=7, xytext=(5, 4), textcoords="offset points",
                         color="C3")
    axes[0].set_ylabel(f"frames/s ({spec.workloads[0].name})" if fps
                       else f"latency (us), sum over {len(spec.workloads)} workload(s)")
    axes[0].legend(loc="best", fontsize=8)
    source = costs[0]["clock_source"] if len({c["clock_source"] for c in costs}) == 1 else "per design"
    fig.suptitle(f"{len(costs)} designs on base {spec.base}: speed vs resources (clock: {source})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write(rows: list, spec: Spec, out: Path) -> dict:
    """pareto_area.png and pareto.csv under `out`; {} when the rows carry no area."""
    costs = design_costs(rows, spec)
    if not costs:
        return {}
    best = front(costs)
    paths = {"pareto_area": out / "pareto_area.png", "pareto_csv": out / "pareto.csv"}
    plot(costs, best, spec, paths["pareto_area"])
    with paths["pareto_csv"].open("w", newline="") as f:
        writer = csv.DictWriter(f, FRONT_COLUMNS)
        writer.writeheader()
        writer.writerows(best)
    return paths
