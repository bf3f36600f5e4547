"""REQ, ALU opcode 5 (docs/isa-extensions.md), in both engines: lanes against a reference written
here from the contract with Python ints, the cycle formula, every refusal, the runtime's API."""
import re

import numpy as np
import pytest

from programs import Layout, chain, image_with, load, store, uop_words
from reference import run_reference
from vta_sim import Config, Simulator, isa
from vta_sim.config import MEM_ACC, MEM_UOP
from vta_sim.errors import EncodingError, HazardError, ProgramError, RuntimeAPIError, VTAError
from vta_sim.runtime import Runtime, UopKernel
from vta_sim.timing import BEGIN_DELAY, REQ_EXTRA_LATENCY, REQ_KEEP_INTERVAL, REQ_READ_INTERVAL

RNG = np.random.default_rng(20261128)
I32_MIN, I32_MAX = -2**31, 2**31 - 1


def req_lane(x: int, m: int, n: int, zp: int) -> int:
    """The contract's section 5 in Python ints: floor((x*m + 2^(n-1)) / 2^n), zp, clamp."""
    p = x * m
    v = p if n == 0 else (p + 2 ** (n - 1)) // 2 ** n
    return min(max(v + zp, -128), 127)


def expected(x: np.ndarray, m: np.ndarray, n: int, zp: int) -> np.ndarray:
    return np.array([req_lane(int(a), int(b), n, zp) for a, b in zip(x.ravel(), m.ravel())], dtype=np.int64)


def run_both(cfg, image, addr, count):
    """Runs on both engines: the same cycles, statistics and DRAM, or the same error."""
    outcomes = []
    for engine in ("reference", "compiled"):
        try:
            r = Simulator(cfg, engine=engine).run(image, insn_addr=addr, insn_count=count)
            outcomes.append((r.cycles, r.stats, r.dram.tobytes()))
        except VTAError as exc:
            outcomes.append((type(exc).__name__, str(exc)))
    assert outcomes[0] == outcomes[1], "the engines disagree"
    return outcomes[0]


