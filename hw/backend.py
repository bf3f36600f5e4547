"""`--backend rtl`: run a DRAM image on the Verilated VTA-8.

`RTLBackend(cfg).run(dram, insn_addr, insn_count)` returns the same RunResult as the simulator
(DRAM, CYCLES, statistics). It runs the native testbench (hw/native: C++ DRAM and host, no Python
per cycle) unless asked for the cocotb top bench (`testbench="cocotb"`, or $VTA_RTL_TESTBENCH);
both read the results back through the registers. `run_jobs` runs a batch of images in one cocotb
simulation; the tests use it with `compare=True`, which makes the bench check each run against
vta_sim.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from vta_sim.config import Config
from vta_sim.errors import VTAError
from vta_sim.registers import ERROR_CLASSES, ERROR_NAMES, NO_INDEX
from vta_sim.result import RunResult
from vta_sim.simulator import as_image, check_program

from . import build as hwbuild
from . import native

#: The testbenches RTLBackend can run, and the one it runs unless told otherwise.
TESTBENCHES = ("native", "cocotb")
TESTBENCH_ENV = "VTA_RTL_TESTBENCH"
#: Cycles a test-bench run may take before the bench gives up (the backend waits without limit).
TIMEOUT_FLOOR = 200_000


def run_jobs(cfg: Config | str, jobs: list, compare: bool = False, waves: bool = False,
             coverage: bool = False, workdir: Path | None = None) -> tuple:
    """Run jobs (dicts: image bytes, insn_addr, insn_count, optional backpressure seed, name,
    timeout_cycles, expect_error) in one simulation. Returns (results, outputs, failures)."""
    cfg = Config.load(cfg)
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="vta-rtl-")
        workdir = Path(tmp.name)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        spec_jobs = []
        for n, job in enumerate(jobs):
            image = workdir / f"job{n}.bin"
            image.write_bytes(bytes(job["image"]))
            spec_jobs.append({k: v for k, v in job.items() if k != "image"} |
                             {"image": str(image), "out": str(workdir / f"job{n}.out.bin"),
                              "timeout_cycles": int(job.get("timeout_cycles", TIMEOUT_FLOOR))})
        ram_size = max(4096, -(-max(len(j["image"]) for j in jobs) // 4096) * 4096)
        cfg_path = workdir / "config.json"
        cfg_path.write_text(json.dumps(cfg.to_dict()))
        spec = {"config": str(cfg_path), "ram_size": ram_size, "jobs": spec_jobs,
                "results": str(workdir / "results.json"), "compare": compare}
        (workdir / "jobs.json").write_text(json.dumps(spec, indent=1))
        failures = hwbuild.run_bench(cfg, "hw.tests.top_bench", workdir, {"VTA_JOBS": str(workdir / "jobs.json")},
                                     coverage=coverage, waves=waves)
        rpath = workdir / "results.json"
        results = json.loads(rpath.read_text()) if rpath.is_file() else []
        outputs = [np.frombuffer(Path(j["out"]).read_bytes(), np.uint8).copy()
                   if Path(j["out"]).is_file() else None for j in spec_jobs]
        return results, outputs, failures
    finally:
        if tmp is not None:
            tmp.cleanup()


class RTLBackend:
    """The Verilated RTL behind the simulator's backend interface."""

    name = "rtl"

    def __init__(self, cfg: Config | str | None = None, testbench: str | None = None):
        self.cfg = Config.load(cfg)
        self.testbench = testbench or os.environ.get(TESTBENCH_ENV) or TESTBENCHES[0]
        if self.testbench not in TESTBENCHES:
            raise VTAError(f"unknown RTL testbench {self.testbench!r}; available: {', '.join(TESTBENCHES)}")

    def run(self, dram, insn_addr: int, insn_count: int, trace: bool = False, progress=None) -> RunResult:
        image = as_image(dram)
        # The host driver refuses what the simulator refuses, with the same messages; the RTL's own
        # error register covers what reaches it anyway (tests/hw exercises it).
        check_program(self.cfg, image, insn_addr, insn_count)
        timeout = int(os.environ.get("VTA_RTL_TIMEOUT", 0)) or 10 ** 9
        if self.testbench == "native":
            res, out = native.run(self.cfg, image, insn_addr, insn_count, timeout)
        else:
            results, outputs, failures = run_jobs(self.cfg, [{
                "image": image.tobytes(), "insn_addr": insn_addr, "insn_count": insn_count,
                "timeout_cycles": timeout}])
            if not results:
                raise VTAError("RTL simulation failed: " + "; ".join(failures))
            res, out = results[0], outputs[0]
        if res.get("timeout"):
            raise VTAError("RTL run did not finish (timeout)")
        if res.get("error"):
            name = ERROR_NAMES.get(res["error_code"], str(res["error_code"]))
            index = None if res["error_index"] == NO_INDEX else res["error_index"]
            raise ERROR_CLASSES.get(name, VTAError)(
                f"the RTL stopped with ERROR_CODE {res['error_code']} ({name}) at cycle {res['cycles']}",
                index=index)
        stats = dict(res["stats"], cycles=res["cycles"])
        return RunResult(dram=out, cycles=res["cycles"], stats=stats, backend=self.name)
