"""The quantised residual add (schedules/vta_eltwise.py), bit-exact against the numpy reference."""
import numpy as np
import pytest

from intrinsics.errors import CompileError
from schedules.vta_eltwise import add_kernel, add_ref


def _int8(shape, seed):
    return np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)


def _check(cfg, n, c, h, w, shift_a, shift_b, shift, lo=-128, hi=127, a=None, b=None, vthreads=2):
    a = _int8((n, c, h, w), 1) if a is None else a
    b = _int8((n, c, h, w), 2) if b is None else b
    kept = (a.copy(), b.copy())
    kernel = add_kernel(cfg, n, c, h, w, shift_a, shift_b, shift, lo, hi, vthreads=vthreads)
    y, result = kernel(a, b)
    ref = add_ref(a, b, shift_a, shift_b, shift, lo, hi)
    assert y.dtype == np.int8 and y.shape == (n, c, h, w)
    np.testing.assert_array_equal(y, ref)
    np.testing.assert_array_equal(a, kept[0])
    np.testing.assert_array_equal(b, kept[1])
    assert result.cycles > 0
    return kernel, y


def test_reference_rounds_half_up_and_clips():
    a = np.array([3, -3, 1, 127, -128], np.int8)
    b = np.array([0, 0, 0, 127, -128], np.int8)
    np.testing.assert_array_equal(add_ref(a, b, 0, 0, 1), [2, -1, 1, 127, -128])
    np.testing.assert_array_equal(add_ref(a, b, 1, 0, 0, lo=0), [6, 0, 2, 127, 0])


@pytest.mark.parametrize("n,c,h,w,shift_a,shift_b,shift,lo,hi", [
    (1, 8, 4, 4, 0, 0, 0, -128, 127),     # plain add: random int8 sums saturate both ways
    (3, 10, 5, 7, 2, 0, 3, -128, 127),    # odd batch (padded on 8x8x8), channels 10, rounding
    (1, 3, 3, 5, 1, 2, 2, 0, 127),        # ReLU folded in
    (2, 16, 2, 3, 0, 1, 1, -20, 30),      # any clip range
    (1, 8, 2, 2, 23, 23, 15, -128, 127),  # the largest shifts int32 and the immediate allow
])
def test_add_matches_reference(cfg, n, c, h, w, shift_a, shift_b, shift, lo, hi):
    _check(cfg, n, c, h, w, shift_a, shift_b, shift, lo, hi)


def test_saturation_and_relu(cfg):
    a = np.full((1, 3, 2, 2), 127, np.int8)
    a[0, 1] = -128
    a[0, 2] = -3
    _, y = _check(cfg, 1, 3, 2, 2, 0, 0, 0, a=a, b=a.copy())
    assert (y[0, 0] == 127).all() and (y[0, 1] == -128).all() and (y[0, 2] == -6).all()
    _, y = _check(cfg, 1, 3, 2, 2, 0, 0, 0, lo=0, a=a, b=a.copy())
    assert (y[0, 1:] == 0).all()


@pytest.mark.parametrize("vthreads", [1, 2])
def test_several_tiles(cfg, vthreads):
    kernel, _ = _check(cfg, 1, 8, 40, 41, 1, 0, 1, vthreads=vthreads)
    assert kernel.tiles["tiles"] > vthreads


@pytest.mark.parametrize("shifts,clip,match", [
    ((0, 0, 16), (-128, 127), "0..15"),
    ((0, 0, -1), (-128, 127), "0..15"),
    ((-1, 0, 0), (-128, 127), "shift_a = -1"),
    ((24, 0, 0), (-128, 127), "outside int32"),
    ((0, 0, 0), (5, 4), "lo <= hi"),
    ((0, 0, 0), (-129, 127), "lo <= hi"),
    ((0, 0, 0), (0, 128), "lo <= hi"),
])
def test_refusals(cfg, shifts, clip, match):
    with pytest.raises(CompileError, match=match):
        add_kernel(cfg, 1, 8, 1, 1, *shifts, *clip)


def test_three_threads_are_refused(cfg):
    with pytest.raises(CompileError, match="vthreads = 3"):
        add_kernel(cfg, 1, 8, 1, 1, 0, 0, 0, vthreads=3)


def test_wrong_inputs_are_refused(cfg):
    kernel = add_kernel(cfg, 1, 3, 2, 2, 0, 0, 0)
    ok = np.zeros((1, 3, 2, 2), np.int8)
    with pytest.raises(CompileError, match="operand b"):
        kernel(ok, np.zeros((1, 3, 2, 3), np.int8))
    with pytest.raises(CompileError, match="operand a"):
        kernel(ok.astype(np.int16), ok)
