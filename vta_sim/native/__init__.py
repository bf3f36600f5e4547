"""The simulator's compiled inner loop: the GEMM micro-op loop nest in C (gemm.c), through ctypes.

numpy's batched 1x8 by 8x8 products run at well under 1 G multiply-accumulates/s; the C loop
runs them several times faster, and its wrapping 32-bit sums make repeated destinations need no
sorting. The library is built with $CC (default gcc) on first use into $VTA_SIM_BUILD (default
build/sim under the repository), keyed by a hash of the source and the options, and reused; a
second process waits for the first build. A build failure raises `NativeBuildError`.
"""
from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..errors import VTAError

SOURCE = Path(__file__).resolve().parent / "gemm.c"
BUILD_ROOT = Path(os.environ.get("VTA_SIM_BUILD", Path(__file__).resolve().parents[2] / "build" / "sim"))
CFLAGS = ["-O2", "-fPIC", "-shared", "-std=c99"]


class NativeBuildError(VTAError):
    """The C inner loop could not be compiled."""


def library_path() -> Path:
    """Where the library of this source, compiler and options lives (built or not)."""
    cc = os.environ.get("CC", "gcc")
    digest = hashlib.sha256(SOURCE.read_bytes() + repr((cc, CFLAGS)).encode()).hexdigest()[:12]
    return BUILD_ROOT / f"libvta_gemm-{digest}.so"


def build() -> Path:
    """The shared library, compiling it on first use."""
    path = library_path()
    if path.is_file():
        return path
    cc = os.environ.get("CC", "gcc")
    if shutil.which(cc) is None:
        raise NativeBuildError(f"the simulator's GEMM loop (vta_sim/native/gemm.c) needs a C compiler: {cc!r} "
                               "is not on PATH (set $CC)")
    BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    with open(BUILD_ROOT / f"{path.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.is_file():
            fd, scratch = tempfile.mkstemp(prefix=path.name + ".", dir=BUILD_ROOT)
            os.close(fd)
            proc = subprocess.run([cc, *CFLAGS, "-o", scratch, str(SOURCE)], capture_output=True, text=True)
            if proc.returncode != 0:
                os.unlink(scratch)
                raise NativeBuildError(f"building {SOURCE} with {cc} failed (exit {proc.returncode}):\n"
                                       f"{(proc.stdout + proc.stderr)[-3000:]}")
            os.replace(scratch, path)   # atomic: a reader never sees half a library
            for old in BUILD_ROOT.glob("libvta_gemm-*.so*"):   # other sources' builds and their locks
                if not old.name.startswith(path.name):
                    old.unlink(missing_ok=True)
    return path


_GEMM = None


def _gemm():
    global _GEMM
    if _GEMM is None:
        fn = ctypes.CDLL(str(build())).vta_gemm
        ptr, i64 = ctypes.c_void_p, ctypes.c_int64
        fn.argtypes = [ptr, ptr, ptr, ptr, ptr, ptr, i64, i64, i64, i64]
        fn.restype = None
        _GEMM = fn
    return _GEMM


def gemm(acc: np.ndarray, inp: np.ndarray, wgt: np.ndarray, a: np.ndarray, s: np.ndarray, w: np.ndarray) -> None:
    """acc[a[k]] += inp[s[k]] @ wgt[w[k]].T for every k, wrapping to int32, in place.

    acc (depth, BATCH, BLOCK_OUT) int32, inp (depth, BATCH, BLOCK_IN) int8, wgt (depth,
    BLOCK_OUT, BLOCK_IN) int8, all C-contiguous; a, s, w int64 indices, already range-checked."""
    for array, dtype in ((acc, np.int32), (inp, np.int8), (wgt, np.int8), (a, np.int64), (s, np.int64),
                         (w, np.int64)):
        if array.dtype != dtype or not array.flags.c_contiguous:
            raise TypeError(f"native gemm takes C-contiguous {np.dtype(dtype)}, got {array.dtype}")
    batch, bo = acc.shape[1:]
    bi = inp.shape[2]
    _gemm()(acc.ctypes.data, inp.ctypes.data, wgt.ctypes.data, a.ctypes.data, s.ctypes.data, w.ctypes.data,
            a.size, batch, bi, bo)
