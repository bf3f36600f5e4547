"""conv2d and dense with fixed-point (float-scale, per-channel) requantisation on the
accelerator, bit-exact against fixed_point.requantize_ref on the int64 accumulator + bias."""
import numpy as np
import pytest

from vta_sim.errors import CompileError
from requantisation import fixed_point as fp
from schedules import vta_conv2d as vc
from schedules import vta_dense as vd
from schedules import vta_ops as vo
from requantisation.stages import epilogue
from schedules import vta_workloads as wl

# (per-channel multipliers?, zero point, lo, hi); multipliers are drawn so that some outputs
# saturate at both ends and most do not
REQUANTS = [(False, 0, -128, 127), (True, -128, -128, 127), (True, 37, -128, 127), (True, 5, 0, 100)]


def _scaled(rng, channels: int, per_channel: bool, zp: int, lo: int, hi: int, typical: float):
    """A ScaledRequant and its ChannelParams for multipliers around 60 / typical |acc| (the
    product of two uniform int8 has a standard deviation of about 5,500)."""
    centre = 60.0 / typical
    mult = (rng.uniform(0.3, 3.0, channels) if per_channel else np.full(channels, 1.3)) * centre
    return fp.choose(mult, zp, lo, hi)


def _int8(rng, shape):
    return rng.integers(-128, 128, shape).astype(np.int8)


def _check(out, ref, r):
    assert out.dtype == np.int8 and out.shape == ref.shape
    mismatches = np.argwhere(out != ref)
    assert mismatches.size == 0, f"{len(mismatches)} mismatches, first at {mismatches[0].tolist()}"
    # the case means something: outputs saturate at both ends, and many do not
    assert (ref == r.lo).any() and (ref == r.hi).any() and ((ref > r.lo) & (ref < r.hi)).mean() > 0.3


def _conv(cfg, n, h, w, ic, oc, k, pad, stride, req, seed=0, tiles=None, vthreads=2):
    rng = np.random.default_rng(seed)
    x, wt = _int8(rng, (n, ic, h, w)), _int8(rng, (oc, ic, k, k))
    bias = rng.integers(-3000, 3000, oc).astype(np.int32)
    r, params = _scaled(rng, oc, *req, typical=5500.0 * np.sqrt(ic * k * k))
    op = vo.conv2d_kernel(cfg, n, h, w, ic, oc, k, pad, stride, r, vthreads=vthreads, tiles=tiles)
    out, _ = op(x, wt, bias, *params.arrays())
    ref = fp.requantize_ref(wl.conv2d_acc(x, wt, bias, pad, stride), r, params, axis=1)
    return out, ref, r, op


def _dense(cfg, m, k, n, req, seed=0, tiles=None, vthreads=2):
    rng = np.random.default_rng(seed)
    a, wt = _int8(rng, (m, k)), _int8(rng, (n, k))
    bias = rng.integers(-3000, 3000, n).astype(np.int32)
    r, params = _scaled(rng, n, *req, typical=5500.0 * np.sqrt(k))
    op = vo.dense_kernel(cfg, m, k, n, r, vthreads=vthreads, tiles=tiles)
    out, _ = op(a, wt, bias, *params.arrays())
    ref = fp.requantize_ref(wl.dense_acc(a, wt, bias), r, params, axis=1)
    return out, ref, r, op


@pytest.mark.parametrize("req", REQUANTS)
def test_conv2d_scaled(cfg, req):
    """Batch 3, 10 output channels (a partial block), 3x3 pad 1."""
    out, ref, r, _ = _conv(cfg, 3, 6, 5, 5, 10, 3, 1, 1, req)
    _check(out, ref, r)
    assert ref.min() >= req[2] and ref.max() <= req[3]


@pytest.mark.parametrize("req", REQUANTS)
def test_dense_scaled(cfg, req):
    out, ref, r, _ = _dense(cfg, 3, 20, 10, req)
    _check(out, ref, r)


def test_conv2d_scaled_remainder_tiles(cfg):
    """Rows, channel blocks and input-channel chunks that do not divide the shape; stride 2."""
    tiles = vc.ConvTiles(oc_blocks=1, rows=2, ic_blocks=2, vthreads=2, split="h")
    out, ref, r, op = _conv(cfg, 3, 11, 7, 20, 10, 3, 1, 2, (True, -7, -128, 127), tiles=tiles)
    assert op.tiles == tiles
    _check(out, ref, r)


def test_dense_scaled_remainder_tiles(cfg):
    tiles = vd.DenseTiles(rows=1, cols=1, k_blocks=2, vthreads=2, split="n")
    out, ref, r, _ = _dense(cfg, 3, 20, 10, (True, 37, -128, 127), tiles=tiles)
    _check(out, ref, r)


