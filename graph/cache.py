"""The on-disk compile cache: accelerator kernels and Relax VM builds reused across runs.

A whole model spends most of its wall time compiling (TVM lowering, LLVM code generation, and
the JIT at the first call) although the same shapes and graphs recur from run to run. Entries
live under $VTA_KERNEL_CACHE (default kernels/ in the cache root, vta_sim.paths), one file per key:

- `kernel-<key>.pkl`: an `OpKernel` (cloudpickle, closures included) with its recorded program
  and without its TVM module (see `op_kernel`), keyed by the op spec, the configuration, the
  thread count and `code_version()`;
- `vm-<key>.so`: a Relax VM executable, keyed by the IRModule's structural hash (which covers
  its constants), the target and `code_version()`.

`code_version()` hashes the sources that shape a kernel (vta_sim, intrinsics, requantisation,
schedules, graph/kernels.py, graph/ops/, this file), the tuning database and the Python, numpy, cloudpickle and TVM
versions, so an edit to any of them misses the cache rather than reusing a stale build. Entries are written to a scratch
name and renamed into place, so concurrent runs never read half an entry. `VTA_KERNEL_CACHE=off`
turns the cache off.

`fill(jobs)` runs independent cache-filling builds in forked worker processes, one per core, so
a cold run compiles its kernels and the CPU build two at a time on this 2-core machine.
"""
from __future__ import annotations

import functools
import hashlib
import multiprocessing
import os
import sys
import tempfile
import traceback
from pathlib import Path

import cloudpickle
import numpy as np
import tvm
import tvm_ffi

from schedules import tuning_db
from vta_sim import paths

ROOT = Path(__file__).resolve().parents[1]
_SOURCES = ("vta_sim", "intrinsics", "requantisation", "schedules")


def cache_dir() -> Path | None:
    """$VTA_KERNEL_CACHE, else kernels/ in the cache root (vta_sim.paths); None when set to `off`."""
    if os.environ.get("VTA_KERNEL_CACHE") == "off":
        return None
    return paths.cache_dir("kernels", "VTA_KERNEL_CACHE")


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of everything besides the key that decides what a compile produces."""
    digest = hashlib.sha256(repr((tvm.__version__, sys.version, np.__version__, cloudpickle.__version__)).encode())
    files = sorted(p for pkg in _SOURCES for p in (ROOT / pkg).rglob("*.py"))
    specs = sorted((ROOT / "graph" / "ops").glob("*.py"))      # each op's spec builds its kernel
    for path in files + [ROOT / "graph" / "kernels.py", *specs, Path(__file__).resolve()]:
        digest.update(str(path.relative_to(ROOT)).encode() + path.read_bytes())
    db = tuning_db.db_path()
    digest.update(db.read_bytes() if db.is_file() else b"no tuning database")
    return digest.hexdigest()


def _key(*parts) -> str:
    return hashlib.sha256(repr((code_version(), *parts)).encode()).hexdigest()[:24]


def _write(path: Path, write) -> None:
    """`write(scratch_path)`, then rename into place (atomic)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(prefix=path.name + ".", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        write(scratch)
        os.replace(scratch, path)
    finally:
        if os.path.exists(scratch):
            os.unlink(scratch)


def exported(executable, path: Path):
    """Export a `tvm.compile` result to `path` and load it back (no JIT at the first call)."""
    _write(path, executable.export_library)
    return tvm.runtime.load_module(str(path))


def vm_executable(mod, target: dict):
    """`tvm.compile(mod, target)` of a Relax module, cached by the module's structural hash and the
    target (its LLVM optimisation level included: a build at -O0 runs slower, and is not reused
    where -O1 was asked for)."""
    def build():
        return tvm.compile(mod, target=tvm.target.Target(target))

    root = cache_dir()
    if root is None:
        return build()
    path = _vm_path(root, mod, target)
    if path.is_file():
        return tvm.runtime.load_module(str(path))
    return exported(build(), path)


def _vm_path(root: Path, mod, target: dict) -> Path:
    return root / f"vm-{_key('vm', tvm_ffi.structural_hash(mod), sorted(target.items()))}.so"


def op_kernel(cfg_text: str, spec, vthreads: int, build):
    """`build()` (an OpKernel), cached by config, spec and thread count.

    Only the kernel's recorded program is kept: its TVM module ran once, at compile time, to
    record the calls (intrinsics.build), and is not needed to run it again, so a kernel read
    from the cache has `kernel.kernel.module` None and none is exported (LLVM code generation
    and a link, half a second a kernel)."""
    root = cache_dir()
    if root is None:
        return build()
    path = root / f"kernel-{_key('kernel', cfg_text, repr(spec), vthreads)}.pkl"
    if path.is_file():
        return cloudpickle.loads(path.read_bytes())
    kernel = build()
    module, kernel.kernel.module = kernel.kernel.module, None
    try:
        data = cloudpickle.dumps(kernel)
    finally:
        kernel.kernel.module = module
    _write(path, lambda p: Path(p).write_bytes(data))
    return kernel


def missing_kernel(cfg_text: str, spec, vthreads: int) -> bool:
    """Whether `op_kernel` would have to compile this kernel."""
    root = cache_dir()
    if root is None:
        return True
    return not (root / f"kernel-{_key('kernel', cfg_text, repr(spec), vthreads)}.pkl").is_file()


def missing_vm(mod, target: dict) -> bool:
    """Whether `vm_executable` would have to compile `mod` for `target`."""
    root = cache_dir()
    return root is None or not _vm_path(root, mod, target).is_file()


_JOBS: list = []   # the jobs of the running fill(), inherited by its forked workers


def _run_job(index: int) -> str | None:
    try:
        _JOBS[index]()
    except BaseException:  # noqa: BLE001 - the parent re-runs the job to raise it (see fill)
        return traceback.format_exc()
    return None


def fill(jobs: list) -> None:
    """Run `jobs` (callables that write cache entries) on every core, in forked processes.

    A job that fails in a worker is run again in this process, which raises its error with its
    own type and traceback. With the cache off, one job, one core, or in a daemonic process
    (a Dask worker may not have children) nothing is forked: the builds happen where they are
    needed."""
    workers = min(len(jobs), len(os.sched_getaffinity(0)))
    if cache_dir() is None or workers < 2 or multiprocessing.current_process().daemon:
        return
    global _JOBS
    _JOBS = list(jobs)
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            failed = [i for i, error in enumerate(pool.map(_run_job, range(len(_JOBS)), chunksize=1)) if error]
        for i in failed:
            _JOBS[i]()
    finally:
        _JOBS = []