def operands(lanes_total: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """x and m over the whole int32 range with its extremes, magnitudes whose product keeps
    some bits below and above the shift, and exact ties of the rounding (p = k 2^n + 2^(n-1))."""
    edge = np.array([I32_MIN, I32_MAX, 0, 1, -1, I32_MIN + 1, I32_MAX - 1, 2**30, -2**30])
    x = RNG.integers(I32_MIN, I32_MAX + 1, lanes_total)
    m = RNG.integers(I32_MIN, I32_MAX + 1, lanes_total)
    q = lanes_total // 5       # four sections, then every extreme against every extreme
    # products near 2^n: |x|, |m| around 2^(n/2), so that v lands inside [-128, 127]
    ex, em = min(31, n // 2 + 4), min(31, n - n // 2 + 3)
    x[q:2 * q] = RNG.integers(-(2**ex), 2**ex, q)
    m[q:2 * q] = RNG.integers(-(2**em), 2**em, q)
    if 1 <= n <= 31:   # ties, both signs: x * 1 = k 2^n + 2^(n-1), where it fits int32
        k = RNG.integers(-100, 100, q)
        ties = k * 2**n + 2 ** (n - 1)
        fits = (ties >= I32_MIN) & (ties <= I32_MAX)
        x[2 * q:3 * q] = np.where(fits, ties, x[2 * q:3 * q])
        m[2 * q:3 * q] = np.where(fits, 1, m[2 * q:3 * q])
    b = min(30, n - 1)
    if n >= 1 and n - 1 - b <= 23:   # ties of a product: (2k + 1) 2^(n-1) = ((2k + 1) 2^a) * 2^b
        odd = 2 * RNG.integers(-60, 60, q) + 1
        x[3 * q:4 * q], m[3 * q:4 * q] = odd * 2 ** (n - 1 - b), 2**b
    x[:edge.size] = edge
    assert x.min() >= I32_MIN and x.max() <= I32_MAX and m.min() >= I32_MIN and m.max() <= I32_MAX
    ex, em = np.meshgrid(edge, edge)
    assert ex.size <= lanes_total - 4 * q
    x[-ex.size:], m[-em.size:] = ex.ravel(), em.ravel()
    return x, m


ZERO_POINTS = (isa.REQ_ZP_MIN, isa.REQ_ZP_MAX, 0, 37)


def req_program(cfg, n_entries: int, shift: int, zero_points=ZERO_POINTS, x=None, m=None, after=()):
    """ACC: one block of n_entries x per zero point, then n_entries m; one REQ per zero point
    over its block (a loop of n_entries, dst and src +1 each); OUT of every block stored.
    `after`: ALU instructions run on each block after its REQ (uop per block as for the REQ)."""
    accb, ob = cfg.buffers["acc"].entry_bytes, cfg.buffers["out"].entry_bytes
    lanes = accb // 4
    g = len(zero_points)
    if x is None:   # the same x in every block: each zero point on the same products
        x, m = operands(n_entries * lanes, shift)
        x = np.tile(x, g)
    lay = Layout()
    base = lay.put(np.concatenate([x, m]).astype("<i4").tobytes(), accb)
    msrc = g * n_entries
    uop = lay.put(uop_words(cfg, [(k * n_entries, msrc, 0) for k in range(g)]), 4)
    out = lay.reserve(g * n_entries * ob, ob)
    compute = [load(MEM_ACC, 0, base, 1, (g + 1) * n_entries), load(MEM_UOP, 0, uop, 1, g)]
    for k, zp in enumerate(zero_points):
        compute.append(isa.AluInsn(uop_bgn=k, uop_end=k + 1, iter_out=n_entries, dst_factor_out=1,
                                   src_factor_out=1, alu_opcode=isa.ALU_REQ, imm=isa.req_imm(shift, zp)))
        compute += [a.replace(uop_bgn=k, uop_end=k + 1, iter_out=n_entries, dst_factor_out=1) for a in after]
    insns = chain(compute_part=compute, store_part=[store(0, out, 1, g * n_entries)])
    image, addr, count = image_with(cfg, insns, bytes(lay.data))
    return image, addr, count, out, x, m


def stored(cfg, dram: bytes, out: int, n: int) -> np.ndarray:
    ob = cfg.buffers["out"].entry_bytes
    return np.frombuffer(dram, np.int8)[out * ob:(out + n) * ob].astype(np.int64)


@pytest.mark.parametrize("shift", range(64))
def test_every_shift_matches_the_contract_in_both_engines(cfg, shift):
    """Random full-range x and m with the int32 extremes, near-boundary products and exact ties,
    against the contract's formula in Python ints; each zero point extreme."""
    n_entries = 512 // (cfg.BATCH * cfg.BLOCK_OUT)
    image, addr, count, out, x, m = req_program(cfg, n_entries, shift)
    cycles, stats, dram = run_both(cfg, image, addr, count)
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    got = stored(cfg, dram, out, len(ZERO_POINTS) * n_entries)
    per = n_entries * lanes
    for k, zp in enumerate(ZERO_POINTS):
        want = expected(x[k * per:(k + 1) * per], m, shift, zp)
        assert np.array_equal(got[k * per:(k + 1) * per], want), f"shift={shift} zp={zp}"
    assert stats["alu_counter"] == len(ZERO_POINTS) * n_entries


def test_the_result_is_not_clamped_everywhere(cfg):
    """The operands reach the inside of [-128, 127], not only its ends, at small and large shifts."""
    n_entries = 512 // (cfg.BATCH * cfg.BLOCK_OUT)
    for shift in (0, 1, 7, 20, 31, 40, 62, 63):
        image, addr, count, out, x, m = req_program(cfg, n_entries, shift)
        got = stored(cfg, run_both(cfg, image, addr, count)[2], out, n_entries * len(ZERO_POINTS))
        assert np.count_nonzero((got > -128) & (got < 127)) > 100, shift


def test_acc_holds_the_result_sign_extended(cfg):
    """ACC[a] = y as int32: an arithmetic shift by 4 afterwards shows bits 4..11 (sign copies)."""
    shr = isa.AluInsn(alu_opcode=isa.ALU_SHR, use_imm=1, imm=4)
    n_entries = 512 // (cfg.BATCH * cfg.BLOCK_OUT)
    image, addr, count, out, x, m = req_program(cfg, n_entries, 9, after=[shr])
    got = stored(cfg, run_both(cfg, image, addr, count)[2], out, n_entries * len(ZERO_POINTS))
    per = 512
    for k, zp in enumerate(ZERO_POINTS):
        y = expected(x[k * per:(k + 1) * per], m, 9, zp)
        assert np.array_equal(got[k * per:(k + 1) * per], y >> 4)


def test_shift_zero_clamps_the_full_product(cfg):
    """n = 0: p = x * m can exceed int32 (2^62); the clamp is taken on the 64-bit value, not on a
    wrapped 32-bit one (2^32 + 5 would wrap to 5)."""
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    x = np.array([2**16, I32_MIN, I32_MIN, I32_MAX, -3, 65537, -65537, 7] * lanes)[:lanes * 2]
    m = np.array([2**16, I32_MIN, I32_MAX, I32_MAX, 5, 65537, 65537, -9] * lanes)[:lanes * 2]
    image, addr, count, out, _, _ = req_program(cfg, 2, 0, zero_points=(0,), x=x, m=m)
    got = stored(cfg, run_both(cfg, image, addr, count)[2], out, 2)
    assert np.array_equal(got, expected(x, m, 0, 0))
    assert got[0] == 127 and got[1] == 127 and got[2] == -128   # 2^32, 2^62, -2^62 + 2^31


def test_rounding_ties_go_up_and_the_shift_is_arithmetic(cfg):
    """p = -5 >> 1 rounds to -2 (ties up, not away from zero), 5 >> 1 to 3, -1 >> 63 to 0, etc."""
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    base = [(-5, 1, 1, -2), (5, 1, 1, 3), (-3, 1, 1, -1), (3, 1, 1, 2), (-1, 1, 63, 0), (I32_MIN, I32_MIN, 62, 1),
            (I32_MIN, I32_MAX, 62, -1), (I32_MIN, I32_MIN, 63, 1), (-6, 1, 2, -1), (-7, 1, 2, -2)]
    rows = (base * lanes)[:lanes * len(base)]
    for shift in sorted({r[2] for r in base}):
        sel = [r for r in rows if r[2] == shift]
        n = -(-len(sel) // lanes)
        sel = (sel * n * lanes)[:n * lanes]
        x, m = np.array([r[0] for r in sel]), np.array([r[1] for r in sel])
        image, addr, count, out, _, _ = req_program(cfg, n, shift, zero_points=(0,), x=x, m=m)
        got = stored(cfg, run_both(cfg, image, addr, count)[2], out, n)
        assert got.tolist() == [r[3] for r in sel], shift
        assert got.tolist() == expected(x, m, shift, 0).tolist()


# ------------------------------------------------------------------------------------- timing
def req_cycles_expected(cfg, insn: isa.AluInsn, uops) -> int:
    """The contract's section 9, counted here over the loop nest: i, j, u innermost."""
    total, last = 0, None
    for i in range(insn.iter_out):
        for j in range(insn.iter_in):
            for u in range(insn.uop_bgn, insn.uop_end):
                s = uops[u][1] + i * insn.src_factor_out + j * insn.src_factor_in
                total += REQ_READ_INTERVAL if s != last else REQ_KEEP_INTERVAL
                last = s
    return cfg.ALU_PIPELINE + REQ_EXTRA_LATENCY + total


TIMING_CASES = {
    # name: (uops, loop fields): s per iteration in the comment
    "same_s_throughout": ([(0, 100)], dict(iter_out=5, iter_in=4, dst_factor_out=4, dst_factor_in=1)),
    "s_changes_every_iteration": ([(0, 100)], dict(iter_out=8, dst_factor_out=1, src_factor_out=1)),
    "s_changes_with_i_only": ([(0, 100), (1, 100), (2, 100), (3, 100)], dict(iter_out=3, dst_factor_out=4,
                                                                             src_factor_out=1)),
    "s_alternates_with_u": ([(0, 100), (1, 101)], dict(iter_out=4, dst_factor_out=2)),
    "s_kept_across_j": ([(0, 100), (1, 100)], dict(iter_out=2, iter_in=3, dst_factor_out=6, dst_factor_in=2,
                                                   src_factor_out=1)),
    "s_changes_with_j": ([(0, 100), (1, 100)], dict(iter_out=2, iter_in=3, dst_factor_out=6, dst_factor_in=2,
                                                    src_factor_in=1)),
    "s_repeats_after_a_change": ([(0, 100), (1, 101), (2, 101), (3, 100)], dict(iter_out=2, dst_factor_out=4)),
    "no_iterations": ([(0, 100)], dict(uop_bgn=0, uop_end=0)),
}


def timing_program(cfg, uops, fields, reset=0, repeat=1):
    lay = Layout()
    base = lay.put(RNG.integers(-1000, 1000, 200 * cfg.BATCH * cfg.BLOCK_OUT).astype("<i4").tobytes(),
                   cfg.buffers["acc"].entry_bytes)
    u = lay.put(uop_words(cfg, [(d, s, 0) for d, s in uops]), 4)
    req = isa.AluInsn(**{"uop_bgn": 0, "uop_end": len(uops), **fields}, reset=reset, alu_opcode=isa.ALU_REQ,
                      imm=isa.req_imm(5, -2))
    insns = chain(compute_part=[load(MEM_ACC, 0, base, 1, 200), load(MEM_UOP, 0, u, 1, len(uops))] + [req] * repeat)
    return (*image_with(cfg, insns, bytes(lay.data)), req)


@pytest.mark.parametrize("reset", [0, 1])
@pytest.mark.parametrize("name", TIMING_CASES)
def test_cycles_are_pipeline_plus_extra_plus_2_per_read_and_1_per_kept(cfg, name, reset):
    """Each REQ takes ALU_PIPELINE + REQ_EXTRA_LATENCY + 2 per iteration whose s differs from the
    one before it (the first always) + 1 per other; the second of two identical REQs reads again
    on its first iteration. Both engines give the same total."""
    uops, fields = TIMING_CASES[name]
    image, addr, count, req = timing_program(cfg, uops, fields, reset=reset, repeat=2)
    res = Simulator(cfg, engine="reference").run(image, insn_addr=addr, insn_count=count, trace=True)
    want = req_cycles_expected(cfg, req, uops)
    events = [e for e in res.trace.events if "REQ" in e.text]
    assert [e.done - e.start for e in events] == [want, want]
    assert events[1].start == events[0].done + BEGIN_DELAY
    cycles, stats, _ = run_both(cfg, image, addr, count)
    assert cycles == res.cycles
    assert stats["alu_counter"] == (0 if reset else 2 * req.iterations)


def test_the_formula_pins_the_numbers():
    """The constants the contract names: 2 cycles a read, 1 a kept, 4 deeper than the other ALU ops
    (the RTL's REQ pipeline: hw/header.py RTL_REQ_DEPTH, docs/hardware.md "REQ")."""
    assert (REQ_READ_INTERVAL, REQ_KEEP_INTERVAL, REQ_EXTRA_LATENCY) == (2, 1, 4)


def test_a_long_epilogue_costs_one_per_entry_plus_one_per_block(cfg):
    """64 channel blocks of 16 entries each, s fixed within a block: 16 * 64 + 64 + fill."""
    uops = [(e, 1900) for e in range(16)]
    fields = dict(iter_out=64, dst_factor_out=16, src_factor_out=1)
    lay = Layout()
    u = lay.put(uop_words(cfg, uops), 4)
    req = isa.AluInsn(uop_bgn=0, uop_end=16, **fields, alu_opcode=isa.ALU_REQ, imm=isa.req_imm(31, 0))
    image, addr, count = image_with(cfg, chain(compute_part=[load(MEM_UOP, 0, u, 1, 16), req]), bytes(lay.data))
    res = Simulator(cfg, engine="reference").run(image, insn_addr=addr, insn_count=count, trace=True)
    ev = next(e for e in res.trace.events if "REQ" in e.text)
    assert ev.done - ev.start == cfg.ALU_PIPELINE + REQ_EXTRA_LATENCY + 16 * 64 + 64
    assert run_both(cfg, image, addr, count)[0] == res.cycles


# ------------------------------------------------------------------------------------ refusals
def refusal(cfg, req, uops=((0, 8),)):
    lay = Layout()
    u = lay.put(uop_words(cfg, list(uops)), 4)
    insns = chain(compute_part=[load(MEM_UOP, 0, u, 1, len(uops)), req])
    image, addr, count = image_with(cfg, insns, bytes(lay.data))
    outcome = run_both(cfg, image, addr, count)
    assert isinstance(outcome[0], str), f"not refused: {isa.disasm(req)}"
    with pytest.raises(VTAError) as info:
        Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    err = info.value
    assert err.index == 1 and str(err).startswith("instruction 1: ")
    assert err.disasm == isa.disasm(insns[1]) and err.disasm in str(err)   # the decoded fields
    return err


REQ1 = isa.AluInsn(uop_bgn=0, uop_end=1, iter_out=4, dst_factor_out=1, src_factor_out=1, alu_opcode=isa.ALU_REQ,
                   imm=isa.req_imm(12, -7))


def test_use_imm_is_refused_as_malformed(cfg):
    err = refusal(cfg, REQ1.replace(use_imm=1))
    assert type(err) is ProgramError
    assert "malformed REQ: use_imm=1" in err.reason and "shift=12, zero_point=-7" in err.reason
    assert "ALU    REQ      tensor shift=12 zp=-7 use_imm=1" in str(err)


@pytest.mark.parametrize("bits", [1, 2, 3])
def test_reserved_immediate_bits_are_refused_as_malformed(cfg, bits):
    raw = isa.req_imm(12, -7) & 0xFFFF | bits << 14
    imm = raw - (1 << 16) if raw >= 1 << 15 else raw
    assert isa.req_fields(imm) == (12, -7, bits)
    err = refusal(cfg, REQ1.replace(imm=imm))
    assert type(err) is ProgramError
    assert f"reserved immediate bits 15:14 (instruction bits 127:126) must be 0, got {bits:#x}" in err.reason
    assert "shift=12, zero_point=-7" in err.reason and f"reserved={bits:#x}" in str(err)


def test_the_malformed_checks_come_before_anything_runs(cfg):
    """A refused REQ leaves the caller's image untouched and nothing runs (a static refusal)."""
    bad = REQ1.replace(use_imm=1)
    image, addr, count = image_with(cfg, [bad, isa.FinishInsn()])
    before = image.copy()
    with pytest.raises(ProgramError, match="instruction 0: malformed REQ"):
        Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    assert np.array_equal(image, before)


HAZARDS = {
    # name: (uops, loop fields, what the message says)
    "dst_repeats": ([(0, 10), (0, 11)], {}, r"iteration \(i=0, j=0, u=1\) writes ACC\[0\], which iteration "
                                            r"\(i=0, j=0, u=0\) before it also writes"),
    "dst_repeats_across_i": ([(0, 10)], dict(iter_out=3, src_factor_out=1, dst_factor_out=0),
                             r"iteration \(i=1, j=0, u=0\) writes ACC\[0\], which iteration \(i=0, j=0, u=0\)"),
    "dst_is_its_own_src": ([(5, 5)], {}, r"iteration \(i=0, j=0, u=0\) writes ACC\[5\], which it also reads"),
    "dst_read_later": ([(0, 10), (1, 0)], {}, r"iteration \(i=0, j=0, u=0\) writes ACC\[0\], which iteration "
                                              r"\(i=0, j=0, u=1\) reads as its multipliers"),
    "dst_read_earlier": ([(1, 10), (10, 20)], {}, r"iteration \(i=0, j=0, u=1\) writes ACC\[10\], which iteration "
                                                  r"\(i=0, j=0, u=0\) reads"),
    "dst_read_earlier_in_j": ([(0, 3)], dict(iter_in=4, dst_factor_in=1, src_factor_in=1),
                              r"iteration \(i=0, j=3, u=0\) writes ACC\[3\], which iteration \(i=0, j=0, u=0\) reads"),
    "dst_read_later_in_i": ([(3, 0)], dict(iter_out=4, dst_factor_out=1, src_factor_out=1),
                            r"iteration \(i=0, j=0, u=0\) writes ACC\[3\], which iteration \(i=3, j=0, u=0\) reads"),
}


@pytest.mark.parametrize("name", HAZARDS)
def test_the_hazard_rule_is_refused_naming_the_iterations(cfg, name):
    uops, fields, message = HAZARDS[name]
    req = isa.AluInsn(**{"uop_bgn": 0, "uop_end": len(uops), **fields}, alu_opcode=isa.ALU_REQ,
                      imm=isa.req_imm(3, 1))
    err = refusal(cfg, req, uops)
    assert type(err) is HazardError
    assert err.reason.startswith("REQ ")
    assert re.search(message, err.reason), err.reason
    assert "every iteration's dst must differ from the dst of every earlier iteration and from the src" in err.reason


def test_a_nest_longer_than_acc_repeats_a_dst(cfg):
    depth = cfg.buffers["acc"].depth
    req = isa.AluInsn(uop_bgn=0, uop_end=1, iter_out=2, iter_in=depth // 2 + 1, dst_factor_out=depth // 2 - 1,
                      dst_factor_in=1, alu_opcode=isa.ALU_REQ, imm=isa.req_imm(3, 1))
    err = refusal(cfg, req, [(0, depth - 1)])
    assert type(err) is HazardError


def test_a_reset_req_reads_nothing_so_the_hazard_rule_does_not_apply(cfg):
    """Reset writes 0 (ACC and OUT); repeated dsts and dst = src are then harmless."""
    lay = Layout()
    base = lay.put(np.full(4 * cfg.BATCH * cfg.BLOCK_OUT, 77, "<i4").tobytes(), cfg.buffers["acc"].entry_bytes)
    u = lay.put(uop_words(cfg, [(0, 0), (0, 1), (1, 1)]), 4)
    ob = cfg.buffers["out"].entry_bytes
    out = lay.reserve(4 * ob, ob)
    req = isa.AluInsn(uop_bgn=0, uop_end=3, reset=1, alu_opcode=isa.ALU_REQ, imm=isa.req_imm(3, 100))
    add = isa.AluInsn(uop_bgn=0, uop_end=1, iter_out=4, dst_factor_out=1, alu_opcode=isa.ALU_ADD, use_imm=1, imm=0)
    insns = chain(compute_part=[load(MEM_ACC, 0, base, 1, 4), load(MEM_UOP, 0, u, 1, 3), req, add],
                  store_part=[store(0, out, 1, 4)])
    image, addr, count = image_with(cfg, insns, bytes(lay.data))
    cycles, stats, dram = run_both(cfg, image, addr, count)
    got = stored(cfg, dram, out, 4).reshape(4, -1)
    assert (got[:2] == 0).all() and (got[2:] == 77).all()
    assert stats["alu_counter"] == 4       # the ADD's; a reset counts no iteration


def test_an_index_outside_acc_is_refused_before_the_hazard_rule(cfg):
    depth = cfg.buffers["acc"].depth
    req = REQ1.replace(iter_out=2, dst_factor_out=depth - 1, src_factor_out=0)
    assert "outside ACC" in refusal(cfg, req, [(1, 1)]).reason   # dst = src as well


def test_a_valid_req_after_a_refusal_free_program_matches_tests_reference(cfg):
    """The naive reference of tests/reference.py (its REQ branch) agrees on a multi-uop nest."""
    lay = Layout()
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    data = RNG.integers(I32_MIN, I32_MAX + 1, 64 * lanes).astype("<i4")
    base = lay.put(data.tobytes(), cfg.buffers["acc"].entry_bytes)
    u = lay.put(uop_words(cfg, [(0, 40), (1, 40), (2, 41)]), 4)
    ob = cfg.buffers["out"].entry_bytes
    out = lay.reserve(24 * ob, ob)
    req = isa.AluInsn(uop_bgn=0, uop_end=3, iter_out=2, iter_in=4, dst_factor_out=12, dst_factor_in=3,
                      src_factor_out=2, src_factor_in=0, alu_opcode=isa.ALU_REQ, imm=isa.req_imm(33, -100))
    insns = chain(compute_part=[load(MEM_ACC, 0, base, 1, 64), load(MEM_UOP, 0, u, 1, 3), req],
                  store_part=[store(0, out, 1, 24)])
    image, addr, count = image_with(cfg, insns, bytes(lay.data))
    _, stats, dram = run_both(cfg, image, addr, count)
    assert np.array_equal(np.frombuffer(dram, np.uint8), run_reference(cfg, image, addr, count))
    assert stats["alu_counter"] == 24


# --------------------------------------------------------------------------- ISA and runtime
def test_req_is_alu_opcode_5_and_disassembles_with_its_fields():
    assert isa.ALU_REQ == 5 and isa.ALU_NAMES[5] == "REQ" and isa.ALU_OPS["req"] == 5
    insn = REQ1.replace(imm=isa.req_imm(63, -128))
    cfg = Config.default()
    back = isa.decode(isa.encode(insn, cfg), cfg)
    assert back == insn and isa.req_fields(back.imm) == (63, -128, 0)
    text = isa.disasm(insn)
    assert "ALU    REQ      tensor shift=63 zp=-128" in text and "imm=" not in text


def test_resolve_alu_refuses_an_immediate_for_req():
    with pytest.raises(EncodingError, match="req takes no immediate operand"):
        isa.resolve_alu("req", 3)


def test_the_runtime_emits_req_with_shift_and_zero_point(cfg):
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    x = RNG.integers(I32_MIN, I32_MAX + 1, (8, cfg.BATCH, cfg.BLOCK_OUT)).astype(np.int32)
    m = RNG.integers(0, 2**31, (1, cfg.BATCH, cfg.BLOCK_OUT)).astype(np.int32)
    rt = Runtime(cfg)
    acc = rt.array(np.concatenate([x, m]), "acc")
    out = rt.empty((8, cfg.BATCH, cfg.BLOCK_OUT), "out")
    rt.load_2d(acc, 0, 9, 1, 9, 0)
    k = UopKernel()
    with k.loop(8, dst=1):
        k.uop(dst=0, src=8)
    insn = rt.alu(k, "req", shift=40, zero_point=-9)
    assert isinstance(insn, isa.AluInsn) and insn.alu_opcode == isa.ALU_REQ and insn.use_imm == 0
    assert isa.req_fields(insn.imm) == (40, -9, 0)
    rt.dep_push("compute", "store")
    rt.dep_pop("compute", "store")
    rt.store_2d(out, 0, 8, 1, 8, 0)
    res = rt.synchronize()
    want = np.array([[req_lane(int(a), int(b), 40, -9) for a, b in zip(row.ravel(), m[0].ravel())] for row in x])
    assert np.array_equal(out.numpy().reshape(8, lanes), want)
    assert res.stats["alu_counter"] == 8


@pytest.mark.parametrize("kwargs, message", [
    (dict(imm=3, shift=1), "op 'req' takes no imm= .*give shift= and zero_point="),
    (dict(), "op 'req' needs shift="),
    (dict(shift=64), "REQ shift 64: accepted 0..63"),
    (dict(shift=-1), "REQ shift -1: accepted 0..63"),
    (dict(shift=3, zero_point=128), "REQ zero point 128: accepted -128..127"),
    (dict(shift=3, zero_point=-129), "REQ zero point -129: accepted -128..127"),
])
def test_the_runtime_refuses_req_without_its_parameters(cfg, kwargs, message):
    rt = Runtime(cfg)
    k = UopKernel()
    k.uop(dst=0, src=1)
    with pytest.raises(RuntimeAPIError, match=message):
        rt.alu(k, "req", **kwargs)


def test_the_runtime_refuses_req_parameters_on_other_ops(cfg):
    rt = Runtime(cfg)
    k = UopKernel()
    k.uop(dst=0, src=1)
    with pytest.raises(RuntimeAPIError, match="shift= and zero_point= belong to op 'req', not 'add'"):
        rt.alu(k, "add", 3, shift=2)
