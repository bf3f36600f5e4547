"""Forms torchvision's exporters write that the hand-built models of test_graph.py do not."""

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from graph.errors import GraphError
from graph.models.onnx_builder import OnnxBuilder
from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model
from requantisation import MultiplyShift


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


@pytest.mark.parametrize("name, conv_scale, channels, fc_scale, outputs", [
    ("tiny", 1e-12, 8, .01, 6),      # at most two output values per channel
    ("three", 1e-6, 64, .1, 16),     # three values per channel
])
def test_a_classifier_on_a_vanishing_input_runs_on_the_accelerator_exactly(name, conv_scale, channels, fc_scale,
                                                                           outputs):
    """GoogLeNet's and ShuffleNet's fc at 64x64 with random weights: the input's scale is tiny,
    quantize_static widens the weight scales to keep the int32 bias, and some channels get
    M ~ 1e-8 with bias' ~ 2^31. REQ's 64-bit product holds them like any other channel (the
    base-ISA fixed-point form needed a special encoding for them, docs/history.md): the dense
    runs on VTA-8, identical to onnxruntime."""
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
    assert all(isinstance(run.region.spec.requant, MultiplyShift) for run in result.runs
               if run.region.spec.op == "dense")
    assert dense["onnxruntime"]["identical_fraction"] == 1.0
    assert result.verified and result.onnxruntime["identical_fraction"] == 1.0


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
