"""The compiled GEMM loop (vta_sim.native) against numpy int64: wrapping, repeated destinations,
the SSE2 8x8 path and the generic path of other block shapes."""
import numpy as np
import pytest

from vta_sim import native

RNG = np.random.default_rng(5)


def _reference(acc, inp, wgt, a, s, w):
    out = acc.astype(np.int64)
    prod = np.einsum("nbi,noi->nbo", inp[s].astype(np.int64), wgt[w].astype(np.int64))
    np.add.at(out, a, prod)
    return ((out + 2**31) % 2**32 - 2**31).astype(np.int32)


@pytest.mark.parametrize("batch,bi,bo", [(1, 8, 8), (8, 8, 8), (2, 16, 4), (1, 4, 8), (3, 8, 16)])
def test_gemm_matches_int64_reference(batch, bi, bo):
    depth, n = 16, 500
    acc = RNG.choice([2**31 - 3, -2**31 + 2, 0, 12345], (depth, batch, bo)).astype(np.int32)
    inp = RNG.integers(-128, 128, (depth, batch, bi), dtype=np.int8)
    wgt = RNG.integers(-128, 128, (depth, bo, bi), dtype=np.int8)
    inp[0], wgt[0] = -128, -128          # the largest products
    a, s, w = (RNG.integers(0, depth, n) for _ in range(3))   # destinations repeat
    expected = _reference(acc, inp, wgt, a, s, w)
    native.gemm(acc, inp, wgt, a, s, w)
    assert np.array_equal(acc, expected)


def test_gemm_refuses_other_dtypes():
    acc = np.zeros((2, 1, 8), np.int64)
    with pytest.raises(TypeError, match="int32"):
        native.gemm(acc, np.zeros((2, 1, 8), np.int8), np.zeros((2, 8, 8), np.int8), *[np.zeros(1, np.int64)] * 3)


def test_build_failure_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setattr(native, "BUILD_ROOT", tmp_path)
    monkeypatch.setenv("CC", "no-such-compiler-vta")
    with pytest.raises(native.NativeBuildError, match="no-such-compiler-vta"):
        native.build()
