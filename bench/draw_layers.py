"""Per-layer cycles of one model before and after a change, from two `bench_zoo.py --json-dir`
reports (or `vta-sim model --json` files) of the same model:

    python bench/draw_layers.py BEFORE.json AFTER.json OUT.png [--title TITLE]

Bars per accelerator layer (before light, after dark), coloured by op; the GEMM utilisation of
the after run as a line. docs/graph.md's REQ pictures are drawn with it. Prints the layers whose
cycles changed as a Markdown table, with the totals.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"conv2d": "#1f77b4", "dense": "#2ca02c", "add": "#d62728", "max_pool": "#9467bd",
           "avg_pool": "#8c564b", "matmul": "#e377c2", "concat": "#7f7f7f"}


def layers(path: Path) -> list:
    return [r for r in json.loads(path.read_text())["layers"] if r["target"] == "vta"]


def changed(before: list, after: list) -> list:
    """Markdown table lines of the layers whose cycles differ, then the totals."""
    lines = ["| layer | before | after |", "|---|---:|---:|"]
    lines += [f"| {b['name']} | {b['cycles']:,} | {a['cycles']:,} |" for b, a in zip(before, after)
              if b["cycles"] != a["cycles"]]
    total = (sum(r["cycles"] for r in before), sum(r["cycles"] for r in after))
    return lines + [f"| total | {total[0]:,} | {total[1]:,} |"]


def draw(before: list, after: list, out: Path, title: str) -> None:
    if [r["name"] for r in before] != [r["name"] for r in after]:
        raise SystemExit("the two reports list different layers: not the same model")
    fig, ax = plt.subplots(figsize=(max(10, 0.22 * len(after)), 4.8))
    xs = range(len(after))
    colours = [COLOURS.get(r["op"], "#bcbd22") for r in after]
    ax.bar([x - 0.2 for x in xs], [r["cycles"] / 1e6 for r in before], width=0.4, color=colours, alpha=0.35)
    ax.bar([x + 0.2 for x in xs], [r["cycles"] / 1e6 for r in after], width=0.4, color=colours)
    ax.set_ylabel("cycles (millions): before (light), after (dark)")
    ax.set_xticks(list(xs), [r["name"] for r in after], rotation=80, fontsize=7)
    util = ax.twinx()
    points = [(x, 100 * r["utilization"]) for x, r in zip(xs, after) if r.get("utilization") is not None]
    util.plot([p[0] for p in points], [p[1] for p in points], "k.", markersize=4)
    util.set_ylabel("GEMM utilisation after, %")
    util.set_ylim(0, 105)
    ops = sorted({r["op"] for r in after})
    ax.legend([plt.Rectangle((0, 0), 1, 1, color=COLOURS.get(o, "#bcbd22")) for o in ops], ops, loc="upper right")
    total = (sum(r["cycles"] for r in before), sum(r["cycles"] for r in after))
    ax.set_title(f"{title}: {total[0]:,} -> {total[1]:,} cycles ({total[0] / total[1]:.2f}x)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"written {out}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before", type=Path)
    p.add_argument("after", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--title", default="per layer")
    a = p.parse_args()
    before, after = layers(a.before), layers(a.after)
    print("\n".join(changed(before, after)))
    draw(before, after, a.out, a.title)


if __name__ == "__main__":
    main()
