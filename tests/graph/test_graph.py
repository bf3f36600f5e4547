"""The graph level: quantiser, QDQ pass, Relax BYOC partition, whole models against their CPU build."""
import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from graph.errors import GraphError
from graph.models.onnx_builder import OnnxBuilder
from graph.onnx_import import import_onnx
from graph.qdq import lower_qdq
from graph.quantize import quantize_model
from graph.run import ModelCase, output_step, run_model, run_onnxruntime


def _cnn(batch_shape=(1, 3, 9, 9), relu_before_pool=True, seed=0):
    """conv+relu, conv, residual add+relu, max-pool, dense: every accelerator pattern, odd shapes."""
    rng = np.random.default_rng(seed)
    c = batch_shape[1]
    b = OnnxBuilder("t", batch_shape)
    x = b.relu(b.conv("input", rng.normal(0, .3, (10, c, 3, 3)), rng.normal(0, .1, 10), pad=1))
    y = b.conv(x, rng.normal(0, .3, (10, 10, 3, 3)), rng.normal(0, .1, 10), pad=1)
    s = b.add(y, x)
    s = b.relu(s) if relu_before_pool else s
    p = b.flatten(b.max_pool(s, 3, 2, pad=1))
    h = (batch_shape[2] + 1) // 2
    return b.build(b.dense(p, rng.normal(0, .3, (7, 10 * h * h)), rng.normal(0, .1, 7)))


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(1)
    model = _cnn()
    qdq = quantize_model(model, rng.random((8, 3, 9, 9), dtype=np.float32))
    x = rng.random((3, 3, 9, 9), dtype=np.float32)         # batch 3
    return model, qdq, x


@pytest.fixture(scope="module")
def small_result(small):
    _, qdq, x = small
    return run_model(ModelCase("small", qdq, x), "1x8x8", vthreads=2)


