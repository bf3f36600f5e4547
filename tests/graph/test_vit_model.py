"""The ViT builtin (graph/models/vit.py: a strided-Conv patch embedding, a class token, position
embeddings, pre-norm encoder layers) and the pre-norm option of the encoder's layers (issue
"Transformers as users export them"). Small shapes throughout (vit.SMALL: a 32x32 image in 8x8
patches, 17 tokens, width 32)."""
from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto

from graph.models import encoder, vit
from graph.onnx_import import onnxruntime_session
from graph.run import BUILTIN, run_model, vit_case

SHAPE = vit.SMALL


@pytest.fixture(scope="module")
def float_model():
    return vit.float_model(SHAPE)


@pytest.fixture(scope="module")
def result():
    """The small ViT as onnxruntime's symmetric quantize_static writes it, on VTA-8 against its
    CPU build and onnxruntime."""
    return run_model(vit_case(SHAPE, quantizer="onnxruntime-symmetric"), "1x8x8", compare_onnxruntime=True)


def _attrs(node) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def test_the_graph_is_a_vit_export(float_model):
    """pixel_values in; the patch Conv (kernel = stride = 8), Reshape + Transpose to tokens, the
    class token concatenated in front, position embeddings added; pre-norm layers; a final
    LayerNorm; the class token gathered into a Gemm."""
    [inp], [out] = float_model.graph.input, float_model.graph.output
    assert inp.name == "pixel_values" and inp.type.tensor_type.elem_type == TensorProto.FLOAT
    assert [d.dim_value for d in inp.type.tensor_type.shape.dim] == [1, 3, 32, 32]
    assert [d.dim_value for d in out.type.tensor_type.shape.dim] == [1, SHAPE.classes]
    ops = Counter(n.op_type for n in float_model.graph.node)
    assert ops["Conv"] == 1 and ops["Concat"] == 1 and ops["Gather"] == 1 and ops["Gemm"] == 1
    assert ops["MatMul"] == 8 * SHAPE.layers and ops["Softmax"] == ops["Erf"] == SHAPE.layers
    assert ops["LayerNormalization"] == 2 * SHAPE.layers + 1
    nodes = {n.output[0]: n for n in float_model.graph.node}
    conv = _attrs(nodes["patch_embeddings"])
    assert conv["kernel_shape"] == conv["strides"] == [8, 8] and conv["pads"] == [0] * 4
    assert _attrs(nodes["patch_tokens"])["perm"] == [0, 2, 1]
    assert nodes["tokens"].input[0] == "cls_token" and _attrs(nodes["tokens"])["axis"] == 1
    assert _attrs(nodes["cls"])["axis"] == 1 and _attrs(nodes["logits"])["transB"] == 1
    inits = {i.name: list(i.dims) for i in float_model.graph.initializer}
    assert inits["cls_token"] == [1, 1, 32] and inits["pos_emb"] == [1, 17, 32] and inits["patch_w"] == [32, 3, 8, 8]
    # pre-norm: each layer's first LayerNorm feeds its Q, K and V projections
    for i in range(SHAPE.layers):
        assert {n.output[0] for n in float_model.graph.node if f"l{i}_norm1" in n.input} == {
            f"l{i}_q_matmul", f"l{i}_k_matmul", f"l{i}_v_matmul"}


def test_the_default_shape_is_the_issues():
    """A 64x64 image in 8x8 patches (64 tokens and the class token), hidden 192, 3 heads,
    4 layers, FFN 768, 10 classes."""
    model = vit.float_model()
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [1, 3, 64, 64]
    inits = {i.name: list(i.dims) for i in model.graph.initializer}
    assert inits["pos_emb"] == [1, 65, 192] and inits["l3_ffn1_w"] == [192, 768] and "l4_q_w" not in inits
    heads = next(i for i in model.graph.initializer if i.name == "heads_shape")
    assert list(onnx.numpy_helper.to_array(heads)) == [1, 65, 3, 64]
    assert vit.DEFAULT.tag() == "i64_p8_d192_h3_l4_f768_c10"


def test_onnxruntime_matches_the_numpy_reference(float_model):
    """The graph computes what a ViT does (an independent float64 forward pass over the same
    weights, the patch Conv as a matmul of the image's patches)."""
    x = vit.images(3, SHAPE)
    session = onnxruntime_session(float_model)
    got = np.concatenate([session.run(["logits"], {"pixel_values": x[i:i + 1]})[0] for i in range(3)])
    ref = vit.reference(x, SHAPE)
    assert ref.shape == (3, SHAPE.classes) and np.abs(ref).max() > 0.1
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    assert not np.allclose(vit.reference(x[:1], SHAPE, seed=1), ref[:1])      # the weights matter


