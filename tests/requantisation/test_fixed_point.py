"""requantisation.fixed_point against exact rational arithmetic: the rounding, the int32 bound, the
clamp bounds, and its refusals."""
from fractions import Fraction
import math

import numpy as np
import pytest

from vta_sim.errors import CompileError
from requantisation import fixed_point as fp

INT32 = 1 << 31


def _round_half_up(x: Fraction) -> int:
    return math.floor(x + Fraction(1, 2))


def _exact(acc: int, mult: Fraction, r: fp.ScaledRequant) -> int:
    """clip(floor(acc * M + 1/2) + zp, lo, hi) in exact rationals."""
    return min(max(_round_half_up(acc * mult) + r.zero_point, r.lo), r.hi)


def _sequence(a: int, m_hi: int, m_lo: int, r: fp.ScaledRequant) -> int:
    """The ALU sequence after the clamp, in Python integers (no wrap), before the final clip."""
    p = a * m_hi + ((a * m_lo) >> r.k)
    return (((p >> r.t) + (1 << (r.s - r.t - 1))) >> (r.s - r.t)) + r.zero_point


CASES = [  # (multipliers, zero point, lo, hi)
    (np.full(4, 0.0123), 0, -128, 127),                         # per tensor
    (np.geomspace(2e-5, 0.7, 9), -128, -128, 127),              # per channel, wide range
    (np.random.default_rng(1).uniform(1e-4, 3e-3, 10), 37, -128, 127),
    (np.random.default_rng(2).uniform(0.01, 2.5, 6), 0, 0, 127),   # ReLU, multipliers above 1
    (np.array([0.003, 0.0, 0.05]), -5, -20, 90),                # a zero multiplier, narrow clip
]


@pytest.mark.parametrize("mult, zp, lo, hi", CASES)
def test_choose_against_exact_rationals(mult, zp, lo, hi):
    """The integer sequence is exactly round-half-up with the encoded multiplier m / 2^(k+s); it
    differs from the real multiplier's result only where acc*M and acc*m/2^(k+s) straddle a tie."""
    r, params = fp.choose(mult, zp, lo, hi)
    rng = np.random.default_rng(0)
    ties_moved = total = 0
    for c, real in enumerate(mult):
        a_min, a_max = int(params.a_min[c]), int(params.a_max[c])
        span = max(-a_min, a_max, 1)
        accs = sorted(set(rng.integers(-3 * span, 3 * span + 1, 400).tolist())
                      | {a_min - 1, a_min, a_max, a_max + 1, 0, -1, 1, 10 ** 9, -10 ** 9})
        got = fp.requantize_ref(np.array(accs, np.int64)[None, :], r,
                                fp.ChannelParams(*(v[c:c + 1] for v in params.arrays())), axis=0)[0]
        m = (int(params.m_hi[c]) << r.k) + int(params.m_lo[c])
        encoded, exact_m = Fraction(m, 1 << (r.k + r.s)), Fraction(float(real))
        for acc, g in zip(accs, got.tolist()):
            assert g == _exact(acc, encoded, r), (c, acc)
            total += 1
            if g != _exact(acc, exact_m, r):
                lo_x, hi_x = sorted((acc * exact_m, acc * encoded))
                tie = math.floor(hi_x - Fraction(1, 2)) + Fraction(1, 2)
                assert lo_x <= tie <= hi_x, (c, acc)      # a half-integer between the two
                ties_moved += 1
    assert ties_moved <= total // 100, f"{ties_moved} of {total} results moved by the encoding"


@pytest.mark.parametrize("mult, zp, lo, hi", CASES)
def test_int32_bound_and_clamp(mult, zp, lo, hi):
    """Every partial sum at the clamp bounds fits int32, and clamping changes no result: just
    past a_max the output is already hi, just past a_min already lo."""
    r, params = fp.choose(mult, zp, lo, hi)
    assert r.rounding < (1 << 15)                           # the ADD immediate is signed 16-bit
    for a_min, a_max, m_hi, m_lo in zip(*(v.tolist() for v in params.arrays())):
        assert 0 <= m_lo < (1 << r.k) and m_hi >= 0
        for a in (a_min, a_max):
            lo_part = a * m_lo
            assert abs(lo_part) < INT32
            p = a * m_hi + (lo_part >> r.k)
            assert abs(a * m_hi) < INT32 and abs(p) < INT32
            assert abs((p >> r.t) + r.rounding) < INT32
        if m_hi or m_lo:
            assert _sequence(a_max + 1, m_hi, m_lo, r) >= hi and _sequence(a_max, m_hi, m_lo, r) >= hi
            assert _sequence(a_min - 1, m_hi, m_lo, r) <= lo and _sequence(a_min, m_hi, m_lo, r) <= lo
            if a_max > 0:                                   # tight: one below still below hi
                assert _sequence(a_max - 1, m_hi, m_lo, r) < hi
            if a_min < 0:
                assert _sequence(a_min + 1, m_hi, m_lo, r) > lo
        else:
            assert a_min == a_max == 0


@pytest.mark.parametrize("mult, acc, want", [
    (0.5, [1, 3, -1, -3, 5], [1, 2, 0, -1, 3]),            # x.5 rounds up, also below zero
    (0.25, [2, -2, 6, -6], [1, 0, 2, -1]),
    (1.5, [1, -1, 3], [2, -1, 5]),
])
def test_ties_round_up(mult, acc, want):
    r, params = fp.choose([mult])
    got = fp.requantize_ref(np.array(acc, np.int64)[:, None], r, params, axis=1)[:, 0]
    assert got.tolist() == want