# ----------------------------------------------------------------------------- quantiser
def test_quantiser_writes_symmetric_power_of_two_qdq(small):
    model, qdq, x = small
    inits = {i.name: numpy_helper.to_array(i) for i in qdq.graph.initializer}
    qnodes = [n for n in qdq.graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
    assert qnodes
    for node in qnodes:
        scale, zero = inits[node.input[1]], inits[node.input[2]]
        assert scale.size == 1 and float(scale) > 0
        assert np.log2(float(scale)) == round(np.log2(float(scale))), node.name
        assert int(zero) == 0
    weights = [inits[n.input[0]] for n in qnodes if n.op_type == "DequantizeLinear" and n.input[0] in inits]
    assert {w.dtype for w in weights} == {np.dtype(np.int8), np.dtype(np.int32)}
    # the quantised model still computes what the float one does, to within quantisation error
    ref, got = run_onnxruntime(model, x), run_onnxruntime(qdq, x)
    assert np.abs(ref - got).max() < 0.1 * np.abs(ref).max()


def test_quantiser_refuses_an_already_quantised_model(small):
    with pytest.raises(GraphError, match="already quantised"):
        quantize_model(small[1], small[2])


# ----------------------------------------------------------------------------- QDQ pass
def test_qdq_pass_rewrites_every_block_into_integer_ops(small):
    _, qdq, _ = small
    mod, _ = import_onnx(qdq, batch=3)
    integer, decisions = lower_qdq(mod)
    assert [(d.op, d.integer) for d in decisions] == [("conv2d", True), ("conv2d", True), ("add", True),
                                                       ("max_pool", True), ("dense", True)]
    text = integer.script()
    assert "R.nn.conv2d" in text and 'out_dtype="int32"' in text
    # only the model's input quantize and its output dequantize remain in float
    assert text.count("R.quantize(") == 1 and text.count("R.dequantize(") == 1


@pytest.mark.parametrize("layer", ["conv_relu", "dense"])
def test_each_integer_block_is_within_one_lsb_of_onnxruntime(layer):
    """Rounding differs only on ties (half up here, half to even in ONNX), so one requantised
    layer agrees to 1 LSB; a deep stack compounds it, so this checks one block at a time."""
    rng = np.random.default_rng(3)
    b = OnnxBuilder(layer, (1, 5, 6, 6))
    if layer == "conv_relu":
        out = b.relu(b.conv("input", rng.normal(0, .3, (12, 5, 3, 3)), rng.normal(0, .1, 12), pad=1))
    else:
        out = b.dense(b.flatten("input"), rng.normal(0, .3, (9, 180)), rng.normal(0, .1, 9))
    qdq = quantize_model(b.build(out), rng.random((8, 5, 6, 6), dtype=np.float32))
    x = rng.random((4, 5, 6, 6), dtype=np.float32)
    mod, _ = import_onnx(qdq, batch=4)
    integer, _ = lower_qdq(mod)
    from graph.build import CpuModel

    output_dq = next(n for n in qdq.graph.node if n.output[0] == "output")
    scale = next(numpy_helper.to_array(i) for i in qdq.graph.initializer if i.name == output_dq.input[1])
    diff = np.abs(CpuModel(integer).run(x) - run_onnxruntime(qdq, x)) / float(scale)
    assert diff.max() <= 1 + 1e-6
    assert (diff == 0).mean() > 0.9


def _with_scale(qdq: onnx.ModelProto, name: str, value: float) -> onnx.ModelProto:
    model = onnx.ModelProto()
    model.CopyFrom(qdq)
    for init in model.graph.initializer:
        if init.name == name:
            init.CopyFrom(numpy_helper.from_array(np.array(value, np.float32), name))
            return model
    raise KeyError(name)


def test_a_scale_that_is_not_a_power_of_two_runs_in_fixed_point(small):
    _, qdq, x = small
    conv_w = next(n for n in qdq.graph.node if n.op_type == "Conv").input[1]
    model = _with_scale(qdq, conv_w.removesuffix("_dq") + "_scale", 0.01)
    result = run_model(ModelCase("odd_scale", model, x), "1x8x8")
    assert all(r["target"] == "vta" and r["verified"] for r in result.layers)
    assert result.runs[0].region.spec.requant.__class__.__name__ == "MultiplyShift"
    assert result.logits_identical and result.verified


def test_a_weight_zero_point_stays_on_the_cpu_with_the_reason(small):
    _, qdq, x = small
    conv_w = next(n for n in qdq.graph.node if n.op_type == "Conv").input[1]
    model = onnx.ModelProto()
    model.CopyFrom(qdq)
    dq = next(n for n in model.graph.node if n.output[0] == conv_w)
    model.graph.initializer.append(numpy_helper.from_array(np.array(3, np.int8), "weight_zp"))
    dq.input[2] = "weight_zp"
    result = run_model(ModelCase("weight_zp", model, x), "1x8x8")
    first = result.layers[0]
    assert first["target"] == "cpu" and "zero point" in first["reason"]
    assert result.logits_identical and result.verified


def test_a_float_model_runs_on_the_cpu_with_the_reason(small):
    model, _, x = small
    result = run_model(ModelCase("float", model, x[:1]), "1x8x8")
    assert {r["target"] for r in result.layers} == {"cpu"}
    assert all("not quantised" in r["reason"] for r in result.layers)
    assert result.logits_identical


def test_integer_op_formats_are_refused_with_the_qdq_alternative():
    node = helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy"], ["y"], name="qconv")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", onnx.TensorProto.UINT8,
                                                                          [1, 1, 4, 4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.UINT8, [1, 1, 4, 4])])
    with pytest.raises(GraphError, match="QLinearConv.*QDQ"):
        import_onnx(helper.make_model(graph))


# ----------------------------------------------------------------------------- offload
def test_every_pattern_offloads_and_matches_the_cpu_build(small_result):
    r = small_result
    assert [(row["op"], row["target"]) for row in r.layers] == [
        ("conv2d", "vta"), ("conv2d", "vta"), ("add", "vta"), ("max_pool", "vta"), ("dense", "vta")]
    assert all(row["verified"] and row["cycles"] > 0 for row in r.layers)
    assert r.batch == 3 and r.logits_identical and r.verified
    assert r.total_cycles == sum(row["cycles"] for row in r.layers)


