"""Unit benches: instruction FIFO, token queue and SRAM against Python models, GEMM core and ALU
core against numpy int64 references written from the spec (section 5). Seeded by $VTA_UNIT_SEED."""
from __future__ import annotations

import os
import random
from collections import deque

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, Timer

from hw.tests.top_bench import sram_array
from vta_sim import isa
from vta_sim.config import Config

CFG = Config.load(os.environ.get("VTA_UNIT_CONFIG", "1x8x8"))
SEED = int(os.environ.get("VTA_UNIT_SEED", "1"))


def pack(values, bits: int) -> int:
    mask = (1 << bits) - 1
    return sum((int(v) & mask) << (i * bits) for i, v in enumerate(values))


def unpack(word: int, n: int, bits: int) -> np.ndarray:
    out = np.array([(word >> (i * bits)) & ((1 << bits) - 1) for i in range(n)], dtype=np.int64)
    return np.where(out >= 1 << (bits - 1), out - (1 << bits), out)


def wrap32(x):
    return ((np.asarray(x, dtype=np.int64) + 2**31) % 2**32) - 2**31


async def reset(dut):
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    for name in ("f_in_valid", "f_out_ready", "t_push_req", "t_pop", "m_we"):
        getattr(dut, name).value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    await FallingEdge(dut.clk)


@cocotb.test()
async def fifo_matches_model(dut):
    """With the bypass (f_): through when empty, enqueue into a full FIFO in the cycle its head
    leaves. Without it (q_, the instruction queues): an entry is visible from the cycle after its
    write and a slot freed by a read is free from the next cycle. Order kept by both."""
    await reset(dut)
    rng, model, reg, seen = random.Random(SEED), deque(), deque(), 0
    for _ in range(600):
        push, pop = rng.random() < 0.55, rng.random() < 0.5
        data = rng.randrange(256)
        dut.f_in_valid.value, dut.f_in_data.value, dut.f_out_ready.value = int(push), data, int(pop)
        await Timer(1, "ns")
        assert int(dut.f_count.value) == len(model)
        assert int(dut.f_out_valid.value) == int(bool(model) or push)
        assert int(dut.f_in_ready.value) == int(len(model) < 4 or pop)
        if model or push:
            assert int(dut.f_out_data.value) == (model[0] if model else data)
        assert int(dut.q_count.value) == len(reg)
        assert int(dut.q_out_valid.value) == int(bool(reg))
        assert int(dut.q_in_ready.value) == int(len(reg) < 4)
        if reg:
            assert int(dut.q_out_data.value) == reg[0]
        enq = push and (len(model) < 4 or pop)
        if enq:
            model.append(data)
        if pop and model:
            model.popleft()
            seen += 1
        reg_enq = push and len(reg) < 4
        if pop and reg:
            reg.popleft()
        if reg_enq:
            reg.append(data)
        await FallingEdge(dut.clk)
    assert seen > 100


@cocotb.test()
async def sram_reads_as_written_up_to_its_address_cycle(dut):
    """A read returns its entry as written up to and including the cycle its address is taken
    (write-first), one cycle later (RD_REG = 0) or two (RD_REG = 1, the block RAM's output
    register), whichever writes are still in flight: four entries and a write in most cycles
    exercise the registered write landing in the read's edge and the one still pending."""
    await reset(dut)
    rng, mem, due = random.Random(SEED), [0] * 4, deque()
    for name in ("sram1", "sram2"):   # zero the arrays, as the top bench does
        sram_array(getattr(dut, name)).value = [0] * 4
    for cycle in range(800):
        we, waddr, wdata, raddr = rng.random() < 0.7, rng.randrange(4), rng.randrange(256), rng.randrange(4)
        dut.m_we.value, dut.m_waddr.value, dut.m_wdata.value, dut.m_raddr.value = int(we), waddr, wdata, raddr
        if we:
            mem[waddr] = wdata
        due.append(mem[raddr])
        await Timer(1, "ns")
        if cycle >= 2:
            assert int(dut.m_rdata1.value) == due[-2], f"RD_REG=0, cycle {cycle}"
            assert int(dut.m_rdata2.value) == due[-3], f"RD_REG=1, cycle {cycle}"
        await FallingEdge(dut.clk)


@cocotb.test()
async def token_queue_matches_model(dut):
    """Registered both ways (timing model revision 3): a pop finds only tokens pushed before this
    cycle, a push lands only if the queue was not full at the last edge."""
    await reset(dut)
    depth = CFG.TOKEN_DEPTH
    rng, count = random.Random(SEED + 1), 0
    fulls = 0
    for _ in range(600):
        push = rng.random() < 0.6
        dut.t_push_req.value = int(push)
        await Timer(1, "ns")
        avail = int(dut.t_avail.value)
        assert avail == int(count > 0)
        pop = avail and rng.random() < 0.45
        dut.t_pop.value = int(pop)
        await Timer(1, "ns")
        assert int(dut.t_push_ok.value) == int(count < depth)
        fulls += count == depth
        count += int(push and count < depth) - int(pop)
        await FallingEdge(dut.clk)
        assert int(dut.t_count.value) == count
    assert fulls > 0


