"""The compiled GEMM and ALU loops (vta_sim.native) against numpy int64: wrapping, repeated
destinations, in-order ALU dependences, the SSE2 8x8 GEMM path and the generic one."""
import numpy as np
import pytest

from vta_sim import isa, native

RNG = np.random.default_rng(5)


def _reference(acc, inp, wgt, a, s, w):
    out = acc.astype(np.int64)
    prod = np.einsum("nbi,noi->nbo", inp[s].astype(np.int64), wgt[w].astype(np.int64))
    np.add.at(out, a, prod)
    return ((out + 2**31) % 2**32 - 2**31).astype(np.int32)


@pytest.mark.parametrize("batch,bi,bo", [(1, 8, 8), (8, 8, 8), (3, 8, 8), (2, 16, 4), (1, 4, 8), (3, 8, 16)])
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
    monkeypatch.setenv("VTA_SIM_BUILD", str(tmp_path))
    monkeypatch.setenv("CC", "no-such-compiler-vta")
    with pytest.raises(native.NativeBuildError, match="no-such-compiler-vta"):
        native.build()


def _alu_reference(acc, a, s, op, imm):
    """Iteration by iteration in int64, wrapped to int32: the spec's sequential semantics."""
    out = acc.astype(np.int64)
    for k in range(a.size):
        x, y = out[a[k]], (np.full(out.shape[1:], imm, np.int64) if imm is not None else out[s[k]].copy())
        if op == isa.ALU_MIN:
            r = np.minimum(x, y)
        elif op == isa.ALU_MAX:
            r = np.maximum(x, y)
        elif op == isa.ALU_ADD:
            r = x + y
        elif op == isa.ALU_MUL:
            r = x * y
        else:
            amount = np.minimum(np.abs(y), 31)
            r = np.where(y >= 0, x >> amount, x << amount)
        out[a[k]] = (r + 2**31) % 2**32 - 2**31
    return out.astype(np.int32)


@pytest.mark.parametrize("op", [isa.ALU_MIN, isa.ALU_MAX, isa.ALU_ADD, isa.ALU_MUL, isa.ALU_SHR])
@pytest.mark.parametrize("imm", [None, -32768, -5, 0, 7, 32767])
def test_alu_matches_sequential_int64_reference(op, imm):
    """Destinations repeat and sources read earlier destinations, so order matters."""
    depth, n = 6, 40
    acc = RNG.choice([2**31 - 1, -2**31, -1, 3, 40, -33, 31, 100000], (depth, 2, 8)).astype(np.int32)
    a, s = RNG.integers(0, depth, n), RNG.integers(0, depth, n)
    expected = _alu_reference(acc, a, s, op, imm)
    native.alu(acc, a, s, op, imm)
    assert np.array_equal(acc, expected)
