"""What every bench prints and saves: a fixed-width table of its rows and, with --json, the rows."""
from __future__ import annotations

import json
from pathlib import Path


def print_table(rows: list, columns: list) -> None:
    """`columns`: (title, width, cell) with cell(row) -> str; text columns left, numbers right."""
    print(" ".join(f"{t:<{w}}" if i == 0 else f"{t:>{w}}" for i, (t, w, _) in enumerate(columns)))
    for r in rows:
        print(" ".join(f"{c(r):<{w}}" if i == 0 else f"{c(r):>{w}}" for i, (_, w, c) in enumerate(columns)))


def write_json(path: str | None, rows: list) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(rows, indent=2))
