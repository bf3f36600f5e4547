"""Where the toolkit keeps what it builds and learns (RTL models, synthesis runs, trained models,
the tuning database): one root, `$VTA_CACHE` or `build/` beside the sources, never the working
directory, so the same command gives the same tiles and cycles wherever it is run from."""
from __future__ import annotations

import os
from pathlib import Path

#: The sources' checkout (vta_sim's parent); `build/` there is the default cache root.
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def cache_root() -> Path:
    """`$VTA_CACHE`, else `build/` beside the sources; read at each call so tests can move it."""
    return Path(os.environ.get("VTA_CACHE") or SOURCE_ROOT / "build")


def cache_dir(name: str, override: str | None = None) -> Path:
    """`cache_root()/name`, or the directory in the environment variable `override` when set."""
    return Path((override and os.environ.get(override)) or cache_root() / name)
