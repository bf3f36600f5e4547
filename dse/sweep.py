"""Run a sweep on a Dask cluster and stream one CSV row per point as it completes.

Each point is one task (`client.map(..., retries=...)`), so a worker that dies takes only its
running points with it and the scheduler runs them again elsewhere. Rows are appended and
flushed as points finish, which also makes a sweep resumable: points already in the file
(feasible or infeasible) are skipped; failed rows (a crash or an unexpected error, with its
text in `error`) are dropped and their points run again.

With `--area`, each hardware config among the points is synthesised once, as a task of its own
(`dse.area.synthesise`, cached by hw.synth's key), and its counts join the rows of its points;
a point's row is written when both its simulation and its config's area are in.
"""
from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from pathlib import Path

from distributed import as_completed
from tqdm import tqdm

from vta_sim.errors import ConfigError

from . import area as areas
from .point import RESULT_COLUMNS, evaluate, point_config
from .spec import Point, Spec, SpecError

#: Columns an `--area` sweep adds (docs/dse.md).
AREA_COLUMNS = ("lut", "ff", "dsp", "bram", "area_source", "area_reason", "fmax_mhz", "fmax_reason",
                "clock_mhz", "clock_source", "latency_us", "frames_per_s")


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


def columns(spec: Spec, area: areas.Area | None = None) -> list:
    return ["base", *spec.keys, *RESULT_COLUMNS, *(AREA_COLUMNS if area else ())]


def _ident(row: dict, spec: Spec) -> tuple:
    return (row["base"], *(row[k] for k in spec.keys), row["workload"], row["vthreads"])


def _resume(path: Path, spec: Spec, area) -> set:
    """Identities of the points the file already holds; failed rows are removed from it."""
    if not path.exists():
        return set()
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != columns(spec, area):
            raise SpecError(f"{path} holds columns {reader.fieldnames}, but this spec writes "
                            f"{columns(spec, area)}: resume with the same spec and --area or choose another --out")
        rows = list(reader)
    kept = [r for r in rows if not r["error"]]
    if len(kept) < len(rows):
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, columns(spec, area))
            writer.writeheader()
            writer.writerows(kept)
    return {_ident(r, spec) for r in kept}


def _failed_row(point: Point, exc: BaseException) -> dict:
    return {"workload": point.workload.name, "vthreads": point.vthreads,
            "error": f"{type(exc).__name__}: {exc}"}


def _configs(points: list) -> dict:
    """{point: its Config, or the ConfigError that makes it infeasible}."""
    out = {}
    for p in points:
        try:
            out[p] = point_config(p)
        except ConfigError as exc:
            out[p] = exc
    return out


def area_columns(row: dict, cfg, figures: dict | None, reason: str | None, area: areas.Area) -> dict:
    """The `--area` columns of a point's row from its config's area (`figures`) or why it has none."""
    cols = {"area_source": area.source, "area_reason": reason or ""}
    if figures:
        cols.update({k: figures[k] for k in areas.RESOURCES},
                    fmax_mhz=figures.get("fmax_mhz"), fmax_reason=figures.get("fmax_reason", ""))
    if isinstance(cfg, ConfigError) or not row.get("feasible"):
        return cols
    fmax = cols.get("fmax_mhz")
    clock = fmax or cfg.timing["CLOCK_MHZ"]
    cols.update(clock_mhz=clock, clock_source="fmax (nextpnr)" if fmax else "CLOCK_MHZ",
                latency_us=round(row["cycles"] / clock, 3))
    if row.get("frames"):
        cols["frames_per_s"] = round(row["frames"] * clock * 1e6 / row["cycles"], 3)
    return cols


def _area_tasks(todo: list, configs: dict, area: areas.Area, client, retries: int) -> tuple:
    """({point: hardware key}, {key: future of dse.area.synthesise, or a dict of model figures,
    or the text of why the RTL cannot serve it})."""
    key_of, work = {}, {}
    for p in todo:
        cfg = configs[p]
        if isinstance(cfg, ConfigError):
            continue
        try:
            k = areas.key(cfg, area)
        except ConfigError as exc:       # a config the RTL refuses (hw.header.check_supported)
            k = f"refused:{cfg.name}"
            work[k] = f"ConfigError: {exc}"
        key_of[p] = k
        if k not in work:
            work[k] = (areas.predict(cfg, area.target) if area.model
                       else client.submit(areas.synthesise, cfg, area, key=f"synth-{k}", pure=False,
                                       retries=retries))
    return key_of, work


def run_sweep(spec: Spec, out: str | Path, client, retries: int = 2, progress: bool = True,
              on_row=None, area: areas.Area | None = None) -> Summary:
    """Run every point of `spec` not yet in `out` on `client`; `on_row(row)` sees each new row.
    With `area`, the rows carry its resource columns (docs/dse.md)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = _resume(out, spec, area)
    points = spec.points()
    todo = [p for p in points if p.ident() not in done]
    summary = Summary(points=len(points), skipped=len(points) - len(todo))
    configs = _configs(todo)
    key_of, work = _area_tasks(todo, configs, area, client, retries) if area else ({}, {})
    synth_futures = {f.key: k for k, f in work.items() if hasattr(f, "key")}
    futures = client.map(evaluate, todo, retries=retries)
    point_of = {f.key: p for f, p in zip(futures, todo)}
    waiting: dict = {}       # hardware key -> [(point, row)] whose area is not in yet
    new_file = not out.exists()
    # bars on a terminal only: tqdm redraws with carriage returns, which a log should not hold
    # (the sweep's summary and the CSV say the same when the output is a file)
    draw = progress and sys.stderr.isatty()
    bars = tqdm(total=len(points), initial=summary.skipped, unit="point", desc="simulate", disable=not draw)
    sbar = tqdm(total=len(synth_futures), unit="config", desc="synthesise",
                disable=not draw or not synth_futures)
    with out.open("a", newline="") as f, bars, sbar:
        writer = csv.DictWriter(f, columns(spec, area))
        if new_file:
            writer.writeheader()

        def emit(point, row):
            row = {"base": point.base, **dict(point.overrides), **row}
            if area and not row.get("error"):
                k = key_of.get(point)
                got = work.get(k)
                if isinstance(got, BaseException):
                    row["error"] = f"synthesis: {type(got).__name__}: {got}"
                    summary.failed += 1
                else:
                    row.update(area_columns(row, configs[point], got if isinstance(got, dict) else None,
                                             got if isinstance(got, str) else None, area))
            if not row.get("error"):
                if not row["feasible"]:
                    summary.infeasible += 1
                else:
                    summary.feasible += 1
                    summary.unverified += not row["verified"]
            writer.writerow(row)
            f.flush()
            if on_row:
                on_row(row)

        for future in as_completed([*futures, *(f for f in work.values() if hasattr(f, "key"))]):
            if future.key in synth_futures:
                k = synth_futures[future.key]
                work[k] = future.exception() if future.status == "error" else future.result()
                future.release()
                sbar.update()
                for point, row in waiting.pop(k, []):
                    emit(point, row)
                continue
            point = point_of[future.key]
            if future.status == "error":
                summary.failed += 1
                emit(point, _failed_row(point, future.exception()))
            elif point in key_of and hasattr(work[key_of[point]], "key"):
                waiting.setdefault(key_of[point], []).append((point, future.result()))
            else:
                emit(point, future.result())
            future.release()
            bars.update()
    return summary