def test_padded_max_pool_of_a_signed_input_pads_with_int8_min():
    """Without a ReLU before it the pool sees negative values: the host pads with -128."""
    rng = np.random.default_rng(2)
    qdq = quantize_model(_cnn(relu_before_pool=False), rng.random((4, 3, 9, 9), dtype=np.float32))
    result = run_model(ModelCase("signed_pool", qdq, rng.random((2, 3, 9, 9), dtype=np.float32) - 0.5),
                       "1x8x8")
    pool = next(r for r in result.layers if r["op"] == "max_pool")
    assert pool["target"] == "vta" and pool["verified"]
    assert result.logits_identical and result.verified


def test_json_keys(small_result):
    j = small_result.to_json()
    for key in ("model", "verified", "accuracy_cpu", "accuracy_vta", "logits_identical", "total_cycles",
                "layers"):
        assert key in j
    assert j["accuracy_cpu"] is None
    for row in j["layers"]:
        assert {"name", "op", "target", "macs", "cycles", "utilization", "verified"} <= set(row)
    # MACs from the model's own shapes: conv 3x3 3->10 and 10->10 on 9x9 (pad 1), dense 250->7
    assert [r["macs"] for r in j["layers"]] == [3 * 81 * 10 * 3 * 9, 3 * 81 * 10 * 10 * 9, 0, 0, 3 * 250 * 7]
    assert j["macs"] == sum(r["macs"] for r in j["layers"]) and j["mac_fraction_vta"] == 1.0
    assert j["cycles_per_frame"] == j["total_cycles"] / 3


def test_digits_on_the_accelerator(tmp_path):
    """The acceptance run: trained at first use, >= 0.95 held out, identical logits, convs on VTA."""
    from graph.models import digits

    d = digits.load(cache_dir=tmp_path)
    assert d.trained and digits.load(cache_dir=tmp_path).trained is False
    result = run_model(ModelCase("digits", d.qdq, d.x_test, d.y_test), "1x8x8")
    j = result.to_json()
    assert j["logits_identical"] and j["verified"]
    assert j["accuracy_vta"] == j["accuracy_cpu"] >= 0.95
    assert all(r["target"] == "vta" for r in j["layers"] if r["op"] == "conv2d")


def test_cli_runs_an_onnx_file_with_inputs_and_writes_json(small, tmp_path, capsys):
    import json

    from vta_sim.cli import main

    _, qdq, x = small
    path, inputs, out = tmp_path / "small.onnx", tmp_path / "x.npy", tmp_path / "out" / "r.json"
    onnx.save(qdq, str(path))
    np.save(inputs, x[:2])
    assert main(["model", str(path), "--input", str(inputs), "--json", str(out), "--vthreads", "1"]) == 0
    j = json.loads(out.read_text())
    assert j["model"] == "small" and j["batch"] == 2 and j["verified"] and j["vthreads"] == 1
    assert "logits identical to the CPU build   yes" in capsys.readouterr().out


@pytest.mark.parametrize("bad, message", [
    (np.zeros((2, 3, 9, 8), np.float32), "model takes"),
    (np.zeros((2, 3, 9, 9), np.float64), "float32"),
])
def test_cli_refuses_inputs_of_the_wrong_shape_or_dtype(small, tmp_path, capsys, bad, message):
    from vta_sim.cli import main

    path, inputs = tmp_path / "small.onnx", tmp_path / "x.npy"
    onnx.save(small[1], str(path))
    np.save(inputs, bad)
    assert main(["model", str(path), "--input", str(inputs)]) == 2
    assert message in capsys.readouterr().err


def _batch_one(model):
    """The model as torch.onnx.export writes it: the input's batch fixed at 1."""
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    dim = fixed.graph.input[0].type.tensor_type.shape.dim[0]
    dim.ClearField("dim_param")
    dim.dim_value = 1
    return fixed


