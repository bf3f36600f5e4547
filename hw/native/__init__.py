"""The native testbench: vta_top Verilated with a C++ DRAM and host (testbench.cpp), as a shared
library called through ctypes, with no Python per cycle.

`build(cfg)` makes `hw/native-<config>-<key>/libvta_native.so` under the cache root once (the key
hashes the RTL, the generated header, testbench.cpp and the build options, like hw/build.py's
cocotb models);
`run(cfg, image, insn_addr, insn_count)` returns the registers and the DRAM after one program.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from vta_sim.config import Config
from vta_sim.errors import VTAError
from vta_sim.paths import build_key, keyed_build
from vta_sim.registers import (COUNTERS, REG_COUNTERS, REG_CTRL, REG_CYCLES, REG_ERROR_CODE,
                               REG_ERROR_INDEX, STATUS_DONE, STATUS_ERROR)

from .. import build as hwbuild
from ..header import c_header_text, header_text

SOURCE = Path(__file__).resolve().parent / "testbench.cpp"
LIBRARY = "libvta_native.so"
#: Verilator's options (the C++ flags are hw.build.CXX_OPTIONS): the library links the model,
#: libverilated and the bench as PIC.
VERILATOR_OPTIONS = ["-Wno-fatal", "-O3", "--x-assign", "fast", "--x-initial", "0"]
#: Registers read back after a run: CTRL/STATUS .. ERROR_INDEX, then every statistics counter.
NUM_REGS = REG_COUNTERS // 4 + len(COUNTERS)
#: DRAM is the image rounded up to whole 4 KB pages, as the cocotb bench sizes its AxiRam.
PAGE = 4096


def _options() -> list:
    return VERILATOR_OPTIONS + ["-CFLAGS", " ".join(hwbuild.CXX_OPTIONS)]


def _sources(cells: hwbuild.Cells | None) -> list:
    return hwbuild.rtl_sources() + ([*cells.rtl, *cells.models] if cells else []) + [SOURCE]


def _flavour(cfg: Config, cells: hwbuild.Cells | None) -> str:
    return f"native-{cfg.name}" + (f"-{cells.name}" if cells else "")


def build_dir_for(cfg: Config, cells: hwbuild.Cells | None = None) -> Path:
    """The bench takes the bus width and the register map from `vta_cfg.h`, generated with the
    RTL's `vta_cfg.vh` from the same table (hw/header.py), so the key hashes both. With `cells`
    (hw.build.ECP5_CELLS), the RTL is the target's build of it, its vendor cells simulated by
    their models."""
    key = build_key(header_text(cfg), c_header_text(cfg), *_sources(cells),
                    repr(_options() + ([cells.define] if cells else [])))
    return hwbuild.build_root() / f"{_flavour(cfg, cells)}-{key}"


def build(cfg: Config | str, quiet: bool = False, cells: hwbuild.Cells | None = None) -> Path:
    """The shared library of `cfg`'s native testbench, building it on first use
    (vta_sim.paths.keyed_build: a second process waits for the first build and reuses it)."""
    cfg = Config.load(cfg)
    bdir = build_dir_for(cfg, cells)
    if (bdir / LIBRARY).is_file():
        return bdir / LIBRARY
    hwbuild.ensure_tools_on_path()
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        raise VTAError("the native RTL testbench needs a C++ compiler (g++, or $CXX) on PATH")
    keyed_build(bdir, lambda scratch: _build_into(cfg, scratch, quiet, cells))
    return bdir / LIBRARY


def _build_into(cfg: Config, scratch: Path, quiet: bool, cells: hwbuild.Cells | None) -> None:
    if not quiet:
        print(f"[hw] building the native testbench for {cfg.name} in {hwbuild.build_root()} (first use only, "
              "~2 min)", file=sys.stderr, flush=True)
    start = time.time()
    inc, obj = scratch / "include", scratch / "obj"
    inc.mkdir()
    obj.mkdir()
    (inc / "vta_cfg.vh").write_text(header_text(cfg))
    # the bench's C header where every compile's `-I.` finds it (make runs in obj/), so that no
    # build-specific -I joins the runtime's compile lines and their objects are shared
    (obj / "vta_cfg.h").write_text(c_header_text(cfg))
    cmd = ["verilator", "--cc", "--exe", "--build", "-j", str(min(2, os.cpu_count() or 1)),
           *_options(), "-LDFLAGS", "-shared -Wl,-Bsymbolic", "-o", LIBRARY,
           "--Mdir", str(obj),
           "--top-module", hwbuild.TOPLEVEL, f"-I{inc}", f"-I{hwbuild.RTL_DIR}",
           *([f"-D{cells.define}"] if cells else []), *map(str, _sources(cells))]
    env = dict(os.environ, **hwbuild.make_env())
    proc = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise VTAError(f"native testbench build of {cfg.name} failed (exit {proc.returncode}):\n"
                       f"{(proc.stdout + proc.stderr)[-3000:]}")
    (scratch / "build.log").write_text(proc.stdout + proc.stderr)
    shutil.move(str(scratch / "obj" / LIBRARY), str(scratch / LIBRARY))
    shutil.rmtree(scratch / "obj")   # the model's objects are not reused (the runtime's are: hw/objcache.py)
    if not quiet:
        print(f"[hw] built the native testbench for {cfg.name} in {time.time() - start:.0f} s",
              file=sys.stderr, flush=True)


_LIBS: dict = {}


def _library(cfg: Config, cells: hwbuild.Cells | None):
    path = build(cfg, cells=cells)
    if path not in _LIBS:
        lib = ctypes.CDLL(str(path))
        lib.vta_native_run.restype = ctypes.c_int
        lib.vta_native_run.argtypes = [
            ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64,
            ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint64),
            ctypes.c_char_p, ctypes.c_uint64]
        _LIBS[path] = lib
    return _LIBS[path]


def run(cfg: Config | str, image: np.ndarray, insn_addr: int, insn_count: int,
        timeout_cycles: int, cells: hwbuild.Cells | None = None) -> tuple:
    """One program from a reset device. Returns (result, dram): result as the cocotb top bench
    writes it (status, done, error, cycles, error_code, error_index, stats; timeout when DONE did
    not come within timeout_cycles) plus sim_cycles, the clock cycles simulated in all."""
    cfg = Config.load(cfg)
    lib = _library(cfg, cells)
    image = np.ascontiguousarray(image, np.uint8)
    mem = np.zeros(max(PAGE, -(-image.size // PAGE) * PAGE), np.uint8)
    mem[:image.size] = image
    regs = (ctypes.c_uint32 * NUM_REGS)()
    sim_cycles = ctypes.c_uint64()
    err = ctypes.create_string_buffer(512)
    rc = lib.vta_native_run(mem.ctypes.data, mem.size, insn_addr, insn_count, timeout_cycles, regs,
                            NUM_REGS, ctypes.byref(sim_cycles), err, len(err))
    if rc < 0:
        raise VTAError(f"native RTL testbench failed: {err.value.decode()}")
    status = regs[REG_CTRL // 4]
    result = {"status": status, "done": bool(status >> STATUS_DONE & 1),
              "error": bool(status >> STATUS_ERROR & 1), "sim_cycles": sim_cycles.value}
    if rc == 1:
        return result | {"timeout": True}, None
    words = list(regs)
    result |= {"cycles": words[REG_CYCLES // 4], "error_code": words[REG_ERROR_CODE // 4],
               "error_index": words[REG_ERROR_INDEX // 4],
               "stats": dict(zip(COUNTERS, words[REG_COUNTERS // 4:]))}
    return result, mem[:image.size].copy()
