"""The forms torch's exporters write that the toolkit's own builders do not: Constant nodes for
GELU's constants, an initializer shared through Identity (nn.TransformerEncoderLayer's second
LayerNorm weight), and a scalar output computed from shapes (graph.onnx_import,
graph.run.onnxruntime_outputs)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graph import onnx_import
from graph.run import load_case, onnxruntime_outputs, run_model

WIDTH = 16


def torchscript_like():
    """MatMul -> LayerNorm (gamma = Identity(an initializer)) -> GELU whose 1, 1/2 and sqrt 2 are
    Constant nodes -> MatMul, as the TorchScript exporter writes nn.TransformerEncoderLayer's."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal((WIDTH, WIDTH)) / 3).astype(np.float32), "w"),
             numpy_helper.from_array(np.ones(WIDTH, np.float32), "norm1.weight"),
             numpy_helper.from_array(np.zeros(WIDTH, np.float32), "norm1.bias")]

    def constant(name, value):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(value, np.float32)))

    nodes = [helper.make_node("Identity", ["norm1.weight"], ["norm2.weight"]),
             helper.make_node("MatMul", ["input", "w"], ["h"]),
             helper.make_node("LayerNormalization", ["h", "norm2.weight", "norm1.bias"], ["n"], axis=-1),
             constant("sqrt2", 2 ** 0.5), constant("one", 1.0), constant("half", 0.5),
             helper.make_node("Div", ["n", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["n", "a"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["g"]), helper.make_node("MatMul", ["g", "w"], ["output"])]
    graph = helper.make_graph(nodes, "export", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 8, WIDTH])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 8, WIDTH])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_constants_and_shared_initializers_become_initializers_and_the_callers_model_is_kept():
    model = torchscript_like()
    before = model.SerializeToString()
    folded = onnx_import.constants_as_initializers(model)
    assert model.SerializeToString() == before
    assert not [n for n in folded.graph.node if n.op_type in ("Constant", "Identity")]
    inits = {i.name: numpy_helper.to_array(i) for i in folded.graph.initializer}
    assert np.array_equal(inits["norm2.weight"], inits["norm1.weight"]) and float(inits["half"]) == 0.5
    x = np.random.default_rng(1).standard_normal((2, 8, WIDTH)).astype(np.float32)
    assert np.allclose(onnxruntime_outputs(folded, x)["output"], onnxruntime_outputs(model, x)["output"])


def test_a_torchscript_style_layer_runs_whole_on_the_accelerator(tmp_path):
    """Through the file path users take (`vta-sim model FILE.onnx --quantizer onnxruntime`):
    the LayerNorm and the GELU chain keep their constants and run on VTA-8."""
    path = tmp_path / "export.onnx"
    onnx.save(torchscript_like(), str(path))
    case = load_case(str(path), quantizer="onnxruntime")
    result = run_model(case, "1x8x8", compare_onnxruntime=True)
    ops = {r["op"]: r["target"] for r in result.layers}
    assert ops["layer_norm"] == "vta" and ops["gelu"] == "vta", [(r["op"], r["reason"]) for r in result.layers]
    assert result.verified and result.onnxruntime["max_abs_lsb"] <= 1


def test_a_scalar_output_is_not_concatenated_over_chunks():
    """A batch of 300 runs in chunks of 256; a 0-d output (a scale computed from shapes) is
    the same in each chunk and comes back once."""
    nodes = [helper.make_node("Shape", ["input"], ["s"], start=1, end=2),
             helper.make_node("Cast", ["s"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("ReduceSum", ["f"], ["scale"], keepdims=0),
             helper.make_node("Relu", ["input"], ["output"])]
    graph = helper.make_graph(nodes, "scalar", [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["n", 4])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["n", 4]),
                               helper.make_tensor_value_info("scale", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    out = onnxruntime_outputs(model, np.ones((300, 4), np.float32))
    assert out["output"].shape == (300, 4) and out["scale"].shape == () and float(out["scale"]) == 4.0
