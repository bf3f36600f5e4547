"""graph.fusion: the bias Add torch exports after a MatMul and the GELU after it run in the
dense's program. Built with the onnx helper API as torch writes a feed-forward block (MatMul +
Add, GELU's Div/Erf/Add/Mul/Mul, MatMul + Add), quantised by onnxruntime: one accelerator
layer where the graph had a dense, CPU glue and a GELU; bit-exact with the CPU build, and the
same outputs as the unfused build."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model


def ffn_graph(tokens=8, width=16, hidden=24):
    rng = np.random.default_rng(0)

    def tensor(name, *shape):
        return helper.make_tensor(name, TensorProto.FLOAT, list(shape), (rng.standard_normal(shape) / 2).astype(np.float32).ravel())
    consts = [helper.make_tensor(n, TensorProto.FLOAT, [], [v]) for n, v in (("sqrt2", 2 ** 0.5), ("one", 1.0), ("half", 0.5))]
    nodes = [helper.make_node("MatMul", ["input", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h"]),
             helper.make_node("Div", ["h", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["h", "a"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["g"]),
             helper.make_node("MatMul", ["g", "w2"], ["o0"]), helper.make_node("Add", ["o0", "b2"], ["output"])]
    graph = helper.make_graph(nodes, "ffn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, tokens, width])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, tokens, width])],
                              [tensor("w1", width, hidden), tensor("b1", hidden), tensor("w2", hidden, width),
                               tensor("b2", width), *consts])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("quantizer", ["onnxruntime", "onnxruntime-symmetric"])
def test_the_bias_adds_and_the_gelu_run_in_the_denses_programs(quantizer):
    rng = np.random.default_rng(3)
    qdq = quantizer_named(quantizer)(ffn_graph(), rng.standard_normal((16, 8, 16)).astype(np.float32))
    x = rng.standard_normal((1, 8, 16)).astype(np.float32)
    fused = run_model(ModelCase("ffn", qdq, x), "1x8x8", compare_onnxruntime=True)
    plain = run_model(ModelCase("ffn", qdq, x), "1x8x8", fuse=False)
    rows = {r["name"]: r for r in fused.layers}
    assert list(rows) == ["dense1+gelu1", "dense2"]
    first, second = rows["dense1+gelu1"], rows["dense2"]
    assert first["op"] == "dense+gelu" and first["epilogue"] == ["bias add", "gelu"]
    assert second["epilogue"] == ["bias add"]
    for row in (first, second):
        assert row["target"] == "vta" and row["verified"]
        assert row["onnxruntime"]["max_abs_lsb"] <= 1            # against the tensor after the Add / the GELU
    assert fused.verified and fused.logits_identical
    assert [r["name"] for r in plain.layers] == ["dense1", "gelu1", "dense2"]
    assert all("epilogue" not in r for r in plain.layers)
    assert plain.verified and np.array_equal(fused.logits_vta, plain.logits_vta)
