"""A dense computed transposed, the residual add after it and the post-norm LayerNorm in one
program (schedules.dense_layer_norm): bit for bit the numpy int64 dense, requantised, then
requantisation.add's REQ sum with the residual, then requantisation.layer_norm's reference,
for both requantisation forms, either operand order, a fused bias add, padded token counts
and one or two threads."""
import numpy as np
import pytest

from requantisation import layer_norm as ln
from requantisation import multiply_shift, rule
from requantisation.add import choose_req_sum, req_sum_ref
from requantisation.rule import PowerOfTwo
from schedules.dense_layer_norm import dense_add_layer_norm_kernel
from vta_sim.config import Config
from vta_sim.errors import CompileError

CFG = Config.load("1x8x8")


def _dense(tokens, k, d, form, rng):
    x = rng.integers(-128, 128, (tokens, k), dtype=np.int8)
    w = rng.integers(-128, 128, (d, k), dtype=np.int8)
    bias = rng.integers(-20000, 20000, d).astype(np.int32)
    if form == "pow2":
        requant, vectors = PowerOfTwo(10, -128, 127), ()
    else:                    # one multiplier for every channel (per-tensor weights)
        requant, mult = multiply_shift.choose(np.full(d, rng.uniform(0.0005, 0.002)), 3, -128, 127)
        vectors = (mult,)
    acc = x.astype(np.int64) @ w.T.astype(np.int64) + bias
    return x, w, bias, vectors, requant, rule.reference(acc, requant, vectors, axis=-1)


@pytest.mark.parametrize("tokens, k, d, form, first, vthreads", [
    (16, 64, 32, "pow2", 0, 2), (13, 40, 24, "ms", 1, 2), (64, 128, 128, "ms", 0, 2), (9, 512, 64, "ms", 1, 1)])
@pytest.mark.parametrize("bias_add", [False, True])
def test_the_fused_program_equals_dense_add_and_layer_norm_one_after_another(tokens, k, d, form, first, vthreads,
                                                                            bias_add):
    rng = np.random.default_rng(tokens * d + k)
    x, w, bias, vectors, requant, y = _dense(tokens, k, d, form, rng)
    bias_adds = ()
    if bias_add:                       # a bias torch exports as an Add of its own, fused before
        c = rng.integers(-128, 128, d).astype(np.int8)
        badd = choose_req_sum([0.9, 0.013], (-7, -2), -8)
        per_channel = (c.astype(np.int64) - badd.zeros[1]) * badd.factors[1]
        bias_adds = ((badd, per_channel),)
        y = req_sum_ref([y, np.broadcast_to(c, y.shape)], badd)
    r = rng.integers(-100, 100, (tokens, d)).astype(np.int8)
    add = choose_req_sum([0.7, 0.45], (3, -5), 1)
    summed = req_sum_ref([y, r] if first == 0 else [r, y], add)
    p = ln.choose(0.04, rng.uniform(0.5, 1.5, d), rng.normal(0, 0.2, d), 1e-5, 0.03, 2)
    want = ln.reference(summed, p)
    before = [a.copy() for a in (x, r, w, bias, *vectors)]
    kernel = dense_add_layer_norm_kernel(CFG, tokens, k, d, requant, add, first, p, bias_adds, vthreads)
    got, result = kernel(x, r, w, bias, *vectors)
    assert got.shape == (tokens, d) and np.array_equal(got, want)
    assert all(np.array_equal(a, b) for a, b in zip((x, r, w, bias, *vectors), before))
    assert result.cycles > 0


def test_per_channel_requantisation_and_other_batches_are_refused_with_a_reason():
    rng = np.random.default_rng(3)
    d = 16
    requant, mult = multiply_shift.choose(rng.uniform(0.0005, 0.002, d), 3, -128, 127)
    p = ln.choose(0.04, np.ones(d), np.zeros(d), 1e-5, 0.03, 0)
    add = choose_req_sum([0.7, 0.45], (0, 0), 0)
    kernel = dense_add_layer_norm_kernel(CFG, 8, 16, d, requant, add, 0, p)
    x, r = np.zeros((8, 16), np.int8), np.zeros((8, d), np.int8)
    with pytest.raises(CompileError, match="one requantisation for every channel"):
        kernel(x, r, np.zeros((d, 16), np.int8), np.zeros(d, np.int32), mult)
    with pytest.raises(CompileError, match="BATCH 1"):
        dense_add_layer_norm_kernel(Config.load("8x8x8"), 8, 16, d, requant, add, 0, p)