def test_cli_compares_a_stack_of_single_samples_with_onnxruntime(tmp_path, capsys):
    """--input (N, 1, C, H, W) on a batch-1 export: onnxruntime gets one sample at a time, and
    its outputs are the ones it gives each sample alone."""
    import json

    from graph.models import small_cnn
    from graph.quantize import quantizer_named
    from vta_sim.cli import main

    qdq = _batch_one(quantizer_named("onnxruntime")(small_cnn.float_model(), small_cnn.images(8, seed=6)))
    x = small_cnn.images(3, seed=9)
    path, inputs, out = tmp_path / "b1.onnx", tmp_path / "x.npy", tmp_path / "r.json"
    onnx.save(qdq, str(path))
    np.save(inputs, x[:, None])
    assert main(["model", str(path), "--input", str(inputs), "--compare-onnxruntime", "--json", str(out)]) == 0
    j = json.loads(out.read_text())
    assert j["batch"] == 3 and j["verified"] and j["onnxruntime"]["max_abs_lsb"] <= 1
    alone = np.concatenate([run_onnxruntime(qdq, x[i:i + 1]) for i in range(3)])
    assert np.array_equal(run_onnxruntime(qdq, x), alone)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_cli_refuses_inputs_holding_nan_or_inf(small, tmp_path, capsys, value):
    from vta_sim.cli import main

    path, inputs = tmp_path / "small.onnx", tmp_path / "x.npy"
    onnx.save(small[1], str(path))
    x = small[2].copy()
    x[1, 2, 3, 4] = value
    np.save(inputs, x)
    assert main(["model", str(path), "--input", str(inputs)]) == 2
    err = capsys.readouterr().err
    assert "non-finite" in err and "(1, 2, 3, 4)" in err


def test_cli_refuses_an_unknown_model(capsys):
    from vta_sim.cli import main

    assert main(["model", "lenet"]) == 2
    err = capsys.readouterr().err
    assert "accepted: digits, resnet18, encoder, bert" in err and " or a path" in err
    assert "digits-vit" in err


# ----------------------------------------------------------------------------- real quantisers
@pytest.mark.parametrize("quantizer", ["onnxruntime", "onnxruntime-per-channel", "onnxruntime-symmetric"])
def test_models_quantised_by_onnxruntime_run_on_the_accelerator(quantizer):
    """quantize_static's float scales, zero points (-128 after a folded ReLU) and per-channel
    weights: every conv and the Gemm on VTA-8, bit-exact with the CPU build, and within 1 LSB
    of onnxruntime itself."""
    from graph.models import small_cnn
    from graph.quantize import quantizer_named

    qdq = quantizer_named(quantizer)(small_cnn.float_model(), small_cnn.images(16, seed=6))
    result = run_model(ModelCase(quantizer, qdq, small_cnn.images(6, seed=7)), "1x8x8",
                       compare_onnxruntime=True)
    assert [(r["op"], r["target"]) for r in result.layers] == [
        ("conv2d", "vta"), ("conv2d", "vta"), ("max_pool", "vta"), ("dense", "vta")]
    assert result.logits_identical and result.verified
    o = result.onnxruntime
    assert o["max_abs_lsb"] <= 1 and o["argmax_equal"] and o["identical_fraction"] >= 0.95


@pytest.mark.parametrize("quantizer", ["onnxruntime", "onnxruntime-per-channel", "onnxruntime-symmetric"])
def test_residual_adds_with_zero_points_and_float_scales_run_on_the_accelerator(quantizer):
    """quantize_static's residual add (zero points, unequal float scales, a ReLU folded into
    the output range or kept as a node) runs on the ALU in fixed point: bit-exact with the CPU
    build and within 1 LSB of onnxruntime."""
    from graph.quantize import quantizer_named

    rng = np.random.default_rng(11)
    qdq = quantizer_named(quantizer)(_cnn(), rng.random((16, 3, 9, 9), dtype=np.float32))
    result = run_model(ModelCase(quantizer, qdq, rng.random((4, 3, 9, 9), dtype=np.float32)), "1x8x8",
                       compare_onnxruntime=True)
    assert [(r["op"], r["target"]) for r in result.layers] == [
        ("conv2d", "vta"), ("conv2d", "vta"), ("add", "vta"), ("max_pool", "vta"), ("dense", "vta")]
    assert result.verified
    o = result.onnxruntime
    assert o["max_abs_lsb"] <= 1 and o["argmax_equal"] and o["identical_fraction"] >= 0.95


