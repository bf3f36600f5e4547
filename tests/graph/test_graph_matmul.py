"""Matmuls of two activations (attention's Q.K^T and weights.V) on VTA-8: graph/ops/matmul.py,
the op added as one module of the registry."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model

from attention_models import attention


@pytest.mark.parametrize("quantizer", ["pow2", "onnxruntime-symmetric"])
def test_every_matmul_and_add_of_attention_runs_on_the_accelerator(quantizer):
    """The two matmuls of activations, the projections over (1, T, D) tokens (a dense layer with
    the tokens folded into its rows) and the 3-d residual add, all on VTA-8, bit-exact."""
    rng = np.random.default_rng(1)
    qdq = quantizer_named(quantizer)(attention(), rng.standard_normal((16, 4, 8)).astype(np.float32))
    result = run_model(ModelCase("attention", qdq, rng.standard_normal((1, 4, 8)).astype(np.float32)), "1x8x8")
    matmuls = [r for r in result.layers if r["op"] == "matmul"]
    assert [(r["target"], r["shape"]) for r in matmuls] == [("vta", "1x2 x 4x4 . 4x4")] * 2
    assert all(r["verified"] for r in matmuls) and result.logits_identical
    assert matmuls[0]["macs"] == 2 * 4 * 4 * 4 and matmuls[0]["cycles"] > 0
    dense = [r for r in result.layers if r["op"] == "dense"]
    assert [(r["target"], r["shape"]) for r in dense] == [("vta", "1x4x8 . 8x8")] * 4
    adds = [r for r in result.layers if r["op"] == "add"]
    assert [r["target"] for r in adds] == ["vta"] and adds[0]["shape"].endswith(" 4x8")
    assert result.verified


@pytest.mark.parametrize("activations", ["QInt8", "QUInt8"])
def test_operands_with_zero_points_run_on_the_accelerator_as_onnxruntime_computes_them(activations):
    """onnxruntime's defaults (int8, or uint8, activations with zero points): zero points on both
    sides of Q.K^T and weights.V. The zero points' row and column sums join the product on the
    accelerator, and each matmul equals its independent int64 reference (sum (a - z_a)(b - z_b))
    on onnxruntime's own tensors, bit for bit."""
    from onnxruntime.quantization import QuantType

    from graph.quantize import quantize_with_onnxruntime
    rng = np.random.default_rng(1)
    qdq = quantize_with_onnxruntime(attention(), rng.standard_normal((16, 4, 8)).astype(np.float32),
                                    activation_type=getattr(QuantType, activations))
    neutral = 128 if activations == "QUInt8" else 0
    zero_points = [int(numpy_helper.to_array(i)) for i in qdq.graph.initializer
                   if i.name in ("q0_zero_point", "k0_zero_point", "v0_zero_point", "scores_zero_point")]
    assert len(zero_points) == 4 and all(z != neutral for z in zero_points)     # really asymmetric
    result = run_model(ModelCase("attention", qdq, rng.standard_normal((1, 4, 8)).astype(np.float32)), "1x8x8",
                       compare_onnxruntime=True)
    matmuls = [r for r in result.layers if r["op"] == "matmul"]
    assert [(r["target"], r["shape"]) for r in matmuls] == [("vta", "1x2 x 4x4 . 4x4")] * 2
    assert all(r["verified"] for r in matmuls) and result.logits_identical
    assert all(r["onnxruntime"]["identical_fraction"] == 1.0 for r in matmuls)
    assert result.verified


def test_a_matmul_spec_with_zero_points_is_the_product_of_the_shifted_operands():
    """MatmulSpec.reference and terms against the definition, with a uint8-like operand range."""
    from graph.ops.matmul import MatmulSpec
    from requantisation import PowerOfTwo
    from schedules.vta_dense import DenseShape
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, (2, 3, 5), dtype=np.int8)
    b = rng.integers(-128, 128, (2, 5, 4), dtype=np.int8)
    spec = MatmulSpec((2,), DenseShape(3, 5, 4), PowerOfTwo(0, -128, 127), (-7, 11))
    rows, cols = spec.terms(a, b)
    exact = np.matmul(a.astype(np.int64) + 7, b.astype(np.int64) - 11)
    assert np.array_equal(np.matmul(a.astype(np.int64), b.astype(np.int64)) + rows + cols, exact)
    assert np.array_equal(spec.reference(a, b, np.zeros(4, np.int32)), np.clip(exact, -128, 127))


def _broadcast_add(a_shape, b_shape):
    x = helper.make_tensor_value_info("a", TensorProto.FLOAT, list(a_shape))
    y = helper.make_tensor_value_info("b", TensorProto.FLOAT, list(b_shape))
    out_shape = list(np.broadcast_shapes(a_shape, b_shape))
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
                              "badd", [x, y], [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("a_shape,b_shape", [((1, 2, 4, 16), (1, 1, 1, 16)), ((1, 1, 1, 16), (1, 2, 4, 16)),
                                             ((1, 3, 8), (1, 3, 1))])
def test_an_add_whose_operand_broadcasts_runs_on_the_accelerator(a_shape, b_shape):
    """An attention mask (1, 1, 1, T) added to scores (1, H, T, T), either operand the small one:
    the host broadcasts it as it packs; the add on VTA-8 equals its int64 reference on
    onnxruntime's own tensors and the CPU build."""
    rng = np.random.default_rng(4)
    calib = {"a": rng.standard_normal((8, *a_shape[1:])).astype(np.float32),
             "b": 3 * rng.standard_normal((8, *b_shape[1:])).astype(np.float32)}
    qdq = quantizer_named("onnxruntime")(_broadcast_add(a_shape, b_shape), calib)
    x = {"a": rng.standard_normal(a_shape).astype(np.float32), "b": 3 * rng.standard_normal(b_shape).astype(np.float32)}
    result = run_model(ModelCase("badd", qdq, x), "1x8x8", compare_onnxruntime=True)
    (add,) = [r for r in result.layers if r["op"] == "add"]
    assert add["target"] == "vta" and add["verified"] and result.logits_identical
    assert add["onnxruntime"]["max_abs_lsb"] <= 1 and add["onnxruntime"]["identical_fraction"] >= 0.99


def test_an_add_where_both_operands_broadcast_stays_on_the_cpu_with_the_reason():
    rng = np.random.default_rng(4)
    calib = {"a": rng.standard_normal((8, 1, 4, 1)).astype(np.float32),
             "b": rng.standard_normal((8, 2, 1, 16)).astype(np.float32)}
    qdq = quantizer_named("onnxruntime")(_broadcast_add((1, 1, 4, 1), (1, 2, 1, 16)), calib)
    x = {"a": rng.standard_normal((1, 1, 4, 1)).astype(np.float32), "b": rng.standard_normal((1, 2, 1, 16)).astype(np.float32)}
    result = run_model(ModelCase("badd", qdq, x), "1x8x8")
    (add,) = [r for r in result.layers if r["op"] == "add"]
    assert add["target"] == "cpu" and "both operands broadcast" in add["reason"] and result.verified
