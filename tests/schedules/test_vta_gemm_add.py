"""The power-of-two residual add on the GEMM core (schedules/vta_gemm_add.py): which adds take it,
and that those that do, and those that fall back to the ALU, match requantisation.add.add_ref."""
import numpy as np
import pytest

from requantisation.add import AddParams, add_ref, choose_req_sum
from schedules import vta_gemm_add
from schedules.vta_eltwise import add_kernel
from vta_sim.config import Config


def _run(cfg, shape, shift_a, shift_b, shift, lo=-128, hi=127, vthreads=2):
    rng = np.random.default_rng(shift_a + 7 * shift_b)
    a, b = (rng.integers(-128, 128, shape).astype(np.int8) for _ in range(2))
    kernel = add_kernel(cfg, *shape, shift_a, shift_b, shift, lo, hi, vthreads=vthreads)
    y, _ = kernel(a, b)
    np.testing.assert_array_equal(y, add_ref(a, b, shift_a, shift_b, shift, lo, hi))
    return kernel


@pytest.mark.parametrize("shifts,clip", [((0, 0, 1), (0, 127)), ((6, 0, 6), (-128, 127)),
                                         ((1, 3, 0), (-20, 90)), ((2, 2, 3), (-128, 127))])
def test_power_of_two_adds_run_on_the_gemm_core(cfg, shifts, clip):
    kernel = _run(cfg, (1, 16, 5, 7), *shifts, *clip)
    assert kernel.tiles["core"] == "gemm"


def test_many_tiles_on_one_thread_and_on_two(cfg):
    for vthreads in (1, 2):
        kernel = _run(cfg, (2, 24, 31, 33), 1, 0, 1, 0, 127, vthreads=vthreads)
        assert kernel.tiles["tiles"] > vthreads and kernel.tiles["core"] == "gemm"


def test_a_shift_beyond_an_int8_weight_falls_back_to_the_alu(cfg):
    assert "shift <= 6" in vta_gemm_add.misfit(cfg, AddParams(7, 0, 7, -128, 127))
    kernel = _run(cfg, (1, 8, 3, 3), 7, 0, 7)
    assert kernel.tiles["core"] == "alu"


def test_forms_the_gemm_core_does_not_take():
    cfg = Config.load("1x8x8")
    assert "power-of-two" in vta_gemm_add.misfit(cfg, choose_req_sum([0.5, 0.25], (3, -4), 1))
    wide = Config.from_dict({**cfg.to_dict(), "LOG_BLOCK_OUT": 4}, name="1x8x16")
    assert "BLOCK_IN" in vta_gemm_add.misfit(wide, AddParams(0, 0, 1, -128, 127))


def test_weights_are_the_two_shifts_on_the_diagonal(cfg):
    w = vta_gemm_add.weights(cfg, AddParams(2, 5, 5, -128, 127))
    assert w.dtype == np.int8 and w.shape == (2, cfg.BLOCK_OUT, cfg.BLOCK_IN)
    np.testing.assert_array_equal(w[0], 4 * np.eye(cfg.BLOCK_OUT, dtype=np.int8))
    np.testing.assert_array_equal(w[1], 32 * np.eye(cfg.BLOCK_OUT, dtype=np.int8))