def test_uint8_activations_map_to_int8_on_the_accelerator():
    """quantize_static with QUInt8 activations: convs and the Gemm read x - 128 as int8."""
    from onnxruntime.quantization import QuantType

    from graph.models import small_cnn
    from graph.quantize import quantize_with_onnxruntime

    qdq = quantize_with_onnxruntime(small_cnn.float_model(), small_cnn.images(16, seed=6),
                                    activation_type=QuantType.QUInt8)
    result = run_model(ModelCase("uint8", qdq, small_cnn.images(6, seed=7)), "1x8x8", compare_onnxruntime=True)
    targets = {r["op"]: (r["target"], r.get("reason")) for r in result.layers}
    assert targets["conv2d"][0] == "vta" and targets["dense"][0] == "vta"
    assert targets["max_pool"][0] == "cpu" and "uint8" in targets["max_pool"][1]
    assert result.logits_identical and result.verified
    assert result.onnxruntime["max_abs_lsb"] <= 1 and result.onnxruntime["argmax_equal"]


def test_zero_point_padding_holds_the_real_zero_at_every_border():
    """An input zero point (-128 here: inputs in [0, 1]) pads with itself, not with 0: every
    border output (pad 2 on a 5x5 kernel) agrees with onnxruntime."""
    from graph.quantize import quantize_with_onnxruntime

    rng = np.random.default_rng(8)
    b = OnnxBuilder("pad", (1, 4, 7, 7))
    model = b.build(b.conv("input", rng.normal(0, .3, (6, 4, 5, 5)), rng.normal(0, .1, 6), pad=2))
    qdq = quantize_with_onnxruntime(model, rng.random((16, 4, 7, 7), dtype=np.float32))
    x = rng.random((3, 4, 7, 7), dtype=np.float32)
    result = run_model(ModelCase("pad", qdq, x), "1x8x8", compare_onnxruntime=True)
    assert result.layers[0]["target"] == "vta" and result.verified
    assert "R.nn.pad" in result.partitioned.script()
    border = np.ones((7, 7), bool)
    border[2:-2, 2:-2] = False
    lsb = np.abs(result.logits_vta - result.logits_onnxruntime)[..., border]
    assert lsb.max() <= output_step(qdq) * 1.001
    assert (lsb == 0).mean() >= 0.95


# ----------------------------------------------------------------------------- depthwise, grouped, average pools
def _mobile(seed=0, pool=None):
    """MobileNet/ShuffleNet/RegNet shapes as exporters write them: a stride-2 stem, a depthwise
    3x3, a 1x1, a depthwise 5x5 stride 2, a grouped 3x3, average pools (3x3 pad 1, 2x2/2),
    the global average pool and the classifier."""
    rng = np.random.default_rng(seed)
    b = OnnxBuilder("mobile", (1, 3, 16, 16))
    x = b.relu(b.conv("input", rng.normal(0, .3, (16, 3, 3, 3)), rng.normal(0, .1, 16), stride=2, pad=1))
    x = b.clip(b.conv(x, rng.normal(0, .3, (16, 1, 3, 3)), rng.normal(0, .1, 16), pad=1, groups=16), 0.0, 6.0)
    y = b.conv(x, rng.normal(0, .3, (24, 16, 1, 1)), rng.normal(0, .1, 24))
    y = b.relu(b.conv(y, rng.normal(0, .3, (24, 1, 5, 5)), rng.normal(0, .1, 24), stride=2, pad=2, groups=24))
    y = b.relu(b.conv(y, rng.normal(0, .3, (24, 3, 3, 3)), rng.normal(0, .1, 24), pad=1, groups=8))
    y = b.avg_pool(y, 3, 1, pad=1) if pool is None else pool(b, y)
    y = b.avg_pool(y, 2, 2)
    y = b.flatten(b.global_avg_pool(y))
    return b.build(b.dense(y, rng.normal(0, .3, (5, 24)), rng.normal(0, .1, 5)))


@pytest.fixture(scope="module", params=["onnxruntime", "onnxruntime-per-channel"])
def mobile_result(request):
    from graph.quantize import quantizer_named

    rng = np.random.default_rng(1)
    qdq = quantizer_named(request.param)(_mobile(), rng.random((16, 3, 16, 16), dtype=np.float32))
    return run_model(ModelCase("mobile", qdq, rng.random((4, 3, 16, 16), dtype=np.float32)), "1x8x8",
                     compare_onnxruntime=True)


