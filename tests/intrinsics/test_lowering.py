"""Lowering of scheduled TIR to runtime calls: instruction mix, folded loops, tokens, SRAM plan."""
import json

import numpy as np
import pytest
import tvm

from intrinsics import host, lower
from intrinsics.build import attach_config
from intrinsics.deps import DependencyTracker
from requantisation import PowerOfTwo
from schedules import vta_conv2d as vc
from schedules import vta_workloads as wl
from vta_sim import isa
from vta_sim import packing as pk
from vta_sim.config import MEM_INP, MEM_OUT, MEM_UOP, MEM_WGT, Config
from vta_sim.errors import CompileError, DeadlockError, HazardError, VTAError
from vta_sim.simulator import Simulator

CFG = Config.load("1x8x8")
SHAPE = vc.ConvShape(1, 8, 8, 32, 16, 3, 1, 1)          # 4 input-channel blocks, 2 output blocks
TILES = vc.ConvTiles(oc_blocks=1, rows=4, ic_blocks=2)  # 2 x 2 tiles, 2 reduction chunks each
SHIFT = 8


def _inputs(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (shape.n, shape.ic, shape.h, shape.w), dtype=np.int8)
    w = rng.integers(-128, 128, (shape.oc, shape.ic, shape.k, shape.k), dtype=np.int8)
    b = rng.integers(-4096, 4096, (shape.oc,), dtype=np.int32)
    return x, w, b


@pytest.fixture(scope="module")
def conv_run():
    kernel = vc.CONV2D.build(CFG, SHAPE, TILES, SHIFT)
    x, w, b = _inputs(SHAPE)
    inputs = (pk.pack_nchw(x, 1, 8), pk.pack_oihw(w, 8, 8), pk.pack_bias(b, 1, 8))
    (out,), result = kernel(*inputs)
    ref = wl.conv2d_ref(x, w, b, SHAPE.pad, SHAPE.stride, SHIFT)
    return kernel, pk.unpack_nchw(out), ref, result, kernel.program.program(inputs)


def _kind(insn):
    if isinstance(insn, isa.MemInsn):
        return ("LOAD" if insn.opcode == isa.OP_LOAD else "STORE", insn.memory_type)
    return type(insn).__name__


def test_compiled_conv_matches_numpy(conv_run):
    _, got, ref, _, _ = conv_run
    assert np.array_equal(got, ref)


