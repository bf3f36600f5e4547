"""The simulator's shortcuts (memoised loop nests, summed repeated destinations, DMA costs cached
by address modulo the burst boundary) against the naive reference and the documented formulas."""
import math

import numpy as np

from programs import Layout, chain, image_with, load, store, uop_words
from reference import run_reference
from vta_sim import Simulator, isa
from vta_sim.config import MEM_ACC, MEM_INP, MEM_UOP, MEM_WGT
from vta_sim.timing import REQUEST_DELAY

RNG = np.random.default_rng(99)


def _run(cfg, insns, data):
    image, addr, count = image_with(cfg, insns, bytes(data))
    result = Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    assert np.array_equal(result.dram, run_reference(cfg, image, addr, count))
    return result


def _operands(cfg, lay, n_inp, n_wgt, n_acc):
    inp = lay.put(RNG.integers(-128, 128, n_inp * cfg.buffers["inp"].entry_bytes, dtype=np.int8).tobytes(),
                  cfg.buffers["inp"].entry_bytes)
    wgt = lay.put(RNG.integers(-128, 128, n_wgt * cfg.buffers["wgt"].entry_bytes, dtype=np.int8).tobytes(),
                  cfg.buffers["wgt"].entry_bytes)
    # ACC near the int32 limits, so that accumulating wraps
    acc_vals = RNG.choice([2**31 - 5, -2**31 + 3, 7], n_acc * cfg.buffers["acc"].entry_bytes // 4)
    acc = lay.put(acc_vals.astype("<i4").tobytes(), cfg.buffers["acc"].entry_bytes)
    return inp, wgt, acc


def test_repeated_gemm_nest_follows_a_uop_reload(cfg):
    """The same GEMM/ALU words before and after the micro-ops they use are reloaded."""
    lay = Layout()
    inp, wgt, acc = _operands(cfg, lay, 8, 8, 8)
    uops_a = lay.put(uop_words(cfg, [(0, 0, 0), (1, 1, 1), (2, 2, 2)]), 4)
    uops_b = lay.put(uop_words(cfg, [(3, 4, 5), (4, 6, 7), (3, 7, 6)]), 4)
    out = lay.reserve(8 * cfg.buffers["out"].entry_bytes, 64)
    gemm = isa.GemmInsn(uop_bgn=0, uop_end=3, iter_out=2, iter_in=1, dst_factor_out=0, src_factor_out=1,
                        wgt_factor_out=0)
    alu = isa.AluInsn(uop_bgn=0, uop_end=3, iter_out=1, alu_opcode=isa.ALU_SHR, use_imm=1, imm=3)
    compute = [load(MEM_ACC, 0, acc, 1, 8), load(MEM_UOP, 0, uops_a, 1, 3), gemm, alu, gemm,
               load(MEM_UOP, 0, uops_b, 1, 3), gemm, alu, gemm]
    _run(cfg, chain([load(MEM_INP, 0, inp, 1, 8), load(MEM_WGT, 0, wgt, 1, 8)], compute,
                    [store(0, out, 1, 8)]), lay.data)


def test_reset_ignores_source_indices_outside_their_buffer(cfg):
    """A GEMM/ALU reset only writes: its src/wgt indices are neither checked nor used."""
    lay = Layout()
    uops = lay.put(uop_words(cfg, [(0, cfg.buffers["acc"].depth - 1, cfg.buffers["wgt"].depth - 1)]), 4)
    out = lay.reserve(4 * cfg.buffers["out"].entry_bytes, 64)
    far = dict(uop_bgn=0, uop_end=1, iter_out=4, dst_factor_out=1, src_factor_out=5)
    compute = [load(MEM_UOP, 0, uops, 1, 1), isa.AluInsn(reset=1, alu_opcode=isa.ALU_ADD, **far),
               isa.GemmInsn(reset=1, wgt_factor_out=3, **far)]
    _run(cfg, chain(compute_part=compute, store_part=[store(0, out, 1, 4)]), lay.data)


def test_gemm_with_repeated_destinations_wraps_like_the_reference(cfg):
    """Many iterations into few ACC entries (a reduction), starting next to the int32 limits."""
    lay = Layout()
    inp, wgt, acc = _operands(cfg, lay, 16, 16, 4)
    uops = lay.put(uop_words(cfg, [(0, 0, 0), (1, 3, 2), (0, 5, 7), (3, 2, 1)]), 4)
    out = lay.reserve(4 * cfg.buffers["out"].entry_bytes, 64)
    compute = [load(MEM_ACC, 0, acc, 1, 4), load(MEM_UOP, 0, uops, 1, 4),
               isa.GemmInsn(uop_bgn=0, uop_end=4, iter_out=5, iter_in=3, src_factor_out=2, src_factor_in=1,
                            wgt_factor_out=1, wgt_factor_in=2),
               isa.AluInsn(uop_bgn=0, uop_end=4, iter_out=3, src_factor_out=1, alu_opcode=isa.ALU_ADD)]
    _run(cfg, chain([load(MEM_INP, 0, inp, 1, 16), load(MEM_WGT, 0, wgt, 1, 16)], compute,
                    [store(0, out, 1, 4)]), lay.data)


def test_equal_loads_at_different_addresses_cost_their_own_bursts(cfg):
    """LOADs of one shape whose rows start at different offsets from the burst boundary: each
    costs the bursts of docs/timing.md for its own addresses (each with its request register)."""
    elem = cfg.buffers["wgt"].entry_bytes
    boundary = min(4096, 256 * cfg.bus_bytes)
    x, y, stride = 3, 4, 7 + boundary // elem
    bases = [0, 1, boundary // elem - 1, boundary // elem - 2, 5]
    lay = Layout()
    lay.reserve((max(bases) + y * stride + x) * elem, elem)
    insns = [load(MEM_WGT, 0, b, y, x, stride) for b in bases]
    insns[-1].push_next = 1
    result = _run(cfg, insns + [isa.FinishInsn(pop_prev=1)], lay.data)
    expected = 0
    for base in bases:
        for r in range(y):
            pos = (base + r * stride) * elem
            end = pos + x * elem
            while pos < end:
                stop = min(end, (pos // boundary + 1) * boundary)
                expected += (REQUEST_DELAY + cfg.DMA_READ_LATENCY
                             + math.ceil((pos % cfg.bus_bytes + stop - pos) / cfg.bus_bytes))
                pos = stop
    assert result.stats["load_busy_cycles"] == expected  # busy: start to done less port waits