def test_depthwise_grouped_convs_and_average_pools_run_on_the_accelerator(mobile_result):
    r = mobile_result
    assert [(row["op"], row["target"]) for row in r.layers] == [("conv2d", "vta")] * 5 + [
        ("avg_pool", "vta")] * 3 + [("dense", "vta")]
    assert [row["shape"].split()[1] for row in r.layers[:5]] == ["3->16", "dw", "16->24", "dw", "g8"]
    assert r.verified and r.mac_fraction_vta == 1.0
    # depthwise MACs: one input channel per output channel (8x8 maps, 3x3; 4x4 maps, 5x5)
    assert r.layers[1]["macs"] == 4 * 16 * 64 * 9 and r.layers[3]["macs"] == 4 * 24 * 16 * 25
    assert r.layers[4]["macs"] == 4 * 24 * 16 * 3 * 9


def test_every_offloaded_layer_is_compared_with_onnxruntime_in_isolation(mobile_result):
    """Each layer gets onnxruntime's own input tensor; convolutions, the 3x3 average pool (its
    divisor 9 leaves no exact ties) and the dense layer agree with onnxruntime's tensor. The
    2x2 pool's exact ties round to even as ONNX's do; onnxruntime's float sum moves a few."""
    rows = mobile_result.layers
    assert all("identical_fraction" in row["onnxruntime"] for row in rows)
    for row in rows[:6] + rows[-2:]:
        assert row["onnxruntime"]["identical_fraction"] >= 0.99 and row["onnxruntime"]["max_abs_lsb"] <= 1, row
    assert rows[6]["onnxruntime"]["identical_fraction"] >= 0.95
    assert all(row["onnxruntime"]["max_abs_lsb"] <= 1 for row in rows)


def test_an_op_that_rounds_differently_shows_in_its_layer_alone():
    """Break one layer on purpose (the second conv's bias moved by 2^14): the per-layer
    comparison points at that layer, and the layers after it, fed onnxruntime's own inputs,
    still agree."""
    from graph import layer_agreement
    from graph.quantize import quantizer_named
    from graph.run import onnxruntime_outputs

    rng = np.random.default_rng(1)
    qdq = quantizer_named("onnxruntime")(_cnn(), rng.random((16, 3, 9, 9), dtype=np.float32))
    x = rng.random((2, 3, 9, 9), dtype=np.float32)
    result = run_model(ModelCase("t", qdq, x), "1x8x8")
    tensors = layer_agreement.layer_tensors(qdq)
    values = onnxruntime_outputs(layer_agreement.with_outputs(qdq, layer_agreement.needed(tensors)), x)
    region = result.runs[1].region
    weight, bias, *rest = region.constants
    region.constants = (weight, bias + np.int32(1 << 14), *rest)
    rows = [dict(r) for r in result.layers]
    layer_agreement.compare(rows, result.runs, tensors, values)
    assert rows[1]["onnxruntime"]["identical_fraction"] < 0.5
    assert all(r["onnxruntime"]["max_abs_lsb"] <= 1 for i, r in enumerate(rows) if i != 1)