@cocotb.test()
async def gemm_core_matches_numpy(dut):
    await reset(dut)
    rng = np.random.default_rng(SEED + 2)
    b, bi, bo = CFG.BATCH, CFG.BLOCK_IN, CFG.BLOCK_OUT
    for trial in range(60):
        inp = rng.integers(-128, 128, (b, bi))
        wgt = rng.integers(-128, 128, (bo, bi))
        acc = rng.integers(-2**31, 2**31, (b, bo))
        if trial < 4:   # extremes: -128 * -128 sums and wrapping accumulators
            inp[:], wgt[:] = -128, -128
            acc[:] = 2**31 - 1 - trial
        reset_flag = trial % 7 == 3
        dut.g_inp.value = pack(inp.ravel(), 8)
        dut.g_wgt.value = pack(wgt.ravel(), 8)
        await ClockCycles(dut.clk, 3)   # operands, products, then their sums, registered; acc_in added after
        dut.g_acc_in.value = pack(acc.ravel(), 32)
        dut.g_reset.value = int(reset_flag)
        await Timer(1, "ns")
        got = unpack(int(dut.g_acc_out.value), b * bo, 32).reshape(b, bo)
        want = np.zeros((b, bo), np.int64) if reset_flag else wrap32(acc + inp @ wgt.T)
        assert np.array_equal(got, want), f"trial {trial}"


def alu_reference(op: int, x, y):
    x, y = np.asarray(x, np.int64), np.asarray(y, np.int64)
    if op == 0:
        return np.minimum(x, y)
    if op == 1:
        return np.maximum(x, y)
    if op == 2:
        return wrap32(x + y)
    if op == 3:
        amount = np.minimum(np.abs(y), 31)
        return np.where(y >= 0, x >> amount, wrap32(x << amount))
    return wrap32(x * y)


@cocotb.test()
async def alu_core_matches_numpy(dut):
    """Three stages: z is the result of the operands of two cycles before, zr (MIN/MAX/ADD's, else
    0) of the cycle before."""
    await reset(dut)
    rng = np.random.default_rng(SEED + 3)
    lanes = CFG.BATCH * CFG.BLOCK_OUT
    for op in range(5):
        for trial in range(30):
            x = rng.integers(-2**31, 2**31, lanes)
            y = rng.integers(-2**31, 2**31, lanes) if trial % 2 else rng.integers(-40, 41, lanes)
            if trial == 0:
                y[:4] = [-2**31, 2**31 - 1, 31, -31][:min(4, lanes)]
            reset_flag = trial == 5
            dut.a_x.value, dut.a_y.value = pack(x, 32), pack(y, 32)
            dut.a_op.value, dut.a_reset.value = op, int(reset_flag)
            want = np.zeros(lanes, np.int64) if reset_flag else alu_reference(op, x, y)
            await FallingEdge(dut.clk)
            early = unpack(int(dut.a_zr.value), lanes, 32)
            assert np.array_equal(early, want if op in (0, 1, 2) else np.zeros(lanes, np.int64)), \
                f"zr, op {op} trial {trial}: x={x[:4]} y={y[:4]}"
            await FallingEdge(dut.clk)
            got = unpack(int(dut.a_z.value), lanes, 32)
            assert np.array_equal(got, want), f"op {op} trial {trial}: x={x[:4]} y={y[:4]}"


def req_reference(x, m, n: int, zp: int):
    """docs/isa-extensions.md, REQ: the exact product, rounded right shift, zero point, int8 clamp."""
    out = []
    for xi, mi in zip(x, m):
        p = int(xi) * int(mi)
        v = p if n == 0 else (p >> n) + ((p >> (n - 1)) & 1)
        out.append(min(max(v + zp, isa.REQ_OUT_MIN), isa.REQ_OUT_MAX))
    return np.array(out, np.int64)


@cocotb.test()
async def alu_core_req_matches_the_contract(dut):
    """REQ's lanes (zq) four cycles after their operands, fed a new set every cycle: int32 extremes,
    every shift 0..63, zero points at both ends, reset."""
    await reset(dut)
    rng = np.random.default_rng(SEED + 5)
    lanes = CFG.BATCH * CFG.BLOCK_OUT
    extremes = np.array([-2**31, 2**31 - 1, 0, 1, -1, 2**30, -2**30 - 1, 12345], np.int64)
    sent = []
    for trial in range(64 * 3 + 8):
        n = trial % 64
        zp = [-128, 127, 0, int(rng.integers(-128, 128))][trial % 4]
        if trial % 3 == 0:
            x, m = rng.choice(extremes, lanes), rng.choice(extremes, lanes)
        elif trial % 3 == 1:
            x, m = rng.integers(-2**31, 2**31, lanes), rng.integers(-2**31, 2**31, lanes)
        else:   # products near the shift's rounding point and the clamp's edges
            x = rng.integers(-2**20, 2**20, lanes)
            m = rng.integers(-2**12, 2**12, lanes)
        reset_flag = trial % 17 == 5
        dut.a_x.value, dut.a_y.value = pack(x, 32), pack(m, 32)
        dut.a_op.value, dut.a_reset.value = isa.ALU_REQ, int(reset_flag)
        dut.a_n.value, dut.a_zp.value = n, zp & 0xFF
        sent.append(np.zeros(lanes, np.int64) if reset_flag else req_reference(x, m, n, zp))
        await FallingEdge(dut.clk)
        if len(sent) >= 4:   # the fourth edge since trial - 3's operands
            want = sent[-4]
            got = unpack(int(dut.a_zq.value), lanes, 32)
            assert np.array_equal(got, want), (f"REQ trial {trial - 3}: lanes {np.flatnonzero(got != want)[:4]} got "
                                                f"{got[got != want][:4]} want {want[got != want][:4]}")
