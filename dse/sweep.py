"""Run a sweep on a Dask cluster and stream one CSV row per point as it completes.

Each point is one task (`client.map(..., retries=...)`), so a worker that dies takes only its
running points with it and the scheduler runs them again elsewhere. Rows are appended and
flushed as points finish, which also makes a sweep resumable: points already in the file
(feasible or infeasible) are skipped; failed rows (a crash or an unexpected error, with its
text in `error`) are dropped and their points run again.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from distributed import as_completed
from tqdm import tqdm

from .point import RESULT_COLUMNS, evaluate
from .spec import Point, Spec, SpecError


@dataclass
class Summary:
    points: int = 0      # in the grid
    skipped: int = 0     # already in the results file
    feasible: int = 0
    infeasible: int = 0
    unverified: int = 0  # feasible but not bit-exact: a compiler or simulator bug
    failed: int = 0      # crashed or raised an unexpected error

    @property
    def ok(self) -> bool:
        return not (self.failed or self.unverified)


def columns(spec: Spec) -> list:
    return ["base", *spec.keys, *RESULT_COLUMNS]


def _ident(row: dict, spec: Spec) -> tuple:
    return (row["base"], *(row[k] for k in spec.keys), row["workload"], row["vthreads"])


def _resume(path: Path, spec: Spec) -> set:
    """Identities of the points the file already holds; failed rows are removed from it."""
    if not path.exists():
        return set()
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != columns(spec):
            raise SpecError(f"{path} holds columns {reader.fieldnames}, but this spec writes "
                            f"{columns(spec)}: resume with the same spec or choose another --out")
        rows = list(reader)
    kept = [r for r in rows if not r["error"]]
    if len(kept) < len(rows):
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, columns(spec))
            writer.writeheader()
            writer.writerows(kept)
    return {_ident(r, spec) for r in kept}


def _failed_row(point: Point, exc: BaseException) -> dict:
    return {"workload": point.workload.name, "vthreads": point.vthreads,
            "error": f"{type(exc).__name__}: {exc}"}


def run_sweep(spec: Spec, out: str | Path, client, retries: int = 2, progress: bool = True,
              on_row=None) -> Summary:
    """Run every point of `spec` not yet in `out` on `client`; `on_row(row)` sees each new row."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = _resume(out, spec)
    points = spec.points()
    todo = [p for p in points if p.ident() not in done]
    summary = Summary(points=len(points), skipped=len(points) - len(todo))
    futures = client.map(evaluate, todo, retries=retries)
    point_of = {f.key: p for f, p in zip(futures, todo)}
    new_file = not out.exists()
    with out.open("a", newline="") as f, tqdm(total=len(points), initial=summary.skipped, unit="point",
                                              desc="sweep", disable=not progress) as bar:
        writer = csv.DictWriter(f, columns(spec))
        if new_file:
            writer.writeheader()
        for future in as_completed(futures):
            point = point_of[future.key]
            if future.status == "error":
                row = _failed_row(point, future.exception())
                summary.failed += 1
            else:
                row = future.result()
                if not row["feasible"]:
                    summary.infeasible += 1
                else:
                    summary.feasible += 1
                    summary.unverified += not row["verified"]
            row = {"base": point.base, **dict(point.overrides), **row}
            writer.writerow(row)
            f.flush()
            future.release()
            bar.update()
            if on_row:
                on_row(row)
    return summary
