"""Forms torchvision's exporters write that the hand-built models of test_graph.py do not."""
import dataclasses
import math
from fractions import Fraction

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from requantisation import linear as rq_linear
from graph.errors import GraphError
from vta_sim.errors import CompileError
from graph.models.onnx_builder import OnnxBuilder
from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model
from requantisation import fixed_point
from vta_sim.config import INT8_MAX, INT8_MIN


def test_a_mean_over_h_and_w_without_keepdims_is_a_global_pool_on_the_accelerator():
    """MnasNet ends in x.mean([2, 3]): ReduceMean(axes=[2, 3], keepdims=0), then the Gemm."""
    rng = np.random.default_rng(7)
    b = OnnxBuilder("mean", (1, 3, 8, 8))
    x = b.relu(b.conv("input", rng.normal(0, .3, (16, 3, 3, 3)), rng.normal(0, .1, 16), pad=1))
    y = b.node("ReduceMean", [x], axes=[2, 3], keepdims=0)
    model = b.build(b.dense(y, rng.normal(0, .3, (5, 16)), rng.normal(0, .1, 5)))
    qdq = quantizer_named("onnxruntime")(model, rng.random((8, 3, 8, 8), dtype=np.float32))
    result = run_model(ModelCase("mean", qdq, rng.random((2, 3, 8, 8), dtype=np.float32)), "1x8x8",
                       compare_onnxruntime=True)
    pool = next(r for r in result.layers if r["op"] == "avg_pool")
    assert pool["target"] == "vta" and pool["shape"].startswith("8x8/1 dw 16->16")
    assert pool["onnxruntime"]["max_abs_lsb"] <= 1 and pool["onnxruntime"]["identical_fraction"] > 0.9
    assert result.verified and all(r["target"] == "vta" for r in result.layers)


def _chunked(seed=9):
    """conv, then ShuffleNet's x.chunk(2, dim=1) as torch exports it (the Slice bounds computed
    from Shape ops), a conv on the second half, the mean over H and W and the classifier."""
    rng = np.random.default_rng(seed)
    b = OnnxBuilder("chunk", (1, 8, 4, 4))
    x = b.relu(b.conv("input", rng.normal(0, .3, (8, 8, 1, 1)), rng.normal(0, .1, 8)))

    def ints(name, values):
        b.inits.append(numpy_helper.from_array(np.array(values, np.int64), name))
        return name
    channels = b.node("Gather", [b.node("Shape", [x]), ints("one", [1])], axis=0)
    half = b.node("Div", [b.node("Add", [channels, "one"]), ints("two", [2])])
    x = b.node("Slice", [x, half, b.node("Mul", [half, "two"]), "one"])
    x = b.relu(b.conv(x, rng.normal(0, .3, (4, 4, 3, 3)), rng.normal(0, .1, 4), pad=1))
    x = b.node("ReduceMean", [x], axes=[2, 3], keepdims=0)               # ShuffleNet's x.mean([2, 3])
    return b.build(b.dense(x, rng.normal(0, .3, (5, 4)), rng.normal(0, .1, 5)))


def test_a_conv_after_a_shape_computed_reshape_stays_on_the_cpu_with_the_reason():
    """TVM's frontend leaves the chunk's output shape unknown; the layers after it stay on the
    CPU naming why (before, reading their shape crashed the build), the conv before runs on VTA-8."""
    rng = np.random.default_rng(10)
    qdq = quantizer_named("onnxruntime")(_chunked(), rng.random((8, 8, 4, 4), dtype=np.float32))
    result = run_model(ModelCase("shuffle", qdq, rng.random((1, 8, 4, 4), dtype=np.float32)), "1x8x8")
    first, second = (r for r in result.layers if r["op"] == "conv2d")
    assert first["target"] == "vta"
    assert second["target"] == "cpu" and "is not known when the graph is built" in second["reason"]
    assert result.verified


