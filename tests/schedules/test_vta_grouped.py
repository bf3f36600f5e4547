"""Grouped and depthwise conv2d on the GEMM (block groups, block-diagonal weight tiles), against
the numpy int64 reference of a grouped conv: one dense conv per group."""
import numpy as np
import pytest

from vta_sim.errors import CompileError
from requantisation import fixed_point as fp
from schedules import vta_conv2d as vc
from requantisation import PowerOfTwo, reference
from schedules import vta_ops
from schedules import vta_workloads as wl


def _grouped_ref(x, w, b, pad, stride, groups):
    """Independent of wl.conv2d_acc's grouping: each group's slice through the dense reference."""
    per, outs = x.shape[1] // groups, w.shape[0] // groups
    return np.concatenate([wl.conv2d_acc(x[:, g * per:(g + 1) * per], w[g * outs:(g + 1) * outs],
                                         b[g * outs:(g + 1) * outs], pad, stride) for g in range(groups)], axis=1)


def _run(cfg, n, h, c, k, pad, stride, groups, requant=None, vthreads=2, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (n, c, h, h), dtype=np.int8)
    w = rng.integers(-128, 128, (c, c // groups, k, k), dtype=np.int8)
    b = rng.integers(-3000, 3000, c, dtype=np.int32)
    requant = requant or PowerOfTwo(7)
    kernel = vta_ops.conv2d_kernel(cfg, n, h, h, c, c, k, pad, stride, requant, vthreads=vthreads, groups=groups)
    acc = _grouped_ref(x, w, b, pad, stride, groups)
    if isinstance(requant, fp.ScaledRequant):
        params = fp.choose(np.geomspace(1e-4, 4e-3, c), requant.zero_point, requant.lo, requant.hi)[1]
        y, result = kernel(x, w, b, *params.arrays())
        want = fp.requantize_ref(acc, requant, params)
    else:
        y, result = kernel(x, w, b)
        want = reference(acc, requant)
    return y, want, result, kernel


@pytest.mark.parametrize("n, h, c, k, pad, stride, groups", [
    (1, 9, 16, 3, 1, 1, 16),     # depthwise 3x3, stride 1
    (1, 10, 24, 3, 1, 2, 24),    # depthwise 3x3, stride 2
    (1, 7, 12, 5, 2, 1, 12),     # depthwise 5x5, channels not whole blocks
    (1, 11, 20, 5, 2, 2, 20),    # depthwise 5x5, stride 2
    (1, 8, 48, 3, 1, 1, 2),      # groups of 24 channels: block groups of 3 blocks
    (1, 6, 24, 3, 1, 1, 6),      # groups of 4: two groups per block, block-diagonal tiles
    (3, 5, 16, 1, 0, 1, 2),      # grouped 1x1 (ShuffleNet v1 style), odd batch
])
def test_grouped_conv_matches_numpy(cfg, n, h, c, k, pad, stride, groups):
    y, want, result, _ = _run(cfg, n, h, c, k, pad, stride, groups)
    np.testing.assert_array_equal(y, want)
    assert result.cycles > 0


@pytest.mark.parametrize("ties_even", [False, True])
def test_grouped_conv_with_fixed_point_requantisation(cfg, ties_even):
    """Also the average pools' epilogue, whose ties go to even (three scratch copies in ACC)."""
    r = fp.choose(np.geomspace(1e-4, 4e-3, 24), -128, -128, 127, ties_even=ties_even)[0]
    y, want, _, _ = _run(cfg, 1, 8, 24, 3, 1, 1, 24, requant=r)
    np.testing.assert_array_equal(y, want)


def test_ties_to_even_on_the_accelerator():
    """A 2x2 sum times 1/4 (an average pool of equal scales): a quarter of the outputs are
    exact ties; the kernel rounds them to even, as the reference does."""
    from vta_sim.config import Config

    cfg = Config.load("1x8x8")
    c = 16
    r, params = fp.choose(np.full(c, 0.25), 3, -128, 127, ties_even=True)
    kernel = vta_ops.conv2d_kernel(cfg, 1, 6, 6, c, c, 2, 0, 2, r, groups=c)
    x = np.random.default_rng(5).integers(-128, 128, (1, c, 6, 6), dtype=np.int8)
    ones, zero = np.ones((c, 1, 2, 2), np.int8), np.zeros(c, np.int32)
    y, _ = kernel(x, ones, zero, *params.arrays())
    sums = _grouped_ref(x, ones, zero, 0, 2, c)
    assert (sums % 4 == 2).mean() > 0.1                            # the ties are there
    want = np.clip(np.round(sums / 4) + 3, -128, 127)              # numpy rounds half to even
    np.testing.assert_array_equal(y, want)


def test_depthwise_conv_multiplies_only_its_own_block():
    """The GEMM runs one block per output block and tap (block diagonal), not every input block:
    its micro-op count is a dense conv's divided by the input blocks."""
    from vta_sim.config import Config

    cfg = Config.load("1x8x8")
    _, _, depthwise, kernel = _run(cfg, 1, 8, 32, 3, 1, 1, 32, vthreads=1)
    c = vc.computed_shape(cfg, vc.ConvShape(1, 8, 8, 32, 32, 3, 1, 1, 32), kernel.tiles)
    blocks = c.oc // cfg.BLOCK_OUT
    assert depthwise.stats["gemm_counter"] == blocks * c.oh * c.ow * 3 * 3


def test_block_group_weights_are_block_diagonal():
    w = np.arange(1, 1 + 6 * 2 * 1 * 1, dtype=np.int8).reshape(6, 2, 1, 1)    # 3 groups of 2
    out = vta_ops.block_group_weights(w, 3, 6, 8)[:, :, 0, 0]
    want = np.zeros((6, 8), np.int8)
    for o in range(6):
        want[o, o // 2 * 2:o // 2 * 2 + 2] = w[o, :, 0, 0]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("ic, oc, groups, match", [
    (16, 32, 16, "as many output as input channels"),
    (16, 16, 3, "not divisible by groups"),
])
def test_grouped_refusals(ic, oc, groups, match):
    from vta_sim.config import Config

    with pytest.raises(CompileError, match=match):
        vta_ops.conv2d_kernel(Config.load("1x8x8"), 1, 6, 6, ic, oc, 3, 1, 1, PowerOfTwo(7), groups=groups)
