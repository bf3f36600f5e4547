"""The tensorised int8 builds (x86 dot-product intrinsic) are exact and really use it."""
import numpy as np
import pytest
import tvm

from baselines import cpu_schedules, cpu_tensorised, workloads

pytestmark = pytest.mark.skipif("avx2" not in cpu_tensorised.host_flags(),
                                reason="host CPU has no AVX2")

INT8 = [  # columns divisible by 16 and reductions by 4: both the AVX2 and the VNNI tiling apply
    workloads.gemm(20, 32, 24, "int8"),
    workloads.conv2d(1, 8, 6, 7, 16, 3, 3, 1, 1, "int8"),
    workloads.conv2d(1, 4, 9, 9, 16, 3, 3, 2, 1, "int8"),
    workloads.conv1d(2, 4, 12, 16, 3, 1, 1, "int8"),
    workloads.dwsep(1, 4, 5, 5, 16, "int8"),
    # reductions longer than AVX2's 128-element blocks: the accumulator tile carried across them
    workloads.gemm(16, 64, 512, "int8"),
    workloads.conv2d(1, 32, 5, 5, 64, 3, 3, 1, 1, "int8"),
]


@pytest.mark.parametrize("isa", ["avx2", "vnni_layout"])
@pytest.mark.parametrize("wl", INT8, ids=lambda w: w.name)
def test_tensorised_verifies(wl, isa):
    """avx2 runs VPMADDWD; vnni_layout is the VNNI schedule (uint8 shift, correction, 16x4
    packing) with a plain-loop dot, so it verifies on hosts without VNNI."""
    inputs = wl.random_inputs(seed=5)
    f = tvm.compile(cpu_tensorised.tensorised_module(wl, isa), target=cpu_schedules.cpu_target())
    out = tvm.runtime.tensor(np.zeros(wl.output_shape, wl.out_dtype))
    f(*[tvm.runtime.tensor(a) for a in inputs], out)
    np.testing.assert_array_equal(out.numpy(), wl.reference(inputs))


def test_extreme_values_do_not_saturate():
    """-128 * -128 pairs: the VPMADDWD path is exact where VPMADDUBSW would saturate."""
    wl = workloads.gemm(8, 16, 64, "int8")
    a = np.full((8, 64), -128, np.int8)
    b = np.full((64, 16), -128, np.int8)
    f = tvm.compile(cpu_tensorised.tensorised_module(wl), target=cpu_schedules.cpu_target())
    out = tvm.runtime.tensor(np.zeros((8, 16), np.int32))
    f(tvm.runtime.tensor(a), tvm.runtime.tensor(b), out)
    assert (out.numpy() == 64 * 128 * 128).all()


def test_machine_code_uses_the_dot_instruction():
    wl = INT8[1]
    f = tvm.compile(cpu_tensorised.tensorised_module(wl), target=cpu_schedules.cpu_target())
    # The AVX2 intrinsic is vpmaddwd + vpaddd; on a host with AVX-512 VNNI, LLVM fuses the pair
    # into vpdpwssd. Either is the dot instruction; scalar multiplies are not.
    source = f.mod.inspect_source("s")
    assert "vpmaddwd" in source or "vpdpwssd" in source
    vnni = tvm.compile(cpu_tensorised.tensorised_module(wl, "vnni"), target=cpu_tensorised.vnni_target())
    assert "vpdpbusd" in vnni.mod.inspect_source("s")


@pytest.mark.skipif("avx512_vnni" not in cpu_tensorised.host_flags(), reason="host has no VNNI")
def test_vnni_runs_where_present():
    wl = INT8[0]
    inputs = wl.random_inputs(seed=6)
    f = tvm.compile(cpu_tensorised.tensorised_module(wl, "vnni"), target=cpu_schedules.cpu_target())
    out = tvm.runtime.tensor(np.zeros(wl.output_shape, wl.out_dtype))
    f(*[tvm.runtime.tensor(a) for a in inputs], out)
    np.testing.assert_array_equal(out.numpy(), wl.reference(inputs))


def test_bad_requests_are_refused():
    with pytest.raises(ValueError, match="int8"):
        cpu_tensorised.tensorised_module(workloads.gemm(8, 8, 8, "fp32"))
    with pytest.raises(ValueError, match="accepted: avx2, vnni, vnni_layout"):
        cpu_tensorised.tensorised_module(workloads.gemm(8, 8, 8), "sse")
    with pytest.raises(ValueError, match=r"columns \(24\) divisible by 16 and its reduction \(6\) by 4"):
        cpu_tensorised.tensorised_module(workloads.gemm(8, 24, 6), "vnni")
    with pytest.raises(ValueError, match="the u8 operand form exists for int8 workloads"):
        workloads.gemm(8, 8, 8, "fp32").prim_func("u8")
    with pytest.raises(ValueError, match="unknown operand form 'i4'; accepted: int8, u8, i16"):
        workloads.gemm(8, 8, 8).prim_func("i4")


def test_row_blocks_run_in_parallel_and_sweep_the_columns():
    """The cache-blocked loop nest: parallel row blocks outside the column tiles."""
    wl = workloads.gemm(256, 64, 32, "int8")
    script = cpu_tensorised.tensorised_module(wl).script()
    assert "T.parallel(4)" in script  # 256 rows / 64-row blocks