def test_the_chained_comparison_follows_the_run_and_shows_where_differences_enter():
    """Fed the earlier layers' outputs (through the Flatten before the dense layer), the chain
    reproduces the run: the last layer's agreement is the model output's. With the second conv
    broken on purpose, the layers after it differ chained while each alone still agrees."""
    from graph import layer_agreement
    from graph.quantize import quantizer_named
    from graph.run import onnxruntime_outputs

    rng = np.random.default_rng(1)
    qdq = quantizer_named("onnxruntime")(_cnn(), rng.random((16, 3, 9, 9), dtype=np.float32))
    x = rng.random((2, 3, 9, 9), dtype=np.float32)
    result = run_model(ModelCase("t", qdq, x), "1x8x8", compare_onnxruntime=True)
    tensors = layer_agreement.layer_tensors(qdq)
    values = onnxruntime_outputs(layer_agreement.with_outputs(qdq, layer_agreement.needed(tensors)), x)
    rows = [dict(r) for r in result.layers]
    layer_agreement.chained(rows, result.runs, tensors, values, qdq)
    assert [r["op"] for r in rows] == ["conv2d", "conv2d", "add", "max_pool", "dense"]
    assert [r["onnxruntime_chained"]["from_onnxruntime"] for r in rows] == [1, 0, 0, 0, 0]
    assert rows[-1]["onnxruntime_chained"]["identical_fraction"] == result.onnxruntime["identical_fraction"]
    region = result.runs[1].region
    weight, bias, *rest = region.constants
    region.constants = (weight, bias + np.int32(1 << 14), *rest)
    layer_agreement.compare(rows, result.runs, tensors, values)
    layer_agreement.chained(rows, result.runs, tensors, values, qdq)
    assert rows[0]["onnxruntime_chained"] == {**rows[0]["onnxruntime"], "from_onnxruntime": 1}
    assert rows[1]["onnxruntime_chained"]["identical_fraction"] < 0.5
    assert all(r["onnxruntime"]["max_abs_lsb"] <= 1 for i, r in enumerate(rows) if i != 1)
    assert rows[2]["onnxruntime_chained"]["max_abs_lsb"] > 1


@pytest.mark.parametrize("pool, target, reason", [
    (lambda b, y: b.avg_pool(y, 3, 1, pad=1, count_include_pad=0), "cpu", "count_include_pad"),
    (lambda b, y: b.avg_pool(y, 3, 2, ceil_mode=1), "cpu", "ceil_mode"),     # 4x4: a partial window
    (lambda b, y: b.avg_pool(y, 2, 2, ceil_mode=1), "vta", None),            # 4x4: none, as floor
])
def test_average_pool_attributes_as_onnx_defines_them(pool, target, reason):
    from graph.quantize import quantizer_named

    rng = np.random.default_rng(3)
    model = _mobile(pool=pool)
    qdq = quantizer_named("onnxruntime")(model, rng.random((8, 3, 16, 16), dtype=np.float32))
    result = run_model(ModelCase("pool", qdq, rng.random((2, 3, 16, 16), dtype=np.float32)), "1x8x8")
    first = next(r for r in result.layers if r["op"] == "avg_pool")
    assert first["target"] == target and (reason is None or reason in first["reason"])
    assert result.logits_identical


def test_the_gates_sigmoids_run_on_the_accelerator_beside_the_convs():
    """EfficientNet's squeeze-and-excitation gate (Sigmoid, Mul) and SiLU: the Sigmoids on VTA-8
    (graph.ops.univariate), as the convs, the pool around them and the Concat of a conv and a
    SiLU (both quantised tensors); the Muls of two activations are no report layers."""
    from graph.quantize import quantizer_named

    rng = np.random.default_rng(4)
    b = OnnxBuilder("gate", (1, 8, 6, 6))
    x = b.relu(b.conv("input", rng.normal(0, .3, (16, 8, 3, 3)), rng.normal(0, .1, 16), pad=1))
    squeeze = b.conv(b.global_avg_pool(x), rng.normal(0, .3, (16, 16, 1, 1)), rng.normal(0, .1, 16))
    x = b.node("Mul", [x, b.node("Sigmoid", [squeeze])])
    left = b.conv(x, rng.normal(0, .3, (8, 16, 1, 1)), rng.normal(0, .1, 8))
    right = b.conv(x, rng.normal(0, .3, (8, 16, 3, 3)), rng.normal(0, .1, 8), pad=1)
    y = b.node("Concat", [left, b.node("Mul", [right, b.node("Sigmoid", [right])])], axis=1)   # SiLU as exported
    model = b.build(b.dense(b.flatten(b.global_avg_pool(y)), rng.normal(0, .3, (4, 16)), rng.normal(0, .1, 4)))
    qdq = quantizer_named("onnxruntime")(model, rng.random((8, 8, 6, 6), dtype=np.float32))
    result = run_model(ModelCase("gate", qdq, rng.random((2, 8, 6, 6), dtype=np.float32)), "1x8x8")
    rows = {r["name"]: r for r in result.layers}
    assert [rows[f"sigmoid{i}"]["target"] for i in (1, 2)] == ["vta", "vta"]
    assert all(r["target"] == "vta" for r in result.layers
               if r["op"] in ("conv2d", "avg_pool", "dense", "concat", "sigmoid"))
    assert result.verified and result.mac_fraction_vta == 1.0


