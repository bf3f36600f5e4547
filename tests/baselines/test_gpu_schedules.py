"""The CUDA schedules: source generated and checked everywhere; run and verified on a GPU."""
import re

import numpy as np
import pytest
import tvm

from baselines import gpu_schedules, workloads

WORKLOADS = [
    workloads.gemm(64, 48, 40, "int8"),
    workloads.gemm(64, 64, 32, "fp32"),
    workloads.conv2d(1, 8, 10, 10, 16, 3, 3, 1, 1, "int8"),
    workloads.conv2d(1, 8, 9, 9, 16, 3, 3, 2, 1, "fp32"),
    workloads.conv1d(2, 8, 20, 16, 3, 1, 1, "int8"),
    workloads.dwsep(1, 8, 8, 8, 16, "int8"),
    workloads.dwsep(1, 8, 8, 8, 16, "fp32"),
]


@pytest.mark.parametrize("wl", WORKLOADS, ids=lambda w: w.name)
def test_cuda_source(wl):
    mod = gpu_schedules.schedule(wl)
    src = gpu_schedules.cuda_source(mod)
    assert "__global__" in src and "__shared__" in src
    assert "threadIdx.x" in src and "threadIdx.y" in src
    for bound in re.findall(r"__launch_bounds__\((\d+)\)", src):
        assert 1 <= int(bound) <= 1024


@pytest.mark.parametrize("wl", WORKLOADS, ids=lambda w: w.name)
def test_cuda_kernel_matches_the_reference_on_a_gpu(wl):
    status = gpu_schedules.gpu_status()
    if not status.usable:
        pytest.skip(f"no usable GPU: {status.reason}")
    mod = gpu_schedules.schedule(wl)
    inputs = wl.random_inputs()
    dev = tvm.cuda()
    f = gpu_schedules.build(mod)
    out = tvm.runtime.tensor(np.zeros(wl.output_shape, wl.out_dtype), device=dev)
    f(*[tvm.runtime.tensor(a, device=dev) for a in inputs], out)
    ref = wl.reference(inputs)
    if wl.dtype == "int8":
        np.testing.assert_array_equal(out.numpy(), ref)
    else:
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("wl", WORKLOADS, ids=lambda w: w.name)
def test_each_thread_writes_back_only_its_own_tile(wl):
    """The copy-out of a thread's accumulators (`<block>_local`) covers exactly the elements it
    accumulated (`<block>_init` sets them): a copy-out over the tile's bounding box would write
    other threads' outputs from registers never set. Runs on any host."""
    from tvm import s_tir

    sch = s_tir.Schedule(gpu_schedules.schedule(wl))

    def per_thread(name):
        loops = [sch.get(l) for l in sch.get_loops(sch.get_sblock(name))]
        serial = [l for l in loops if l.thread_binding is None]
        assert all(isinstance(l.extent, tvm.tirx.IntImm) for l in serial), \
            f"{name}: extents {[str(l.extent) for l in serial]} vary with the thread"
        return int(np.prod([int(l.extent) for l in serial]))

    for view in wl.views:
        assert per_thread(f"{view.block}_local") == per_thread(f"{view.block}_init")
