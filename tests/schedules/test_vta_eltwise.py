"""The quantised residual add (schedules/vta_eltwise.py), bit-exact against the numpy reference,
and that reference against exact rational arithmetic."""
from fractions import Fraction
import math

import numpy as np
import pytest

from vta_sim.errors import CompileError
from requantisation import fixed_point as fp
from requantisation.add import OPERAND_REACH, ScaledAddParams, add_ref, choose_req_sum, req_sum_ref, scaled_add_ref
from schedules.vta_eltwise import add_kernel, eltwise_kernel


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


# ----------------------------------------------------------------------------- zero points, any scales
def _scaled(ma, mb, za, zb, zy, lo=-128, hi=127):
    r, (m_a, m_b) = fp.choose_sum([ma, mb], OPERAND_REACH, zy, lo, hi)
    return ScaledAddParams(za, zb, m_a, m_b, r)


def _exact(a, b, ma, mb, za, zb, zy, lo, hi):
    """clip(floor(x + 1/2) + zy) of x = (a - za) M_a + (b - zb) M_b in exact rationals."""
    out = []
    for x, y in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist()):
        v = (x - za) * Fraction(ma) + (y - zb) * Fraction(mb)
        out.append(min(max(math.floor(v + Fraction(1, 2)) + zy, lo), hi))
    return np.array(out).reshape(a.shape)


@pytest.mark.parametrize("ma, mb, za, zb, zy, lo", [
    (0.7318291, 0.4127733, -3, 17, -128, -128),   # quantize_static after a ReLU: output zp -128
    (1.9034517, 0.0517201, -128, -128, 5, -128),  # very unequal scales
    (0.5, 0.5, 0, 0, 0, 0),                       # exact ties, ReLU folded: round half up
    (2.7113e-3, 3.1027119, 100, -100, -20, -20),
])
def test_scaled_add_reference_is_round_half_up_of_the_encoded_sum(ma, mb, za, zb, zy, lo):
    """The reference is exactly round-half-up with the encoded multipliers m / 2^s, and the
    encoding moves at most a few of the 65,536 operand pairs' results (ties only) off the real
    multipliers' result."""
    p = _scaled(ma, mb, za, zb, zy, lo)
    grid = np.arange(-128, 128, dtype=np.int64)
    a, b = (v.astype(np.int8) for v in np.meshgrid(grid, grid))
    got = scaled_add_ref(a, b, p)
    two_s = 1 << p.requant.s
    assert np.array_equal(got, _exact(a, b, Fraction(p.m_a, two_s), Fraction(p.m_b, two_s), za, zb, zy, lo, 127))
    real = _exact(a, b, Fraction(ma), Fraction(mb), za, zb, zy, lo, 127)
    assert np.abs(got.astype(int) - real).max() <= 1 and (got != real).mean() < 1e-3


@pytest.mark.parametrize("shape, ma, mb, za, zb, zy, lo, vthreads", [
    ((1, 8, 4, 4), 0.73, 0.41, -3, 17, -128, -128, 2),
    ((3, 10, 5, 7), 1.9, 0.05, -128, -128, 5, -128, 2),   # padded batch and channels
    ((1, 16, 20, 21), 2.7e-3, 3.1, 100, -100, -20, -20, 1),   # several tiles
    ((1, 3, 3, 5), 0.6, 1e-5, 0, 0, -128, -128, 2),     # a multiplier whose high part is 0
])
def test_scaled_add_matches_reference(cfg, shape, ma, mb, za, zb, zy, lo, vthreads):
    p = _scaled(ma, mb, za, zb, zy, lo)
    a, b = _int8(shape, 3), _int8(shape, 4)
    kept = (a.copy(), b.copy())
    y, result = eltwise_kernel(cfg, shape, p, vthreads)(a, b)
    np.testing.assert_array_equal(y, scaled_add_ref(a, b, p))
    np.testing.assert_array_equal(a, kept[0])
    np.testing.assert_array_equal(b, kept[1])
    assert result.cycles > 0


@pytest.mark.parametrize("change, match", [
    (dict(zero_a=200), "zero_a = 200"),
    (dict(m_a=1 << 28), "outside int32"),
    (dict(m_a=0, m_b=0), "not both 0"),
])
def test_scaled_add_refusals(cfg, change, match):
    import dataclasses

    with pytest.raises(CompileError, match=match):
        eltwise_kernel(cfg, (1, 8, 1, 1), dataclasses.replace(_scaled(0.5, 0.5, 0, 0, 0), **change))


@pytest.mark.parametrize("shape, mults, zeros, zy, lo, vthreads", [
    ((1, 8, 4, 4), [0.73, 0.41], (-3, 17), -128, -128, 2),
    ((3, 10, 5, 7), [1.9, 0.05], (-128, -128), 5, -20, 2),     # padded batch and channels, a clip
    ((1, 16, 20, 21), [2.7e-3, 3.1], (100, -100), -20, -128, 1),  # several tiles
    ((1, 8, 9, 9), [0.7316], (-128,), -128, -128, 2),           # a rescale: one operand
])
def test_req_sums_match_the_reference(cfg, shape, mults, zeros, zy, lo, vthreads):
    """The REQ form of the add and the rescale (requantisation.add.ReqSumParams), bit-exact."""
    p = choose_req_sum(mults, zeros, zy, lo)
    xs = [_int8(shape, 5 + i) for i in range(len(mults))]
    kept = [x.copy() for x in xs]
    kernel = eltwise_kernel(cfg, shape, p, vthreads)
    y, result = kernel(*xs)
    np.testing.assert_array_equal(y, req_sum_ref(xs, p))
    assert all(np.array_equal(x, k) for x, k in zip(xs, kept)) and result.cycles > 0


def test_a_req_add_that_fills_acc_leaves_room_for_its_multiplier(cfg):
    """2,048 entries, two operands, two threads: the tiles alone would fill ACC; REQ's
    multiplier entry per thread must fit beside them (it did not: BERT's adds failed to compile)."""
    p = choose_req_sum([0.7, 0.4], (3, -2), 5, -128, 127)
    shape = (1, 8, 64, 32)
    a, b = _int8(shape, 1), _int8(shape, 2)
    y, _ = eltwise_kernel(cfg, shape, p)(a, b)
    np.testing.assert_array_equal(y, req_sum_ref((a, b), p))
