"""requantisation.multiply_shift: REQ's multiplier and shift against exact rational arithmetic."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from requantisation import multiply_shift as ms
from requantisation.fixed_point import saturating_multiplier
from vta_sim.errors import CompileError

RNG = np.random.default_rng(35)
INT32 = (-(1 << 31), (1 << 31) - 1)


def _exact(acc: int, m: int, r: ms.MultiplyShift) -> int:
    """The contract's y in rational arithmetic: floor(acc m / 2^n + 1/2) + zp, clipped."""
    v = math.floor(Fraction(acc * m, 1 << r.shift) + Fraction(1, 2)) if r.shift else acc * m
    return min(max(v + r.zero_point, r.lo), r.hi)


@pytest.mark.parametrize("shift", [0, 1, 2, 17, 31, 40, 61, 62])
def test_the_reference_is_the_contract_at_every_extreme(shift):
    acc = np.array([*INT32, 0, 1, -1, 12345, -12345, *RNG.integers(*INT32, 40)], np.int64)
    m = np.array([0, 1, INT32[1], 1 << 30, *RNG.integers(0, INT32[1], 4)], np.int64)
    r = ms.MultiplyShift(shift, -7, -120, 99)
    got = ms.requantize_ref(acc[:, None], r, m, axis=1)
    want = [[_exact(int(a), int(mm), r) for mm in m] for a in acc]
    assert got.tolist() == want


def test_ties_round_up():
    r = ms.MultiplyShift(4, 0)
    acc = np.array([8, -8, 24, -24, 7, -9])          # x 1 / 16: 0.5, -0.5, 1.5, -1.5, ...
    assert ms.requantize_ref(acc[None, :], r, np.ones(1, np.int64), axis=0).tolist() == [[1, 0, 2, -1, 0, -1]]


@pytest.mark.parametrize("scale", [1e-9, 3e-5, 1e-3, 0.3, 7.0])
def test_choose_keeps_31_bits_of_the_largest_multiplier(scale):
    mult = RNG.uniform(0.01, 1.0, 32) * scale
    mult[0] = scale
    r, m = ms.choose(mult, zero_point=4)
    assert m.dtype == np.int32 and m.max() < 2 ** 31 and m.max() >= 2 ** 30 or r.shift == ms.MAX_SHIFT
    assert abs(m[0] / 2 ** r.shift - scale) <= 2.0 ** -(r.shift + 1)
    # every channel within half a unit of the multiplier's last bit
    assert np.all(np.abs(m / 2.0 ** r.shift - mult) <= 2.0 ** -(r.shift + 1) * 1.000001)


def test_a_multiplier_that_saturates_everything_is_encoded_as_the_least_that_does():
    r, m = ms.choose([1e9, 0.5], zero_point=0)
    cap = saturating_multiplier(0, -128, 127)
    assert m[0] == round(cap * 2 ** r.shift)
    out = ms.requantize_ref(np.array([[1, -1, 0]]).T, r, m, axis=1)
    assert out[:, 0].tolist() == [127, -128, 0]


def test_zero_multipliers_give_the_zero_point():
    r, m = ms.choose(np.zeros(3), zero_point=-9)
    assert ms.requantize_ref(np.array([[5, -70000, 2 ** 30]]).T, r, m).ravel().tolist() == [-9] * 9


def test_against_the_real_multiplier_only_near_ties_differ():
    """With 31 bits the encoded multiplier is off by < 2^-31 relative: over random
    accumulators every output equals the real multiplier's rounding."""
    mult = RNG.uniform(1e-4, 3e-3, 8)
    r, m = ms.choose(mult, zero_point=-3)
    acc = RNG.integers(-(1 << 20), 1 << 20, (500, 8))
    got = ms.requantize_ref(acc, r, m, axis=1)
    real = np.clip(np.floor(acc * mult + 0.5) - 3, -128, 127)
    assert np.array_equal(got, real)


@pytest.mark.parametrize("bad, message", [([-1e-3], "not a finite non-negative"), ([np.nan], "not a finite"),
                                          ([np.inf], "not a finite")])
