"""The feed-forward block's first dense and its GELU as two kernels ("both") and fused into one
program ("fused", schedules.fused_epilogue), and fused with the bias add torch exports between
them ("+ bias": work the CPU did unfused), accelerator cycles of each, at the shapes of the built-in encoder
(16 tokens, 64 -> 128) and of BERT (128 tokens, 128 -> 512); then Q.K^T of one head and its
softmax, as two kernels and as S^T with the softmax in its program, at the encoder's, the ViT's
and BERT's row lengths. Seeded random data, a GELU chain with zero points; every result checked
against numpy.

    PYTHONPATH=. python bench/bench_fusion.py
"""
from __future__ import annotations

import numpy as np

from requantisation import gelu as ge
from requantisation import multiply_shift, softmax
from requantisation.add import choose_req_sum, req_sum_ref
from schedules import vta_ops
from schedules.fused_epilogue import ConstantAddStep, GeluStep, SoftmaxStep, dense_epilogue_kernel
from schedules.vta_gelu import gelu_kernel
from schedules.vta_softmax import softmax_kernel
from vta_sim.config import Config

CHAIN = ge.GeluChain(0.05, 5, 1.4142135, 1 / 127, 3, 1.0, 2 / 127, -4, 0.07, 2, 0.5, 0.05, 3)
SHAPES = {"encoder FFN (16 x 64 . 64 x 128)": (16, 64, 128), "BERT FFN (128 x 128 . 128 x 512)": (128, 128, 512)}


def main() -> None:
    cfg = Config.load("1x8x8")
    p = ge.choose(CHAIN)
    add = choose_req_sum([0.9, 0.013], (-7, -2), -8, -128, 127)
    print(f"{'shape':<36}{'dense':>10}{'GELU':>10}{'both':>10}{'fused':>10}{'ratio':>8}{'+ bias':>10}")
    for name, (m, k, n) in SHAPES.items():
        rng = np.random.default_rng(m)
        x, w = rng.integers(-128, 128, (m, k), dtype=np.int8), rng.integers(-128, 128, (n, k), dtype=np.int8)
        requant, mult = multiply_shift.choose(rng.uniform(0.0005, 0.002, n), 3, -128, 127)
        bias, b = rng.integers(-3000, 3000, n).astype(np.int32), rng.integers(-128, 128, n).astype(np.int8)
        y, dense = vta_ops.dense_kernel(cfg, m, k, n, requant)(x, w, bias, mult)
        y0 = y
        alone, gelu_only = gelu_kernel(cfg, (m, n), p)(y0)
        y = req_sum_ref([y, np.broadcast_to(b, y.shape)], add)          # the bias add: the CPU's glue unfused
        want, gelu = gelu_kernel(cfg, (m, n), p)(y)
        got0, fused0 = dense_epilogue_kernel(cfg, m, k, n, requant, (GeluStep(cfg, p),))(x, w, bias, mult)
        assert np.array_equal(got0, alone) and np.array_equal(alone, ge.reference(y0, p))
        steps = (ConstantAddStep(cfg, add, (b.astype(np.int64) - add.zeros[1]) * add.factors[1], -(-n // 8)),
                 GeluStep(cfg, p))
        got, fused = dense_epilogue_kernel(cfg, m, k, n, requant, steps)(x, w, bias, mult)
        assert np.array_equal(got, want) and np.array_equal(want, ge.reference(y, p))
        separate = dense.cycles + gelu_only.cycles
        print(f"{name:<36}{dense.cycles:>10,}{gelu_only.cycles:>10,}{separate:>10,}{fused0.cycles:>10,}"
              f"{fused0.cycles / separate:>8.3f}{fused.cycles:>10,}")


def softmax_rows() -> None:
    """Q.K^T of one head and its softmax: the matmul's kernel and the softmax's, against S^T with
    the softmax in its program, leaving P^T (the host transposes it) and storing P transposed by
    the GEMM core (schedules.block_transpose; graph.attention.ScoresSoftmax's kernel), checked
    against numpy."""
    cfg = Config.load("1x8x8")
    print(f"\n{'Q.K^T, softmax (one head)':<36}{'matmul':>10}{'softmax':>10}{'both':>10}{'fused':>10}{'ratio':>8}"
          f"{'P stored':>10}{'ratio':>8}")
    for keys, d in ((16, 16), (65, 64), (128, 64)):
        rng = np.random.default_rng(keys)
        p = softmax.choose(0.05, 1 / 256, -128, keys)
        k_rows, q_rows = (rng.integers(-128, 128, (keys, d), dtype=np.int8) for _ in range(2))
        requant, mult = multiply_shift.choose(np.full(keys, 0.003), 0, -128, 127)
        zero = np.zeros(keys, np.int32)
        scores, matmul = vta_ops.dense_kernel(cfg, keys, d, keys, requant)(q_rows, k_rows, zero, mult)
        probs, soft = softmax_kernel(cfg, keys, p)(scores)
        got, fused = dense_epilogue_kernel(cfg, keys, d, keys, requant, (SoftmaxStep(cfg, p),))(k_rows, q_rows, zero,
                                                                                              mult)
        stored, transposed = dense_epilogue_kernel(cfg, keys, d, keys, requant, (SoftmaxStep(cfg, p),),
                                                   transpose=True)(k_rows, q_rows, zero, mult)
        assert np.array_equal(got.T, probs) and np.array_equal(probs, softmax.reference(scores, p))
        assert np.array_equal(stored, probs)
        both = matmul.cycles + soft.cycles
        print(f"{f'{keys} tokens, d = {d}':<36}{matmul.cycles:>10,}{soft.cycles:>10,}{both:>10,}{fused.cycles:>10,}"
              f"{fused.cycles / both:>8.3f}{transposed.cycles:>10,}{transposed.cycles / both:>8.3f}")


if __name__ == "__main__":
    main()
    softmax_rows()
