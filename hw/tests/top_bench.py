"""Top-level cocotb bench: DRAM image in, registers programmed over AXI4-Lite, done awaited, DRAM
and registers out; optionally compared against `vta_sim` on the same image.

In the style of cocotbext-axi's benches, a `TB` owns the clock, the reset and the bus models
(AxiRam as DRAM, AxiLiteMaster as host). The jobs come from the JSON file named by $VTA_JOBS
(written by hw.backend.run_jobs); each job is one cocotb test named after its program
(`program/job=<name>`), all in one simulation, so the Verilated model starts once per batch. Every
program starts from a reset device with zeroed SRAMs, as vta_sim starts every run, so the order
of a batch does not matter. Guard bytes of a known pattern surround every STORE destination and
must come back untouched.
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
from hw.sim_check import compare_run
from vta_sim import isa
from vta_sim.config import Config
from vta_sim.errors import VTAError

CLOCK_NS = 10
SRAMS = ("uop_mem", "inp_mem", "wgt_mem", "acc_mem", "out_mem")


def sram_banks(dut, name: str) -> list:
    """The memory arrays of an SRAM; entry i is word i // n of bank i % n (the UOP SRAM has one
    bank per micro-op of a bus beat, hw/rtl/vta_sram_banked.v)."""
    sram = getattr(dut, name)
    if name != "uop_mem":
        return [sram_array(sram)]
    lanes = len(sram.g_bank)
    return [sram_array(sram.g_bank[b].bank) for b in range(lanes)]


def sram_array(sram):
    """The memory array of one vta_sram, inside the generate block of its read latency."""
    return sram.g_outreg.array.mem if hasattr(sram, "g_outreg") else sram.g_plain.mem
#: Bytes guarded before and after every STORE row, and their pattern (by address).
GUARD_BYTES = 16
GUARD_PATTERN = np.frombuffer(b"\xde\xad\xbe\xef", np.uint8)


def _pause_generator(rng: random.Random, busy: float):
    while True:
        yield rng.random() < busy


def store_guards(cfg: Config, image: np.ndarray, insn_addr: int, insn_count: int) -> np.ndarray:
    """Byte addresses within GUARD_BYTES of a STORE row that no STORE writes, no LOAD reads and
    no instruction holds: the program must leave them as they are, and cannot see them."""
    written = np.zeros(image.size, bool)
    near = np.zeros(image.size, bool)
    for k in range(insn_count):
        at = insn_addr + 16 * k
        try:
            insn = isa.decode(image[at:at + 16].tobytes(), cfg)
            eb = cfg.dram_elem_bytes(insn.memory_type)
        except (VTAError, AttributeError, KeyError):
            continue
        if not (isinstance(insn, isa.MemInsn) and insn.x_size):
            continue
        for r in range(insn.y_size):
            lo = (insn.dram_base + r * insn.x_stride) * eb
            hi = lo + insn.x_size * eb
            written[lo:hi] = True          # a LOAD's source is excluded like a STORE's destination
            if insn.opcode == isa.OP_STORE:
                near[max(0, lo - GUARD_BYTES):lo] = near[hi:hi + GUARD_BYTES] = True
    near[insn_addr:insn_addr + 16 * insn_count] = False
    return np.flatnonzero(near & ~written)


class TB:
    """Clock, reset, the DRAM model and the host of one VTA-8 top (one per cocotb test)."""

    def __init__(self, dut, ram_size: int):
        self.dut = dut
        cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=ram_size)
        self.host = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.ram_size = ram_size

    def set_backpressure(self, seed, busy: float = 0.3) -> None:
        """Random stalls on every DRAM channel (seeded), or none when seed is None."""
        ram = self.ram
        channels = (ram.write_if.aw_channel, ram.write_if.w_channel, ram.write_if.b_channel,
                    ram.read_if.ar_channel, ram.read_if.r_channel)
        for i, ch in enumerate(channels):
            if seed is None:
                ch.clear_pause_generator()
            else:
                ch.set_pause_generator(_pause_generator(random.Random(f"{seed}-{i}"), busy))

    def fail_reads(self, span) -> None:
        """Answer SLVERR to read beats of the DRAM bytes [lo, hi) (the AXI error test), or to none:
        cocotbext-axi answers SLVERR when its read hook raises."""
        read_if = self.ram.read_if
        if span is None:
            read_if.__dict__.pop("_read", None)
            return
        lo, hi = span

        async def failing_read(address, length):
            if address < hi and address + length > lo:
                raise OSError(f"injected read error at {address:#x}")
            return read_if.read(address % read_if.size, length)
        read_if._read = failing_read

    async def reset(self) -> None:
        """Reset the device and zero its SRAMs (the spec leaves them undefined; vta_sim starts from
        zeros), so that each program runs as if it were the first."""
        self.dut.rst.value = 1
        for name in SRAMS:
            for mem in sram_banks(self.dut, name):
                mem.value = [0] * len(mem)
        await ClockCycles(self.dut.clk, 4)
        self.dut.rst.value = 0
        await ClockCycles(self.dut.clk, 2)

    async def run(self, job: dict, image: np.ndarray) -> dict:
        """Run one program from a reset device; DRAM out to job["out"], registers in the result."""
        host = self.host
        self.ram.write(0, image.tobytes() + bytes(self.ram_size - image.size))
        self.set_backpressure(job.get("backpressure"))
        self.fail_reads(job.get("read_error"))
        await host.write_dword(header.REG_INSN_ADDR, job["insn_addr"])
        await host.write_dword(header.REG_INSN_COUNT, job["insn_count"])
        await host.write_dword(header.REG_CTRL, 1)
        await First(RisingEdge(self.dut.done), Timer(job["timeout_cycles"] * CLOCK_NS, "ns"))
        status = await host.read_dword(header.REG_CTRL)
        result = {"name": job.get("name", ""), "status": status, "done": bool(status & 2),
                  "error": bool(status & 4)}
        if not result["done"]:
            result["timeout"] = True
            return result
        if status & 4:   # let AXI traffic of the halted run drain before the next reset
            await ClockCycles(self.dut.clk, 300)
        assert await host.read_dword(header.REG_INSN_COUNT) == job["insn_count"]
        assert await host.read_dword(header.REG_INSN_ADDR) == job["insn_addr"]
        result["cycles"] = await host.read_dword(header.REG_CYCLES)
        result["error_code"] = await host.read_dword(header.REG_ERROR_CODE)
        result["error_index"] = await host.read_dword(header.REG_ERROR_INDEX)
        result["stats"] = {name: await host.read_dword(header.counter_offset(name))
                           for name in header.COUNTERS}
        self.set_backpressure(None)
        self.fail_reads(None)
        Path(job["out"]).write_bytes(self.ram.read(0, image.size))
        if job.get("peek"):   # SRAM entries, read straight from the memories (the DMA benches)
            result["peek"] = {}
            for name, base, n in job["peek"]:
                banks = sram_banks(self.dut, name)
                result["peek"][name] = [hex(int(banks[i % len(banks)][i // len(banks)].value))
                                        for i in range(base, base + n)]
        return result


def _spec() -> dict:
    path = os.environ.get("VTA_JOBS")
    return json.loads(Path(path).read_text()) if path else {"jobs": []}


SPEC = _spec()
RESULTS: dict = {}


@cocotb.test()
async def idle_after_reset(dut):
    """Before any start: not running, done or error; unmapped registers read as zero."""
    tb = TB(dut, SPEC.get("ram_size", 4096))
    await tb.reset()
    assert await tb.host.read_dword(header.REG_CTRL) == 0, "idle after reset: not running, done or error"
    assert await tb.host.read_dword(0xFC) == 0, "unmapped registers read as zero"


@cocotb.test()
@cocotb.parametrize(job=[cocotb.Param((i, j), j.get("name") or f"job{i}") for i, j in enumerate(SPEC["jobs"])])
async def program(dut, job):
    """One program from reset: guard bytes around its STOREs untouched; with compare set, DRAM,
    CYCLES and statistics checked against vta_sim on the same (guarded) image."""
    index, job = job
    cfg = Config.load(SPEC["config"])
    tb = TB(dut, SPEC["ram_size"])
    await tb.reset()
    image = np.frombuffer(Path(job["image"]).read_bytes(), np.uint8).copy()
    guards = store_guards(cfg, image, job["insn_addr"], job["insn_count"])
    pattern = GUARD_PATTERN[guards % GUARD_PATTERN.size]
    original = image[guards].copy()
    image[guards] = pattern
    result = await tb.run(job, image)
    RESULTS[index] = result
    Path(SPEC["results"]).write_text(json.dumps([RESULTS.get(i) for i in range(len(SPEC["jobs"]))], indent=1))
    out = np.frombuffer(Path(job["out"]).read_bytes(), np.uint8) if result.get("done") else None
    problems = []
    if out is not None and not result["error"] and not np.array_equal(out[guards], pattern):
        bad = guards[out[guards] != pattern]
        problems.append(f"bytes next to a STORE destination changed: {', '.join(hex(a) for a in bad[:4])}")
    if SPEC.get("compare"):
        problems += compare_run(cfg, job, result, out, image=image)
    if out is not None:   # the caller gets the DRAM of its own image, guards taken out again
        out = out.copy()
        out[guards] = original
        Path(job["out"]).write_bytes(out.tobytes())
    assert not problems, "RTL disagrees with vta_sim: " + "; ".join(problems)
