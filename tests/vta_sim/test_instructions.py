"""Instruction-level tests (in the spirit of VTA's own suite) against the naive spec reference."""
import numpy as np
import pytest

from programs import Layout, chain, image_with, load, store, uop_words
from reference import run_reference
from vta_sim import Simulator, isa
from vta_sim.config import MEM_ACC, MEM_ACC_8BIT, MEM_INP, MEM_UOP, MEM_WGT

RNG = np.random.default_rng(1234)


def run_and_compare(cfg, insns, data: bytes, size=None):
    image, addr, count = image_with(cfg, insns, bytes(data), size)
    before = image.copy()
    result = Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    assert np.array_equal(image, before), "the caller's image must stay untouched"
    expected = run_reference(cfg, image, addr, count)
    assert np.array_equal(result.dram, expected)
    return result


def identity_program(cfg, lay, n_entries, out_base):
    """Compute + store part that copies ACC[0:n] to DRAM through OUT (ALU add 0)."""
    uop = lay.put(uop_words(cfg, [(0, 0, 0)]), 4)
    compute = [load(MEM_UOP, 0, uop, 1, 1),
               isa.AluInsn(uop_bgn=0, uop_end=1, iter_out=n_entries, dst_factor_out=1, src_factor_out=1,
                           alu_opcode=isa.ALU_ADD, use_imm=1, imm=0)]
    return compute, [store(0, out_base, 1, n_entries)]


@pytest.mark.parametrize("pads", [(0, 0, 0, 0), (2, 0, 0, 0), (0, 3, 0, 0), (0, 0, 1, 0), (0, 0, 0, 2),
                                  (1, 2, 3, 1)], ids=["none", "y0", "y1", "x0", "x1", "all"])
