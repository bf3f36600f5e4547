"""Pin the documented latencies (docs/timing.md) on one-instruction programs."""
import math

import pytest

from programs import image_with, load, store
from vta_sim import Simulator, isa
from vta_sim.config import MEM_INP, MEM_UOP, MEM_WGT
from vta_sim.timing import BEGIN_DELAY, FETCH_DECODE, FETCH_NEXT, ISSUE_DELAY, QUEUE_DELAY, REQUEST_DELAY, TOKEN_DELAY


def fetch(cfg):
    """One 16-byte, 16-aligned instruction fetch: Lr + its beats."""
    return cfg.DMA_READ_LATENCY + math.ceil(16 / cfg.bus_bytes)


def enq(cfg, k):
    """Enqueue cycle of instruction k when fetch never waits: each burst is requested FETCH_NEXT
    cycles after the previous enqueue and its word is enqueued FETCH_DECODE cycles after its last
    beat."""
    return (k + 1) * (fetch(cfg) + FETCH_DECODE) + k * FETCH_NEXT


def begin(cfg, k, pushed=None):
    """First cycle instruction k can begin: issued after its enqueue (and the token it pops, pushed
    at `pushed`), begun after its issue."""
    issue = enq(cfg, k) + QUEUE_DELAY
    if pushed is not None:
        issue = max(issue, pushed + TOKEN_DELAY)
    return issue + ISSUE_DELAY


def cycles(cfg, insns, data=b"", size=4096):
    image, addr, count = image_with(cfg, insns, data, size)
    return Simulator(cfg).run(image, insn_addr=addr, insn_count=count).cycles


@pytest.mark.parametrize("n_uops, iters", [(1, (1, 1)), (4, (3, 5)), (8, (16, 16))])
def test_gemm_is_pipeline_plus_one_iteration_per_cycle(cfg, n_uops, iters):
    n = n_uops * iters[0] * iters[1]
    gemm = isa.GemmInsn(uop_bgn=0, uop_end=n_uops, iter_out=iters[0], iter_in=iters[1])
    done = begin(cfg, 0) + cfg.GEMM_PIPELINE + n
    assert cycles(cfg, [gemm, isa.FinishInsn()]) == max(begin(cfg, 1), done + BEGIN_DELAY) + 1


@pytest.mark.parametrize("use_imm, op, per_iteration", [(1, isa.ALU_ADD, 1), (1, isa.ALU_MUL, 1), (0, isa.ALU_ADD, 2),
                                                     (0, isa.ALU_MAX, 2), (0, isa.ALU_SHR, 3), (0, isa.ALU_MUL, 3)])
def test_alu_is_one_per_cycle_with_immediate_two_or_three_with_tensor(cfg, use_imm, op, per_iteration):
    """A tensor SHR or MUL takes three cycles per iteration: its result is the ALU's third stage's."""
    alu = isa.AluInsn(uop_bgn=0, uop_end=2, iter_out=40, alu_opcode=op, use_imm=use_imm, imm=1)
    done = begin(cfg, 0) + cfg.ALU_PIPELINE + 80 * per_iteration
    assert cycles(cfg, [alu, isa.FinishInsn()]) == max(begin(cfg, 1), done + BEGIN_DELAY) + 1


@pytest.mark.parametrize("y, x, pads", [(1, 4, (0, 0, 0, 0)), (3, 5, (0, 0, 0, 0)), (2, 3, (1, 2, 1, 3))])
def test_load_is_latency_plus_beats_per_row_plus_pad_entries(cfg, y, x, pads):
    """Leading pads are written while fetch holds the read port for the FINISH (from its request at
    enq(0) + FETCH_NEXT); the first burst is granted once that fetch is done; then pads and bursts run back to
    back, each burst requesting the port REQUEST_DELAY after the segment before it; the FINISH pops
    the pushed token."""
    elem = cfg.buffers["inp"].entry_bytes
    width = pads[2] + x + pads[3]
    rows = y * (cfg.DMA_READ_LATENCY + math.ceil(x * elem / cfg.bus_bytes))
    pad_entries = (pads[0] + pads[1]) * width + y * (pads[2] + pads[3])
    lead = pads[0] * width + pads[2]
    grant = max(begin(cfg, 0) + lead + REQUEST_DELAY, enq(cfg, 0) + FETCH_NEXT + fetch(cfg))
    done = grant + rows + pad_entries - lead + (y - 1) * REQUEST_DELAY
    insns = [load(MEM_INP, 0, 0, y, x, x + 1, pads, push_next=1), isa.FinishInsn(pop_prev=1)]
    assert cycles(cfg, insns) == begin(cfg, 1, pushed=done) + 1


