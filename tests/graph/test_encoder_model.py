"""The built-in transformer encoder (graph.models.encoder): its ONNX graph against an independent
numpy forward pass, TVM's Relax import and CPU build, and its onnxruntime QDQ model."""
from collections import Counter

import numpy as np
import onnx
import pytest

from graph.models import encoder
from graph.onnx_import import import_onnx, onnxruntime_session

SAMPLES = 4


@pytest.fixture(scope="module")
def model():
    return encoder.float_model()


@pytest.fixture(scope="module")
def inputs():
    return encoder.tokens(SAMPLES)


def run_ort(model, x):
    session = onnxruntime_session(model)
    return np.concatenate([session.run(["logits"], {"input": x[i:i + 1]})[0] for i in range(len(x))])


@pytest.fixture(scope="module")
def ort_logits(model, inputs):
    return run_ort(model, inputs)


def test_model_is_a_valid_opset17_export(model):
    onnx.checker.check_model(model, full_check=True)
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [17]
    assert model.ir_version == encoder.IR_VERSION
    [inp], [out] = model.graph.input, model.graph.output
    assert inp.name == "input" and out.name == "logits"
    assert tuple(d.dim_value for d in inp.type.tensor_type.shape.dim) == encoder.INPUT_SHAPE == (1, 16, 64)
    assert tuple(d.dim_value for d in out.type.tensor_type.shape.dim) == (1, 10)


def test_graph_holds_the_transformer_ops(model):
    ops = Counter(n.op_type for n in model.graph.node)
    assert ops["MatMul"] == 8          # Q, K, V, scores, attn @ V, output projection, FFN x2
    assert ops["Gemm"] == 1 and ops["Softmax"] == 1 and ops["Erf"] == 1 and ops["ReduceMean"] == 1
    assert ops["LayerNormalization"] == 2
    assert ops["Reshape"] == 4 and ops["Transpose"] == 4 and ops["Div"] == 1
    nodes = {n.output[0]: n for n in model.graph.node}
    attrs = {name: {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
             for name, n in nodes.items()}
    assert attrs["k_transpose"]["perm"] == [0, 2, 3, 1] and attrs["q_transpose"]["perm"] == [0, 2, 1, 3]
    assert attrs["attn"]["axis"] == -1
    assert attrs["pooled"] == {"axes": [1], "keepdims": 0}
    assert attrs["logits"]["transB"] == 1
    for norm in ("norm1", "norm2"):
        assert attrs[norm]["axis"] == -1 and attrs[norm]["epsilon"] == pytest.approx(1e-5)
    inits = {i.name: i for i in model.graph.initializer}
    assert all(inits[n.input[1]].data_type == onnx.TensorProto.INT64
               for n in model.graph.node if n.op_type == "Reshape")


def test_weights_and_tokens_are_seeded(model):
    again = encoder.float_model()
    assert again.SerializeToString() == model.SerializeToString()
    other = encoder.float_model(seed=1)
    assert other.graph.initializer[0].raw_data != model.graph.initializer[0].raw_data
    x = encoder.tokens(3)
    assert x.shape == (3, 16, 64) and x.dtype == np.float32
    np.testing.assert_array_equal(x, encoder.tokens(3))
    assert abs(float(x.mean())) < 0.1 and abs(float(x.std()) - 1) < 0.1


def test_onnxruntime_matches_numpy_reference(ort_logits, inputs):
    ref = encoder.reference(inputs)
    assert ref.shape == (SAMPLES, 10)
    assert np.abs(ref).max() > 0.1                  # activations stay O(1), logits are not ~0
    np.testing.assert_allclose(ort_logits, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    np.testing.assert_allclose(encoder.reference(inputs[0]), ref[:1], rtol=1e-12)


def test_relax_import_and_llvm_build_match_onnxruntime(model, inputs, ort_logits):
    import tvm
    from tvm import relax

    mod, inp = import_onnx(model)
    assert inp.shape == encoder.INPUT_SHAPE
    text = mod.script()
    for op in ("R.nn.layer_norm", "R.erf", "R.nn.softmax", "R.mean", "R.matmul"):
        assert op in text, op
    vm = relax.VirtualMachine(tvm.compile(mod, target="llvm"), tvm.cpu())
    for i in range(SAMPLES):
        out = vm["main"](tvm.runtime.tensor(inputs[i:i + 1])).numpy()
        np.testing.assert_allclose(out, ort_logits[i:i + 1], rtol=1e-4,
                                   atol=1e-4 * np.abs(ort_logits[i]).max())


def test_onnxruntime_qdq_model_keeps_the_float_argmax(tmp_path, inputs, ort_logits):
    qdq = encoder.load(tmp_path, "onnxruntime")
    assert (tmp_path / f"encoder_v{encoder.VERSION}_onnxruntime_qdq.onnx").is_file()
    ops = Counter(n.op_type for n in qdq.graph.node)
    assert ops["QuantizeLinear"] > 0 and ops["DequantizeLinear"] > 0 and ops["MatMul"] == 8
    q_logits = run_ort(qdq, inputs)
    np.testing.assert_array_equal(q_logits.argmax(1), ort_logits.argmax(1))
    cached = encoder.load(tmp_path, "onnxruntime")           # second call reads the cache
    assert cached.SerializeToString() == onnx.load(str(next(tmp_path.iterdir()))).SerializeToString()


def test_vta_sim_model_takes_the_encoder_by_name():
    from graph.run import load_case

    case = load_case("encoder", quantizer="pow2")
    assert case.x.shape == encoder.INPUT_SHAPE
    assert {"QuantizeLinear", "DequantizeLinear"} <= {n.op_type for n in case.onnx.graph.node}