def test_instruction_mix(conv_run):
    _, _, _, _, program = conv_run
    insns = [i for i in program.instructions if not (isinstance(i, isa.MemInsn) and i.x_size == 0)]
    kinds = [_kind(i) for i in insns]
    tiles = (SHAPE.oc // 8 // TILES.oc_blocks) * (SHAPE.oh // TILES.rows)
    chunks = SHAPE.ic // 8 // TILES.ic_blocks
    gemms = [i for i in insns if isinstance(i, isa.GemmInsn) and not i.reset]
    assert len(gemms) == tiles * chunks                              # one GEMM per chunk
    assert sum(isinstance(i, isa.GemmInsn) and i.reset for i in insns) == tiles
    assert kinds.count(("LOAD", MEM_WGT)) == tiles * chunks           # one weight DMA per chunk
    assert kinds.count(("LOAD", MEM_INP)) == tiles * chunks * TILES.ic_blocks  # one per channel block
    assert kinds.count(("STORE", MEM_OUT)) == tiles
    assert sum(isinstance(i, isa.AluInsn) for i in insns) == 4 * tiles  # add, shr, max, min
    assert isinstance(program.instructions[-1], isa.FinishInsn)


def test_gemm_loops_fold_into_iter_out_and_iter_in(conv_run):
    _, _, _, _, program = conv_run
    gemm = next(i for i in program.instructions if isinstance(i, isa.GemmInsn) and not i.reset)
    padded_w = SHAPE.w + 2 * SHAPE.pad
    assert (gemm.iter_out, gemm.iter_in) == (TILES.rows, SHAPE.ow)
    assert (gemm.dst_factor_out, gemm.dst_factor_in) == (SHAPE.ow, 1)
    assert (gemm.src_factor_out, gemm.src_factor_in) == (SHAPE.stride * padded_w, SHAPE.stride)
    assert gemm.uop_end - gemm.uop_bgn == TILES.oc_blocks * TILES.ic_blocks * SHAPE.k * SHAPE.k


def test_one_uop_kernel_is_reused_across_tiles(conv_run):
    _, _, _, _, program = conv_run
    uop_loads = [i for i in program.instructions if isinstance(i, isa.MemInsn)
                 and i.opcode == isa.OP_LOAD and i.memory_type == MEM_UOP]
    gemms = [i for i in program.instructions if isinstance(i, isa.GemmInsn) and not i.reset]
    assert {(g.uop_bgn, g.uop_end) for g in gemms} == {(gemms[0].uop_bgn, gemms[0].uop_end)}
    # uploaded once for all tiles: the GEMM kernel, the bias-add kernel (dst + src) and one
    # dst-only kernel that reset, shr, max and min share (the runtime caches by content)
    assert len(uop_loads) == 3
    assert len(gemms) == 8


def test_tokens_balance_and_every_push_has_its_pop(conv_run):
    _, _, _, _, program = conv_run
    queues = {"l2c": [0, 0], "c2l": [0, 0], "c2s": [0, 0], "s2c": [0, 0]}
    for insn in program.instructions:
        module = isa.module_of(insn)
        if module == "load":
            queues["l2c"][0] += insn.push_next
            queues["c2l"][1] += insn.pop_next
        elif module == "compute":
            queues["c2l"][0] += insn.push_prev
            queues["c2s"][0] += insn.push_next
            queues["l2c"][1] += insn.pop_prev
            queues["s2c"][1] += insn.pop_next
        elif module == "store":
            queues["s2c"][0] += insn.push_prev
            queues["c2s"][1] += insn.pop_prev
    assert all(push == pop > 0 for push, pop in queues.values()), queues


def test_dropping_one_pop_is_caught_by_the_simulator(conv_run):
    _, _, _, _, program = conv_run
    insns = [i.replace() for i in program.instructions]
    victim = next(k for k, i in enumerate(insns) if isinstance(i, isa.GemmInsn) and i.pop_prev)
    insns[victim].pop_prev = 0
    image = program.image.copy()
    code = np.frombuffer(isa.encode_program(insns, CFG), dtype=np.uint8)
    image[program.insn_addr:program.insn_addr + code.size] = code
    with pytest.raises((HazardError, DeadlockError), match="token"):
        Simulator(CFG).run(image, insn_addr=program.insn_addr, insn_count=program.insn_count)


def test_lowered_tir_calls_the_runtime_with_no_loops_around_micro_ops():
    mod = vc.schedule(CFG, SHAPE, TILES, PowerOfTwo(SHIFT))
    text = lower.lower(attach_config(mod["main"], CFG)).script()
    assert "vta.uop_push" not in text
    for call in ("vta.begin", "vta.load_2d", "vta.gemm", "vta.alu", "vta.store_2d", "vta.end"):
        assert f'"{call}"' in text


def test_vthreads_get_private_sram_slices():
    two = vc.ConvTiles(oc_blocks=1, rows=2, ic_blocks=2, vthreads=2, split="h")
    mod = vc.schedule(CFG, SHAPE, two, PowerOfTwo(SHIFT))
    peak = lower.lower(attach_config(mod["main"], CFG))["main"].attrs["vta.sram_peak"]
    one = vc.schedule(CFG, SHAPE, vc.ConvTiles(1, 2, 2), PowerOfTwo(SHIFT))
    peak_one = lower.lower(attach_config(one["main"], CFG))["main"].attrs["vta.sram_peak"]
    assert {k: 2 * v for k, v in json.loads(str(peak_one)).items()} == json.loads(str(peak))


def test_tracker_pairs_each_consumer_with_its_own_producer():
    deps = DependencyTracker()
    deps.add("load", writes=[("inp", 0, 10)])       # thread 0 input
    deps.add("load", writes=[("inp", 10, 20)])      # thread 1 input
    deps.add("compute", reads=[("inp", 0, 10)])     # thread 0 GEMM waits for load #1 only
    deps.add("compute", reads=[("inp", 10, 20)])    # thread 1 GEMM waits for load #2
    deps.add("load", writes=[("inp", 0, 10)])       # reuse of slice 0 waits for compute #1
    assert deps.pops == [[], [], [("load", "compute")], [("load", "compute")], [("compute", "load")]]
    assert deps.pushes == {("load", 1): [("load", "compute")], ("load", 2): [("load", "compute")],
                           ("compute", 1): [("compute", "load")]}


def test_a_store_loaded_back_is_ordered_through_the_compute_op_between():
    """Load and store share no token queue: a load of DRAM the program stored waits for the
    first compute op that waits for the store (here the ACC load of the same range), and a
    store over DRAM that a load read waits for a compute op that waited for that load."""
    deps = DependencyTracker()
    deps.add("compute", writes=[("acc", 0, 8)])                          # 1: the tile
    deps.add("store", reads=[("acc", 0, 8)], writes=[("dram", 0, 64)])  # 1: to the scratch
    deps.add("compute", reads=[("dram", 0, 8)], writes=[("acc", 9, 10)])  # 2: waits for the store
    deps.add("load", reads=[("dram", 0, 64)], writes=[("wgt", 0, 1)])   # 1: relayed through compute 2
    deps.add("compute", reads=[("wgt", 0, 1)], writes=[("acc", 10, 18)])  # 3: waits for the load
    deps.add("store", reads=[("acc", 20, 28)], writes=[("dram", 0, 64)])  # 2: relayed through compute 3
    assert deps.pops == [[], [("compute", "store")], [("store", "compute")], [("compute", "load")],
                         [("load", "compute")], [("compute", "store")]]
    assert deps.pushes[("compute", 2)] == [("compute", "load")]
    assert deps.pushes[("compute", 3)] == [("compute", "store")]
    bare = DependencyTracker()
    bare.add("store", writes=[("dram", 0, 64)])
    with pytest.raises(CompileError, match="no compute op between them"):
        bare.add("load", reads=[("dram", 0, 64)], writes=[("wgt", 0, 1)])


def test_a_program_that_overflows_the_sram_is_refused_before_running():
    big = vc.ConvShape(1, 56, 56, 64, 64, 3, 1, 1)
    with pytest.raises(CompileError, match="INP"):
        vc.CONV2D.build(CFG, big, vc.ConvTiles(oc_blocks=8, rows=56, ic_blocks=8), SHIFT)


def test_the_artefact_is_an_ordinary_tvm_module_that_records_its_calls():
    """The TVM module, run with tensors under `host.record`, makes the calls the kernel's program
    was built from; outside a recording its `vta.*` calls refuse (a call of the kernel never
    reaches them)."""
    shape = vc.ConvShape(1, 4, 4, 8, 8, 1, 0, 1)
    kernel = vc.CONV2D.build(CFG, shape, vc.ConvTiles(1, 4, 1), 3)
    recording = host.record(kernel.module, kernel.params)
    assert recording == kernel.program.recording
    assert [c.NAME for c in recording.calls].count("vta.store_2d") >= 1
    args = [tvm.runtime.tensor(np.zeros(s, d)) for _, s, d in kernel.params]
    with pytest.raises(Exception, match="outside a recording"):
        kernel.module["main"](*args)


def test_a_runtime_refusal_inside_the_compiled_code_keeps_its_type():
    shape = vc.ConvShape(1, 4, 4, 8, 8, 1, 0, 1)
    kernel = vc.CONV2D.build(CFG, shape, vc.ConvTiles(1, 4, 1), 3)
    x, w, b = _inputs(shape)
    with pytest.raises(VTAError, match="unknown backend 'nope'"):
        kernel(pk.pack_nchw(x, 1, 8), pk.pack_oihw(w, 8, 8), pk.pack_bias(b, 1, 8), backend="nope")


def test_vta_pipeline_is_registered_not_patched_into_tvm():
    """tvm.compile finds "vta" through register_tir_pipeline; outside Lowering.compile it refuses
    (it has no configuration), and TVM's own pipelines are never replaced."""
    from tvm.tirx import compilation_pipeline
    before = {k: v for k, v in compilation_pipeline.PIPELINE_MAP.items() if k != lower.PIPELINE}
    with pytest.raises(CompileError, match="only inside Lowering.compile"):
        compilation_pipeline.get_tir_pipeline(lower.PIPELINE)
    assert {k: v for k, v in compilation_pipeline.PIPELINE_MAP.items() if k != lower.PIPELINE} == before
