"""Max-pool on the accelerator (schedules/vta_pool.py), bit-exact against the numpy reference."""
import numpy as np
import pytest

from schedules.vta_pool import max_pool_kernel, max_pool_ref
from vta_sim.errors import CompileError


def _int8(shape, seed=0, lo=-128, hi=128):
    return np.random.default_rng(seed).integers(lo, hi, shape).astype(np.int8)


def _check(cfg, n, c, h, w, k, stride, pad, vthreads=1, x=None):
    x = _int8((n, c, h, w)) if x is None else x
    kept = x.copy()
    kernel = max_pool_kernel(cfg, n, c, h, w, k, stride, pad, vthreads=vthreads)
    y, result = kernel(x)
    ref = max_pool_ref(x, k, stride, pad)
    assert y.dtype == np.int8 and y.shape == ref.shape
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_array_equal(x, kept)          # the caller's array is untouched
    assert result.cycles > 0
    return kernel, y


def test_reference_on_a_hand_example():
    x = np.array([[[[1, -5, 3, 0],
                    [2, 7, -1, -2],
                    [-8, -3, -4, -6],
                    [0, 4, -7, 5]]]], np.int8)
    np.testing.assert_array_equal(max_pool_ref(x, 2, 2), [[[[7, 3], [4, 5]]]])
    # padded positions count as 0: the all-negative corner window gives 0, not -4
    np.testing.assert_array_equal(max_pool_ref(x[:, :, 2:, 1:3], 2, 2, pad=1), [[[[0, 0], [4, 0]]]])


@pytest.mark.parametrize("n,c,h,w,k,stride,pad", [
    (1, 8, 6, 6, 3, 1, 0),        # whole blocks
    (3, 3, 7, 9, 3, 2, 1),        # odd batch (padded on 8x8x8), odd channels and sizes, pad 1
    (1, 10, 5, 6, 2, 2, 0),       # k = 2, channels 10 (two blocks, the second padded)
    (2, 8, 7, 5, 2, 1, 1),        # k = 2, stride 1, pad 1
])
def test_max_pool_matches_reference(cfg, n, c, h, w, k, stride, pad):
    _check(cfg, n, c, h, w, k, stride, pad)


def test_all_negative_input_starts_from_int8_min(cfg):
    x = _int8((1, 8, 5, 5), seed=1, lo=-128, hi=-1)
    _, y = _check(cfg, 1, 8, 5, 5, 3, 2, 0, x=x)
    assert (y < 0).all()                            # not clipped at a zero init
    _, y = _check(cfg, 1, 8, 5, 5, 3, 2, 1, x=x)
    assert (y[:, :, 0, :] == 0).all()               # the border windows hold padding (0)


def test_row_tiles_when_the_plane_does_not_fit_acc(cfg):
    kernel, _ = _check(cfg, 1, 8, 40, 62, 3, 1, 1)
    assert 1 <= kernel.tiles["rows"] < 40


def test_two_virtual_threads(cfg):
    kernel, _ = _check(cfg, 1, 16, 12, 8, 3, 2, 1, vthreads=2)
    assert kernel.tiles["vthreads"] == 2


@pytest.mark.parametrize("args,match", [
    (dict(k=3, stride=1, pad=16), "pad = 16"),
    (dict(k=2, stride=1, pad=2), "pad < k"),
    (dict(k=9, stride=1, pad=0), "smaller than the kernel"),
    (dict(k=3, stride=0, pad=0), "stride >= 1"),
    (dict(k=3, stride=2, pad=1, vthreads=3), "vthreads = 3"),
    (dict(k=3, stride=1, pad=0, vthreads=2), "odd"),
])
def test_refusals(cfg, args, match):
    with pytest.raises(CompileError, match=match):
        max_pool_kernel(cfg, 1, 8, 7, 7, **args)


def test_too_wide_a_row_is_refused(cfg):
    with pytest.raises(CompileError, match="factor fields"):
        max_pool_kernel(cfg, 1, 8, 4, 1100, 3, 2, 0)


def test_wrong_input_is_refused(cfg):
    kernel = max_pool_kernel(cfg, 1, 3, 4, 4, 2, 2)
    with pytest.raises(CompileError, match="int8"):
        kernel(np.zeros((1, 3, 4, 4), np.int32))
    with pytest.raises(CompileError, match=r"int8\[1, 3, 4, 4\]"):
        kernel(np.zeros((1, 3, 4, 5), np.int8))


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("stride", [1, 2, 3, 4])
def test_the_in_place_column_is_read_by_no_other_window(k, stride):
    """in_place_column's j0: window x's column x*stride + j0 is no tap of another window; None
    only where every column of a window is a tap of another one."""
    from schedules.vta_pool import in_place_column
    j0 = in_place_column(k, stride)
    taps = {x: {x * stride + d for d in range(k)} for x in range(8)}
    shared = [d for d in range(k) if any(4 * stride + d in taps[x] for x in taps if x != 4)]
    if j0 is None:
        assert shared == list(range(k))
    else:
        assert j0 not in shared


def test_every_pool_builds_its_row_maxima_in_place(cfg):
    """A window column read by no other window where the stride gives one, sliding passes where
    it does not; either way a tile holds its input rows and output rows, nothing between."""
    from schedules.vta_pool import PoolShape, acc_entries, in_place_column
    assert in_place_column(3, 2) == 1 and in_place_column(2, 2) == 0 and in_place_column(3, 1) is None
    assert acc_entries(PoolShape(1, 8, 9, 9, 3, 2, 0), 2) == 5 * 9 + 2 * 4
    assert acc_entries(PoolShape(1, 8, 9, 9, 3, 1, 0), 2) == 4 * 9 + 2 * 7


@pytest.mark.parametrize("k,stride,pad", [(3, 1, 1), (4, 2, 1), (5, 1, 2), (4, 1, 0)])
def test_sliding_maxima_match_the_reference(cfg, k, stride, pad):
    """The pools without an in-place column (their row maxima slide in place), negative inputs
    where no padding hides them."""
    x = _int8((1, 16, 11, 13), seed=k + stride, lo=-128 if pad == 0 else 0)
    _check(cfg, 1, 16, 11, 13, k, stride, pad, x=x)