@pytest.mark.parametrize("mult, acc, want", [
    (0.5, [1, 3, -1, -3, 5, 7], [0, 2, 0, -2, 2, 4]),       # x.5 to the even neighbour
    (0.25, [2, -2, 6, -6, 10, 5], [0, 0, 2, -2, 2, 1]),
    (0.3, [4, 7, -4], [1, 2, -1]),                       # no ties: as round half up
])
def test_ties_to_even(mult, acc, want):
    """The average pools' rounding: ONNX's half to even, with the ALU's shifts and adds."""
    r, params = fp.choose([mult], ties_even=True)
    got = fp.requantize_ref(np.array(acc, np.int64)[:, None], r, params, axis=1)[:, 0]
    assert got.tolist() == want
    exact = [min(max(round(Fraction(a) * Fraction(mult)), -128), 127) for a in acc]   # round(): to even
    assert got.tolist() == exact


@pytest.mark.parametrize("mult, what", [
    ([0.01, -0.5], "channel 1"), ([float("nan")], "channel 0"), ([0.1, 0.2, float("inf")], "channel 2"),
    ([1e-12], "too small"),
])
def test_refusals(mult, what):
    with pytest.raises(CompileError, match=what):
        fp.choose(mult)


def test_bad_immediates_refused():
    with pytest.raises(CompileError, match="outside the ALU's range"):
        fp.ScaledRequant(k=3, t=0, s=20, zero_point=0)       # s - t > 15: rounding > 16 bits
    with pytest.raises(CompileError, match="outside int8"):
        fp.ScaledRequant(k=3, t=5, s=10, zero_point=200)


def _check_against_exact(mult, zp, lo, hi, bound, r, params, rng):
    """Every accumulator the channel can hold (|acc| <= bound) gives exactly round-half-up with
    the encoded multiplier; the clamp changes no result."""
    for c, real in enumerate(mult):
        m = (int(params.m_hi[c]) << r.k) + int(params.m_lo[c])
        encoded = Fraction(m, 1 << (r.k + r.s))
        accs = sorted(set(rng.integers(-bound, bound + 1, 300).tolist())
                      | {-bound, bound, 0, 1, -1, int(params.a_min[c]), int(params.a_max[c])})
        got = fp.requantize_ref(np.array(accs, np.int64)[None, :], r,
                                fp.ChannelParams(*(v[c:c + 1] for v in params.arrays())), axis=0)[0]
        assert got.tolist() == [_exact(a, encoded, r) for a in accs], c
        if real > 0:      # worst-case error at the bound: a few LSB for the tiniest multipliers
            reach = max(-int(params.a_min[c]), int(params.a_max[c]))   # past it: saturated
            target = min(Fraction(float(real)), fp.saturating_multiplier(zp, lo, hi))
            assert abs(encoded - target) * reach <= 8, c


@pytest.mark.parametrize("mult, bound", [
    (np.array([3e-9, 1e-7, 0.0, 2e-6]), 1 << 26),     # tiny weight scales, an all-zero channel
    (np.array([1e-12]), 1 << 20),
    (np.array([0.0, 0.0, 0.0]), 1 << 24),             # every weight zero: the output is zp
    (np.array([40.0, 3000.0, 0.02]), (1 << 31) - 1),  # huge ones (an output scale near 0)
])
def test_extreme_multipliers_with_the_accumulator_bound(mult, bound):
    r, params = fp.choose(mult, -128, -128, 127, acc_bound=bound)
    _check_against_exact(mult, -128, -128, 127, bound, r, params, np.random.default_rng(3))
    assert np.all(params.a_max <= bound) and np.all(params.a_min >= -bound)
    assert np.all(params.a_min[mult == 0] == 0) and np.all(params.a_max[mult == 0] == 0)


@pytest.mark.parametrize("zp, lo, hi", [(0, -128, 127), (-128, -128, 127), (100, 0, 127)])
def test_multipliers_past_saturation_give_the_real_multipliers_results(zp, lo, hi):
    """An output scale near 0 makes multipliers of thousands to 1e30 (quantize_static on a
    channel that is nearly constant): every one encodes, and every accumulator gets exactly what
    the real multiplier gives (zp at 0, saturated elsewhere)."""
    mult = np.array([1e3, 3e4, 1e9, 1e30, 0.37])
    r, params = fp.choose(mult, zp, lo, hi)
    accs = sorted({0, 1, -1, 2, -2, 7, -300, 10 ** 6, -(10 ** 9), 2 ** 31 - 1, -(2 ** 31)})
    for c, real in enumerate(mult):
        got = fp.requantize_ref(np.array(accs, np.int64)[None, :], r,
                                fp.ChannelParams(*(v[c:c + 1] for v in params.arrays())), axis=0)[0]
        assert got.tolist() == [_exact(a, Fraction(float(real)), r) for a in accs], real


def test_bounds_are_found_by_bisection_not_by_stepping(monkeypatch):
    """A few dozen vectorised evaluations per bound, whatever the multipliers: planning a layer
    of 1024 channels with extreme multipliers costs the same as a typical one."""
    calls = []
    sequence = fp._sequence
    monkeypatch.setattr(fp, "_sequence", lambda *a: calls.append(1) or sequence(*a))
    mult = np.concatenate([np.geomspace(1e-9, 50.0, 1000), np.zeros(24)])
    r, params = fp.choose(mult, 3, -128, 127, acc_bound=1 << 28)
    assert len(calls) <= 2 * 33 + 2 * 8     # bisection, and a few widenings of the reach
    _check_against_exact(mult[::97], 3, -128, 127, 1 << 28, r,
                         fp.ChannelParams(*(v[::97] for v in params.arrays())), np.random.default_rng(4))
