"""Compiled packed dense (GEMM) on the simulator against numpy int64, on both configs."""
import numpy as np
import pytest

from cost_model import assert_cycles_follow_the_model
from vta_sim.errors import CompileError
from schedules import vta_dense as vd
from vta_sim import packing as pk
from vta_sim.errors import MappingError
from schedules import vta_workloads as wl
from vta_sim.config import Config


def _run(config, shape, tiles, shift=10, seed=1):
    cfg = Config.load(config)
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (shape.m, shape.k), dtype=np.int8)
    w = rng.integers(-128, 128, (shape.n, shape.k), dtype=np.int8)
    b = rng.integers(-30000, 30000, (shape.n,), dtype=np.int32)
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    (out,), result = vd.DENSE.build(cfg, shape, tiles, shift)(
        pk.pack_rows(a, B, BI, "data"), pk.pack_rows(w, BO, BI, "weight"), pk.pack_bias(b, B, BO))
    return pk.unpack_rows(out), wl.dense_ref(a, w, b, shift), result


@pytest.mark.parametrize("config,shape,tiles", [
    ("1x8x8", vd.DenseShape(1, 64, 32), vd.DenseTiles(1, 2, 4)),
    ("1x8x8", vd.DenseShape(3, 48, 24), vd.DenseTiles(3, 1, 6)),
    ("8x8x8", vd.DenseShape(16, 64, 32), vd.DenseTiles(1, 2, 4)),
    ("8x8x8", vd.DenseShape(16, 32, 16), vd.DenseTiles(1, 1, 2, 2, "m")),
])
def test_dense_matches_numpy(config, shape, tiles):
    got, ref, _ = _run(config, shape, tiles)
    assert np.array_equal(got, ref)


def test_virtual_threads_change_cycles_not_results():
    cfg = Config.load("1x8x8")
    shape = vd.DenseShape(1, 128, 64)
    t1, t2 = vd.DenseTiles(1, 4, 4, 1), vd.DenseTiles(1, 2, 4, 2, "n")
    one, ref, r1 = _run("1x8x8", shape, t1)
    two, _, r2 = _run("1x8x8", shape, t2)
    assert np.array_equal(one, ref) and np.array_equal(two, ref)
    assert_cycles_follow_the_model(vd.DENSE, cfg, shape, [(t1, r1), (t2, r2)])


def test_shapes_that_cannot_be_mapped_are_refused():
    cfg = Config.load("8x8x8")
    # The packed workload takes whole blocks only; vta_dense pads before it gets there.
    with pytest.raises(CompileError, match="m \\(rows\\) = 4 is not a multiple of the block size 8"):
        wl.dense(cfg, 4, 64, 64, 4)
    with pytest.raises(CompileError, match="k \\(reduction\\) = 60"):
        wl.dense(cfg, 8, 60, 64, 4)
    with pytest.raises(CompileError, match="shift = 40"):
        wl.dense(cfg, 8, 64, 64, 40)
    with pytest.raises(CompileError, match="tile cols = 9 with 1 thread\\(s\\) exceeds the 8 column blocks"):
        vd.DENSE.check_tiles(cfg, vd.DenseShape(8, 64, 64), vd.DenseTiles(1, 9, 1))
    vd.DENSE.check_tiles(cfg, vd.DenseShape(8, 64, 64), vd.DenseTiles(1, 3, 1))     # a remainder tile is fine


def test_packing_round_trips_and_refuses_partial_blocks():
    rng = np.random.default_rng(0)
    m = rng.integers(-128, 128, (16, 24), dtype=np.int8)
    assert np.array_equal(pk.unpack_rows(pk.pack_rows(m, 8, 8, "x")), m)
    x = rng.integers(-128, 128, (8, 16, 3, 5), dtype=np.int8)
    assert np.array_equal(pk.unpack_nchw(pk.pack_nchw(x, 8, 8)), x)
    packed = pk.pack_oihw(rng.integers(-128, 128, (16, 8, 3, 3), dtype=np.int8), 8, 8)
    assert packed.shape == (2, 1, 3, 3, 8, 8)
    assert np.array_equal(pk.pack_bias(np.arange(16, dtype=np.int32), 8, 8)[1, 5], np.arange(8, 16))
    with pytest.raises(MappingError, match="use a multiple such as 16 or 24"):
        pk.pack_rows(m[:, :20], 8, 8, "x")


@pytest.mark.parametrize("config,m,k,n", [("1x8x8", 5, 20, 10), ("1x8x8", 16, 16, 16), ("8x8x8", 12, 24, 16)])
def test_the_row_term_is_added_to_every_column_of_its_row(config, m, k, n):
    """dense's row term (a matmul's zero-point correction): row[i] joins the accumulator of every
    column of row i before the bias and the requantisation; padded rows and lanes stay out."""
    from requantisation import multiply_shift, rule
    from schedules import vta_ops as vo
    cfg = Config.load(config)
    rng = np.random.default_rng(3)
    requant, mult = multiply_shift.choose(np.full(n, 0.0013), 3, -128, 127)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-5000, 5000, n).astype(np.int32)
    row = rng.integers(-40000, 40000, m).astype(np.int32)
    kernel = vo.dense_kernel(cfg, m, k, n, requant, row_term=True)
    got, _ = kernel(a, w, bias, mult, row)
    acc = a.astype(np.int64) @ w.astype(np.int64).T + bias + row[:, None]
    assert np.array_equal(got, rule.reference(acc, requant, (mult,), axis=-1))
    assert not np.array_equal(got, rule.reference(acc - row[:, None], requant, (mult,), axis=-1))


@pytest.mark.parametrize("m,vthreads,form", [(64, 2, "MultiplyShift"), (1, 2, "PowerOfTwo")])
def test_a_power_of_two_kernel_takes_the_cheaper_epilogue_and_stays_exact(m, vthreads, form):
    """vta_ops runs a PowerOfTwo as REQ (multipliers 1, the bias lowered) where the cycle model
    says that is cheaper, else as SHR, MAX and MIN: either way the rule's outputs."""
    from requantisation import PowerOfTwo, rule
    from schedules import vta_ops
    cfg = Config.load("1x8x8")
    k, n, r = 256, 64, PowerOfTwo(9, 0, 127)
    chosen = vta_ops.chosen_requant(cfg, vd.DENSE, vd.DenseShape(m, k, n), vthreads, None, r)
    assert type(chosen).__name__ == form
    rng = np.random.default_rng(m)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    w = rng.integers(-128, 128, (n, k)).astype(np.int8)
    bias = rng.integers(-20000, 20000, n).astype(np.int32)
    y, _ = vta_ops.dense_kernel(cfg, m, k, n, r, vthreads=vthreads)(a, w, bias)
    np.testing.assert_array_equal(y, rule.reference(wl.dense_acc(a, w, bias), r))
