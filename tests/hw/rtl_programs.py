"""Programs the RTL benches run: instruction-level programs (one instruction and FINISH, or a short
load/compute/store chain), blocked GEMM with double buffering, and seeded random valid programs.

Every builder returns (name, image, insn_addr, insn_count). Data are random but seeded, so a
failing case replays by name.
"""
from __future__ import annotations

import numpy as np

from programs import Layout, chain, image_with, load, store, uop_words
from vta_sim import isa
from vta_sim.config import MEM_ACC, MEM_ACC_8BIT, MEM_INP, MEM_UOP, MEM_WGT


def _rand_bytes(rng, n):
    return rng.integers(0, 256, size=n, dtype=np.uint8).tobytes()


def _prog(cfg, name, insns, lay, size=None):
    image, addr, count = image_with(cfg, insns, bytes(lay.data), size)
    return name, image, addr, count


def single_instruction_programs(cfg):
    """One instruction and FINISH (plus the tokens that order them): the cycle-exact set."""
    rng = np.random.default_rng(7)
    wb = cfg.buffers["wgt"].entry_bytes
    lay = Layout()
    lay.put(_rand_bytes(rng, 64 * 1024), 64)
    F = isa.FinishInsn
    # The bench zeroes the SRAMs before every program, as vta_sim starts each run: the programs
    # that read SRAM they did not write may come in any order (test_rtl_top runs them last).
    progs = [("finish", [F()]),
             ("store", [isa.MemInsn(opcode=isa.OP_STORE, memory_type=4, sram_base=1, dram_base=40, y_size=3,
                                    x_size=4, x_stride=6, push_prev=1), F(pop_next=1)]),
             ("store_nop", [isa.MemInsn(opcode=isa.OP_STORE, memory_type=4, push_prev=1), F(pop_next=1)]),
             ("gemm", [isa.GemmInsn(uop_bgn=0, uop_end=3, iter_out=4, iter_in=5, dst_factor_out=3,
                                    dst_factor_in=1, src_factor_out=2, src_factor_in=1, wgt_factor_in=1), F()]),
             ("gemm_reset", [isa.GemmInsn(reset=1, uop_bgn=1, uop_end=2, iter_out=7, dst_factor_out=1), F()]),
             ("gemm_empty", [isa.GemmInsn(uop_bgn=2, uop_end=2), F()]),
             ("alu_imm", [isa.AluInsn(uop_bgn=0, uop_end=2, iter_out=20, dst_factor_out=1, alu_opcode=isa.ALU_ADD,
                                      use_imm=1, imm=-3), F()]),
             ("alu_tensor", [isa.AluInsn(uop_bgn=0, uop_end=2, iter_out=20, dst_factor_out=1, src_factor_out=1,
                                         alu_opcode=isa.ALU_MAX), F()])]
    for pads in [(0, 0, 0, 0), (1, 2, 0, 0), (0, 0, 2, 1), (2, 1, 3, 4)]:
        progs.append((f"load_inp_pads{''.join(map(str, pads))}",
                      [load(MEM_INP, 3, 5, 3, 4, 7, pads, push_next=1), F(pop_prev=1)]))
    progs += [
        ("load_wgt", [load(MEM_WGT, 1, 2, 2, 3, 5, push_next=1), F(pop_prev=1)]),
        ("load_wgt_long_row", [load(MEM_WGT, 0, 0, 1, 4096 // wb + 3, push_next=1), F(pop_prev=1)]),
        ("load_inp_nop", [load(MEM_INP, 0, 0, 0, 0, push_next=1), F(pop_prev=1)]),
        ("load_uop_aligned", [load(MEM_UOP, 0, 2, 1, 9), F()]),
        ("load_uop_misaligned", [load(MEM_UOP, 5, 3, 1, 6), F()]),
        ("load_acc_pads", [load(MEM_ACC, 2, 1, 2, 3, 4, (1, 0, 1, 2)), F()]),
        ("load_acc8", [load(MEM_ACC_8BIT, 0, 3, 3, 2, 5, (0, 1, 0, 1)), F()]),
    ]
    return [_prog(cfg, name, insns, lay, None) for name, insns in progs]


def chain_programs(cfg):
    """Short load -> compute -> store chains with data that reach DRAM (bit-exactness)."""
    rng = np.random.default_rng(11)
    ib, wb, ab, ob = (cfg.buffers[b].entry_bytes for b in ("inp", "wgt", "acc", "out"))
    out = []
    for op, imm in [(isa.ALU_MIN, None), (isa.ALU_MAX, 3), (isa.ALU_ADD, None), (isa.ALU_SHR, 2),
                    (isa.ALU_SHR, -3), (isa.ALU_SHR, None), (isa.ALU_MUL, None), (isa.ALU_MUL, -7)]:
        lay = Layout()
        acc = rng.integers(-2**31, 2**31, size=16 * ab // 4, dtype=np.int64).astype("<i4")
        if op == isa.ALU_SHR and imm is None:   # shift amounts, both signs and beyond 31
            acc[len(acc) // 2:] = rng.integers(-40, 40, size=len(acc) - len(acc) // 2)
        if op == isa.ALU_MIN:   # every other source lane shares its destination's upper 16 bits
            half = len(acc) // 2
            acc[half::2] = (acc[:half:2] & ~0xFFFF) | (acc[half::2] & 0xFFFF)
        a = lay.put(acc.tobytes(), ab)
        u = lay.put(uop_words(cfg, [(0, 8, 0), (1, 9, 0)]), 4)
        o = lay.reserve(8 * ob, ob)
        alu = isa.AluInsn(uop_bgn=0, uop_end=2, iter_out=4, dst_factor_out=2, src_factor_out=2,
                          alu_opcode=op, use_imm=int(imm is not None), imm=imm or 0)
        insns = chain(compute_part=[load(MEM_ACC, 0, a, 1, 16), load(MEM_UOP, 0, u, 1, 2), alu],
                      store_part=[store(0, o, 2, 4, 5)])
        out.append(_prog(cfg, f"alu_{isa.ALU_NAMES[op].lower()}_{'tensor' if imm is None else imm}", insns, lay))
    out.append(alu_same_entry_program(cfg, rng))
    out.append(gemm_program(cfg, rng))
    out.append(gemm_same_entry_program(cfg, rng))
    return out + token_queue_full_programs(cfg) + [queue_full_program(cfg)]


def gemm_program(cfg, rng, shift: int = 0):
    """GEMM through padded INP loads, weights, reset, accumulate, ACC_8BIT bias; with `shift`, an
    ALU shift right of the 12 results by that many bits before the int8 store, so that the
    accumulators' upper bits (each product's, each sum's) reach DRAM."""
    ib, wb, ob = (cfg.buffers[b].entry_bytes for b in ("inp", "wgt", "out"))
    lay = Layout()
    inp = lay.put(_rand_bytes(rng, 24 * ib), ib)
    wgt = lay.put(_rand_bytes(rng, 4 * wb), wb)
    bias = lay.put(_rand_bytes(rng, 12 * cfg.BATCH * cfg.BLOCK_OUT), cfg.BATCH * cfg.BLOCK_OUT)
    u = lay.put(uop_words(cfg, [(0, 0, 0), (0, 1, 1), (1, 2, 2), (1, 3, 3)] + [(e, 0, 0) for e in range(12)]), 4)
    o = lay.reserve(12 * ob, ob)
    loads = [load(MEM_INP, 0, inp, 3, 4, 6, (1, 1, 1, 0)), load(MEM_WGT, 0, wgt, 1, 4)]
    compute = [load(MEM_UOP, 0, u, 1, 16), load(MEM_ACC_8BIT, 0, bias, 2, 6, 6),
               isa.GemmInsn(uop_bgn=0, uop_end=4, iter_out=3, iter_in=2, dst_factor_out=4, dst_factor_in=2,
                            src_factor_out=5, src_factor_in=2, wgt_factor_out=0, wgt_factor_in=0)]
    if shift:
        compute.append(isa.AluInsn(uop_bgn=4, uop_end=16, alu_opcode=isa.ALU_SHR, use_imm=1, imm=shift))
    name = "gemm_padded_inp_acc8_bias" + (f"_shr{shift}" if shift else "")
    return _prog(cfg, name, chain(loads, compute, [store(0, o, 1, 12)]), lay)


def gemm_same_entry_program(cfg, rng):
    """GEMM iterations that accumulate into the entry one, two or three iterations before them
    wrote (ACC[dst] is read before the two ahead have written theirs, hw/rtl/vta_gemm_forward.v): dst
    0 1 0 0 2 1 0, twice, on an ACC preloaded with random values; the int8 store keeps every
    product's low bits."""
    ib, wb, ab, ob = (cfg.buffers[b].entry_bytes for b in ("inp", "wgt", "acc", "out"))
    lay = Layout()
    inp = lay.put(_rand_bytes(rng, 4 * ib), ib)
    wgt = lay.put(_rand_bytes(rng, 4 * wb), wb)
    acc = lay.put(rng.integers(-2**31, 2**31, size=3 * ab // 4, dtype=np.int64).astype("<i4").tobytes(), ab)
    u = lay.put(uop_words(cfg, [(0, 0, 0), (1, 1, 1), (0, 2, 2), (0, 3, 3), (2, 0, 1), (1, 1, 0), (0, 2, 3)]), 4)
    o = lay.reserve(3 * ob, ob)
    loads = [load(MEM_INP, 0, inp, 1, 4), load(MEM_WGT, 0, wgt, 1, 4)]
    compute = [load(MEM_UOP, 0, u, 1, 7), load(MEM_ACC, 0, acc, 1, 3),
               isa.GemmInsn(uop_bgn=0, uop_end=7, iter_out=2)]
    return _prog(cfg, "gemm_same_entry", chain(loads, compute, [store(0, o, 1, 3)]), lay)


def queue_full_program(cfg):
    """More ALU instructions than the compute queue holds while a long INP load runs beside them
    (no data shared): fetch stalls on the full queue, and when a slot frees it waits for the
    load's burst on the read port."""
    n = cfg.CMD_QUEUE_DEPTH + 8
    lay = Layout()
    data = lay.put(bytes(64 * 4 * cfg.buffers["inp"].entry_bytes), cfg.buffers["inp"].entry_bytes)
    alus = [isa.AluInsn(uop_bgn=0, uop_end=1, iter_out=100, alu_opcode=isa.ALU_ADD, use_imm=1, imm=1)] * n
    insns = [load(MEM_INP, 0, data, 64, 2, 4, push_next=1)] + alus + [isa.FinishInsn(pop_prev=1)]
    return _prog(cfg, "queue_full", insns, lay)


def alu_same_entry_program(cfg, rng):
    """ALU iterations that hit the entry one to four iterations before wrote (the ALU reads ACC in
    S1 and writes in S5, hw/rtl/vta_alu_forward.v): with an immediate, the one or two just before are
    still in the ALU, and the RTL applies the operation twice or three times (every operation,
    shifts by amounts whose double or triple passes 31 both ways, multiplies that wrap); three and
    four before are forwarded from the write and the write of the cycle before. With a tensor
    operand, the one before (from the ALU's first stage for MIN/MAX/ADD, one per two cycles; from
    its write for SHR and MUL, one per three) and two before, into ACC[dst] and into ACC[src]."""
    ab, ob = cfg.buffers["acc"].entry_bytes, cfg.buffers["out"].entry_bytes
    cases = [(isa.ALU_ADD, 5), (isa.ALU_ADD, 32767), (isa.ALU_MUL, -3), (isa.ALU_MUL, -32768), (isa.ALU_MUL, 1291),
             (isa.ALU_MIN, -9), (isa.ALU_MAX, 4), (isa.ALU_SHR, 3), (isa.ALU_SHR, 10), (isa.ALU_SHR, 11),
             (isa.ALU_SHR, 16), (isa.ALU_SHR, 40), (isa.ALU_SHR, -5), (isa.ALU_SHR, -10), (isa.ALU_SHR, -11),
             (isa.ALU_SHR, -15), (isa.ALU_SHR, -16), (isa.ALU_SHR, -40)]
    # REQ is left out: it forwards nothing, and its hazard rule refuses what these programs test
    cases = [(op, imm, False) for op, imm in cases] + [(op, None, y_hit) for op in isa.ALU_NAMES
                                                        if op != isa.ALU_REQ for y_hit in (False, True)]
    # per instruction k and outer iteration i (iter_out = 3), fresh entries e = per (3k + i) + d
    # in this order: e again after 1, 1 and 1 (three in a row), 2, 3 (two others between), 4, and
    # mixes of them (a tensor's source, e + 1, two after e + 1 was written: 1, 2, 0); then a tail
    # whose entries 5-9, read fresh, end with each case (what DRAM shows: a shift's repeats would
    # otherwise leave 0 or -1): 5 one after, 6 two after, 7 three after, 8 four after, 9 three in a row
    order = ((0, 0, 0, 1, 0, 2, 3, 0, 1, 2, 3, 0, 0, 2, 1, 0, 1, 2, 0)
             + (5, 5, 6, 1, 6, 7, 2, 3, 7, 8, 1, 2, 3, 8, 9, 9, 9))
    per, outer = 10, 3
    ents = per * outer * len(cases)
    lay = Layout()
    acc = rng.integers(-2**31, 2**31, size=(ents + 2) * ab // 4, dtype=np.int64).astype("<i4")
    a = lay.put(acc.tobytes(), ab)
    # a tensor operand's source: entry ents or ents + 1, or (y_hit) the next entry of the same
    # instruction, which the iterations before wrote; the last micro-op walks every entry
    words = [(per * outer * k + d, per * outer * k + (d + 1) % per if y_hit else ents + d % 2, 0)
             for k, (_, _, y_hit) in enumerate(cases) for d in order]
    u = lay.put(uop_words(cfg, words + [(0, 0, 0)]), 4)
    m = len(order)
    alus = [isa.AluInsn(uop_bgn=m * k, uop_end=m * k + m, iter_out=outer, dst_factor_out=per,
                        src_factor_out=per if y_hit else 0, alu_opcode=op, use_imm=int(imm is not None),
                        imm=imm or 0) for k, (op, imm, y_hit) in enumerate(cases)]
    # every byte of the results reaches DRAM: the int8 store, then three times a shift right by 8
    # (writing OUT too) and the store again
    insns = chain(compute_part=[load(MEM_ACC, 0, a, 1, ents + 2), load(MEM_UOP, 0, u, 1, len(words) + 1)] + alus,
                  store_part=[store(0, lay.reserve(ents * ob, ob), 1, ents)])
    finish = insns.pop()
    for _ in range(3):
        insns[-1].push_prev = 1
        insns += [isa.AluInsn(uop_bgn=len(words), uop_end=len(words) + 1, iter_out=ents, dst_factor_out=1,
                              alu_opcode=isa.ALU_SHR, use_imm=1, imm=8, pop_next=1, push_next=1),
                  store(0, lay.reserve(ents * ob, ob), 1, ents).replace(pop_prev=1, push_prev=1)]
    insns.append(finish)
    return _prog(cfg, "alu_same_entry", insns, lay)


def high_bits_programs(cfg):
    """Results shifted right before the int8 store, which would otherwise truncate their upper
    bits away: a GEMM's accumulators by 8 (each int8 x int8 product's upper byte), and MULs of
    full-range int32 tensors by 16 or 24 (the ALU's lo x hi and hi x lo partial products)."""
    rng = np.random.default_rng(13)
    ab, ob = cfg.buffers["acc"].entry_bytes, cfg.buffers["out"].entry_bytes
    out = [gemm_program(cfg, rng, shift=8)]
    for shift in (16, 24):
        lay = Layout()
        a = lay.put(rng.integers(-2**31, 2**31, size=16 * ab // 4, dtype=np.int64).astype("<i4").tobytes(), ab)
        u = lay.put(uop_words(cfg, [(0, 8, 0), (1, 9, 0)]), 4)
        o = lay.reserve(8 * ob, ob)
        loop = dict(uop_bgn=0, uop_end=2, iter_out=4, dst_factor_out=2, src_factor_out=2)
        alus = [isa.AluInsn(**loop, alu_opcode=isa.ALU_MUL), isa.AluInsn(**loop, alu_opcode=isa.ALU_SHR, use_imm=1, imm=shift)]
        insns = chain(compute_part=[load(MEM_ACC, 0, a, 1, 16), load(MEM_UOP, 0, u, 1, 2)] + alus,
                      store_part=[store(0, o, 2, 4, 5)])
        out.append(_prog(cfg, f"alu_mul_shr{shift}", insns, lay))
    return out


def token_queue_full_programs(cfg):
    """Producers that run TOKEN_DEPTH + 4 tokens ahead of a slower consumer, on each of the four
    queues: pushes wait for a full queue and land in the cycle the consumer pops."""
    n = cfg.TOKEN_DEPTH + 4
    lay = Layout()
    zero_uop = lay.put(uop_words(cfg, [(0, 0, 0)]), 4)
    o = lay.reserve(8 * cfg.buffers["out"].entry_bytes, cfg.buffers["out"].entry_bytes)
    F = isa.FinishInsn
    clear_out = [load(MEM_UOP, 0, zero_uop, 1, 1),    # OUT[0:4) = 0: what the stores read
                 isa.GemmInsn(reset=1, uop_bgn=0, uop_end=1, iter_out=4, dst_factor_out=1)]
    nop_load, nop_uop = load(MEM_INP, 0, 0, 0, 0), load(MEM_UOP, 0, 0, 0, 0)
    slow_gemm = isa.GemmInsn(uop_bgn=0, uop_end=1, iter_out=6)
    slow_store = store(0, o, 1, 4)
    progs = {
        "l2c_full": [nop_load.replace(push_next=1)] * n + [slow_gemm.replace(pop_prev=1)] * n + [F()],
        "c2s_full": clear_out + [nop_uop.replace(push_next=1)] * n + [slow_store.replace(pop_prev=1)] * (n - 1)
                    + [slow_store.replace(pop_prev=1, push_prev=1), F(pop_next=1)],
        "s2c_full": [store(0, o, 0, 0, push_prev=1)] * n + [slow_gemm.replace(pop_next=1)] * n + [F()],
        "c2l_full": [nop_uop.replace(push_prev=1)] * n + [load(MEM_INP, 0, 0, 2, 3, pop_next=1)] * (n - 1)
                    + [load(MEM_INP, 0, 0, 2, 3, pop_next=1, push_next=1), F(pop_prev=1)],
    }
    return [_prog(cfg, f"token_{name}", insns, lay) for name, insns in progs.items()]


def blocked_gemm_program(cfg, m_blocks=4, n_blocks=2, k_blocks=3, seed=3):
    """C = A . B tiled over output blocks with double-buffered INP/WGT/ACC and tokens between every
    stage (the pattern of VTA's blocked GEMM): loads of tile t wait for the compute of tile t-2,
    the compute of tile t for the store of tile t-2."""
    rng = np.random.default_rng(seed)
    ib, wb, ob = (cfg.buffers[b].entry_bytes for b in ("inp", "wgt", "out"))
    kb = k_blocks
    lay = Layout()
    a = lay.put(_rand_bytes(rng, m_blocks * kb * ib), ib)
    b = lay.put(_rand_bytes(rng, n_blocks * kb * wb), wb)
    # micro-ops [buf*kb, (buf+1)*kb) accumulate buffer buf; 2kb + buf resets it
    uops = [(buf, buf * kb + k, buf * kb + k) for buf in (0, 1) for k in range(kb)] + [(0, 0, 0), (1, 0, 0)]
    u = lay.put(uop_words(cfg, uops), 4)
    c = lay.reserve(m_blocks * n_blocks * ob, ob)
    tiles = [(m, n) for m in range(m_blocks) for n in range(n_blocks)]
    insns = [load(MEM_UOP, 0, u, 1, len(uops))]
    for t, (m, n) in enumerate(tiles):
        buf = t % 2
        insns += [
            load(MEM_INP, buf * kb, a + m * kb, 1, kb, pop_next=int(t >= 2)),
            load(MEM_WGT, buf * kb, b + n * kb, 1, kb, push_next=1),
            isa.GemmInsn(reset=1, uop_bgn=2 * kb + buf, uop_end=2 * kb + buf + 1, pop_prev=1,
                         pop_next=int(t >= 2)),
            isa.GemmInsn(uop_bgn=buf * kb, uop_end=(buf + 1) * kb, push_prev=int(t + 2 < len(tiles)),
                         push_next=1),
            store(buf, c + m * n_blocks + n, 1, 1, pop_prev=1, push_prev=1),
        ]
    # FINISH waits for the last stores: pop the s2c tokens no compute consumed
    left = min(2, len(tiles))
    insns += [load(MEM_UOP, 0, 0, 0, 0, pop_next=1)] * (left - 1) + [isa.FinishInsn(pop_next=1)]
    return _prog(cfg, f"blocked_gemm_{m_blocks}x{n_blocks}x{kb}", insns, lay)


def random_program(cfg, seed: int, rounds: int | None = None):
    """A random valid, race-free program: rounds of load -> compute -> store ordered by tokens
    (loads of round k+1 wait for compute k, compute k+1 for store k), with random pads, strides,
    misaligned micro-op loads, GEMM/ALU loops and every ALU operation. Replay with the same seed."""
    rng = np.random.default_rng(seed)
    ib, wb, ab, ob = (cfg.buffers[b].entry_bytes for b in ("inp", "wgt", "acc", "out"))
    a8 = cfg.BATCH * cfg.BLOCK_OUT
    n_inp, n_wgt, n_acc, n_uop = 32, 16, 32, 16
    lay = Layout()
    inp = lay.put(_rand_bytes(rng, 2 * n_inp * ib), ib)
    wgt = lay.put(_rand_bytes(rng, 2 * n_wgt * wb), wb)
    acc_vals = rng.integers(-2**20, 2**20, size=2 * n_acc * ab // 4).astype("<i4")
    acc = lay.put(acc_vals.tobytes(), ab)
    acc8 = lay.put(_rand_bytes(rng, 2 * n_acc * a8), a8)
    uops = [(int(rng.integers(0, 8)), int(rng.integers(0, 8)), int(rng.integers(0, 4))) for _ in range(2 * n_uop)]
    uop = lay.put(uop_words(cfg, uops + [(0, 0, 0)]), 4)   # the zero micro-op last, at uop + 2 n_uop
    out = lay.reserve(4 * n_acc * ob, ob)
    r = lambda lo, hi: int(rng.integers(lo, hi + 1))

    def rand_load(mem, base, n_dram, limit):
        pads = tuple(r(0, 2) for _ in range(4)) if rng.random() < 0.6 else (0, 0, 0, 0)
        y, x = r(1, 3), r(1, 4)
        stride = x + r(0, 3)
        entries = (pads[0] + y + pads[1]) * (pads[2] + x + pads[3])
        if entries > limit:
            pads, entries = (0, 0, 0, 0), y * x
        dram = base + r(0, n_dram - (y - 1) * stride - x)
        return load(mem, r(0, limit - entries), dram, y, x, stride, pads)

    def rand_compute():
        kind = rng.choice(["uop", "acc", "acc8", "gemm", "gemm", "alu", "alu"])
        if kind == "uop":
            x = r(1, n_uop)
            return load(MEM_UOP, r(0, n_uop - x), uop + r(0, n_uop), 1, x)
        if kind in ("acc", "acc8"):
            return rand_load(MEM_ACC if kind == "acc" else MEM_ACC_8BIT, acc if kind == "acc" else acc8,
                             2 * n_acc, n_acc)
        bgn = r(0, n_uop - 1)
        loop = dict(uop_bgn=bgn, uop_end=r(bgn, min(n_uop, bgn + 4)), iter_out=r(1, 3), iter_in=r(1, 3),
                    dst_factor_out=r(0, 4), dst_factor_in=r(0, 4), src_factor_out=r(0, 4), src_factor_in=r(0, 4))
        if kind == "gemm":
            return isa.GemmInsn(reset=int(rng.random() < 0.2), wgt_factor_out=r(0, 2), wgt_factor_in=r(0, 2), **loop)
        use_imm = int(rng.random() < 0.5)
        return isa.AluInsn(reset=int(rng.random() < 0.1), alu_opcode=r(0, 4), use_imm=use_imm,
                           imm=r(-40, 40) if use_imm else 0, **loop)

    def rand_store():
        y, x = r(1, 2), r(1, 4)
        stride = x + r(0, 2)
        return store(r(0, n_acc - y * x), out + r(0, 3 * n_acc - (y - 1) * stride - x), y, x, stride)

    n_rounds = rounds or r(1, 3)
    insns = []
    for k in range(n_rounds):
        loads = [rand_load(MEM_INP, inp, 2 * n_inp, n_inp), rand_load(MEM_WGT, wgt, 2 * n_wgt, n_wgt)][:r(1, 2)]
        compute = [rand_compute() for _ in range(r(1, 4))]
        if k == 0:   # define every SRAM entry the program may read
            loads = [load(MEM_INP, 0, inp, 1, n_inp), load(MEM_WGT, 0, wgt, 1, n_wgt)] + loads
            compute = [load(MEM_UOP, 0, uop, 1, n_uop), load(MEM_ACC, 0, acc, 1, n_acc),
                       isa.AluInsn(uop_bgn=0, uop_end=1, iter_out=n_acc, dst_factor_out=1, src_factor_out=1,
                                   use_imm=1, imm=0)] + compute
            # a zero micro-op makes the ALU above walk ACC/OUT[0:n_acc) through its loop factors
            compute[1:1] = [load(MEM_UOP, n_uop, uop + 2 * n_uop, 1, 1)]
            compute[3] = compute[3].replace(uop_bgn=n_uop, uop_end=n_uop + 1)
        stores = [rand_store() for _ in range(r(1, 2))]
        loads[0].pop_next = int(k > 0)
        loads[-1].push_next = 1
        compute[0].pop_prev = 1
        compute[0].pop_next = int(k > 0)
        compute[-1].push_next = 1
        compute[-1].push_prev = int(k < n_rounds - 1)
        stores[0].pop_prev = 1
        stores[-1].push_prev = 1
        insns += loads + compute + stores
    insns.append(isa.FinishInsn(pop_next=1))
    return _prog(cfg, f"random_{seed}", insns, lay)


# ------------------------------------------------------------------------------------------ REQ
def _req_acc(rng, n_lanes: int, n: int, kind: str) -> np.ndarray:
    """n ACC entries of int32 lanes: accumulators (about 2^20), multipliers (the compiler's
    m_c < 2^31), or anything (full int32 with its extremes mixed in)."""
    if kind == "acc":
        v = rng.integers(-2**20, 2**20, size=(n, n_lanes))
    elif kind == "mul":
        v = rng.integers(2**28, 2**31, size=(n, n_lanes)) * rng.choice([1, 1, 1, -1], size=(n, n_lanes))
    else:
        v = rng.integers(-2**31, 2**31, size=(n, n_lanes))
    extremes = np.array([-2**31, 2**31 - 1, 0, 1, -1, 2**30, -2**30], np.int64)
    pick = rng.random((n, n_lanes)) < (0.3 if kind == "any" else 0.05)
    v = np.where(pick, rng.choice(extremes, size=(n, n_lanes)), v)
    return v.astype("<i4")


def _req_prog(cfg, name, rng, compute, acc_entries, out_entries, acc_kinds, uops):
    """LOAD ACC (entry ranges of `acc_kinds`: [(first, count, kind)]), LOAD UOP, `compute`, then
    STORE of OUT[0, out_entries) so that every REQ result reaches DRAM."""
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    ab, ob = cfg.buffers["acc"].entry_bytes, cfg.buffers["out"].entry_bytes
    acc = np.zeros((acc_entries, lanes), "<i4")
    for first, count, kind in acc_kinds:
        acc[first:first + count] = _req_acc(rng, lanes, count, kind)
    lay = Layout()
    a = lay.put(acc.tobytes(), ab)
    u = lay.put(uop_words(cfg, uops), 4)
    o = lay.reserve(out_entries * ob, ob)
    insns = chain(compute_part=[load(MEM_ACC, 0, a, 1, acc_entries), load(MEM_UOP, 0, u, 1, len(uops)), *compute],
                  store_part=[store(0, o, 1, out_entries)])
    return _prog(cfg, name, insns, lay)


def req_programs(cfg):
    """REQ (docs/isa-extensions.md) against vta_sim, bits and cycles: a requantisation epilogue
    (s fixed within each channel block, changing between blocks), every shift 0..63 on full-range
    int32 operands with zero points at both ends, s patterns that read, keep and alternate (the
    multiplier queue full and empty), reset, an empty loop, REQs back to back and beside other
    instructions that read what they wrote."""
    rng = np.random.default_rng(29)
    req = lambda **kw: isa.AluInsn(alu_opcode=isa.ALU_REQ, **kw)   # noqa: E731
    out = []
    # 1. epilogue: 6 blocks of 16 entries, one multiplier entry per block (230 + block)
    uops = [(e, 230) for e in range(16)]
    compute = [req(uop_bgn=0, uop_end=16, iter_out=6, dst_factor_out=16, src_factor_out=1, imm=isa.req_imm(31, -5)),
               # the same shape with zero point extremes and other shifts on the next 96 entries
               req(uop_bgn=0, uop_end=16, iter_out=3, dst_factor_out=32, src_factor_out=2, iter_in=2,
                   dst_factor_in=16, src_factor_in=1, imm=isa.req_imm(30, 127)),
               req(uop_bgn=0, uop_end=16, iter_out=2, dst_factor_out=16, src_factor_out=1, imm=isa.req_imm(33, -128))]
    # the second and third REQ write entries 96.. and 192..: their micro-ops' dst offsets by loop bases
    uops2 = [(96 + e, 230) for e in range(16)] + [(192 + e, 236) for e in range(16)]
    compute[1] = compute[1].replace(uop_bgn=16, uop_end=32)
    compute[2] = compute[2].replace(uop_bgn=32, uop_end=48)
    out.append(_req_prog(cfg, "req_epilogue", rng, compute, 240, 224,
                         [(0, 224, "acc"), (230, 10, "mul")], uops + uops2))
    # 2. every shift 0..63: instruction k requantises entries 4k..4k+3 by multiplier entry 300 + k % 8
    uops = [(4 * k, 300 + k % 8) for k in range(64)]
    zps = [-128, 127, 0, 37, -1, 1]
    compute = [req(uop_bgn=k, uop_end=k + 1, iter_out=4, dst_factor_out=1, imm=isa.req_imm(k, zps[k % len(zps)]))
               for k in range(64)]
    out.append(_req_prog(cfg, "req_every_shift", rng, compute, 308, 256, [(0, 256, "any"), (300, 8, "any")], uops))
    # the same with the compiler's operand ranges (products about 2^50: the shifts that keep bits)
    out.append(_req_prog(cfg, "req_every_shift_acc", rng, compute, 308, 256, [(0, 256, "acc"), (300, 8, "mul")],
                         uops))
    # 3. s patterns: r = reads ACC[s] (s differs from the iteration before), k = keeps it
    M = 400
    uops = [(0, M), (1, M), (2, M + 1), (3, M), (4, M), (5, M + 2), (6, M + 3), (7, M + 4), (8, M + 4),
            (9, M + 4), (10, M + 4), (11, M + 4), (12, M + 5), (13, M + 6)]     # r k r r k r r r k k k k r r
    n = len(uops)
    compute = [
        # the list three times over (i): the last micro-op's s (M + 6) then the first's (M): a read
        req(uop_bgn=0, uop_end=n, iter_out=3, dst_factor_out=n, imm=isa.req_imm(29, 3)),
        # s changes every iteration: all reads (the queue fills, issue waits)
        req(uop_bgn=0, uop_end=1, iter_out=20, dst_factor_out=1, src_factor_out=1, imm=isa.req_imm(27, -7)).replace(
            uop_bgn=n, uop_end=n + 1),
        # s never changes: one read, then one iteration a cycle
        req(uop_bgn=n + 1, uop_end=n + 2, iter_out=5, iter_in=6, dst_factor_out=6, dst_factor_in=1,
            imm=isa.req_imm(31, 0)),
        # reset: the same schedule, 0 written
        req(reset=1, uop_bgn=0, uop_end=n, iter_out=2, dst_factor_out=n, imm=isa.req_imm(29, 3)).replace(
            uop_bgn=n + 2, uop_end=n + 2 + n),
        # an empty loop: ALU_PIPELINE + REQ_EXTRA_LATENCY cycles
        req(uop_bgn=3, uop_end=3, imm=isa.req_imm(5, 5)),
        # a MUL then an ADD that read REQ's results (other instructions), a REQ on the MUL's results
        isa.AluInsn(uop_bgn=0, uop_end=4, iter_out=1, alu_opcode=isa.ALU_MUL, use_imm=1, imm=-3),
        isa.AluInsn(uop_bgn=0, uop_end=4, alu_opcode=isa.ALU_ADD),
        req(uop_bgn=0, uop_end=4, imm=isa.req_imm(0, -1)),
    ]
    uops += [(100, M + 10)]                                   # n: dst 100 + i, src M + 10 + i
    uops += [(130, M + 20)]                                   # n + 1: dst 130 + 6 i + j, src M + 20
    uops += [(170 + d, s) for d, s in uops[:n]]               # n + 2 ..: the reset REQ, dst 170 + 14 i + ...
    out.append(_req_prog(cfg, "req_s_patterns", rng, compute, M + 40, 200, [(0, 200, "acc"), (M, 40, "mul")], uops))
    return out
