"""Compiled conv2d on the simulator against numpy int64, on both configs; refusals."""
import numpy as np
import pytest

from cost_model import assert_cycles_follow_the_model
from vta_sim.errors import CompileError
from schedules import vta_conv2d as vc
from schedules import vta_workloads as wl
from vta_sim import packing as pk
from vta_sim.config import Config


def _run(config, shape, tiles, shift=9, seed=0):
    cfg = Config.load(config)
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (shape.n, shape.ic, shape.h, shape.w), dtype=np.int8)
    w = rng.integers(-128, 128, (shape.oc, shape.ic, shape.k, shape.k), dtype=np.int8)
    b = rng.integers(-20000, 20000, (shape.oc,), dtype=np.int32)
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    packed = (pk.pack_nchw(x, B, BI), pk.pack_oihw(w, BO, BI), pk.pack_bias(b, B, BO))
    copies = [p.copy() for p in packed]
    (out,), result = vc.CONV2D.build(cfg, shape, tiles, shift)(*packed)
    assert all(np.array_equal(p, c) for p, c in zip(packed, copies))      # inputs untouched
    return pk.unpack_nchw(out), wl.conv2d_ref(x, w, b, shape.pad, shape.stride, shift), result


CASES = [  # config, shape (n, h, w, ic, oc, k, pad, stride), tiles (oc_blocks, rows, ic_blocks)
    ("1x8x8", vc.ConvShape(1, 8, 8, 16, 16, 3, 1, 1), (1, 4, 1)),
    ("1x8x8", vc.ConvShape(1, 9, 7, 16, 16, 3, 1, 2), (2, 5, 2)),       # stride 2, odd sizes
    ("1x8x8", vc.ConvShape(1, 8, 8, 16, 24, 1, 0, 2), (3, 2, 2)),       # strided 1x1
    ("1x8x8", vc.ConvShape(1, 6, 6, 8, 16, 1, 0, 1), (2, 6, 1)),        # 1x1, stride 1
    ("1x8x8", vc.ConvShape(1, 7, 7, 8, 8, 5, 2, 1), (1, 7, 1)),         # 5x5, pad 2
    ("8x8x8", vc.ConvShape(8, 5, 5, 16, 16, 3, 1, 1), (2, 5, 1)),
    ("8x8x8", vc.ConvShape(8, 6, 6, 8, 16, 3, 0, 2), (1, 2, 1)),        # no padding, stride 2
]


@pytest.mark.parametrize("config,shape,tiles", CASES)
def test_conv2d_matches_numpy(config, shape, tiles):
    got, ref, _ = _run(config, shape, vc.ConvTiles(*tiles))
    assert np.array_equal(got, ref)


@pytest.mark.parametrize("split", ["h", "oc"])
def test_virtual_threads_change_cycles_not_results(split):
    cfg = Config.load("1x8x8")
    shape = vc.ConvShape(1, 8, 8, 32, 32, 3, 1, 1)
    t1, t2 = vc.ConvTiles(2, 4, 2, 1), vc.ConvTiles(1 if split == "oc" else 2, 2 if split == "h" else 4, 2, 2, split)
    one, ref, r1 = _run("1x8x8", shape, t1)
    two, _, r2 = _run("1x8x8", shape, t2)
    assert np.array_equal(one, ref) and np.array_equal(two, ref)
    assert_cycles_follow_the_model(vc.CONV2D, cfg, shape, [(t1, r1), (t2, r2)])


def test_automatic_tiles_fit_and_are_overridable():
    cfg = Config.load("1x8x8")
    shape = vc.ConvShape(1, 56, 56, 64, 64, 3, 1, 1)
    for v in (1, 2):
        t = vc.CONV2D.choose_tiles(cfg, shape, v)
        assert t.vthreads == v and vc.fits(cfg, shape, t) is None
        vc.CONV2D.check_tiles(cfg, shape, t)


@pytest.mark.parametrize("shape,match", [
    (vc.ConvShape(1, 8, 8, 12, 16, 3, 1, 1), "input channels = 12 is not a multiple of the block size 8"),
    (vc.ConvShape(1, 8, 8, 16, 20, 3, 1, 1), "output channels = 20"),
    (vc.ConvShape(2, 8, 8, 16, 16, 3, 1, 1), None),     # batch 2 on 1x8x8 is fine (BATCH = 1)
])
def test_packed_workload_takes_whole_blocks(shape, match):
    """The packed TE workload itself refuses partial blocks: vta_conv2d pads before it."""
    cfg = Config.load("1x8x8")
    dims = [v for k, v in vars(shape).items() if k != "groups"]
    if match is None:
        wl.conv2d(cfg, *dims, shift=4)
        return
    with pytest.raises(CompileError, match=match):
        wl.conv2d(cfg, *dims, shift=4)


def test_computed_shape_pads_blocks_and_remainder_tiles():
    cfg = Config.load("8x8x8")
    shape = vc.ConvShape(3, 9, 7, 3, 10, 3, 1, 1)                      # oh = 9
    c = vc.computed_shape(cfg, shape, vc.ConvTiles(1, 2, 1, 2, "h"))   # rows 2 x 2 threads
    assert (c.n, c.ic, c.oc, c.oh, c.w) == (8, 8, 16, 12, 7)
    assert c.h == 12 and c.oh == 12                                     # 3 zero rows below


def test_tiles_that_exceed_or_do_not_fit_are_refused():
    cfg = Config.load("1x8x8")
    shape = vc.ConvShape(1, 8, 8, 16, 16, 3, 1, 1)
    vc.CONV2D.check_tiles(cfg, shape, vc.ConvTiles(1, 3, 1))                   # remainder tile: fine
    with pytest.raises(CompileError, match="tile rows = 9 with 1 thread\\(s\\) exceeds the 8 output rows"):
        vc.CONV2D.check_tiles(cfg, shape, vc.ConvTiles(1, 9, 1))
    with pytest.raises(CompileError, match="tile rows = 0: must be at least 1"):
        vc.CONV2D.check_tiles(cfg, shape, vc.ConvTiles(1, 0, 1))
    wide = vc.ConvShape(1, 4, 1000, 8, 8, 3, 1, 1)
    with pytest.raises(CompileError, match="INP needs"):
        vc.CONV2D.choose_tiles(cfg, wide, 1)


def test_two_threads_take_odd_counts_and_fall_back_to_one():
    cfg = Config.load("1x8x8")
    t = vc.CONV2D.choose_tiles(cfg, vc.ConvShape(1, 9, 9, 8, 24, 3, 1, 2), 2)   # 5 rows, 3 oc blocks
    assert t.vthreads == 2
    lone = vc.ConvShape(1, 3, 3, 8, 8, 3, 0, 1)                         # 1 row, 1 block
    assert vc.CONV2D.choose_tiles(cfg, lone, 2).vthreads == 1
    with pytest.raises(CompileError, match="2 threads cannot share the 1 output rows"):
        vc.CONV2D.check_tiles(cfg, lone, vc.ConvTiles(1, 1, 1, 2, "h"))


def test_wrong_input_dtype_is_refused_before_running():
    cfg = Config.load("1x8x8")
    shape = vc.ConvShape(1, 4, 4, 8, 8, 1, 0, 1)
    kernel = vc.CONV2D.build(cfg, shape, vc.ConvTiles(1, 4, 1), 2)
    data = np.zeros((1, 1, 4, 4, 1, 8), np.float32)
    with pytest.raises(CompileError, match="input data: expected int8"):
        kernel(data, np.zeros((1, 1, 1, 1, 8, 8), np.int8), np.zeros((1, 1, 8), np.int32))
