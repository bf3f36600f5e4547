"""One stretch of a model's layers as a timeline of accelerator cycles, from `vta-sim model --json`
reports: one row per report, each accelerator layer a bar as long as its cycles, in graph order,
coloured by op; a layer that stays on the CPU is a red tick where the run leaves the accelerator
(a store, a host computation, a load).

    python bench/draw_timeline.py OUT.png FIRST LAST LABEL=REPORT.json [LABEL=REPORT.json ...]

FIRST and LAST name the first and last layer of the stretch in the last report (e.g. one BERT
encoder layer: add1 add4); docs/graph.md's encoder-layer picture is drawn with it.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"dense": "#2ca02c", "matmul": "#e377c2", "add": "#8c564b", "softmax": "#ff7f0e",
           "layer_norm": "#1f77b4", "gelu": "#9467bd"}


def main(argv: list) -> None:
    out, first, last, *reports = argv
    loaded = [(label, json.loads(Path(path).read_text())["layers"])
              for label, path in (r.split("=", 1) for r in reports)]
    ref = [r["name"] for r in loaded[-1][1]]
    lo, hi = ref.index(first), ref.index(last)
    names = set(ref[lo:hi + 1])
    fig, ax = plt.subplots(figsize=(11, 1.2 + 0.8 * len(loaded)))
    widest = max(sum(r["cycles"] for r in rows if r["name"] in names and r["target"] == "vta") for _, rows in loaded)
    for y, (label, rows) in enumerate(reversed(loaded)):
        x, trips = 0, 0
        for r in (r for r in rows if r["name"] in names):
            if r["target"] == "vta":
                ax.barh(y, r["cycles"], left=x, color=COLOURS.get(r["op"], "#7f7f7f"), edgecolor="white")
                if r["cycles"] > 0.04 * widest:
                    ax.text(x + r["cycles"] / 2, y, r["op"].replace("layer_norm", "LN"), ha="center", va="center",
                            fontsize=7, color="white")
                x += r["cycles"]
            else:
                ax.plot([x, x], [y - 0.45, y + 0.45], color="red", lw=2)
                trips += 1
        ax.text(x, y, f"  {x:,} cycles, {trips} CPU trip(s)", va="center", fontsize=8)
    ax.set_yticks(range(len(loaded)), [label for label, _ in reversed(loaded)])
    ax.set_xlabel("accelerator cycles (1x8x8 simulator)")
    ax.set_title(f"layers {first} .. {last}", fontsize=10)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    if len(sys.argv) < 5:
        raise SystemExit(__doc__)
    main(sys.argv[1:])
