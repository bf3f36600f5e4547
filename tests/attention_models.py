"""ONNX graphs of attention as the exporters write it, built with the onnx helper API (no torch),
shared by the graph tests and the RTL backend's."""
import numpy as np
from onnx import TensorProto, helper


def attention(tokens=4, width=8, heads=2, seed=0):
    """x (1, T, D) -> per head: softmax-free attention (Q K^T) V, as exporters write it: the
    projections, Reshape/Transpose into heads, a MatMul with K transposed, a MatMul with V,
    the heads back into (1, T, D), the output projection and the residual add."""
    rng = np.random.default_rng(seed)
    dh = width // heads

    def weight(name):
        return helper.make_tensor(name, TensorProto.FLOAT, [width, width],
                                  (rng.standard_normal(width * width) / np.sqrt(width)).astype(np.float32))
    shape = helper.make_tensor("heads", TensorProto.INT64, [4], [1, tokens, heads, dh])
    merged = helper.make_tensor("merged", TensorProto.INT64, [3], [1, tokens, width])
    nodes = []
    for name in "qkv":
        nodes += [helper.make_node("MatMul", ["input", f"w{name}"], [f"{name}0"]),
                  helper.make_node("Reshape", [f"{name}0", "heads"], [f"{name}1"]),
                  helper.make_node("Transpose", [f"{name}1"], [name],
                                   perm=[0, 2, 3, 1] if name == "k" else [0, 2, 1, 3])]
    nodes += [helper.make_node("MatMul", ["q", "k"], ["scores"]),
              helper.make_node("MatMul", ["scores", "v"], ["mixed"]),
              helper.make_node("Transpose", ["mixed"], ["mixed1"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["mixed1", "merged"], ["mixed2"]),
              helper.make_node("MatMul", ["mixed2", "wo"], ["projected"]),
              helper.make_node("Add", ["projected", "input"], ["output"])]
    graph = helper.make_graph(nodes, "attention",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, tokens, width])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, tokens, width])],
                              [weight("wq"), weight("wk"), weight("wv"), weight("wo"), shape, merged])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
