"""Execution traces: Chrome/Perfetto trace-event JSON and a PNG space-time diagram.

One track per module; each instruction is a slice from its start to its completion (pushes
included), and the cycles its head waited for dependency tokens are a separate "wait" slice,
so a timeline shows at a glance whether loads hide under compute.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .functional import MODULE_NAMES
from .timing import TraceEvent

_COLOURS = {"LOAD INP": "#4e79a7", "LOAD WGT": "#76b7b2", "LOAD UOP": "#b07aa1", "LOAD ACC": "#9c755f",
            "LOAD ACC_8BIT": "#9c755f", "GEMM": "#e15759", "ALU": "#f28e2b", "STORE": "#59a14f",
            "FINISH": "#000000", "nop": "#bab0ac"}


def _kind(text: str) -> str:
    words = text.split()
    if "nop" in words:
        return "nop"
    if words[0] == "LOAD":
        return f"LOAD {words[1]}"
    return words[0]


class Trace:
    """The per-instruction events of one run (`vta_sim.timing.TraceEvent`)."""

    def __init__(self, events: Iterable[TraceEvent], cycles: int, config_name: str = ""):
        self.events = sorted(events, key=lambda e: (e.start, e.index))
        self.cycles = cycles
        self.config_name = config_name

    def to_chrome(self) -> dict[str, Any]:
        """Trace-event JSON; timestamps are cycles (1 displayed microsecond = 1 cycle)."""
        out: list[dict[str, Any]] = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": f"VTA-8 {self.config_name}"}}]
        for tid, name in enumerate(MODULE_NAMES):
            out.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": tid, "args": {"name": name}})
            out.append({"name": "thread_sort_index", "ph": "M", "pid": 0, "tid": tid, "args": {"sort_index": tid}})
        for e in self.events:
            tid = MODULE_NAMES.index(e.module)
            if e.token_wait:
                out.append({"name": "wait " + "+".join(e.pops), "cat": "wait", "ph": "X", "pid": 0,
                            "tid": tid, "ts": e.start - e.token_wait, "dur": e.token_wait})
            out.append({"name": _kind(e.text), "cat": e.module, "ph": "X", "pid": 0, "tid": tid,
                        "ts": e.start, "dur": max(e.free - e.start, 1),
                        "args": {"index": e.index, "insn": e.text, "enqueue": e.enqueue, "grant": e.grant,
                                 "done": e.done, "pops": list(e.pops), "pushes": list(e.pushes)}})
        return {"traceEvents": out, "displayTimeUnit": "ns",
                "otherData": {"cycles": self.cycles, "time_unit": "cycle"}}

    def save_json(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_chrome()))
        return path

    def save_png(self, path: str | Path, title: str | None = None, max_events: int = 20000) -> Path:
        """Space-time diagram: one lane per module, token waits hatched."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch

        path = Path(path)
        fig, ax = plt.subplots(figsize=(14, 3.2))
        used = {}
        # one bar collection per lane and colour (a collection per event took seconds to draw)
        waits: dict[int, list[tuple[int, int]]] = {}
        bars: dict[tuple[int, str], list[tuple[int, int]]] = {}
        for e in self.events[:max_events]:
            lane = len(MODULE_NAMES) - 1 - MODULE_NAMES.index(e.module)
            if e.token_wait:
                waits.setdefault(lane, []).append((e.start - e.token_wait, e.token_wait))
                used["token wait"] = Patch(facecolor="white", edgecolor="#999999", hatch="////")
            kind = _kind(e.text)
            colour = _COLOURS.get(kind, "#888888")
            bars.setdefault((lane, colour), []).append((e.start, max(e.free - e.start, 1)))
            used.setdefault(kind, Patch(facecolor=colour))
        for lane, spans in waits.items():
            ax.broken_barh(spans, (lane - 0.35, 0.7), facecolors="none", edgecolors="#999999",
                           hatch="////", linewidth=0)
        for (lane, colour), spans in bars.items():
            ax.broken_barh(spans, (lane - 0.35, 0.7), facecolors=colour)
        ax.set_yticks(range(len(MODULE_NAMES)))
        ax.set_yticklabels(list(reversed(MODULE_NAMES)))
        ax.set_xlim(0, max(self.cycles, 1))
        ax.set_xlabel("cycle")
        ax.set_title(title or f"VTA-8 {self.config_name}: {self.cycles} cycles")
        ax.legend(handles=list(used.values()), labels=list(used), loc="upper center", ncol=min(len(used), 9),
                  bbox_to_anchor=(0.5, -0.28), frameon=False, fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path
