"""Pin the documented latencies (docs/timing.md) on one-instruction programs."""
import math

import pytest

from programs import image_with, load, store
from vta_sim import Simulator, isa
from vta_sim.config import MEM_INP, MEM_UOP, MEM_WGT


def fetch(cfg):
    """One 16-byte, 16-aligned instruction fetch: Lr + its beats."""
    return cfg.DMA_READ_LATENCY + math.ceil(16 / cfg.bus_bytes)


def cycles(cfg, insns, data=b"", size=4096):
    image, addr, count = image_with(cfg, insns, data, size)
    return Simulator(cfg).run(image, insn_addr=addr, insn_count=count).cycles


@pytest.mark.parametrize("n_uops, iters", [(1, (1, 1)), (4, (3, 5)), (8, (16, 16))])
def test_gemm_is_pipeline_plus_one_iteration_per_cycle(cfg, n_uops, iters):
    n = n_uops * iters[0] * iters[1]
    gemm = isa.GemmInsn(uop_bgn=0, uop_end=n_uops, iter_out=iters[0], iter_in=iters[1])
    done = fetch(cfg) + cfg.GEMM_PIPELINE + n
    assert cycles(cfg, [gemm, isa.FinishInsn()]) == max(2 * fetch(cfg), done) + 1


@pytest.mark.parametrize("use_imm, per_iteration", [(1, 1), (0, 2)])
def test_alu_is_one_per_cycle_with_immediate_two_with_tensor(cfg, use_imm, per_iteration):
    alu = isa.AluInsn(uop_bgn=0, uop_end=2, iter_out=40, alu_opcode=isa.ALU_ADD, use_imm=use_imm, imm=1)
    done = fetch(cfg) + cfg.ALU_PIPELINE + 80 * per_iteration
    assert cycles(cfg, [alu, isa.FinishInsn()]) == done + 1


@pytest.mark.parametrize("y, x, pads", [(1, 4, (0, 0, 0, 0)), (3, 5, (0, 0, 0, 0)), (2, 3, (1, 2, 1, 3))])
def test_load_is_latency_plus_beats_per_row_plus_pad_entries(cfg, y, x, pads):
    """Leading pads are written while fetch holds the read port for the FINISH; the first burst
    is granted once that fetch is done; then bursts and pads run back to back."""
    elem = cfg.buffers["inp"].entry_bytes
    f = fetch(cfg)
    width = pads[2] + x + pads[3]
    rows = y * (cfg.DMA_READ_LATENCY + math.ceil(x * elem / cfg.bus_bytes))
    pad_entries = (pads[0] + pads[1]) * width + y * (pads[2] + pads[3])
    lead = pads[0] * width + pads[2]
    insns = [load(MEM_INP, 0, 0, y, x, x + 1, pads, push_next=1), isa.FinishInsn(pop_prev=1)]
    assert cycles(cfg, insns) == max(f + lead, 2 * f) + rows + pad_entries - lead + 1


def test_long_rows_split_into_bursts_at_the_boundary(cfg):
    """A 4 KiB WGT row on the 8-byte bus: two 256-beat bursts, each paying the latency."""
    x = 4096 // cfg.buffers["wgt"].entry_bytes
    boundary = min(4096, 256 * cfg.bus_bytes)
    bursts = 4096 // boundary
    insns = [load(MEM_WGT, 0, 0, 1, x, push_next=1), isa.FinishInsn(pop_prev=1)]
    expected = 2 * fetch(cfg) + bursts * (cfg.DMA_READ_LATENCY + boundary // cfg.bus_bytes) + 1
    assert cycles(cfg, insns, size=8192) == expected


def test_misaligned_uop_load_pays_an_extra_beat(cfg):
    """Two micro-ops (8 B) starting 4 bytes into a bus word straddle two beats."""
    insns = [load(MEM_UOP, 0, 1, 1, 2), isa.GemmInsn(uop_bgn=0, uop_end=2), isa.FinishInsn()]
    # fetch outranks compute on the read port: the GEMM and FINISH fetches run [f, 2f) and
    # [2f, 3f), then the UOP burst (2 beats, not 1) is granted.
    f = fetch(cfg)
    uop_done = 3 * f + cfg.DMA_READ_LATENCY + 2
    gemm_done = uop_done + cfg.GEMM_PIPELINE + 2
    assert cycles(cfg, insns) == gemm_done + 1


def test_store_is_beats_plus_write_latency_per_row(cfg):
    ob = cfg.buffers["out"].entry_bytes
    y, x = 3, 4
    rows = y * (math.ceil(x * ob / cfg.bus_bytes) + cfg.DMA_WRITE_LATENCY)
    insns = [store(0, 0, y, x, 6, push_prev=1), isa.FinishInsn(pop_next=1)]
    assert cycles(cfg, insns, size=64 * 1024) == max(2 * fetch(cfg), fetch(cfg) + rows) + 1


def test_token_handoff_is_immediate_and_fetch_waits_for_a_full_queue(cfg):
    """A token pushed at cycle d lets its consumer start at d; a full queue stalls fetch."""
    depth = cfg.CMD_QUEUE_DEPTH
    n = depth + 4
    gemm = isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=100)
    image, addr, count = image_with(cfg, [gemm] * n + [isa.FinishInsn()], b"", 4096)
    res = Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    per = cfg.GEMM_PIPELINE + 100
    assert res.cycles == fetch(cfg) + n * per + 1
    assert res.stats["fetch_stall_queue_cycles"] > 0


def test_a_transfer_of_no_entries_takes_one_cycle(cfg):
    """y_size = 0 (no y pads) moves nothing; like the x_size = 0 no-op it costs one cycle."""
    insns = [store(0, 0, 0, 4, push_prev=1), load(MEM_INP, 0, 0, 0, 4, push_next=1),
             isa.FinishInsn(pop_prev=1, pop_next=1)]
    image, addr, count = image_with(cfg, insns, b"", 4096)
    res = Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    assert res.stats["store_busy_cycles"] == 1 and res.stats["load_busy_cycles"] == 1