def test_scaled_epilogue_stages():
    """The ALU sequence in order; the pre-shift and the zero point appear only when non-zero."""
    r, _ = fp.choose([0.001, 0.002], zero_point=0)
    assert r.t > 0
    assert [st.name for st in epilogue(r)] == [
        "bias_add", "clamp_lo", "clamp_hi", "copy", "mul_hi", "mul_lo", "shr_lo", "sum", "pre_shr",
        "round", "shr", "clip_lo", "clip_hi"]
    names = [st.name for st in epilogue(fp.ScaledRequant(k=10, t=0, s=12, zero_point=-3))]
    assert "pre_shr" not in names and names[-3:] == ["zero_point", "clip_lo", "clip_hi"]


def test_scaled_acc_accounting(cfg):
    """The scratch and the four vectors are counted: a tile that fits the power-of-two epilogue
    but not the scaled one is refused for it, naming the ACC, and choose_tiles avoids it."""
    s = vc.ConvShape(cfg.BATCH, 56, 56, 64, 64, 3, 1, 1)
    r, _ = fp.choose(np.full(64, 0.001))
    depth = cfg.buffers["acc"].depth
    for t in vc.candidates(cfg, s, 2):
        if vc.usable(cfg, s, t) is None and vc.usable(cfg, s, t, r) is not None:
            entries = vc.footprint(cfg, s, t)["acc"]
            tile = entries - t.oc_blocks
            assert vc.footprint(cfg, s, t, r)["acc"] == 2 * tile + 5 * t.oc_blocks
            assert "ACC needs" in vc.usable(cfg, s, t, r)
            break
    else:
        pytest.fail("no tiling fits the power-of-two epilogue only")
    chosen = vc.CONV2D.choose_tiles(cfg, s, 2, r)
    assert vc.footprint(cfg, s, chosen, r)["acc"] <= depth // chosen.vthreads


def test_scaled_refusals(cfg):
    r, params = fp.choose(np.full(10, 0.001))
    op = vo.dense_kernel(cfg, 3, 20, 10, r)
    a, w = np.zeros((3, 20), np.int8), np.zeros((10, 20), np.int8)
    bias = np.zeros(10, np.int32)
    names = r"expected 7 inputs \(data, weight, bias, a_min, a_max, m_hi, m_lo\)"
    with pytest.raises(CompileError, match=names):
        op(a, w, bias)
    with pytest.raises(CompileError, match=r"input m_hi: expected int32\[10\]"):
        op(a, w, bias, params.a_min, params.a_max, params.m_hi[:9], params.m_lo)
    with pytest.raises(CompileError, match="is not a requantisation.Requant"):
        vo.dense_kernel(cfg, 3, 20, 10, 0.001)


def test_dense_with_an_output_step(cfg):
    """The per-channel output step (graph.qdq's three-valued channels): channels with
    s_min = s_max = 0 are the plain sequence, the others add [acc + bias >= t] after the shift;
    bit-exact against fixed_point.requantize_ref, and the step changes some outputs."""
    rng = np.random.default_rng(5)
    a, wt = _int8(rng, (3, 20)), _int8(rng, (10, 20))
    bias = rng.integers(-3000, 3000, 10).astype(np.int32)
    r, params = _scaled(rng, 10, True, 5, -128, 127, typical=5500.0 * np.sqrt(20))
    r = fp.ScaledRequant(r.k, r.t, r.s, r.zero_point, r.lo, r.hi, r.ties_even, step=True)
    stepped = np.arange(10) % 2 == 1
    params = fp.ChannelParams(*params.arrays(), s_bias=np.where(stepped, -500, 0).astype(np.int32),
                              s_min=np.zeros(10, np.int32), s_max=stepped.astype(np.int32))
    out, _ = vo.dense_kernel(cfg, 3, 20, 10, r, vthreads=2)(a, wt, bias, *params.arrays())
    acc = wl.dense_acc(a, wt, bias)
    ref = fp.requantize_ref(acc, r, params, axis=1)
    np.testing.assert_array_equal(out, ref)
    plain = fp.requantize_ref(acc, fp.ScaledRequant(r.k, r.t, r.s, r.zero_point), fp.ChannelParams(*params.arrays()[:4]))
    assert (ref != plain).any() and np.array_equal(ref[:, ~stepped], plain[:, ~stepped])
    assert [st.name for st in epilogue(r)][:6] == ["bias_add", "step", "step_add", "step_lo", "step_hi", "clamp_lo"]
