"""Compile once, run many: a kernel's program is recorded when it is compiled and every call runs
it (intrinsics.host, intrinsics.recorded), with no state outside the kernel."""
import importlib

import numpy as np
import pytest

from intrinsics import host, recorded
from intrinsics.host import ProgramBuilder
from requantisation.add import add_ref
from schedules import vta_conv2d as vc
from schedules import vta_eltwise
from schedules import vta_workloads as wl
from vta_sim import isa
from vta_sim import packing as pk
from vta_sim.config import Config
from vta_sim.runtime import OutputView
from vta_sim.simulator import Simulator

CFG = Config.load("1x8x8")
SHAPE = vc.ConvShape(1, 8, 8, 32, 16, 3, 1, 1)
TILES = vc.ConvTiles(oc_blocks=1, rows=2, ic_blocks=2, vthreads=2, split="h")   # two threads: tokens
SHIFT = 8


def _conv_inputs(seed: int):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (SHAPE.n, SHAPE.ic, SHAPE.h, SHAPE.w), dtype=np.int8)
    w = rng.integers(-128, 128, (SHAPE.oc, SHAPE.ic, SHAPE.k, SHAPE.k), dtype=np.int8)
    b = rng.integers(-4096, 4096, (SHAPE.oc,), dtype=np.int32)
    return (x, w, b), (pk.pack_nchw(x, 1, 8), pk.pack_oihw(w, 8, 8), pk.pack_bias(b, 1, 8))


@pytest.fixture(scope="module")
def conv():
    return vc.CONV2D.build(CFG, SHAPE, TILES, SHIFT)


def test_the_recorded_image_is_the_image_built_with_the_data(conv):
    """The program a call runs (the recorded code, the inputs written at their regions) is, byte
    for byte, the one built from the calls with the data in the runtime's buffers, as the host
    built it at every call; the calls themselves do not depend on the data."""
    _, packed = _conv_inputs(1)
    data = list(packed) + [None]
    builder = ProgramBuilder(CFG, conv.params, conv.program.kinds, data=data)
    builder_calls = host.record(conv.module, conv.params).calls
    for call in builder_calls:
        builder.add(call)
    built = builder.build()
    ours = conv.program.program(packed)
    assert np.array_equal(ours.image, built.image)
    assert (ours.insn_addr, ours.insn_count) == (built.insn_addr, built.insn_count)
    assert isa.encode_program(ours.instructions, CFG) == isa.encode_program(built.instructions, CFG)
    as_sets = [tuple(map(set, op)) for op in builder.tokens]
    assert as_sets == [tuple(map(set, op)) for op in conv.program.tokens] and any(p for p, _ in as_sets)
    assert conv.program.calls == builder_calls


def test_a_call_runs_the_recorded_program_without_the_tvm_module(conv):
    """Once compiled, the TVM module is not needed: calls give the numpy reference, the same
    cycles each time, and each output is a fresh array."""
    (x, w, b), packed = _conv_inputs(2)
    want = wl.conv2d_ref(x, w, b, SHAPE.pad, SHAPE.stride, SHIFT)
    module, conv.module = conv.module, None
    try:
        (first,), r1 = conv(*packed)
        (second,), r2 = conv(*packed)
    finally:
        conv.module = module
    assert np.array_equal(pk.unpack_nchw(first), want) and np.array_equal(first, second)
    assert first is not second and r1.cycles == r2.cycles > 0 and r1.stats == r2.stats
    direct = Simulator(CFG).run(conv.program.image(packed), conv.program.insn_addr, len(conv.program.instructions))
    assert direct.cycles == r1.cycles and np.array_equal(direct.dram, r1.dram)


def test_a_view_layout_is_built_once_and_stores_only_its_slice():
    kernel = vta_eltwise.add_kernel(CFG, 1, 8, 4, 4, 1, 0, 1)
    rng = np.random.default_rng(0)
    a, b = (rng.integers(-128, 128, (1, 8, 4, 4), dtype=np.int8) for _ in range(2))
    want = add_ref(a, b, 1, 0, 1)
    compiled = kernel.kernel
    for block in (0, 2, 2):
        tensor = np.full((1, 3, 4, 4, 1, 8), 77, np.int8)
        y, _ = kernel(a, b, out=OutputView(tensor, block * 4 * 4 * 8))
        assert np.array_equal(y, want) and np.array_equal(pk.unpack_nchw(tensor[:, block:block + 1]), want)
        assert (np.delete(tensor, block, axis=1) == 77).all()
    assert len(compiled.placed) == 2
    plain, _ = kernel(a, b)
    assert np.array_equal(plain, want)


#: What the host kept between calls before programs were recorded (docs/history.md).
GONE = ("HOST", "Host", "last_result", "last_program", "last_views", "take_error", "options")
MODULES = ("intrinsics.host", "intrinsics.build", "intrinsics.recorded", "intrinsics.calls",
           "intrinsics.deps", "intrinsics.lower", "intrinsics.program", "intrinsics.dma",
           "schedules.op_kernel", "vta_sim.runtime", "vta_sim.backends", "vta_sim.simulator")


def _globals(name: str) -> dict:
    """A module's globals: containers by value (copied), everything else by identity."""
    out = {}
    for key, value in vars(importlib.import_module(name)).items():
        if isinstance(value, (dict, list, set, bytearray)):
            out[key] = repr(value)
        else:
            out[key] = id(value)
    return out


def test_no_host_state_outside_the_kernel(conv):
    """No global host, no result through a global: running kernels (plain, into a view, traced,
    refused) leaves every module of the host path as it found it, and nothing is recording."""
    for name in MODULES:
        assert not set(GONE) & set(vars(importlib.import_module(name))), name
    add = vta_eltwise.add_kernel(CFG, 1, 8, 4, 4, 1, 0, 1)
    before = {name: _globals(name) for name in MODULES}
    _, packed = _conv_inputs(3)
    conv(*packed)
    conv(*packed, trace=True)
    with pytest.raises(Exception, match="unknown backend"):
        conv(*packed, backend="nope")
    zeros = np.zeros((1, 8, 4, 4), np.int8)
    add(zeros, zeros, out=OutputView(np.zeros((1, 2, 4, 4, 1, 8), np.int8), 4 * 4 * 8))
    assert {name: _globals(name) for name in MODULES} == before
    assert host._RECORDER.get(None) is None
    assert recorded.KernelProgram.__dataclass_params__.frozen
