"""Every CPU optimisation step of every workload computes exactly what numpy int64 computes."""
import numpy as np
import pytest
import tvm

from baselines import cpu_schedules, workloads

SMALL = [
    workloads.gemm(24, 32, 20, "int8"),
    workloads.gemm(16, 48, 12, "fp32"),
    workloads.conv2d(1, 6, 7, 9, 16, 3, 3, 1, 1, "int8"),
    workloads.conv2d(2, 4, 9, 9, 8, 3, 3, 2, 1, "fp32"),
    workloads.conv2d(1, 8, 8, 8, 16, 1, 1, 2, 0, "int8"),
    workloads.conv1d(2, 6, 17, 16, 3, 1, 1, "int8"),
    workloads.conv1d(1, 4, 16, 8, 5, 2, 2, "fp32"),
    workloads.dwsep(1, 8, 6, 6, 16, "int8"),
    workloads.dwsep(1, 4, 5, 5, 8, "fp32"),
]
VARIANTS = ["scalar", *cpu_schedules.STEPS]


def run(mod, wl, inputs):
    f = tvm.compile(mod, target=cpu_schedules.cpu_target())
    out = tvm.runtime.tensor(np.zeros(wl.output_shape, wl.out_dtype))
    f(*[tvm.runtime.tensor(a) for a in inputs], out)
    return out.numpy()


def check(out, ref, dtype):
    if dtype == "int8":
        np.testing.assert_array_equal(out, ref)
    else:
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("wl", SMALL, ids=lambda w: w.name)
def test_every_step_verifies(wl):
    inputs = wl.random_inputs(seed=3)
    copies = [a.copy() for a in inputs]
    ref = wl.reference(inputs)
    for variant in VARIANTS:
        mod = cpu_schedules.scalar(wl) if variant == "scalar" else cpu_schedules.step_module(wl, variant)
        check(run(mod, wl, inputs), ref, wl.dtype)
    for a, b in zip(inputs, copies):
        np.testing.assert_array_equal(a, b)  # the caller's data is never modified


def test_steps_change_the_schedule():
    """Each step really transforms the TIR (no step is a silent no-op on GEMM)."""
    wl = workloads.gemm(32, 32, 32, "fp32")
    scripts = [cpu_schedules.scalar(wl).script()] + [
        cpu_schedules.step_module(wl, s).script() for s in cpu_schedules.STEPS]
    assert len(set(scripts)) == len(scripts)
    final = scripts[-1]
    for marker in ("T.vectorized", "T.parallel", "T.unroll", '"local"', "B_global"):
        assert marker in final


def test_int8_reference_is_exact_against_loops():
    """The im2col-based reference against a direct triple loop (an independent formula)."""
    wl = workloads.conv2d(1, 3, 5, 6, 4, 3, 2, 2, 1, "int8")
    x, w = wl.random_inputs(seed=1)
    N, K, OH, OW = wl.output_shape
    xp = np.pad(x.astype(np.int64), [(0, 0), (0, 0), (1, 1), (1, 1)])
    want = np.zeros(wl.output_shape, np.int64)
    for k in range(K):
        for y in range(OH):
            for xx in range(OW):
                want[0, k, y, xx] = (xp[0, :, 2 * y:2 * y + 3, 2 * xx:2 * xx + 2] * w[k]).sum()
    np.testing.assert_array_equal(wl.reference([x, w]), want.astype(np.int32))


def test_dwsep_int8_requantises_like_shift_and_clip():
    wl = workloads.dwsep(1, 2, 3, 3, 2, "int8")
    x, dw, pw = wl.random_inputs(seed=2)
    xp = np.pad(x.astype(np.int64), [(0, 0), (0, 0), (1, 1), (1, 1)])
    d = np.zeros((1, 2, 3, 3), np.int64)
    for c in range(2):
        for y in range(3):
            for xx in range(3):
                d[0, c, y, xx] = (xp[0, c, y:y + 3, xx:xx + 3] * dw[c]).sum()
    d = np.clip(d >> workloads.DWSEP_SHIFT, -128, 127)
    want = np.einsum("nchw,kc->nkhw", d, pw.astype(np.int64))
    np.testing.assert_array_equal(wl.reference([x, dw, pw]), want.astype(np.int32))


@pytest.mark.parametrize("extent,target", [(1024, 4), (49, 4), (7, 4), (14, 16), (3, 4), (1, 8)])
def test_pick_factor_divides(extent, target):
    f = cpu_schedules.pick_factor(extent, target)
    assert extent % f == 0 and 1 <= f <= max(extent, 1)


def test_bad_input_is_refused_with_names():
    with pytest.raises(ValueError, match="unknown CPU step 'fast'"):
        cpu_schedules.step_module(SMALL[0], "fast")
    with pytest.raises(ValueError, match="accepted: int8, fp32"):
        workloads.gemm(4, 4, 4, "int4")
    with pytest.raises(ValueError, match="positive integers"):
        workloads.gemm(0, 4, 4)
    with pytest.raises(ValueError, match="does not fit"):
        workloads.conv2d(1, 1, 2, 2, 1, 5, 5)
    with pytest.raises(ValueError, match="resnet18.C5"):
        workloads.conv2d_layer("resnet18.C99")


@pytest.mark.parametrize("flags,tile", [({"avx512f", "avx2", "fma"}, (8, 32)),
                                        ({"avx2", "fma"}, (4, 16)), (set(), (4, 8))])
def test_tiling_follows_the_vector_width(flags, tile):
    """The register tile: 2 vectors of columns, half the vector registers as accumulators."""
    t = cpu_schedules.host_tiling(flags)
    assert (t.rows, t.cols) == tile


def test_default_steps_use_the_host_tiling():
    wl = workloads.gemm(64, 64, 64, "fp32")
    t = cpu_schedules.host_tiling()
    assert cpu_schedules.step_module(wl, "parallel").script() == \
        cpu_schedules.step_module(wl, "parallel", t).script()
    assert f"T.vectorized({t.cols})" in cpu_schedules.step_module(wl, "vectorized").script()


def _parallel_extents(mod):
    """Extents of the parallel loops of the GEMM's compute block (not the pack copy's)."""
    from tvm import s_tir

    sch = s_tir.Schedule(mod)
    loops = [sch.get(l) for l in sch.get_loops(sch.get_sblock("C_update"))]
    return [int(l.extent) for l in loops if l.kind == tvm.tirx.ForKind.PARALLEL]


def test_parallel_step_gives_each_core_whole_column_panels():
    """Many panels: the cores split the column tiles only (each sweeps whole panels); one panel:
    the row tiles join so every core has work."""
    from tvm import s_tir

    tiling = cpu_schedules.Tiling(rows=4, cols=16, red=8)
    wide = workloads.gemm(8, 2048, 8, "fp32")           # 128 panels of 16 columns, 2 row tiles
    sch = s_tir.Schedule(cpu_schedules.scalar(wide))
    assert _parallel_extents(cpu_schedules.apply_steps(sch, wide, "parallel", tiling).mod) == [128]
    narrow = workloads.gemm(64, 16, 32, "fp32")         # one panel, 16 row tiles
    sch = s_tir.Schedule(cpu_schedules.scalar(narrow))
    assert _parallel_extents(cpu_schedules.apply_steps(sch, narrow, "parallel", tiling).mod) == [16]
