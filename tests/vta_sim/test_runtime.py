"""The host runtime and the hand-written double-buffered blocked GEMM built with it."""
import numpy as np
import pytest

from vta_sim.blocked_gemm import blocked_gemm, random_operands, reference
from vta_sim import DeadlockError, HazardError, RuntimeAPIError, Simulator, isa
from vta_sim.runtime import Runtime, UopKernel

SHAPES = {"1x8x8": (16, 64, 64), "8x8x8": (64, 128, 64)}  # 8x8x8: enough work that fetch (13 cycles per instruction) does not bound it


@pytest.mark.parametrize("vthreads", [1, 2])
def test_blocked_gemm_matches_numpy(cfg, vthreads):
    m, k, n = SHAPES[cfg.name]
    a, w = random_operands(cfg, m, k, n, seed=vthreads)
    a0, w0 = a.copy(), w.copy()
    rt = Runtime(cfg)
    got, res = blocked_gemm(rt, a, w, shift=6, vthreads=vthreads, tiles=(m // cfg.BATCH // 2, n // cfg.BLOCK_OUT // 2))
    assert np.array_equal(got, reference(a, w, 6))
    assert np.array_equal(a, a0) and np.array_equal(w, w0)
    assert res.stats["gemm_counter"] == m * k * n // cfg.macs_per_cycle


def test_double_buffering_overlaps_loads_with_compute(cfg):
    """Same work, same tiles: two virtual threads finish in fewer cycles than one."""
    m, k, n = SHAPES[cfg.name]
    a, w = random_operands(cfg, m, k, n)
    tiles = (m // cfg.BATCH // 2, n // cfg.BLOCK_OUT // 4)
    runs = {v: blocked_gemm(Runtime(cfg), a, w, vthreads=v, tiles=tiles) for v in (1, 2)}
    assert np.array_equal(runs[1][0], runs[2][0])
    assert runs[2][1].cycles < runs[1][1].cycles


def _tiny(rt):
    cfg = rt.cfg
    a = rt.array(np.ones((2, 1, cfg.BATCH, cfg.BLOCK_IN), np.int8), "inp")
    return a


def test_dep_push_on_a_taken_flag_inserts_a_token_only_noop():
    rt = Runtime()
    a = _tiny(rt)
    rt.load_2d(a, 0, 1, 1, 1, 0)
    rt.dep_push("load", "compute")
    rt.dep_push("load", "compute")        # the LOAD's push_next is taken: a no-op carries it
    rt.dep_pop("load", "compute")
    rt.dep_pop("load", "compute")        # two pops before any compute instruction: a no-op too
    insns = rt.instructions
    assert [isa.disasm(i) for i in insns] == [
        "LOAD   INP      sram=0 dram=0 y=1 x=1 stride=1  [push l2c]",
        "LOAD   INP      nop  [push l2c]",
        "LOAD   ACC      nop  [pop l2c]",
    ]
    res = rt.synchronize()
    assert res.cycles > 0
    final = rt.instructions
    assert isinstance(final[-1], isa.FinishInsn) and final[-1].pop_prev


def test_unbalanced_tokens_are_refused_at_synchronize():
    rt = Runtime()
    rt.load_2d(_tiny(rt), 0, 1, 1, 1, 0)
    rt.dep_push("load", "compute")
    with pytest.raises(RuntimeAPIError, match=r"l2c: \+1"):
        rt.synchronize()


def test_uop_kernels_are_cached_by_content():
    rt = Runtime()
    k1, k2 = UopKernel(), UopKernel()
    for k in (k1, k2):
        with k.loop(4, dst=1):
            k.uop(0)
    rt.gemm(k1, reset=True)
    rt.gemm(k2, reset=True)
    uop_loads = [i for i in rt.instructions if isinstance(i, isa.MemInsn) and i.memory_type == 0]
    assert len(uop_loads) == 1


def test_runtime_refuses_bad_input_clearly():
    rt = Runtime()
    with pytest.raises(RuntimeAPIError, match=r"must end with the entry shape \(1, 8\)"):
        rt.array(np.zeros((4, 8), np.int8), "inp")
    with pytest.raises(RuntimeAPIError, match=r"do not fit int8"):
        rt.array(np.full((1, 1, 8), 300), "inp")
    with pytest.raises(RuntimeAPIError, match="unknown memory kind 'psum'"):
        rt.empty((1, 1, 8), "psum")
    a = _tiny(rt)
    with pytest.raises(RuntimeAPIError, match="reach element 3 .* has 2 elements"):
        rt.load_2d(a, 1, 2, 1, 2, 0)
    with pytest.raises(RuntimeAPIError, match="pad="):
        rt.load_2d(a, 0, 1, 1, 1, 0, pad=(16, 0, 0, 0))
    with pytest.raises(RuntimeAPIError, match="no token queue from 'load' to 'store'"):
        rt.dep_push("load", "store")
    k = UopKernel()
    with pytest.raises(RuntimeAPIError, match="at most two loop levels"):
        with k.loop(2):
            with k.loop(2):
                with k.loop(2):
                    pass
    with pytest.raises(RuntimeAPIError, match="immediate 40000"):
        rt.alu(UopKernel(), "add", 40000)
    big = UopKernel()
    with big.loop(1 << 14, dst=1):
        big.uop(0)
    with pytest.raises(RuntimeAPIError, match="iter_out=16384 does not fit"):
        rt.gemm(big)


def test_a_dropped_pop_is_caught_by_the_simulator():
    """Corrupt a correct program by clearing one pop flag: the simulator refuses it."""
    cfg_name = "1x8x8"
    rt = Runtime(cfg_name)
    m, k, n = SHAPES[cfg_name]
    a, w = random_operands(rt.cfg, m, k, n)
    blocked_gemm(rt, a, w, vthreads=2, tiles=(1, 2))
    prog = rt.last_program
    victim = next(i for i, insn in enumerate(prog.instructions) if isinstance(insn, isa.GemmInsn) and insn.pop_prev)
    word = int.from_bytes(prog.image[prog.insn_addr + 16 * victim:][:16].tobytes(), "little")
    image = prog.image.copy()
    image[prog.insn_addr + 16 * victim:][:16] = np.frombuffer((word & ~(1 << 3)).to_bytes(16, "little"), np.uint8)
    with pytest.raises((HazardError, DeadlockError)) as info:
        Simulator(cfg_name).run(image, insn_addr=prog.insn_addr, insn_count=prog.insn_count)
    assert info.value.index is not None


def test_buffers_are_aligned_to_their_element_size():
    """An 8x8x8 ACC element is 256 B: a buffer after a small one must still start on an element."""
    rt = Runtime("8x8x8")
    rt.array(np.ones((1, 8, 8), np.int8), "inp")                 # 64 B
    bias = np.arange(2 * 8 * 8, dtype=np.int32).reshape(2, 8, 8)
    acc = rt.array(bias, "acc")
    assert acc.byte_addr % acc.elem_bytes == 0
    assert np.array_equal(acc.numpy(), bias)


def test_backends_come_from_entry_points():
    """`rtl` is found through the vta_sim.backends entry point, not named inside vta_sim."""
    from importlib.metadata import entry_points

    from vta_sim import backends
    from vta_sim.errors import VTAError
    assert "rtl" in {ep.name for ep in entry_points(group=backends.GROUP)}
    assert backends.names()[0] == "sim" and "rtl" in backends.names()
    with pytest.raises(VTAError, match="unknown backend 'fpga'.*entry point"):
        backends.get_backend("fpga")
