"""Fuzzing: random words are answered with a result or a VTAError; random valid programs built
through the runtime end in the DRAM of the independent reference (tests/reference.py)."""
import contextlib

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference import run_reference
from vta_sim import Config, Simulator, VTAError, isa
from vta_sim.runtime import ALU_OPS, Runtime, UopKernel

CFG = Config.default()
FUZZ_EXAMPLES = 200
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _run(image, addr, count):
    try:
        res = Simulator(CFG).run(image, insn_addr=addr, insn_count=count)
    except VTAError as exc:
        assert str(exc)
        return None
    assert res.cycles > 0 and res.dram.dtype == np.uint8 and res.dram.size == image.size
    return res


@SETTINGS
@given(words=st.lists(st.integers(0, (1 << 128) - 1), min_size=1, max_size=12),
       finish_last=st.booleans())
def test_random_words(words, finish_last):
    if finish_last:
        words = words + [isa.OP_FINISH]
    code = b"".join(w.to_bytes(16, "little") for w in words)
    image = np.zeros(8192, dtype=np.uint8)
    image[4096:4096 + len(code)] = np.frombuffer(code, np.uint8)
    _run(image, 4096, len(words))


# SRAM windows the generated programs use: every index they can form (micro-op index < 8, loop
# factors <= 3, extents <= 3) stays inside, and so do their loads.
N_INP, N_WGT, N_ACC = 40, 24, 40
ALU_IMMS = st.one_of(st.integers(-40, 40), st.sampled_from([-32768, -32, -31, 31, 32, 32767]))


def _kernel(draw, with_wgt):
    k = UopKernel()
    loops = [draw(st.tuples(st.integers(1, 3), *[st.integers(0, 3)] * 3)) for _ in range(draw(st.integers(0, 2)))]
    uops = draw(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(0, 3 if with_wgt else 0)),
                         min_size=1, max_size=3))
    with contextlib.ExitStack() as stack:
        for extent, dst, src, wgt in loops:
            stack.enter_context(k.loop(extent, dst=dst, src=src, wgt=wgt if with_wgt else 0))
        for u in uops:
            k.uop(*u)
    return k


def _load(draw, rt, buf, window):
    """A random 2-D load of `buf` with pads, placed anywhere its entries fit in SRAM [0, window)."""
    y, x = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    stride = draw(st.integers(0, x + 3))                  # stride < x reads overlapping rows
    pads = draw(st.tuples(*[st.integers(0, 2)] * 4)) if draw(st.booleans()) else (0, 0, 0, 0)
    entries = (pads[0] + y + pads[1]) * (pads[2] + x + pads[3])
    if entries > window:
        pads, entries = (0, 0, 0, 0), y * x
    offset = draw(st.integers(0, buf.n_elems - (y - 1) * stride - x))
    rt.load_2d(buf, offset, x, y, stride, draw(st.integers(0, window - entries)), pad=pads)


def _req_kernel(draw):
    """A REQ kernel its hazard rule accepts: distinct dsts in [0, 24), srcs in [24, 40)."""
    k = UopKernel()
    dsts = draw(st.lists(st.integers(0, 7), min_size=1, max_size=3, unique=True))
    with contextlib.ExitStack() as stack:
        if draw(st.booleans()):
            stack.enter_context(k.loop(draw(st.integers(1, 3)), dst=8, src=draw(st.integers(0, 3))))
        for d in dsts:
            k.uop(d, draw(st.integers(24, 33)), 0)
    return k


def _compute(draw, rt, bufs):
    kind = draw(st.sampled_from(["gemm", "gemm", "gemm_reset", "alu", "alu", "alu", "alu_reset", "req", "acc",
                                 "acc8"]))
    if kind == "req":
        rt.alu(_req_kernel(draw), "req", shift=draw(st.integers(0, 63)), zero_point=draw(st.integers(-128, 127)))
    elif kind in ("acc", "acc8"):
        _load(draw, rt, bufs[kind], N_ACC)
    elif kind.startswith("gemm"):
        rt.gemm(_kernel(draw, True), reset=kind == "gemm_reset")
    elif kind == "alu_reset":
        rt.alu_reset(_kernel(draw, False))
    else:
        op = draw(st.sampled_from(sorted(set(ALU_OPS) - {"req"})))
        rt.alu(_kernel(draw, False), op, draw(st.one_of(st.none(), ALU_IMMS)))


def _store(draw, rt, out):
    y, x = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    stride = draw(st.integers(0, x + 2))                  # stride < x: overlapping rows, later wins
    rt.store_2d(out, draw(st.integers(0, out.n_elems - (y - 1) * stride - x)), x, y, stride,
                draw(st.integers(0, N_ACC - y * x)))


@st.composite
def runtime_programs(draw):
    """Stages of load -> compute -> store through the runtime, with the tokens a correct program
    needs and no more than one outstanding per queue (so it cannot deadlock): l2c and c2s within a
    stage, c2l before the next stage's loads overwrite INP/WGT, s2c before its compute overwrites
    OUT."""
    cfg = Config.load(draw(st.sampled_from(["1x8x8", "8x8x8"])))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    b, bi, bo = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    rt = Runtime(cfg)
    i8 = lambda *shape: rng.integers(-128, 128, size=shape, dtype=np.int8)
    bufs = {"inp": rt.array(i8(2 * N_INP, b, bi), "inp"), "wgt": rt.array(i8(2 * N_WGT, bo, bi), "wgt"),
            "acc": rt.array(rng.integers(-2**31, 2**31, size=(2 * N_ACC, b, bo), dtype=np.int32)
                            >> rng.integers(0, 32, size=(2 * N_ACC, b, bo)), "acc"),
            "acc8": rt.array(i8(2 * N_ACC, b, bo), "acc8")}
    out = rt.array(i8(2 * N_ACC, b, bo), "out")          # random, so that unwritten bytes are checked too
    n_stages = draw(st.integers(1, 3))
    for stage in range(n_stages):
        last = stage == n_stages - 1
        if stage:
            rt.dep_pop("compute", "load")
        for _ in range(draw(st.integers(1, 3))):
            mem = draw(st.sampled_from(["inp", "wgt"]))
            _load(draw, rt, bufs[mem], N_INP if mem == "inp" else N_WGT)
        rt.dep_push("load", "compute")
        rt.dep_pop("load", "compute")
        if stage:
            rt.dep_pop("store", "compute")
        for _ in range(draw(st.integers(1, 4))):
            _compute(draw, rt, bufs)
        rt.dep_push("compute", "store")
        rt.dep_pop("compute", "store")
        if not last:
            rt.dep_push("compute", "load")
        for _ in range(draw(st.integers(1, 2))):
            _store(draw, rt, out)
        if not last:
            rt.dep_push("store", "compute")
    return cfg, rt.build()


@settings(max_examples=FUZZ_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=runtime_programs())
def test_random_runtime_programs_match_the_reference(case):
    """Random valid programs (every load type with pads, GEMM/ALU loops, all ALU ops, overlapping
    stores) end in the DRAM that the independent reference computes, on both configurations."""
    cfg, prog = case
    res = Simulator(cfg).run(prog.image, insn_addr=prog.insn_addr, insn_count=prog.insn_count)
    expected = run_reference(cfg, prog.image, prog.insn_addr, prog.insn_count)
    diff = np.flatnonzero(res.dram != expected)
    assert diff.size == 0, f"{diff.size} bytes differ, first at {diff[:4]}:\n" + "\n".join(
        isa.disasm(i) for i in prog.instructions)