@pytest.mark.parametrize("size, pad, out", [(8, 0, 4), (10, 1, 6)])     # floor mode: 3 and 5
def test_ceil_mode_max_pool_pads_its_partial_window_with_int8_min(size, pad, out):
    """GoogLeNet's MaxPool(3, 2, ceil_mode=True): the last window runs past the input; the
    host pads it with -128, so the accelerator gives onnxruntime's result."""
    from graph.quantize import quantizer_named

    rng = np.random.default_rng(6)
    b = OnnxBuilder("ceil", (1, 4, size, size))
    x = b.conv("input", rng.normal(0, .3, (8, 4, 3, 3)), rng.normal(0, .1, 8), pad=1)    # signed: no ReLU
    y = b.max_pool(x, 3, 2, pad=pad, ceil_mode=1)
    model = b.build(b.dense(b.flatten(y), rng.normal(0, .3, (3, 8 * out * out)), rng.normal(0, .1, 3)))
    qdq = quantizer_named("onnxruntime")(model, rng.random((8, 4, size, size), dtype=np.float32) - 0.5)
    result = run_model(ModelCase("ceil", qdq, rng.random((2, 4, size, size), dtype=np.float32) - 0.5), "1x8x8",
                       compare_onnxruntime=True)
    pool = next(r for r in result.layers if r["op"] == "max_pool")
    assert pool["target"] == "vta" and "ceil" in pool["shape"] and result.verified
    assert pool["onnxruntime"]["identical_fraction"] == 1.0


def test_a_codegen_refusal_reaches_the_caller_as_itself(small, monkeypatch):
    """What relax.ext.vta raises inside RunCodegen is re-raised unwrapped (TVM's FFI would make it
    a RuntimeError), so a sweep can tell a layer that does not fit from a bug."""
    from graph import codegen
    from vta_sim.errors import CompileError

    def refuse(build, func):
        raise CompileError("the layer does not fit (test)")
    monkeypatch.setattr(codegen, "_region", refuse)
    _, qdq, x = small
    with pytest.raises(CompileError) as raised:
        run_model(ModelCase("small", qdq, x), "1x8x8", vthreads=2)
    assert type(raised.value) is CompileError and str(raised.value) == "the layer does not fit (test)"


def test_a_depthwise_conv_whose_weights_are_all_one_is_a_conv():
    """The report's kind comes from the QDQ pass's stamp: a real depthwise conv whose int8
    weights are all 1 (an average pool's integer form) stays a conv2d with its MACs."""
    from onnx import TensorProto, helper

    def qdq(name, scale, zero_point=0):
        return [helper.make_tensor(f"{name}_s", TensorProto.FLOAT, [], [scale]),
                helper.make_tensor(f"{name}_z", TensorProto.INT8, [], [zero_point])]
    inits = qdq("x", 0.05) + qdq("w", 0.01) + qdq("y", 0.02) + [
        helper.make_tensor("w_q", TensorProto.INT8, [8, 1, 3, 3], np.ones(72, np.int8))]
    nodes = [helper.make_node("QuantizeLinear", ["input", "x_s", "x_z"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "x_s", "x_z"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_z"], ["wd"]),
             helper.make_node("Conv", ["xd", "wd"], ["c"], group=8, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "y_s", "y_z"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "y_s", "y_z"], ["output"])]
    graph = helper.make_graph(nodes, "ones", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 8, 6, 6])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 8, 6, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = np.random.default_rng(0).random((2, 8, 6, 6), dtype=np.float32)
    result = run_model(ModelCase("ones", model, x), "1x8x8")
    assert [(r["op"], r["target"]) for r in result.layers] == [("conv2d", "vta")]
    assert result.layers[0]["macs"] == 2 * 8 * 36 * 9 and result.verified