def test_choose_refuses_what_is_no_multiplier(bad, message):
    with pytest.raises(CompileError, match=message):
        ms.choose(bad)


@pytest.mark.parametrize("kwargs, message", [({"shift": 63, "zero_point": 0}, "shift 63"),
                                             ({"shift": 3, "zero_point": 128}, "zero point 128"),
                                             ({"shift": 3, "zero_point": 0, "lo": 5, "hi": 4}, "clip")])
def test_the_form_refuses_fields_req_cannot_encode(kwargs, message):
    with pytest.raises(CompileError, match=message):
        ms.MultiplyShift(**kwargs)


@pytest.mark.parametrize("mult, bias", [(2e-7, 5e8), (6.16e-8, 2_067_000_000), (1.1e-7, -1_231_800_000),
                                        (1e-6, 1.2e8)])
def test_a_huge_bias_channel_is_within_one_lsb_at_its_steps_and_exact_between(mult, bias):
    """quantize_static's vanishing-input classifiers: M ~ 1e-7 beside bias' near 2^31. Beside a
    channel of M = 1e-3 that sets the shift it keeps ~18 bits, so where the real output steps
    (every 1/M ~ 10^7 accumulators) REQ's steps lie up to ~10^3 accumulators away: 1 LSB there,
    exact half-way between. Checked over +-8.4 M in exact arithmetic."""
    r, m = ms.choose([1e-3, mult], zero_point=-5)
    reach = 8_400_000
    lo_acc, hi_acc = max(-reach, INT32[0] - int(bias)), min(reach, INT32[1] - int(bias))

    def real(a: int) -> int:
        return min(max(math.floor(Fraction(mult) * (a + int(bias)) + Fraction(1, 2)) - 5, -128), 127)

    def req(accs: list) -> list:
        x = np.array(accs, np.int64) + int(bias)
        return ms.requantize_ref(x[:, None], r, m[1:], axis=1).ravel().tolist()
    steps = [math.ceil((n + 5 + Fraction(1, 2)) / Fraction(mult) - int(bias))
             for n in range(real(lo_acc), real(hi_acc))]
    edges = [a for t in steps for a in (t - 1, t) if lo_acc <= a <= hi_acc]
    assert all(abs(g - real(a)) <= 1 for g, a in zip(req(edges), edges))
    between = [lo_acc, hi_acc] + [(a + b) // 2 for a, b in zip([lo_acc] + steps, steps + [hi_acc])]
    assert req(between) == [real(a) for a in between]


@pytest.mark.parametrize("shift,lo", [(0, -128), (1, 0), (7, -128), (13, 0), (31, -5)])
def test_power_of_two_as_req_is_the_floor_shift(shift, lo):
    """REQ with multipliers 1 on the bias lowered by 2^(shift-1) gives the power-of-two rule's
    floor((acc + bias) / 2^shift), clipped, ties included."""
    from requantisation import PowerOfTwo, rule
    rng = np.random.default_rng(shift)
    acc = rng.integers(-(1 << 28), 1 << 28, (4, 64)).astype(np.int64)
    acc[0, :8] = np.arange(-4, 4) << max(shift - 1, 0)        # exact halves of the step
    bias = rng.integers(-(1 << 20), 1 << 20, 64).astype(np.int32)
    r = ms.from_power_of_two(shift, lo, 127)
    lowered, m = ms.power_of_two_vectors(bias, shift)
    got = ms.requantize_ref(acc + lowered, r, m, axis=1)
    want = rule.reference(acc + bias, PowerOfTwo(shift, lo, 127))
    np.testing.assert_array_equal(got, want)


def test_a_bias_that_leaves_int32_when_lowered_is_refused():
    bias = np.array([5, np.iinfo(np.int32).min + 3], np.int32)
    with pytest.raises(CompileError, match="channel 1"):
        ms.power_of_two_vectors(bias, 4)
    kept = bias.copy()
    ms.power_of_two_vectors(bias, 2)
    np.testing.assert_array_equal(bias, kept)