@pytest.mark.parametrize("name, conv_scale, channels, fc_scale, outputs, stepped", [
    ("tiny", 1e-12, 8, .01, 6, False),    # at most two values per channel: the clamp alone
    ("three", 1e-6, 64, .1, 16, True),    # three values: the clamp and the output step
])
def test_a_classifier_on_a_vanishing_input_runs_on_the_accelerator_exactly(name, conv_scale, channels, fc_scale,
                                                                           outputs, stepped):
    """GoogLeNet's and ShuffleNet's fc at 64x64 with random weights: the input's scale is tiny,
    quantize_static widens the weight scales to keep the int32 bias, and some channels get
    M ~ 1e-8 with bias' ~ 2^31, which no fixed-point encoding holds. Over their accumulator
    range those channels output two values (GoogLeNet; the sequence's clamp places the step) or
    three (ShuffleNetV2, M 2 reach ~ 2: the output step, ChannelParams.s_*, places the second)
    and are re-encoded exactly (rq_linear._few_valued): the dense runs on VTA-8, identical to
    onnxruntime."""
    rng = np.random.default_rng(8)
    b = OnnxBuilder(name, (1, 4, 4, 4))
    x = b.conv("input", rng.normal(0, conv_scale, (channels, 4, 3, 3)), np.zeros(channels), pad=1)
    model = b.build(b.dense(b.flatten(x), rng.normal(0, fc_scale, (outputs, channels * 16)),
                            rng.normal(0, .1, outputs)))
    qdq = quantizer_named("onnxruntime-per-channel")(model, rng.random((8, 4, 4, 4), dtype=np.float32))
    result = run_model(ModelCase(name, qdq, rng.random((4, 4, 4, 4), dtype=np.float32)), "1x8x8",
                       compare_onnxruntime=True)
    dense = next(r for r in result.layers if r["op"] == "dense")
    assert dense["target"] == "vta", dense.get("reason")
    steps = [bool(run.region.spec.requant.step) for run in result.runs if run.region.spec.op == "dense"]
    assert any(steps) == stepped
    assert dense["onnxruntime"]["identical_fraction"] == 1.0
    assert result.verified and result.onnxruntime["identical_fraction"] == 1.0


def _real(mult: float, bias: int, zy: int, acc: int) -> int:
    """The output under the real multiplier, in exact arithmetic."""
    return min(max(math.floor(Fraction(mult) * (acc + bias) + Fraction(1, 2)) + zy, INT8_MIN), INT8_MAX)


@pytest.mark.parametrize("mult, bias, zy, reach", [
    (6.16e-8, 2_067_000_000, -3, 4000), (6.16e-8, -2_100_000_000, 5, 4000), (1.19e-12, 2_147_000_000, 0, 4000),
    (2e-9, 1_500_000_000, 120, 4000), (6.16e-8, 170_454_545, -20, 4000),      # a step near acc = 0
    (2.98e-8, 2_100_000_000, -1, 8_400_000),       # ShuffleNet's fc: 1024 inputs, weights up to 64
    (6.2e-8, 2_000_000_000, -1, 8_400_000),         # three values: M 2 reach = 1.04, as its 37 channels
    (1.1e-7, -1_180_000_000, 7, 8_400_000),         # three values, negative
    (1.1e-7, -1_231_800_000, 7, 8_400_000),         # three, clipped at the bottom to one
    (3e-4, 1_000_000_000, 0, 4000)])                # 2.4 output steps, but saturated: one value
def test_few_valued_channels_keep_every_output(mult, bias, zy, reach):
    """Against the real multiplier in exact arithmetic: every accumulator of a small range; of a
    large one, 20,001 spread over it and every one within 2,000 of where the output steps."""
    m, b, few = rq_linear._few_valued(np.array([mult]), np.array([float(bias)]), np.array([reach]), zy, INT8_MIN)
    r, params = fixed_point.choose(m, zy, INT8_MIN, INT8_MAX, acc_bound=reach + np.abs(b))
    r = dataclasses.replace(r, step=bool(few.steps))
    params = rq_linear._clamped(params, few, b)
    if reach <= 4000:
        acc = np.arange(-reach, reach + 1)
    else:
        acc = np.linspace(-reach, reach, 20_001).astype(np.int64)
        for top in _steps(mult, bias, zy, reach):
            acc = np.concatenate([acc, np.clip(np.arange(top - 2000, top + 2001), -reach, reach)])
        acc = np.unique(acc)
    got = fixed_point.requantize_ref(acc + int(b[0]), r, params, axis=0)
    assert got.tolist() == [_real(mult, bias, zy, a) for a in acc.tolist()] and few.bounds


