"""C1-like first layers packed: a conv with few input channels runs as the dense kernel over the
host's im2col of its input (graph.ops.conv2d.ConvSpec.im2col_kernel), chosen by the cycle model
(im2col_pays), bit-exact with a direct numpy conv."""
import numpy as np
import pytest

from graph.ops.conv2d import ConvSpec, im2col, im2col_pays
from requantisation import PowerOfTwo, multiply_shift, rule
from schedules import vta_ops
from schedules import vta_workloads as wl
from schedules.vta_conv2d import ConvShape
from vta_sim.config import Config

CFG = Config.load("1x8x8")
C1_7x7 = ConvShape(1, 16, 16, 3, 16, 7, 3, 2)        # ResNet's stem, small
C1_3x3 = ConvShape(1, 20, 20, 3, 32, 3, 1, 2)        # MobileNetV2's stem, small


def _operands(s: ConvShape, seed: int):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (s.n, s.ic, s.h, s.w), dtype=np.int8)
    w = rng.integers(-128, 128, (s.oc, s.ic, s.k, s.k), dtype=np.int8)
    b = rng.integers(-3000, 3000, s.oc, dtype=np.int32)
    return x, w, b


def _requant(kind: str, s: ConvShape, seed: int):
    """(Requant, its per-channel vectors) of each kind the dense kernel takes."""
    if kind == "pow2":
        return PowerOfTwo(9), ()
    rng = np.random.default_rng(seed)
    r, m = multiply_shift.choose(rng.uniform(1e-3, 4e-3, s.oc), zero_point=-5)
    return r, (m,)


def _direct(spec: ConvSpec, x, w, b, channel):
    """The conv in numpy int64 straight from its definition: pad with the zero point, convolve."""
    s = spec.shape
    xp = np.pad(x, ((0, 0), (0, 0), (s.pad, s.pad), (s.pad, s.pad)), constant_values=spec.pad_value)
    return rule.reference(wl.conv2d_acc(xp, w, b, 0, s.stride), spec.requant, channel)


def test_im2col_rows_hold_each_pixels_receptive_field_in_oihw_order():
    s = ConvShape(2, 7, 6, 3, 4, 3, 1, 2)
    x, w, b = _operands(s, 0)
    rows = im2col(x, s, pad_value=-9)
    assert rows.shape == (2 * s.oh * s.ow, 3 * 9)
    acc = rows.astype(np.int64) @ w.reshape(4, -1).astype(np.int64).T + b
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-9)
    direct = wl.conv2d_acc(xp, w, b, 0, 2)
    np.testing.assert_array_equal(acc.reshape(2, s.oh, s.ow, 4).transpose(0, 3, 1, 2), direct)


@pytest.mark.parametrize("shape", [C1_7x7, C1_3x3], ids=["7x7s2_3to16", "3x3s2_3to32"])
@pytest.mark.parametrize("kind", ["pow2", "multiply_shift"])
def test_first_layer_runs_packed_and_bit_exact(shape, kind):
    requant, channel = _requant(kind, shape, 1)
    spec = ConvSpec(shape, requant, pad_value=-7)          # a zero point: padding holds it
    assert spec.im2col(CFG, 2)
    kernel = spec.kernel(CFG, 2)
    assert kernel.layout == "im2col" and kernel.op == "conv2d" and kernel.macs == spec.macs
    x, w, b = _operands(shape, 2)
    got, result = kernel(x, w, b, *channel)
    want = _direct(spec, x, w, b, channel)
    assert got.shape == (1, shape.oc, shape.oh, shape.ow) and got.dtype == np.int8
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(spec.reference(x, w, b, *channel), want)   # the reference is the conv's own
    assert result.cycles > 0


def test_wide_convs_keep_the_conv_kernel():
    """64 -> 64 channels already fill the reduction: no im2col (nor for a depthwise conv)."""
    wide = ConvSpec(ConvShape(1, 16, 16, 64, 64, 3, 1, 1), PowerOfTwo(8))
    assert not wide.im2col(CFG, 2)
    assert not im2col_pays(CFG, ConvShape(1, 16, 16, 32, 32, 3, 1, 1, groups=32), PowerOfTwo(8), 2)
    assert wide.kernel(CFG, 2).layout == ""


def test_the_packed_7x7_takes_fewer_cycles_than_the_conv_kernel():
    """What the chooser promises: the packed kernel is cheaper than the conv kernel it replaces
    (measured cycles of both on the same operands)."""
    spec = ConvSpec(C1_7x7, PowerOfTwo(9), pad_value=-7)
    x, w, b = _operands(C1_7x7, 3)
    packed, packed_run = spec.kernel(CFG, 2)(x, w, b)
    direct = spec.host_padded(vta_ops.conv2d_kernel_for(CFG, spec.kernel_shape(), spec.requant, 2))
    unpacked, unpacked_run = direct(x, w, b)
    np.testing.assert_array_equal(packed, unpacked)
    assert packed_run.cycles < unpacked_run.cycles


def test_a_model_whose_first_conv_is_packed_runs_verified():
    """A 3 -> 16 7x7/2 stem quantised by onnxruntime (an input zero point: padding holds it) runs
    packed on the accelerator, bit-exact with the CPU build; the report says so."""
    from graph.models.onnx_builder import OnnxBuilder
    from graph.quantize import quantizer_named
    from graph.run import ModelCase, run_model

    rng = np.random.default_rng(5)
    b = OnnxBuilder("stem", (1, 3, 16, 16))
    x = b.relu(b.conv("input", rng.normal(0, .2, (16, 3, 7, 7)), rng.normal(0, .1, 16), stride=2, pad=3))
    out = b.conv(x, rng.normal(0, .2, (16, 16, 3, 3)), rng.normal(0, .1, 16), pad=1)
    qdq = quantizer_named("onnxruntime-per-channel")(b.build(out), rng.random((8, 3, 16, 16), dtype=np.float32))
    result = run_model(ModelCase("stem", qdq, rng.random((2, 3, 16, 16), dtype=np.float32)), "1x8x8")
    first, second = (r for r in result.layers if r["op"] == "conv2d")
    assert first["target"] == "vta" and first["shape"].endswith(" im2col")
    assert second["target"] == "vta" and not second["shape"].endswith(" im2col")
    assert result.runs[0].region.spec.pad_value != 0
    assert all(r["verified"] for r in result.layers if r["target"] == "vta")
    assert result.logits_identical and result.verified
