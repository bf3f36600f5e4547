"""Compare one RTL run (DRAM image, registers) with `vta_sim` on the same image.

Used by the cocotb top bench (hw/tests/top_bench.py); returns the list of disagreements, empty
when the RTL matches. Without back-pressure, CYCLES and every per-module statistic must equal the
simulator's; with back-pressure the DRAM and the functional counters must, and CYCLES may only grow
(a stalled DRAM delays the RTL, it can never make it faster than the model: docs/hardware.md).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from vta_sim.config import Config
from vta_sim.errors import VTAError
from vta_sim.result import SPEC_STATS
from vta_sim.simulator import Simulator

from .header import COUNTERS


def _first_diffs(a: np.ndarray, b: np.ndarray, n: int = 4) -> str:
    idx = np.flatnonzero(a != b)
    return ", ".join(f"[{i:#x}] rtl={a[i]} sim={b[i]}" for i in idx[:n]) + (
        f" ... ({idx.size} bytes differ)" if idx.size > n else "")


def compare_run(cfg: Config, job: dict, result: dict, out: np.ndarray | None,
                image: np.ndarray | None = None) -> list:
    """Disagreements of one RTL run with vta_sim on `image` (default: the job's image file)."""
    if image is None:
        image = np.frombuffer(Path(job["image"]).read_bytes(), np.uint8)
    try:
        ref = Simulator(cfg).run(image, insn_addr=job["insn_addr"], insn_count=job["insn_count"])
    except VTAError as exc:
        if job.get("expect_error") is None:
            return [f"vta_sim refuses the program: {exc}"]
        if not result.get("error"):
            return [f"vta_sim refuses the program ({exc.reason}) but the RTL reports no error"]
        if result.get("error_code") != job["expect_error"]:
            return [f"ERROR_CODE {result.get('error_code')}, expected {job['expect_error']}"]
        return []
    if result.get("timeout"):
        return [f"no done within {job['timeout_cycles']} cycles (vta_sim: {ref.cycles})"]
    if result.get("error"):
        return [f"RTL error code {result['error_code']} at instruction {result['error_index']}"]
    problems = []
    if not np.array_equal(out, ref.dram):
        problems.append("DRAM differs: " + _first_diffs(out, ref.dram))
    timed = job.get("backpressure") is None
    names = [s for s in COUNTERS if timed or s in SPEC_STATS]
    for name in names:
        if result["stats"][name] != ref.stats[name]:
            problems.append(f"{name} rtl={result['stats'][name]} sim={ref.stats[name]}")
    if timed and result["cycles"] != ref.cycles:
        problems.append(f"CYCLES rtl={result['cycles']} sim={ref.cycles}")
    elif not timed and result["cycles"] < ref.cycles:
        problems.append(f"CYCLES rtl={result['cycles']} < sim={ref.cycles} under back-pressure")
    return problems
