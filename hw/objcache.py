#!/usr/bin/env python3
"""The Verilator runtime compiled once: a compiler wrapper that make calls as `$(OBJCACHE) $(CXX) ...`.

Verilator's makefile compiles its runtime library (verilated.cpp, verilated_vpi.cpp, ...; 22 s of
CPU for the cocotb bench on this project's 2-core machine, more than the model itself) into every
model's build folder. The runtime does not depend on the model, only on the compiler, the flags and
Verilator's version, so the second model built (the unit benches' top, another configuration)
takes the objects the first one compiled. An object is looked up by a hash of the compiler (its
path, size and time), the whole command line, the source and Verilator's `verilated_config.h`
(its version); a miss compiles as usual and stores the object and its dependency file. Sources
outside Verilator's include folder (the model's, a bench's, cocotb's main, which includes the
model's header) compile as they would without this wrapper.

hw/build.py sets `OBJCACHE` to this file and `VTA_OBJCACHE` (the store) and `VTA_OBJCACHE_ROOT`
(Verilator's include folder) for the build. Standard library only: it runs once per compiled file,
and importing `vta_sim` (numpy with it) each time would cost more than a hit saves, so the key's
length-framed hash (as `vta_sim.paths.build_key`) and the atomic copy are written here again.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def _key(args: list, out: str, src: Path, root: Path, compiler: str) -> str:
    digest = hashlib.sha256()
    st = os.stat(compiler)
    parts = [compiler, str(st.st_size), str(st.st_mtime_ns),
             "\0".join(Path(a).name if a == out else a for a in args[1:]),
             src.read_bytes(), (root / "verilated_config.h").read_bytes()]
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:16]


def _store(path: Path, dest: Path) -> None:
    """Copy `path` to `dest` atomically: a concurrent build reads a whole object or none."""
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".")
    os.close(fd)
    shutil.copyfile(path, tmp)
    os.replace(tmp, dest)


def main(args: list) -> int:
    store, root = os.environ.get("VTA_OBJCACHE"), os.environ.get("VTA_OBJCACHE_ROOT")
    compiler = shutil.which(args[0]) if args else None
    if not (store and root and compiler and "-c" in args and "-o" in args[:-1]):
        return subprocess.call(args)
    src, out = Path(args[-1]).resolve(), args[args.index("-o") + 1]
    if not src.is_file() or not src.is_relative_to(Path(root).resolve()):
        return subprocess.call(args)
    key = _key(args, out, src, Path(root), compiler)
    cached = Path(store) / f"{Path(out).stem}-{key}"
    obj, dep = Path(out), Path(out).with_suffix(".d")
    try:
        if (cached / "object.o").is_file():
            shutil.copyfile(cached / "object.o", obj)
            if (cached / "object.d").is_file():
                shutil.copyfile(cached / "object.d", dep)
            return 0
    except OSError as exc:   # an unreadable store costs a compile, never the build
        print(f"objcache: {exc}; compiling {src.name}", file=sys.stderr)
    rc = subprocess.call(args)
    if rc == 0 and obj.is_file():
        try:
            cached.mkdir(parents=True, exist_ok=True)
            if dep.is_file():
                _store(dep, cached / "object.d")
            _store(obj, cached / "object.o")   # last: its presence marks the entry complete
        except OSError as exc:
            print(f"objcache: {exc}; {src.name} not kept", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