def _steps(mult: float, bias: int, zy: int, reach: int) -> list:
    """Every accumulator in [-reach, reach] where the real output changes, by bisection on the
    monotone real output (an independent search, not _few_valued's closed form)."""
    out, found, first = (lambda a: _real(mult, bias, zy, a)), [], -reach
    while out(first) != out(reach):
        low, top = first, reach
        while top - low > 1:
            middle = (low + top) // 2
            low, top = (middle, top) if out(middle) == out(first) else (low, middle)
        found.append(top)
        first = top
    return found


def test_a_channel_of_four_values_is_not_re_encoded():
    """Only up to three values have an exact encoding here; more are left to fixed_point.choose."""
    m, _, few = rq_linear._few_valued(np.array([2e-7]), np.array([5e8]), np.array([8_400_000]), 0, INT8_MIN)
    assert m[0] == 2e-7 and not few.bounds and not few.steps


def test_a_concat_of_shape_computed_chunks_is_refused_naming_the_pre_processing(tmp_path):
    """ShuffleNetV2 as torch exports it: x.chunk's halves concatenated again. TVM cannot compile
    the Concat of unknown shapes; the refusal names onnxruntime's quant_pre_process, after which
    the model runs."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    rng = np.random.default_rng(11)
    b = OnnxBuilder("shuffle", (1, 8, 4, 4))
    x = b.relu(b.conv("input", rng.normal(0, .3, (8, 8, 1, 1)), rng.normal(0, .1, 8)))
    b.inits += [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (("one", [1]), ("two", [2]))]
    half = b.node("Div", [b.node("Add", [b.node("Gather", [b.node("Shape", [x]), "one"], axis=0), "one"]), "two"])
    left = b.node("Slice", [x, b.node("Mul", [half, b.node("Sub", [half, half])]), half, "one"])
    right = b.relu(b.conv(b.node("Slice", [x, half, b.node("Mul", [half, "two"]), "one"]),
                          rng.normal(0, .3, (4, 4, 3, 3)), rng.normal(0, .1, 4), pad=1))
    y = b.node("ReduceMean", [b.node("Concat", [left, right], axis=1)], axes=[2, 3], keepdims=0)
    model = b.build(b.dense(y, rng.normal(0, .3, (5, 8)), rng.normal(0, .1, 5)))
    calibration, x = rng.random((8, 8, 4, 4), dtype=np.float32), rng.random((1, 8, 4, 4), dtype=np.float32)
    with pytest.raises(GraphError, match="quant_pre_process"):
        run_model(ModelCase("shuffle", quantizer_named("onnxruntime")(model, calibration), x), "1x8x8")
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1     # batch 1, as torch exports
    onnx.save(model, tmp_path / "exported.onnx")
    quant_pre_process(tmp_path / "exported.onnx", tmp_path / "pre.onnx", skip_symbolic_shape=True)
    fixed = onnx.load(tmp_path / "pre.onnx")
    result = run_model(ModelCase("shuffle", quantizer_named("onnxruntime")(fixed, calibration), x), "1x8x8")
    assert result.verified and all(r["target"] == "vta" for r in result.layers if r["op"] == "conv2d")


@pytest.mark.parametrize("mult, bias, off", [(2e-7, 5e8, 5), (1e-6, 1.2e8, None), (4e-6, 2e7, None)])
def test_a_huge_bias_channel_left_to_choose_is_refused_when_more_than_one_lsb_off(mult, bias, off):
    """Five or more output values over +-8.4 M with bias' above 2^24: fixed_point.choose's
    encoding is checked at every step of the real output (exact arithmetic); 5 LSB off is
    refused naming the channel, 1 LSB off at a step's edge is kept."""
    mult, bias, reach = np.array([mult]), np.array([bias]), np.array([8_400_000])
    m, b, few = rq_linear._few_valued(mult, bias, reach, 0, INT8_MIN)
    r, params = fixed_point.choose(m, 0, INT8_MIN, INT8_MAX, acc_bound=reach + np.abs(b))
    if off is None:
        rq_linear._check_left_to_choose(r, params, m, b, reach, 0, INT8_MIN, few)
    else:
        with pytest.raises(CompileError, match=f"channel 0 .* {off} LSB off the real multiplier"):
            rq_linear._check_left_to_choose(r, params, m, b, reach, 0, INT8_MIN, few)