def test_long_rows_split_into_bursts_at_the_boundary(cfg):
    """A 4 KiB WGT row on the 8-byte bus: two 256-beat bursts, each paying the latency."""
    x = 4096 // cfg.buffers["wgt"].entry_bytes
    boundary = min(4096, 256 * cfg.bus_bytes)
    bursts = 4096 // boundary
    insns = [load(MEM_WGT, 0, 0, 1, x, push_next=1), isa.FinishInsn(pop_prev=1)]
    grant = max(begin(cfg, 0) + REQUEST_DELAY, enq(cfg, 0) + FETCH_NEXT + fetch(cfg))
    done = grant + bursts * (cfg.DMA_READ_LATENCY + boundary // cfg.bus_bytes) + (bursts - 1) * REQUEST_DELAY
    assert cycles(cfg, insns, size=8192) == begin(cfg, 1, pushed=done) + 1


def test_misaligned_uop_load_pays_an_extra_beat(cfg):
    """Two micro-ops (8 B) starting 4 bytes into a bus word straddle two beats."""
    insns = [load(MEM_UOP, 0, 1, 1, 2), isa.GemmInsn(uop_bgn=0, uop_end=2), isa.FinishInsn()]
    # the GEMM's fetch holds the read port until enq(0) + FETCH_NEXT + f; the UOP burst (2 beats,
    # not 1) is granted then, before the FINISH's fetch asks (at enq(1) + FETCH_NEXT), which then
    # waits for it.
    f = fetch(cfg)
    uop_grant = max(begin(cfg, 0) + REQUEST_DELAY, enq(cfg, 0) + FETCH_NEXT + f)
    assert uop_grant < enq(cfg, 1) + FETCH_NEXT
    uop_done = uop_grant + cfg.DMA_READ_LATENCY + 2
    gemm_done = max(begin(cfg, 1), uop_done + BEGIN_DELAY) + cfg.GEMM_PIPELINE + 2
    finish_enq = max(enq(cfg, 1) + FETCH_NEXT, uop_done) + f + FETCH_DECODE
    assert cycles(cfg, insns) == max(finish_enq + QUEUE_DELAY + ISSUE_DELAY, gemm_done + BEGIN_DELAY) + 1


def test_store_is_beats_plus_write_latency_per_row(cfg):
    ob = cfg.buffers["out"].entry_bytes
    y, x = 3, 4
    rows = y * (math.ceil(x * ob / cfg.bus_bytes) + cfg.DMA_WRITE_LATENCY)
    insns = [store(0, 0, y, x, 6, push_prev=1), isa.FinishInsn(pop_next=1)]
    assert cycles(cfg, insns, size=64 * 1024) == begin(cfg, 1, pushed=begin(cfg, 0) + rows) + 1


def test_back_to_back_instructions_begin_after_the_free_delay_and_fetch_waits_for_a_full_queue(cfg):
    """The next instruction is issued while the current one runs and begins BEGIN_DELAY after it
    is done, so only the first pays the issue latency; a full queue stalls fetch."""
    depth = cfg.CMD_QUEUE_DEPTH
    n = depth + 4
    gemm = isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=400)   # long enough for fetch to fill the queue
    image, addr, count = image_with(cfg, [gemm] * n + [isa.FinishInsn()], b"", 4096)
    res = Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    per = cfg.GEMM_PIPELINE + 400
    assert res.cycles == begin(cfg, 0) + n * (per + BEGIN_DELAY) + 1
    assert res.stats["fetch_stall_queue_cycles"] > 0


def test_a_transfer_of_no_entries_takes_one_cycle(cfg):
    """y_size = 0 (no y pads) moves nothing; like the x_size = 0 no-op it costs one cycle."""
    insns = [store(0, 0, 0, 4, push_prev=1), load(MEM_INP, 0, 0, 0, 4, push_next=1),
             isa.FinishInsn(pop_prev=1, pop_next=1)]
    image, addr, count = image_with(cfg, insns, b"", 4096)
    res = Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    assert res.stats["store_busy_cycles"] == 1 and res.stats["load_busy_cycles"] == 1
