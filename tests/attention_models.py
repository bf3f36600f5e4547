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


def attention_scores_graph(tokens=8, width=16, heads=2, softmax=False, mask=False, values=False):
    """Q and K projections as torch exports them (MatMul + Add), the head split (Reshape,
    Transpose), Q scaled by 1/sqrt(d) (Mul), Q.K^T (and its Softmax; and with `values` the V
    projection, the probabilities' MatMul with it, the head merge (Transpose, Reshape) and the
    output projection)."""
    rng = np.random.default_rng(1)
    dh = width // heads

    def tensor(name, *shape):
        return helper.make_tensor(name, TensorProto.FLOAT, list(shape), (rng.standard_normal(shape) / 2).astype(np.float32).ravel())
    shape = helper.make_tensor("split", TensorProto.INT64, [4], [1, tokens, heads, dh])
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [dh ** -0.5])
    nodes = [helper.make_node("MatMul", ["input", "wq"], ["q0"]), helper.make_node("Add", ["q0", "bq"], ["q1"]),
             helper.make_node("MatMul", ["input", "wk"], ["k0"]), helper.make_node("Add", ["k0", "bk"], ["k1"]),
             helper.make_node("Reshape", ["q1", "split"], ["q2"]), helper.make_node("Reshape", ["k1", "split"], ["k2"]),
             helper.make_node("Transpose", ["q2"], ["q3"], perm=[0, 2, 1, 3]),
             helper.make_node("Transpose", ["k2"], ["k3"], perm=[0, 2, 3, 1]),
             helper.make_node("Mul", ["q3", "scale"], ["q4"]),
             helper.make_node("MatMul", ["q4", "k3"], ["s0" if softmax else "output"]),
             *([helper.make_node("Add", ["s0", "mask"], ["s"])] if mask else []),
             *([helper.make_node("Softmax", ["s" if mask else "s0"], ["p" if values else "output"], axis=-1)]
               if softmax else []),
             *([helper.make_node("MatMul", ["input", "wv"], ["v0"]), helper.make_node("Add", ["v0", "bv"], ["v1"]),
                helper.make_node("Reshape", ["v1", "split"], ["v2"]),
                helper.make_node("Transpose", ["v2"], ["v3"], perm=[0, 2, 1, 3]),
                helper.make_node("MatMul", ["p", "v3"], ["o0"]),
                helper.make_node("Transpose", ["o0"], ["o1"], perm=[0, 2, 1, 3]),
                helper.make_node("Reshape", ["o1", "merge"], ["o2"]),
                helper.make_node("MatMul", ["o2", "wo"], ["o3"]), helper.make_node("Add", ["o3", "bo"], ["output"])]
               if values else [])]
    inputs = [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, tokens, width])]
    if mask:     # one value per key, broadcast over the heads and queries (BERT's extended mask)
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, tokens]))
    graph = helper.make_graph(nodes, "scores", inputs,
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                                             [1, tokens, width] if values else [1, heads, tokens, tokens])],
                              [tensor("wq", width, width), tensor("bq", width), tensor("wk", width, width),
                               tensor("bk", width), shape, scale,
                               *([tensor("wv", width, width), tensor("bv", width), tensor("wo", width, width),
                                  tensor("bo", width),
                                  helper.make_tensor("merge", TensorProto.INT64, [3], [1, tokens, width])]
                                 if values else [])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
