"""Orderings a program relies on: overlapping STORE rows land in order, and a token keeps a LOAD
from overwriting INP that a GEMM still reads (write-after-read). Checked against the independent
reference and numpy int64, the timing against the token semantics of spec section 6."""
import numpy as np
import pytest

from reference import run_reference
from vta_sim import Config, HazardError, Simulator, isa
from vta_sim.config import MEM_INP
from vta_sim.runtime import Runtime, UopKernel

CFG = Config.default()


def _low8(v):
    return ((np.asarray(v, dtype=np.int64) + 128) % 256 - 128).astype(np.int8)


@pytest.mark.parametrize("x_stride", [0, 1, 2])
def test_overlapping_store_rows_are_written_in_order(x_stride):
    """x_stride < x_size: rows overlap in DRAM and each later row overwrites the earlier ones."""
    y_size, x_size = 3, 3
    rng = np.random.default_rng(x_stride)
    rt = Runtime(CFG)
    shape = (y_size * x_size, CFG.BATCH, CFG.BLOCK_OUT)
    acc = rt.array(rng.integers(-128, 128, size=shape, dtype=np.int32), "acc")
    before = rng.integers(-128, 128, size=(12, CFG.BATCH, CFG.BLOCK_OUT), dtype=np.int8)
    out = rt.array(before, "out")
    rt.load_2d(acc, 0, y_size * x_size, 1, 0, 0)
    k = UopKernel()
    with k.loop(y_size * x_size, dst=1):
        k.uop(0)
    rt.alu(k, "add", 0)                                       # OUT[0:9) = low 8 bits of ACC
    rt.dep_push("compute", "store")
    rt.dep_pop("compute", "store")
    rt.store_2d(out, 1, x_size, y_size, x_stride, 0)
    prog = rt.build()
    res = Simulator(CFG).run(prog.image, insn_addr=prog.insn_addr, insn_count=prog.insn_count)

    assert np.array_equal(res.dram, run_reference(CFG, prog.image, prog.insn_addr, prog.insn_count))
    expected = before.copy()
    rows = acc.numpy().reshape(y_size, x_size, CFG.BATCH, CFG.BLOCK_OUT)
    for r in range(y_size):                                   # numpy: row by row, later wins
        expected[1 + r * x_stride:1 + r * x_stride + x_size] = rows[r]
    got = res.dram[out.byte_addr:out.byte_addr + out.nbytes].view(np.int8).reshape(expected.shape)
    assert np.array_equal(got, expected)


def _war_program(with_token: bool, repeats: int = 64):
    """GEMM reads INP[0] from A (repeated, so it runs long) while the next LOAD brings B into the
    same INP entry for a second GEMM; only the compute->load token orders the overwrite."""
    rng = np.random.default_rng(1)
    rt = Runtime(CFG)
    a, b = (rt.array(rng.integers(-128, 128, size=(1, CFG.BATCH, CFG.BLOCK_IN), dtype=np.int8), "inp")
            for _ in range(2))
    w = rt.array(rng.integers(-128, 128, size=(1, CFG.BLOCK_OUT, CFG.BLOCK_IN), dtype=np.int8), "wgt")
    out = rt.empty((2, CFG.BATCH, CFG.BLOCK_OUT), "out")
    rt.load_2d(a, 0, 1, 1, 1, 0)
    rt.load_2d(w, 0, 1, 1, 1, 0)
    rt.dep_push("load", "compute")
    rt.dep_pop("load", "compute")
    kernels = []
    for dst in (0, 1):
        k = UopKernel()
        with k.loop(repeats):
            k.uop(dst, 0, 0)
        kernels.append(k)
    rt.gemm(kernels[0])                                       # ACC[0] = repeats * A . W^T
    if with_token:
        rt.dep_push("compute", "load")
        rt.dep_pop("compute", "load")
    rt.load_2d(b, 0, 1, 1, 1, 0)                              # overwrites INP[0]
    rt.dep_push("load", "compute")
    rt.dep_pop("load", "compute")
    rt.gemm(kernels[1])                                       # ACC[1] = repeats * B . W^T
    rt.dep_push("compute", "store")
    rt.dep_pop("compute", "store")
    rt.store_2d(out, 0, 2, 1, 2, 0)
    prog = rt.build()
    ref = [repeats * (x.numpy()[0].astype(np.int64) @ w.numpy()[0].astype(np.int64).T) for x in (a, b)]
    return prog, out, _low8(np.stack(ref))


def test_token_orders_a_load_after_the_gemm_reading_its_inp():
    """With the c2l token the GEMM sees A, the second GEMM B (reference and numpy agree), and the
    trace shows the overwriting LOAD waiting for the token until the first GEMM is done."""
    prog, out, expected = _war_program(with_token=True)
    res = Simulator(CFG).run(prog.image, insn_addr=prog.insn_addr, insn_count=prog.insn_count, trace=True)
    assert np.array_equal(res.dram, run_reference(CFG, prog.image, prog.insn_addr, prog.insn_count))
    got = res.dram[out.byte_addr:out.byte_addr + out.nbytes].view(np.int8).reshape(expected.shape)
    assert np.array_equal(got, expected)

    insns = prog.instructions
    first_gemm = next(i for i, x in enumerate(insns) if isinstance(x, isa.GemmInsn))
    overwrite = [i for i, x in enumerate(insns) if isinstance(x, isa.MemInsn) and x.memory_type == MEM_INP][1]
    assert insns[overwrite].pop_next and insns[first_gemm].push_prev
    events = {e.index: e for e in res.trace.events}
    assert events[overwrite].start >= events[first_gemm].done    # spec 6: starts once the token is pushed
    assert events[overwrite].token_wait > 0 and res.stats["load_stall_token_cycles"] > 0


def test_without_the_token_the_overwrite_is_refused_as_a_race():
    """The same program without the c2l token: the simulator names the unordered overwrite."""
    prog, _, _ = _war_program(with_token=False)
    with pytest.raises(HazardError, match="instruction"):
        Simulator(CFG).run(prog.image, insn_addr=prog.insn_addr, insn_count=prog.insn_count)
