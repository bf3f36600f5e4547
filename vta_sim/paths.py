"""Where the toolkit keeps what it builds and learns (RTL models, synthesis runs, proofs, trained
models, the tuning database, the simulator's compiled code): one root, `$VTA_CACHE` or `build/`
beside the sources, never the working directory, so the same command gives the same tiles and
cycles wherever it is run from.

Every root is resolved when it is used, not when a module is imported, so a test or a tool that
moves `$VTA_CACHE` (or a root's own variable) moves everything built after. `keyed_build` is how
every cached build is made: once per key, by one process, atomically.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

#: The sources' checkout (vta_sim's parent); `build/` there is the default cache root.
SOURCE_ROOT = Path(__file__).resolve().parent.parent
#: Hex digits of a build key (a truncated sha256: 48 bits, no collision among a cache's builds).
KEY_DIGITS = 12


def cache_root() -> Path:
    """`$VTA_CACHE`, else `build/` beside the sources; read at each call so tests can move it."""
    return Path(os.environ.get("VTA_CACHE") or SOURCE_ROOT / "build")


def cache_dir(name: str, override: str | None = None) -> Path:
    """`cache_root()/name`, or the directory in the environment variable `override` when set."""
    return Path((override and os.environ.get(override)) or cache_root() / name)


def build_key(*parts: str | bytes | Path) -> str:
    """The key of a build: KEY_DIGITS hex digits of a hash of everything it is made from. A Path
    counts by its name and contents, a str by its text, bytes as they are; each part is framed
    by its length, so moving a boundary between parts changes the key."""
    digest = hashlib.sha256()
    for part in parts:
        data = (part.name.encode() + b"\0" + part.read_bytes() if isinstance(part, Path)
                else part.encode() if isinstance(part, str) else part)
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:KEY_DIGITS]


def keyed_build(folder: Path, make: Callable[[Path], None], prune: bool = True) -> Path:
    """`folder` (named `<stem>-<build_key>`), made by `make(scratch)` on first use, and returned.

    `make` fills an empty scratch folder beside `folder`, which is then renamed into place: a
    reader never sees half a build and an interrupted or failed one leaves nothing under the
    name (the scratch is removed and `make`'s exception propagates). One process builds: the
    others wait on `<folder>.lock` and reuse its result. With `prune`, the builds of the same
    stem under other keys (older sources or options) and their locks are removed afterwards;
    without it, every key's build is kept (synthesis runs, which a sweep revisits).
    """
    if folder.is_dir():
        return folder
    stem, sep, key = folder.name.rpartition("-")
    if not sep or not re.fullmatch(f"[0-9a-f]{{{KEY_DIGITS}}}", key):
        raise ValueError(f"{folder.name!r}: a keyed build is named <stem>-<{KEY_DIGITS} hex digits>")
    root = folder.parent
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if folder.is_dir():   # built by the process this one waited for
            return folder
        scratch = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", dir=root))
        try:
            make(scratch)
            scratch.rename(folder)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
    if prune:
        other = re.compile(rf"{re.escape(stem)}-[0-9a-f]{{{KEY_DIGITS}}}(\.lock)?")
        for old in root.iterdir():
            if other.fullmatch(old.name) and not old.name.startswith(folder.name):
                if old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    old.unlink(missing_ok=True)
    return folder