def test_acc_load_with_padding_and_stride(cfg, pads):
    """LOAD ACC with x_stride > x_size and each pad side; stored back through the ALU."""
    acc_bytes = cfg.buffers["acc"].entry_bytes
    lay = Layout()
    src = RNG.integers(-2**31, 2**31, size=(5 * 7 * acc_bytes // 4), dtype=np.int64).astype("<i4")
    base = lay.put(src.tobytes(), acc_bytes)
    y, x, stride = 3, 4, 7
    n = (pads[0] + y + pads[1]) * (pads[2] + x + pads[3])
    out = lay.reserve(n * cfg.buffers["out"].entry_bytes, cfg.buffers["out"].entry_bytes)
    compute, st = identity_program(cfg, lay, n, out)
    insns = chain(compute_part=[load(MEM_ACC, 0, base + 1, y, x, stride, pads)] + compute, store_part=st)
    run_and_compare(cfg, insns, lay.data)


def _gemm_copy(cfg, lay, n_inp, out_base):
    """Identity weights: ACC[i] = INP[i] . I, so OUT shows what the load put in INP."""
    bo, bi = cfg.BLOCK_OUT, cfg.BLOCK_IN
    eye = np.eye(bo, bi, dtype=np.int8)
    wgt = lay.put(eye.tobytes(), cfg.buffers["wgt"].entry_bytes)
    uop = lay.put(uop_words(cfg, [(0, 0, 0)]), 4)
    loads = [load(MEM_WGT, 0, wgt, 1, 1)]
    compute = [load(MEM_UOP, 0, uop, 1, 1),
               isa.GemmInsn(reset=1, uop_bgn=0, uop_end=1, iter_out=n_inp, dst_factor_out=1),
               isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=n_inp, dst_factor_out=1, src_factor_out=1)]
    return loads, compute, [store(0, out_base, 1, n_inp)]


@pytest.mark.parametrize("pads", [(0, 0, 0, 0), (1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 2, 0), (0, 0, 0, 1),
                                  (2, 1, 1, 2)], ids=["none", "y0", "y1", "x0", "x1", "all"])
def test_inp_load_with_padding_through_gemm(cfg, pads):
    inp_bytes = cfg.buffers["inp"].entry_bytes
    lay = Layout()
    base = lay.put(RNG.integers(-128, 128, 6 * 5 * inp_bytes, dtype=np.int8).tobytes(), inp_bytes)
    y, x, stride = 2, 3, 5
    n = (pads[0] + y + pads[1]) * (pads[2] + x + pads[3])
    out = lay.reserve(n * cfg.buffers["out"].entry_bytes, cfg.buffers["out"].entry_bytes)
    loads, compute, st = _gemm_copy(cfg, lay, n, out)
    insns = chain([load(MEM_INP, 0, base + 2, y, x, stride, pads)] + loads, compute, st)
    result = run_and_compare(cfg, insns, lay.data)
    # the padded entries really are zero, the data where the spec puts it
    ob = cfg.buffers["out"].entry_bytes
    got = result.dram[out * ob:(out + n) * ob].view(np.int8).reshape(pads[0] + y + pads[1], -1, inp_bytes)
    src = np.frombuffer(bytes(lay.data[base * inp_bytes:]), dtype=np.int8)
    for r in range(got.shape[0]):
        for c in range(got.shape[1]):
            dr, dc = r - pads[0], c - pads[2]
            want = (src[(2 + dr * stride + dc) * inp_bytes:][:inp_bytes] if 0 <= dr < y and 0 <= dc < x
                    else np.zeros(inp_bytes, np.int8))
            assert np.array_equal(got[r, c], want)


def test_acc_8bit_load_sign_extends(cfg):
    lay = Layout()
    e = cfg.BATCH * cfg.BLOCK_OUT
    vals = np.array([-128, -1, 0, 1, 127] * e, dtype=np.int8)[:4 * e]
    base = lay.put(vals.tobytes(), e)
    out = lay.reserve(4 * cfg.buffers["out"].entry_bytes, 64)
    uop = lay.put(uop_words(cfg, [(0, 0, 0)]), 4)
    # ACC = sign-extended int8; x * 300 >> 8 differs between sign- and zero-extension
    compute = [load(MEM_ACC_8BIT, 0, base, 1, 4), load(MEM_UOP, 0, uop, 1, 1)] + [
        isa.AluInsn(uop_end=1, iter_out=4, dst_factor_out=1, src_factor_out=1, alu_opcode=op, use_imm=1, imm=v)
        for op, v in ((isa.ALU_MUL, 300), (isa.ALU_SHR, 8))]
    res = run_and_compare(cfg, chain(compute_part=compute, store_part=[store(0, out, 1, 4)]),
                          lay.data)
    ob = cfg.buffers["out"].entry_bytes
    got = res.dram[out * ob:(out + 4) * ob].view(np.int8)
    assert np.array_equal(got, ((vals.astype(np.int64) * 300) >> 8).astype(np.int8))


def test_store_with_stride_leaves_gaps_untouched(cfg):
    lay = Layout()
    ob = cfg.buffers["out"].entry_bytes
    acc = RNG.integers(-1000, 1000, 6 * cfg.buffers["acc"].entry_bytes // 4).astype("<i4")
    base = lay.put(acc.tobytes(), cfg.buffers["acc"].entry_bytes)
    out = lay.put(b"\x5a" * (3 * 5 * ob), ob)
    compute, _ = identity_program(cfg, lay, 6, out)
    insns = chain(compute_part=[load(MEM_ACC, 0, base, 1, 6)] + compute, store_part=[store(0, out, 3, 2, 5)])
    res = run_and_compare(cfg, insns, lay.data)
    region = res.dram[out * ob:(out + 15) * ob].reshape(3, 5, ob)
    assert (region[:, 2:] == 0x5A).all()


def test_gemm_with_uop_loops_and_reset(cfg):
    """Two-level loops over several uops, accumulating across an instruction and reset in between."""
    bufs = cfg.buffers
    lay = Layout()
    inp = lay.put(RNG.integers(-128, 128, 12 * bufs["inp"].entry_bytes, dtype=np.int8).tobytes(), bufs["inp"].entry_bytes)
    wgt = lay.put(RNG.integers(-128, 128, 6 * bufs["wgt"].entry_bytes, dtype=np.int8).tobytes(), bufs["wgt"].entry_bytes)
    uops = lay.put(uop_words(cfg, [(0, 0, 0), (0, 1, 1), (1, 2, 0), (1, 3, 2)]), 4)
    out = lay.reserve(8 * bufs["out"].entry_bytes, 64)
    loads = [load(MEM_INP, 0, inp, 1, 12), load(MEM_WGT, 0, wgt, 1, 6)]
    gemm = dict(uop_bgn=0, uop_end=4, iter_out=2, iter_in=3, dst_factor_out=4, dst_factor_in=1,
                src_factor_out=4, src_factor_in=1, wgt_factor_out=3, wgt_factor_in=1)
    compute = [load(MEM_UOP, 0, uops, 1, 4),
               isa.GemmInsn(reset=1, **gemm),
               isa.GemmInsn(**gemm), isa.GemmInsn(**gemm),
               isa.GemmInsn(reset=1, uop_bgn=0, uop_end=1, iter_out=1, dst_factor_out=0),  # clears ACC[0]
               isa.GemmInsn(**{**gemm, "iter_in": 1})]
    run_and_compare(cfg, chain(loads, compute, [store(0, out, 1, 8)]), lay.data)


# the base ISA's ops (REQ: tests/vta_sim/test_req.py)
ALU_CASES = [(op, imm) for op in isa.ALU_NAMES if op != isa.ALU_REQ for imm in (None, 5, -7)]


@pytest.mark.parametrize("op, imm", ALU_CASES, ids=[f"{isa.ALU_NAMES[o]}-{i}" for o, i in ALU_CASES])
def test_every_alu_op_with_immediate_and_tensor(cfg, op, imm):
    """Extreme int32 values exercise wrap-around; tensor shifts include negatives and >31."""
    accb = cfg.buffers["acc"].entry_bytes
    lanes = accb // 4
    lay = Layout()
    special = np.array([2**31 - 1, -2**31, -1, 0, 1, 123456789, -98765, 40, -40, 33, -33, 31, -31, 7, -7, 255])
    shifts = np.array([0, 3, -3, 31, -31, 32, -32, 40, -40, 1, -1, 100, -100, 8, -8, 30])
    # every x against every y: 256 lane pairs
    x = np.repeat(special, 16)
    y = np.tile(shifts if op == isa.ALU_SHR else special, 16)
    n = x.size // lanes
    base = lay.put(np.concatenate([x, y]).astype("<i4").tobytes(), accb)
    uop = lay.put(uop_words(cfg, [(0, n, 0)]), 4)
    out = lay.reserve(n * cfg.buffers["out"].entry_bytes, 64)
    alu = isa.AluInsn(uop_end=1, iter_out=n, dst_factor_out=1, src_factor_out=1, alu_opcode=op,
                      use_imm=int(imm is not None), imm=imm or 0)
    compute = [load(MEM_ACC, 0, base, 1, 2 * n), load(MEM_UOP, 0, uop, 1, 1), alu]
    res = run_and_compare(cfg, chain(compute_part=compute, store_part=[store(0, out, 1, n)]), lay.data)
    ob = cfg.buffers["out"].entry_bytes
    got = res.dram[out * ob:(out + n) * ob].view(np.int8)
    operand = y if imm is None else np.full_like(x, imm)
    exp = {isa.ALU_MIN: np.minimum(x, operand), isa.ALU_MAX: np.maximum(x, operand), isa.ALU_ADD: x + operand,
           isa.ALU_MUL: x * operand,
           isa.ALU_SHR: np.where(operand >= 0, x >> np.minimum(operand, 31), x << np.minimum(-operand, 31))}[op]
    assert np.array_equal(got, exp.astype(np.int64).astype(np.int8))


def test_alu_with_repeated_destination_folds_in_order(cfg):
    """Max-pool style: one dst, many srcs; and a chain where an iteration reads an earlier write."""
    accb = cfg.buffers["acc"].entry_bytes
    lay = Layout()
    base = lay.put(RNG.integers(-5000, 5000, 8 * accb // 4).astype("<i4").tobytes(), accb)
    uop = lay.put(uop_words(cfg, [(0, 1, 0), (1, 0, 0)]), 4)
    out = lay.reserve(8 * cfg.buffers["out"].entry_bytes, 64)
    compute = [load(MEM_ACC, 0, base, 1, 8), load(MEM_UOP, 0, uop, 1, 2),
               isa.AluInsn(uop_bgn=0, uop_end=1, iter_out=6, src_factor_out=1, alu_opcode=isa.ALU_MAX),
               isa.AluInsn(uop_bgn=0, uop_end=2, iter_out=3, alu_opcode=isa.ALU_SHR, use_imm=0),
               isa.AluInsn(uop_bgn=0, uop_end=2, iter_out=3, alu_opcode=isa.ALU_ADD)]
    run_and_compare(cfg, chain(compute_part=compute, store_part=[store(0, out, 1, 8)]), lay.data)


def test_token_only_noops_carry_tokens(cfg):
    """x_size = 0 moves no data but its flags order the modules."""
    lay = Layout()
    out = lay.reserve(cfg.buffers["out"].entry_bytes, 64)
    nop_load = load(MEM_INP, 0, 0, 0, 0, 0)
    nop_acc = load(MEM_ACC, 0, 0, 0, 0, 0)
    insns = chain([nop_load, nop_load], [nop_acc], [store(0, out, 0, 0, 0)])
    res = run_and_compare(cfg, insns, lay.data)
    assert res.stats["inp_load_nbytes"] == 0 and res.stats["out_store_nbytes"] == 0
