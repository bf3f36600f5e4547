"""The tuning database: tiles found by simulator-in-the-loop search, reused by the compiler.

Like meta_schedule's database, a record is keyed by everything the best tiles depend on: the
whole configuration (spec keys and timing parameters), the op, its shape and the thread count
asked for. `vta_ops.conv2d_kernel` / `dense_kernel` (hence `vta-sim conv2d|gemm` and the graph
level) consult it before `choose_tiles`' cycle model, which stays the prior and the fallback.
The search that writes it lives above this package (`dse.tune`, `vta-sim conv2d --tune N`).

The file is JSON, `{"version": 1, "records": {key: record}}`; its path is `$VTA_TUNING_DB` or
`tuning/tiles.json` under the cache root (`vta_sim.paths`: `$VTA_CACHE`, else `build/` beside the
sources), never relative to the working directory, so tiles do not depend on where a command runs.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from vta_sim.config import Config
from vta_sim.errors import CompileError
from vta_sim.paths import cache_dir

VERSION = 1


def db_path(path: str | Path | None = None) -> Path:
    """`path`, else $VTA_TUNING_DB, else tiles.json in the cache root's tuning/ (vta_sim.paths)."""
    return Path(path or os.environ.get("VTA_TUNING_DB") or cache_dir("tuning") / "tiles.json")


def key(cfg: Config, op: str, shape, vthreads: int) -> str:
    """The record key: configuration, op ("conv2d" or "dense"), shape dataclass, threads asked for."""
    fields = {k: v for k, v in asdict(shape).items()          # defaults left out: keys stay as before
              if not (k == "groups" and v == 1) and not (k == "row_term" and not v)}
    return json.dumps({"config": cfg.to_dict(), "op": op, "shape": fields, "vthreads": vthreads},
                      sort_keys=True)


def read(path: str | Path | None = None) -> dict:
    """All records of the database (empty when the file does not exist yet)."""
    p = db_path(path)
    if not p.is_file():
        return {}
    try:
        data = json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise CompileError(f"tuning database {p}: not valid JSON ({exc}); delete it or point "
                           "$VTA_TUNING_DB elsewhere") from None
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("records"), dict):
        raise CompileError(f"tuning database {p}: expected {{\"version\": {VERSION}, \"records\": {{...}}}}")
    return data["records"]


def lookup(cfg: Config, op: str, shape, vthreads: int, path: str | Path | None = None) -> dict | None:
    """The tuned record for this configuration, op, shape and thread count, or None."""
    return read(path).get(key(cfg, op, shape, vthreads))


def store(cfg: Config, op: str, shape, vthreads: int, record: dict, path: str | Path | None = None) -> bool:
    """Keep `record` (with "tiles" and "cycles") unless the database already holds a faster one.

    Returns whether it was written. The file is replaced atomically, so a reader never sees half."""
    p = db_path(path)
    records = read(p)
    k = key(cfg, op, shape, vthreads)
    old = records.get(k)
    if old is not None and old["cycles"] <= record["cycles"]:
        return False
    records[k] = record
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps({"version": VERSION, "records": records}, indent=1, sort_keys=True))
    tmp.replace(p)
    return True
