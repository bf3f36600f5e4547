"""Any-shape conv2d and dense through schedules.vta_ops, against the numpy int64 references.

Channels, batch and reduction that are not whole blocks, output rows and channel blocks that
are not whole tiles, batch tiles, 7x7 stride-2 convs, ReLU folded into the clip, and the
refusals at call time. Small shapes, on both configs (the `cfg` fixture).
"""
import numpy as np
import pytest

from vta_sim.errors import CompileError
from schedules import vta_conv2d as vc
from schedules import vta_dense as vd
from requantisation import PowerOfTwo
from schedules import vta_ops as vo
from schedules import vta_workloads as wl
from schedules.layers import get_layer
from vta_sim.config import Config


def _conv_inputs(n, h, w, ic, oc, k, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(-128, 128, (n, ic, h, w), dtype=np.int8),
            rng.integers(-128, 128, (oc, ic, k, k), dtype=np.int8),
            rng.integers(-3000, 3000, (oc,), dtype=np.int32))


def _conv(cfg, shape, requant=PowerOfTwo(8), vthreads=2, tiles=None):
    """Run conv2d `shape` (n, h, w, ic, oc, k, pad, stride); returns (output, reference, op)."""
    n, h, w, ic, oc, k, pad, stride = shape
    op = vo.conv2d_kernel(cfg, *shape, requant, vthreads, tiles)
    inputs = _conv_inputs(n, h, w, ic, oc, k)
    copies = [a.copy() for a in inputs]
    out, _ = op(*inputs)
    assert all(np.array_equal(a, c) for a, c in zip(inputs, copies))     # caller's arrays untouched
    ref = wl.conv2d_ref(*inputs, pad, stride, requant.shift, requant.lo, requant.hi)
    return out, ref, op


def _dense(cfg, m, k, n, requant=PowerOfTwo(4), vthreads=2, tiles=None):
    """Small operands and a small shift, so that a single stray unit in a padded lane shows."""
    rng = np.random.default_rng(1)
    a = rng.integers(-16, 16, (m, k), dtype=np.int8)
    w = rng.integers(-16, 16, (n, k), dtype=np.int8)
    b = rng.integers(-300, 300, (n,), dtype=np.int32)
    op = vo.dense_kernel(cfg, m, k, n, requant, vthreads, tiles)
    out, _ = op(a, w, b)
    return out, wl.dense_ref(a, w, b, requant.shift, requant.lo, requant.hi), op


@pytest.mark.parametrize("shape", [
    (1, 7, 7, 3, 10, 3, 1, 1),       # odd channels (ic 3 -> 8, oc 10 -> 16), odd size
    (3, 9, 11, 5, 12, 3, 1, 2),      # batch 3, 9x11, stride 2
    (1, 15, 15, 3, 8, 7, 3, 2),      # a 7x7 stride-2 stem on a small image
    (2, 9, 9, 3, 8, 1, 0, 2),        # strided 1x1 (row-subsampled input), 5 output rows
])
def test_conv2d_any_shape_matches_numpy(cfg, shape):
    out, ref, _ = _conv(cfg, shape)
    assert out.shape == ref.shape and np.array_equal(out, ref)


@pytest.mark.parametrize("tiles", [
    vc.ConvTiles(2, 4, 2, 1),                    # 3 oc blocks in 2s, 9 rows in 4s, 3 ic blocks in 2s
    vc.ConvTiles(1, 2, 1, 2, "h"),               # 2 threads on 9 rows: 12 computed
    vc.ConvTiles(2, 9, 1, 2, "oc"),              # 2 threads on 3 oc blocks: 4 computed
    vc.ConvTiles(1, 5, 1, 1, "h", 2),            # batch 3 in tiles of 2 blocks (1x8x8: 3 blocks)
])
def test_conv2d_remainder_tiles_match_numpy(tiles):
    cfg = Config.load("1x8x8")
    out, ref, op = _conv(cfg, (3, 9, 9, 24, 24, 3, 1, 1), tiles=tiles)
    assert op.tiles == tiles and np.array_equal(out, ref)


def test_batch_is_tiled_when_it_does_not_fit():
    cfg = Config.load("8x8x8")
    shape = vc.ConvShape(64, 14, 14, 64, 64, 3, 1, 1)          # 8 batch blocks
    t = vc.CONV2D.choose_tiles(cfg, shape, 2)
    assert t.batch_blocks < 8 and vc.fits(cfg, shape, t) is None
    out, ref, _ = _conv(cfg, (16, 5, 5, 8, 8, 3, 1, 1), tiles=vc.ConvTiles(1, 5, 1, 1, "h", 1))
    assert np.array_equal(out, ref)


