"""The simulator's compiled code, through ctypes: the GEMM and ALU micro-op loop nests (loops.c)
and the compiled engine that runs a whole program (engine.c, vta_sim.compiled).

numpy's batched 1x8 by 8x8 products run at well under 1 G multiply-accumulates/s; the C loop
runs them several times faster, and its wrapping 32-bit sums make repeated destinations need no
sorting. The ALU loop runs iterations in program order, which is the spec's semantics whatever
the iterations share. The library is built with $CC (default gcc) on first use into $VTA_SIM_BUILD (default
sim/ in the cache root, vta_sim.paths), keyed by a hash of the sources and the options, and reused; a
second process waits for the first build (vta_sim.paths.keyed_build). A build failure raises `NativeBuildError`.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

from .. import isa
from ..errors import VTAError
from ..paths import build_key, cache_dir, keyed_build
from . import layout

SOURCES = tuple(Path(__file__).resolve().parent / name for name in ("loops.c", "engine.c"))
#: The library is `<build_root()>/<STEM>-<key>/<LIBRARY>`, the key a hash of the sources and options.
STEM, LIBRARY = "libvta_loops", "libvta_loops.so"
#: The ALU's shift cap comes from isa, as the RTL's comes from its generated header.
#: engine.c's column, parameter and statistic layout and ISA numbers (REQ's fields among them) come
#: from layout.py.
CFLAGS = ["-O3", "-fPIC", "-shared", "-std=c99", f"-DVTA_ALU_SHIFT_CAP={isa.ALU_SHIFT_CAP}", *layout.defines()]


class NativeBuildError(VTAError):
    """The C inner loop could not be compiled."""


def build_root() -> Path:
    """$VTA_SIM_BUILD, else `sim/` in the cache root (vta_sim.paths), read at each call."""
    return cache_dir("sim", "VTA_SIM_BUILD")


def library_path() -> Path:
    """Where the library of this source, compiler and options lives (built or not)."""
    cc = os.environ.get("CC", "gcc")
    return build_root() / f"{STEM}-{build_key(*SOURCES, repr((cc, CFLAGS)))}" / LIBRARY


def build() -> Path:
    """The shared library, compiling it on first use (paths.keyed_build: once, by one process)."""
    path = library_path()
    if path.is_file():
        return path
    cc = os.environ.get("CC", "gcc")
    if shutil.which(cc) is None:
        raise NativeBuildError(f"the simulator's compiled code (vta_sim/native/*.c) needs a C compiler: {cc!r} "
                               "is not on PATH (set $CC)")

    def make(scratch: Path) -> None:
        proc = subprocess.run([cc, *CFLAGS, "-o", str(scratch / LIBRARY), *map(str, SOURCES)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise NativeBuildError(f"building {', '.join(s.name for s in SOURCES)} with {cc} failed "
                                   f"(exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-3000:]}")

    keyed_build(path.parent, make)
    return path


_LIB: ctypes.CDLL | None = None
#: loops.c's VTA_ALU_* numbers of the ISA's ALU opcodes.
ALU_CODES = {isa.ALU_MIN: 0, isa.ALU_MAX: 1, isa.ALU_ADD: 2, isa.ALU_SHR: 3, isa.ALU_MUL: 4, isa.ALU_REQ: 5}


def _lib() -> ctypes.CDLL:
    global _LIB
    if _LIB is None:
        lib = ctypes.CDLL(str(build()))
        ptr, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
        lib.vta_gemm.argtypes = [ptr, ptr, ptr, ptr, ptr, ptr, i64, i64, i64, i64]
        lib.vta_alu.argtypes = [ptr, ptr, ptr, i64, i64, i32, i32, i32]
        lib.vta_gemm.restype = lib.vta_alu.restype = None
        lib.vta_run.argtypes = [ptr, i64, ptr, ptr, ptr, ptr, ptr, ptr, ptr]
        lib.vta_run.restype = ctypes.c_int
        _LIB = lib
    return _LIB


def _check(*pairs: tuple[np.ndarray, type]) -> None:
    for array, dtype in pairs:
        if array.dtype != dtype or not array.flags.c_contiguous:
            raise TypeError(f"the native loops take C-contiguous {np.dtype(dtype)}, got {array.dtype}")


def gemm(acc: np.ndarray, inp: np.ndarray, wgt: np.ndarray, a: np.ndarray, s: np.ndarray, w: np.ndarray) -> None:
    """acc[a[k]] += inp[s[k]] @ wgt[w[k]].T for every k, wrapping to int32, in place.

    acc (depth, BATCH, BLOCK_OUT) int32, inp (depth, BATCH, BLOCK_IN) int8, wgt (depth,
    BLOCK_OUT, BLOCK_IN) int8, all C-contiguous; a, s, w int64 indices, already range-checked."""
    _check((acc, np.int32), (inp, np.int8), (wgt, np.int8), (a, np.int64), (s, np.int64), (w, np.int64))
    batch, bo = acc.shape[1:]
    bi = inp.shape[2]
    _lib().vta_gemm(acc.ctypes.data, inp.ctypes.data, wgt.ctypes.data, a.ctypes.data, s.ctypes.data,
                    w.ctypes.data, a.size, batch, bi, bo)


def alu(acc: np.ndarray, a: np.ndarray, s: np.ndarray, opcode: int, imm: int | None) -> None:
    """acc[a[k]] = op(acc[a[k]], imm if given else acc[s[k]]) for k in order, lane by lane, in
    place (`opcode` an isa.ALU_* opcode; SHR shifts left for a negative amount, at most 31; REQ
    takes acc[s[k]] as its multipliers and `imm` as its immediate field, isa.req_imm).

    acc (depth, ...) int32 C-contiguous; a, s int64 indices, already range-checked."""
    _check((acc, np.int32), (a, np.int64), (s, np.int64))
    _lib().vta_alu(acc.ctypes.data, a.ctypes.data, s.ctypes.data, a.size, acc[0].size, ALU_CODES[opcode],
                   int(imm is not None and opcode != isa.ALU_REQ), imm or 0)


def run_program(params: np.ndarray, count: int, dram: np.ndarray, sram: dict[str, np.ndarray],
                stats: np.ndarray) -> int:
    """engine.c's vta_run: the program of `count` instructions in `dram` (where params says), on
    `dram` and the SRAMs in place; fills `stats` (layout.STATS). Returns 0 or a layout.ERRORS code."""
    _check((params, np.int64), (dram, np.uint8), (stats, np.int64), (sram["inp"], np.int8),
           (sram["wgt"], np.int8), (sram["acc"], np.int32), (sram["out"], np.int8), (sram["uop"], np.uint32))
    return int(_lib().vta_run(params.ctypes.data, count, dram.ctypes.data,
                          *(sram[name].ctypes.data for name in ("inp", "wgt", "acc", "out", "uop")),
                          stats.ctypes.data))
