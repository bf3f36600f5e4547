"""Per-layer cycles of runs of one model side by side: what a change moved, layer by layer.

    vta-sim model resnet18 --json before.json      # on the old tree
    vta-sim model resnet18 --json after.json       # on the new one
    python bench/bench_layers_diff.py before.json after.json --labels before after \\
        --out docs/img/resnet18_before_after.png

Each input is the JSON `vta-sim model --json` writes. The layers are matched by name (the graph
level's stable layer ids); one that only one run offloads is drawn for that run alone. Prints a
table of the layers whose cycles changed, with the totals.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = ("#bab0ac", "#4e79a7", "#f28e2b", "#59a14f")


def accelerator_layers(report: dict) -> dict:
    """{layer name: cycles} of the layers a report ran on the accelerator, in its order."""
    return {layer["name"]: layer["cycles"] for layer in report["layers"] if layer["target"] == "vta"}


def changed(runs: list[dict], labels: list[str]) -> list[str]:
    """Table lines of the layers whose cycles differ between the first run and any other."""
    names = list(dict.fromkeys(name for run in runs for name in run))
    lines = ["| layer | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for name in names:
        values = [run.get(name) for run in runs]
        if len(set(values)) > 1:
            lines.append(f"| {name} | " + " | ".join("-" if v is None else f"{v:,}" for v in values) + " |")
    return lines


def draw(reports: list[dict], labels: list[str], path: Path) -> None:
    runs = [accelerator_layers(r) for r in reports]
    names = list(dict.fromkeys(name for run in runs for name in run))
    width = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(max(8.0, 0.38 * len(names)), 4.5))
    for i, (run, label) in enumerate(zip(runs, labels)):
        xs = [k + (i - (len(runs) - 1) / 2) * width for k, name in enumerate(names) if name in run]
        ax.bar(xs, [run[name] / 1e6 for name in names if name in run], width,
               color=COLOURS[i % len(COLOURS)], label=f"{label}: {reports[i]['total_cycles']:,} cycles")
    ax.set_ylabel("cycles (millions)")
    ax.set_xticks(range(len(names)), names, rotation=70, fontsize=8)
    ax.legend(loc="upper right")
    ax.set_title(f"{reports[0]['model']} on VTA-8 {reports[0]['config']}, per accelerator layer")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"written to {path}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("reports", nargs="+", type=Path, help="JSON reports of `vta-sim model --json`")
    p.add_argument("--labels", nargs="+", help="one per report (default: the file names)")
    p.add_argument("--out", type=Path, required=True, help="the PNG to write")
    args = p.parse_args()
    labels = args.labels or [r.stem for r in args.reports]
    if len(labels) != len(args.reports):
        p.error(f"{len(args.reports)} reports and {len(labels)} labels: give one label per report")
    reports = [json.loads(r.read_text()) for r in args.reports]
    print("\n".join(changed([accelerator_layers(r) for r in reports], labels)))
    print("| total | " + " | ".join(f"{r['total_cycles']:,}" for r in reports) + " |")
    draw(reports, labels, args.out)


if __name__ == "__main__":
    main()
