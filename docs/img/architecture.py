"""Draw docs/img/architecture.png from the hop table of docs/architecture.md (run it after
changing the table): one box per hop, its module and function under its name."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = Path(__file__).resolve().parent
PAGE = HERE.parent / "architecture.md"
#: Box colour by the package that owns the hop (the layers of the page).
COLOURS = {"graph": "#dbe9f6", "schedules": "#e3f1dc", "requantisation": "#e3f1dc", "intrinsics": "#fbe8cf", "vta_sim": "#ecdff3",
           "hw": "#f6d9d9"}


def hops() -> list:
    text = PAGE.read_text().split("<!-- hops:")[1].split("\n\n")[0]
    return re.findall(r"^\| ([^|]+?) \| `([\w.]+)` \|", text, re.M)


def draw(out: Path) -> None:
    rows = hops()
    fig, ax = plt.subplots(figsize=(7.5, 0.52 * len(rows) + 0.6))
    ax.set_xlim(0, 10)
    ax.set_ylim(-len(rows), 0.8)
    ax.axis("off")
    ax.text(5, 0.45, "one model, ONNX to bits: vta-sim model resnet18", ha="center", fontsize=11,
            weight="bold")
    for i, (hop, where) in enumerate(rows):
        y = -i
        ax.add_patch(plt.Rectangle((0.4, y - 0.4), 9.2, 0.8, color=COLOURS[where.split(".")[0]], ec="#555"))
        ax.text(0.6, y, hop, va="center", fontsize=9, weight="bold")
        ax.text(3.4, y, where, va="center", fontsize=8.5, family="monospace")
        if i:
            ax.annotate("", (5, y + 0.4), (5, y + 0.6), arrowprops=dict(arrowstyle="->", color="#333"))
    handles = [plt.Rectangle((0, 0), 1, 1, color=c, ec="#555") for c in COLOURS.values()]
    ax.legend(handles, list(COLOURS), loc="lower center", ncol=5, fontsize=8, frameon=False,
              bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out} ({len(rows)} hops)")


if __name__ == "__main__":
    draw(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "architecture.png")