@pytest.mark.parametrize("m,k,n", [(1, 512, 1000), (3, 20, 10), (13, 70, 17)])
def test_dense_any_shape_matches_numpy(cfg, m, k, n):
    out, ref, _ = _dense(cfg, m, k, n)
    assert out.shape == (m, n) and np.array_equal(out, ref)


@pytest.mark.parametrize("tiles", [vd.DenseTiles(2, 2, 3, 1), vd.DenseTiles(1, 1, 2, 2, "m"),
                                   vd.DenseTiles(3, 2, 4, 2, "n")])
def test_dense_remainder_tiles_match_numpy(tiles):
    out, ref, op = _dense(Config.load("1x8x8"), 5, 76, 35, tiles=tiles)
    assert op.tiles == tiles and np.array_equal(out, ref)


def test_relu_folds_into_the_clip(cfg):
    relu = PowerOfTwo(8, lo=0)
    out, ref, _ = _conv(cfg, (1, 7, 7, 3, 10, 3, 1, 1), relu)
    plain, _, _ = _conv(cfg, (1, 7, 7, 3, 10, 3, 1, 1))
    assert np.array_equal(out, ref) and out.min() == 0 and (plain < 0).any()
    assert np.array_equal(out, np.maximum(plain, 0))
    dense, dense_ref, _ = _dense(cfg, 3, 20, 10, PowerOfTwo(2, lo=0, hi=100))
    assert np.array_equal(dense, dense_ref) and dense.min() >= 0 and dense.max() <= 100


def test_two_threads_fall_back_to_one_where_they_cannot_help():
    cfg = Config.load("1x8x8")
    out, ref, op = _conv(cfg, (1, 3, 3, 3, 8, 3, 0, 1))          # one output row, one block
    assert op.tiles.vthreads == 1 and np.array_equal(out, ref)
    dense, dense_ref, op = _dense(cfg, 1, 8, 8)
    assert op.tiles.vthreads == 1 and np.array_equal(dense, dense_ref)


def test_call_time_refusals():
    cfg = Config.load("1x8x8")
    op = vo.conv2d_kernel(cfg, 1, 5, 5, 3, 10, 3, 1, 1, PowerOfTwo(8))
    x, w, b = _conv_inputs(1, 5, 5, 3, 10, 3)
    with pytest.raises(CompileError, match=r"conv2d input data: expected int8\[1, 3, 5, 5\], got int8\[1, 3, 5, 6\]"):
        op(np.zeros((1, 3, 5, 6), np.int8), w, b)
    with pytest.raises(CompileError, match=r"input weight: expected int8\[10, 3, 3, 3\], got float32"):
        op(x, w.astype(np.float32), b)
    with pytest.raises(CompileError, match=r"input bias: expected int32\[10\], got int64\[10\]"):
        op(x, w, b.astype(np.int64))
    with pytest.raises(CompileError, match=r"expected 3 inputs \(data, weight, bias\), got 2"):
        op(x, w)
    dense = vo.dense_kernel(cfg, 3, 20, 10, PowerOfTwo(8))
    with pytest.raises(CompileError, match=r"dense input data: expected int8\[3, 20\]"):
        dense(np.zeros((20, 3), np.int8), np.zeros((10, 20), np.int8), np.zeros(10, np.int32))


@pytest.mark.parametrize("make,match", [
    (lambda: PowerOfTwo(32), "shift = 32: the ALU shifts by 0..31"),
    (lambda: PowerOfTwo(4, lo=10, hi=5), "lo = 10, hi = 5"),
    (lambda: PowerOfTwo(4, hi=200), "hi = 200"),
    (lambda: vo.conv2d_kernel(Config.load("1x8x8"), 1, 0, 5, 3, 8, 3, 1, 1, PowerOfTwo(4)), "h = 0"),
    (lambda: vo.conv2d_kernel(Config.load("1x8x8"), 1, 2, 2, 3, 8, 5, 1, 1, PowerOfTwo(4)),
     "smaller than the kernel 5"),
    (lambda: vo.dense_kernel(Config.load("1x8x8"), 3, 20, 10, PowerOfTwo(4), tiles=vd.DenseTiles(1, 3, 1)),
     "tile cols = 3 with 1 thread"),
])
def test_compile_time_refusals(make, match):
    with pytest.raises(CompileError, match=match):
        make()


def test_resnet18_c1_full_size():
    layer = get_layer("resnet18.C1")
    out, ref, _ = _conv(Config.load("1x8x8"), (1, layer.H, layer.H, layer.IC, layer.OC, layer.K,
                                              layer.pad, layer.stride), PowerOfTwo(10))
    assert out.shape == (1, 64, 112, 112) and np.array_equal(out, ref)