def test_the_pre_norm_encoder_layer_equals_its_reference():
    """encoder_layer(norm_first=True) against reference_layer(norm_first=True) (the encoder
    builtin's classifier around it); the post-norm graph and reference are not it."""
    x = encoder.tokens(3)
    pre, post = encoder.float_model(norm_first=True), encoder.float_model()
    session = onnxruntime_session(pre)
    got = np.concatenate([session.run(["logits"], {"input": x[i:i + 1]})[0] for i in range(3)])
    ref = encoder.reference(x, norm_first=True)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    assert np.abs(ref - encoder.reference(x)).max() > 0.05
    # the same nodes in another order: each LayerNorm before its sublayer, none after the last residual
    assert Counter(n.op_type for n in pre.graph.node) == Counter(n.op_type for n in post.graph.node)
    order = [n.output[0] for n in pre.graph.node]
    assert order.index("norm1") < order.index("q_matmul") and order.index("norm2") < order.index("ffn1_matmul")
    assert next(n for n in pre.graph.node if n.op_type == "ReduceMean").input == ["residual2"]


def test_the_layers_run_on_vta_and_the_concat_on_the_cpu_with_its_reason(result):
    """The patch Conv, every linear, both attention matmuls, softmax, LayerNorm, GELU and the
    residual adds on VTA-8, each bit-exact; the class token's Concat on the CPU with its reason;
    the class token's Gather at index 0 a slice of the int8 tensor, no layer (graph.ops.rearrange)."""
    # a fused layer (graph.fusion: dense+gelu, add+layer_norm, matmul+softmax) counts as its parts
    ops = Counter((kind, r["target"]) for r in result.layers for kind in r["op"].split("+"))
    layers = SHAPE.layers
    assert ops[("conv2d", "vta")] == 1
    assert ops[("dense", "vta")] == 6 * layers + 1                # Q, K, V, out, FFN x2; the classifier
    assert sum("bias add" in r.get("epilogue", ()) for r in result.layers) == 6 * layers   # MatMul + Add
    assert ops[("matmul", "vta")] == 2 * layers                   # Q.K^T and weights.V
    assert ops[("softmax", "vta")] == ops[("gelu", "vta")] == layers
    assert ops[("layer_norm", "vta")] == 2 * layers + 1
    assert ops[("add", "vta")] == 2 * layers                      # the residuals
    assert all(r["verified"] for r in result.layers if r["target"] == "vta")
    cpu = {r["op"]: r["reason"] for r in result.layers if r["target"] == "cpu"}
    assert set(cpu) == {"concat"} and "concat along axis 1" in cpu["concat"], cpu
    assert "gather" not in {r["op"] for r in result.layers}
    assert result.mac_fraction_vta == 1.0 and result.unit == "frame"


def test_the_run_is_bit_exact_and_agrees_with_onnxruntime(result):
    """Logits identical to the CPU build; onnxruntime's QDQ run within a few LSB of the logits
    (the integer softmax, LayerNorm and GELU each within 1 LSB of its float, 3 here), argmax
    equal; each offloaded layer alone within 1 LSB."""
    assert result.logits_identical and result.verified and result.batch == 1
    assert result.onnxruntime["argmax_equal"] and result.onnxruntime["max_abs_lsb"] <= 4
    offloaded = [r["onnxruntime"] for r in result.layers if r["target"] == "vta"]
    assert all(o["max_abs_lsb"] <= 1 and o["identical_fraction"] >= 0.98 for o in offloaded), offloaded


def test_vit_is_a_builtin_of_vta_sim_model_and_compare(capsys):
    from baselines import model_cases
    from vta_sim.cli import main

    assert "vit" in BUILTIN and model_cases.BUILTIN["vit"] == "onnxruntime-symmetric"
    with pytest.raises(SystemExit):
        main(["model", "--help"])
    assert "vit" in " ".join(capsys.readouterr().out.split())


def _bench():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "bench_transformers.py"
    spec = importlib.util.spec_from_file_location("bench_transformers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bench_counts_the_attention_matmuls_and_softmax(result):
    """bench/bench_transformers.py's figures of the small ViT: the attention share is the cycles
    of the matmuls of two activations and the softmax over all; their utilisation their MACs over
    64 per cycle; a row of the table says it all."""
    bench = _bench()
    f = bench.figures(result)
    mine = [r for r in result.layers if r["op"] in ("matmul", "softmax")]
    assert f["attention_matmuls"] == f["attention_matmuls_vta"] == 2 * SHAPE.layers
    assert f["attention_share"] == pytest.approx(sum(r["cycles"] for r in mine) / result.total_cycles)
    assert 0.05 < f["attention_share"] < 0.5 and f["macs_per_cycle"] == 64
    mm = [r for r in mine if r["op"] == "matmul"]
    utilization = sum(r["macs"] for r in mm) / 64 / sum(r["cycles"] for r in mm)
    assert f["attention_matmul_utilization"] == pytest.approx(utilization)
    assert f["cycles_per_sample"] == result.total_cycles and sum(f["cycles_by_op"].values()) == result.total_cycles
    line = bench.row("vit", "onnxruntime-symmetric", f, 1.0)
    assert line.count("|") == bench.HEADER.splitlines()[0].count("|") and "| yes |" in line and "per frame" in line
