"""Top-level cocotb bench: DRAM image in, registers programmed over AXI4-Lite, done awaited, DRAM
and registers out; optionally compared against `vta_sim` on the same image.

cocotbext-axi's AxiRam is the DRAM and AxiLiteMaster the host. The jobs come from the JSON file
named by $VTA_JOBS (written by hw.backend.run_jobs); one simulation runs many jobs, each started
by a write of CTRL.start, so the Verilated model starts once per batch.
"""
from __future__ import annotations

import json
import os
import random
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, First, RisingEdge, Timer
from cocotbext.axi import AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam

from hw import header
from hw.compare import compare_run
from vta_sim.config import Config

CLOCK_NS = 10


def _pause_generator(rng: random.Random, busy: float):
    while True:
        yield rng.random() < busy


def set_backpressure(ram: AxiRam, seed, busy: float = 0.3) -> None:
    """Random stalls on every DRAM channel (seeded), or none when seed is None."""
    channels = (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
                ram.read_if.ar_channel, ram.read_if.r_channel)
    for i, ch in enumerate(channels):
        if seed is None:
            ch.clear_pause_generator()
        else:
            ch.set_pause_generator(_pause_generator(random.Random(f"{seed}-{i}"), busy))


async def run_one(dut, ram: AxiRam, host: AxiLiteMaster, job: dict, ram_size: int) -> dict:
    image = Path(job["image"]).read_bytes()
    ram.write(0, image + bytes(ram_size - len(image)))
    set_backpressure(ram, job.get("backpressure"))
    await host.write_dword(header.REG_INSN_ADDR, job["insn_addr"])
    await host.write_dword(header.REG_INSN_COUNT, job["insn_count"])
    await host.write_dword(header.REG_CTRL, 1)
    await First(RisingEdge(dut.done), Timer(job["timeout_cycles"] * CLOCK_NS, "ns"))
    status = await host.read_dword(header.REG_CTRL)
    result = {"name": job.get("name", ""), "status": status, "done": bool(status & 2),
              "error": bool(status & 4)}
    if not result["done"]:
        result["timeout"] = True
        return result
    if status & 4:   # let AXI traffic of the halted run drain before the next start resets the device
        await ClockCycles(dut.clk, 300)
    assert await host.read_dword(header.REG_INSN_COUNT) == job["insn_count"]
    assert await host.read_dword(header.REG_INSN_ADDR) == job["insn_addr"]
    result["cycles"] = await host.read_dword(header.REG_CYCLES)
    result["error_code"] = await host.read_dword(header.REG_ERROR_CODE)
    result["error_index"] = await host.read_dword(header.REG_ERROR_INDEX)
    result["stats"] = {name: await host.read_dword(header.counter_offset(name))
                       for name in header.COUNTERS}
    set_backpressure(ram, None)
    Path(job["out"]).write_bytes(ram.read(0, len(image)))
    if job.get("peek"):   # SRAM entries, read straight from the memories (the DMA benches)
        result["peek"] = {name: [hex(int(getattr(dut, name).mem[i].value)) for i in range(base, base + n)]
                          for name, base, n in job["peek"]}
    return result


@cocotb.test()
async def run_jobs(dut):
    """Run every job of $VTA_JOBS; with compare set, check DRAM, CYCLES and stats against vta_sim."""
    spec = json.loads(Path(os.environ["VTA_JOBS"]).read_text())
    cfg = Config.load(spec["config"])
    ram_size = spec["ram_size"]
    cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
    dut.rst.value = 1
    ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=ram_size)
    host = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)
    assert await host.read_dword(header.REG_CTRL) == 0, "idle after reset: not running, done or error"
    assert await host.read_dword(0xFC) == 0, "unmapped registers read as zero"

    results, failures = [], []
    for job in spec["jobs"]:
        result = await run_one(dut, ram, host, job, ram_size)
        results.append(result)
        if spec.get("compare"):
            out = np.frombuffer(Path(job["out"]).read_bytes(), np.uint8) if result.get("done") else None
            problems = compare_run(cfg, job, result, out)
            if problems:
                failures.append(f"{job.get('name', '?')}: " + "; ".join(problems))
        if result.get("timeout"):
            break   # the device is stuck; later jobs would not start cleanly
    Path(spec["results"]).write_text(json.dumps(results, indent=1))
    assert not failures, "RTL disagrees with vta_sim:\n  " + "\n  ".join(failures)
