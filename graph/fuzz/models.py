"""Small ONNX graphs of the exporters' common ops, drawn by Hypothesis (`cases()`).

A `Case` is a float ONNX model (opset 11-21, or 7-10 one time in six, one float input of rank 1-5 or int64 token ids
into an embedding table, batch 1-4 fixed in the file or symbolic), its inputs, and how
`vta-sim model` is asked to run it (a quantiser or none, the inputs given as a file or left to
the tool). The graph is a chain of 1-6 steps, each drawn from the op families below; a step
may also read an earlier tensor (a residual Add, a Concat of two branches, a MatMul of two
activations) or make it a second output. Every step is kept only where ONNX's shape inference
(strict) accepts it, so each model is one an exporter could have written.

Op families: Conv 1-3d (plain, strided, dilated, depthwise, grouped), Gemm, MatMul (constant
weight or two activations), Add/Mul/Sub (a constant, or two tensors), Relu, Sigmoid, Tanh, Elu,
LeakyRelu, Clip, MaxPool/AveragePool 1-3d, GlobalAveragePool, BatchNormalization, Pad,
Concat, Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Softmax, ReduceMean, Gather (constant
indices, or token ids into a table), LayerNormalization (opset 17+).

Needs Hypothesis (a dev dependency); only tests and bench/fuzz_graph.py import it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

OPSETS = tuple(range(11, 22))
#: Opsets the graph level upgrades first (graph.onnx_import.upgraded), drawn one time in six.
OLD_OPSETS = tuple(range(7, 11))
QUANTIZERS = (None, "pow2", "onnxruntime", "onnxruntime-per-channel", "onnxruntime-symmetric")


@dataclass
class Case:
    """One generated model and how to run it; `steps` names its ops in order (for the report)."""
    model: onnx.ModelProto
    feeds: dict                      # {input name: array} at `batch`
    quantizer: str | None
    give_inputs: bool                # --input files, else the tool's own synthetic inputs
    batch: int
    opset: int
    steps: list = field(default_factory=list)

    def describe(self) -> str:
        return (f"opset {self.opset}, batch {self.batch}, quantizer {self.quantizer or 'none'}, "
                f"inputs {'given' if self.give_inputs else 'synthetic'}: {' -> '.join(self.steps)}")


class _Graph:
    """The graph being drawn: nodes, initializers, and the shapes ONNX infers for them."""

    def __init__(self, opset: int, inputs: list):
        self.opset, self.inputs = opset, inputs
        self.nodes: list = []
        self.inits: list = []
        self.shapes: dict = {i.name: tuple(d.dim_value for d in i.type.tensor_type.shape.dim) for i in inputs}
        self.dtypes: dict = {i.name: i.type.tensor_type.elem_type for i in inputs}
        self.count = 0

    def fresh(self, what: str) -> str:
        self.count += 1
        return f"{what}{self.count}"

    def const(self, value: np.ndarray, what: str = "c") -> str:
        name = self.fresh(what)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list, **attrs) -> str:
        out = self.fresh(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def model(self, outputs: list) -> onnx.ModelProto:
        outs = [helper.make_tensor_value_info(o, self.dtypes.get(o, TensorProto.FLOAT),
                                              [None] * len(self.shapes[o]) if o in self.shapes else None)
                for o in outputs]    # the rank, dimensions left to the model (as exporters write them)
        graph = helper.make_graph(self.nodes, "fuzz", self.inputs, outs, self.inits)
        opsets = [helper.make_opsetid("", self.opset)]
        return helper.make_model(graph, opset_imports=opsets, ir_version=max(4, helper.find_min_ir_version_for(opsets)),
                                 producer_name="vta-toolkit fuzz")

    def infer(self, outputs: list) -> bool:
        """Record the inferred shapes of every tensor; False where ONNX refuses the graph."""
        try:
            inferred = onnx.shape_inference.infer_shapes(self.model(outputs), strict_mode=True)
        except Exception:  # noqa: BLE001 - any refusal of the checker means: not a valid step
            return False
        for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
            t = vi.type.tensor_type
            if not t.HasField("shape") or any(not d.HasField("dim_value") for d in t.shape.dim):
                return False
            self.shapes[vi.name] = tuple(d.dim_value for d in t.shape.dim)
            self.dtypes[vi.name] = t.elem_type
        return True


def _weights(draw, shape, scale: float = 0.5) -> np.ndarray:
    seed = draw(st.integers(0, 2 ** 16))
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _axes_input(g: _Graph, op: str, x: str, axes: list, since: int, **attrs) -> str:
    """An op whose axes are an attribute before opset `since` and an int64 input from it on."""
    if g.opset >= since:
        return g.node(op, [x, g.const(np.array(axes, np.int64), "axes")], **attrs)
    return g.node(op, [x], axes=axes, **attrs)


# Each step: (draw, graph, x, shape) -> (output tensor, the step's name), or None where the
# family does not apply to `x`.

def _unary(draw, g, x, shape):
    op = draw(st.sampled_from(["Relu", "Sigmoid", "Tanh", "Elu", "LeakyRelu", "Clip"]))
    if op == "Elu":
        return g.node(op, [x], alpha=draw(st.sampled_from([1.0, 0.5]))), op
    if op == "LeakyRelu":
        return g.node(op, [x], alpha=draw(st.sampled_from([0.01, 0.1, 0.2]))), op
    if op == "Clip":
        lo, hi = g.const(np.array(0.0, np.float32)), g.const(np.array(6.0, np.float32))
        return (g.node(op, [x, lo, hi]) if g.opset >= 11 else g.node(op, [x], min=0.0, max=6.0)), "Clip"
    return g.node(op, [x]), op


def _binary_const(draw, g, x, shape):
    op = draw(st.sampled_from(["Add", "Mul", "Sub"]))
    kind = draw(st.sampled_from(["scalar", "last", "channel", "full"]))
    if kind == "scalar":
        c = np.array(draw(st.sampled_from([0.5, 1.0, -2.0])), np.float32)
    elif kind == "last":
        c = _weights(draw, shape[-1:])
    elif kind == "channel" and len(shape) >= 2:
        c = _weights(draw, (shape[1],) + (1,) * (len(shape) - 2))
    else:
        c = _weights(draw, (1,) + tuple(shape[1:]))
    first = [x, g.const(c, "k")]
    return g.node(op, first if draw(st.booleans()) else first[::-1]), f"{op}({kind} constant)"


def _binary_branch(draw, g, x, shape):
    same = [t for t, s in g.shapes.items() if s == shape and t != x and g.dtypes.get(t) == TensorProto.FLOAT]
    if not same:
        return None
    other = draw(st.sampled_from(sorted(same)))
    op = draw(st.sampled_from(["Add", "Add", "Mul", "Sub"]))
    return g.node(op, [x, other]), f"{op}(two tensors)"


def _conv(draw, g, x, shape):
    if len(shape) not in (3, 4, 5):
        return None
    c, spatial = shape[1], shape[2:]
    groups = draw(st.sampled_from(["plain", "depthwise", "grouped"]))
    if groups == "depthwise":
        group, out = c, c * draw(st.sampled_from([1, 1, 2]))
    elif groups == "grouped" and c % 2 == 0 and c > 2:
        group, out = 2, 2 * draw(st.integers(1, 4))
    else:
        group, out, groups = 1, draw(st.integers(1, 8)), "plain"
    k = [draw(st.integers(1, min(3, s))) for s in spatial]
    stride = draw(st.sampled_from([1, 1, 2]))
    pad = draw(st.sampled_from([0, 1]))
    dilation = draw(st.sampled_from([1, 1, 1, 2]))
    if any(dilation * (kk - 1) + 1 > s + 2 * pad for kk, s in zip(k, spatial)):
        dilation = 1                   # a dilated window larger than the padded input: not a model
    inputs = [x, g.const(_weights(draw, (out, c // group, *k)), "w")]
    if draw(st.booleans()):
        inputs.append(g.const(_weights(draw, (out,), 0.1), "b"))
    y = g.node("Conv", inputs, kernel_shape=k, strides=[stride] * len(k), pads=[pad] * 2 * len(k),
               dilations=[dilation] * len(k), group=group)
    return y, f"Conv{len(k)}d({groups}, k{k}, s{stride}, p{pad}, d{dilation})"


def _gemm(draw, g, x, shape):
    if len(shape) != 2:
        return None
    n, trans = draw(st.integers(1, 10)), draw(st.booleans())
    w = _weights(draw, (n, shape[1]) if trans else (shape[1], n))
    inputs = [x, g.const(w, "w")]
    if draw(st.booleans()) or g.opset < 11:            # C is optional from opset 11
        inputs.append(g.const(_weights(draw, (n,), 0.1), "b"))
    return g.node("Gemm", inputs, transB=int(trans)), f"Gemm(transB={int(trans)})"


def _matmul(draw, g, x, shape):
    if len(shape) < 2:
        return None
    if len(shape) >= 3 and draw(st.booleans()):     # two activations: x @ x^T, as attention scores
        perm = list(range(len(shape) - 2)) + [len(shape) - 1, len(shape) - 2]
        return g.node("MatMul", [x, g.node("Transpose", [x], perm=perm)]), "MatMul(two activations)"
    w = _weights(draw, (shape[-1], draw(st.integers(1, 10))))
    return g.node("MatMul", [x, g.const(w, "w")]), "MatMul(constant)"


def _pool(draw, g, x, shape):
    if len(shape) not in (3, 4, 5):
        return None
    op = draw(st.sampled_from(["MaxPool", "AveragePool", "GlobalAveragePool"]))
    if op == "GlobalAveragePool":
        return g.node(op, [x]), op
    spatial = shape[2:]
    k = [draw(st.integers(1, min(3, s))) for s in spatial]
    stride = draw(st.sampled_from([1, 2]))
    pad = draw(st.sampled_from([0, 0, 1])) if min(k) > 1 else 0
    attrs = dict(kernel_shape=k, strides=[stride] * len(k), pads=[pad] * 2 * len(k))
    if g.opset >= 10:
        attrs["ceil_mode"] = int(draw(st.booleans()))
    if op == "AveragePool":
        attrs["count_include_pad"] = int(draw(st.booleans()))
    return g.node(op, [x], **attrs), f"{op}{len(k)}d(k{k}, s{stride}, p{pad}, ceil {attrs.get('ceil_mode', 0)})"


def _batch_norm(draw, g, x, shape):
    if len(shape) < 2:
        return None
    c = shape[1]
    params = [g.const(_weights(draw, (c,)) + 1, "gamma"), g.const(_weights(draw, (c,)), "beta"),
              g.const(_weights(draw, (c,)), "mean"), g.const(np.abs(_weights(draw, (c,))) + 0.5, "var")]
    return g.node("BatchNormalization", [x, *params], epsilon=1e-5), "BatchNormalization"


def _pad(draw, g, x, shape):
    if len(shape) < 2:
        return None
    rank = len(shape)
    pads = [0, 0] + [draw(st.integers(0, 1)) for _ in range(rank - 2)]
    pads += [0, 0] + [draw(st.integers(0, 1)) for _ in range(rank - 2)]
    mode = draw(st.sampled_from(["constant", "constant", "reflect", "edge"]))
    if mode == "reflect" and any(p >= s for p, s in zip(pads[2:rank], shape[2:])):
        mode = "constant"
    if g.opset < 11:                   # pads an attribute before opset 11
        return g.node("Pad", [x], pads=pads, mode=mode), f"Pad({mode}, attribute)"
    inputs = [x, g.const(np.array(pads, np.int64), "pads")]
    if mode == "constant" and draw(st.booleans()):     # the value given, as torch's ConstantPad exports it
        inputs.append(g.const(np.array(draw(st.sampled_from([0.0, 0.5])), np.float32), "value"))
    return g.node("Pad", inputs, mode=mode), f"Pad({mode}{', value' if len(inputs) > 2 else ''})"


def _concat(draw, g, x, shape):
    axis = draw(st.integers(1, len(shape) - 1)) if len(shape) > 1 else 0
    fits = [t for t, s in g.shapes.items() if len(s) == len(shape) and g.dtypes.get(t) == TensorProto.FLOAT
            and all(a == b for i, (a, b) in enumerate(zip(s, shape)) if i != axis)]
    other = draw(st.sampled_from(sorted(fits)))      # x itself fits
    return g.node("Concat", [x, other], axis=axis), f"Concat(axis {axis})"


def _reshape(draw, g, x, shape):
    kind = draw(st.sampled_from(["flatten0", "fixed", "split"]))
    size = int(np.prod(shape[1:]))
    if kind == "flatten0":
        target = [0, -1]
    elif kind == "fixed":          # the batch written into the constant, as exporters do
        target = [shape[0], -1]
    else:
        last = shape[-1]
        f = next((f for f in (2, 3) if last % f == 0 and last > f), None)
        if f is None or len(shape) < 2:
            target = [shape[0], size]
        else:
            target = [*shape[:-1], f, last // f]
    return g.node("Reshape", [x, g.const(np.array(target, np.int64), "shape")]), f"Reshape({kind})"


def _transpose(draw, g, x, shape):
    if len(shape) < 2:
        return None
    rest = draw(st.permutations(list(range(1, len(shape)))))
    perm = [0, *rest]
    if len(shape) >= 2 and draw(st.integers(0, 9)) == 0:    # the batch axis moved
        perm = list(draw(st.permutations(list(range(len(shape))))))
    return g.node("Transpose", [x], perm=perm), f"Transpose({perm})"


def _flatten(draw, g, x, shape):
    axis = draw(st.integers(1, len(shape))) if draw(st.integers(0, 3)) else 1
    return g.node("Flatten", [x], axis=min(axis, len(shape))), f"Flatten(axis {axis})"


def _squeeze_unsqueeze(draw, g, x, shape):
    ones = [i for i, s in enumerate(shape) if s == 1 and i > 0]
    if ones and len(shape) > 1 and draw(st.booleans()):
        return _axes_input(g, "Squeeze", x, [draw(st.sampled_from(ones))], 13), "Squeeze"
    if len(shape) >= 5:
        return None
    axis = draw(st.integers(1, len(shape)))
    return _axes_input(g, "Unsqueeze", x, [axis], 13), f"Unsqueeze({axis})"


def _softmax(draw, g, x, shape):
    axis = draw(st.sampled_from([-1, -1, 1])) if len(shape) > 1 else -1
    return g.node("Softmax", [x], axis=axis), f"Softmax(axis {axis})"


def _reduce_mean(draw, g, x, shape):
    if len(shape) < 2:
        return None
    axes = sorted(draw(st.sets(st.integers(1, len(shape) - 1), min_size=1)))
    keep = int(draw(st.booleans()))
    return _axes_input(g, "ReduceMean", x, axes, 18, keepdims=keep), f"ReduceMean(axes {axes}, keepdims {keep})"


def _gather(draw, g, x, shape):
    if len(shape) < 2:
        return None
    axis = draw(st.integers(1, len(shape) - 1))
    picks = draw(st.lists(st.integers(0, shape[axis] - 1), min_size=1, max_size=3))
    scalar = len(picks) == 1 and draw(st.booleans())
    idx = np.array(picks[0] if scalar else picks, np.int64)
    return g.node("Gather", [x, g.const(idx, "idx")], axis=axis), f"Gather(axis {axis}, {'scalar' if scalar else 'list'})"


def _layer_norm(draw, g, x, shape):
    if g.opset < 17 or len(shape) < 2:
        return None
    d = shape[-1]
    return (g.node("LayerNormalization", [x, g.const(_weights(draw, (d,)) + 1, "ln_g"),
                                          g.const(_weights(draw, (d,)), "ln_b")], axis=-1, epsilon=1e-5),
            "LayerNormalization")


STEPS = (_unary, _binary_const, _binary_branch, _conv, _conv, _gemm, _matmul, _pool, _batch_norm, _pad,
         _concat, _reshape, _transpose, _flatten, _squeeze_unsqueeze, _softmax, _reduce_mean, _gather,
         _layer_norm)


@st.composite
def cases(draw, max_steps: int = 6) -> Case:
    """A generated model (see the module docstring) and how to run it."""
    opset = draw(st.sampled_from(OLD_OPSETS if draw(st.integers(0, 5)) == 0 else OPSETS))
    batch = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    steps: list = []
    if draw(st.integers(0, 5)) == 0:            # token ids into an embedding table
        rows, length, dim = draw(st.integers(2, 16)), draw(st.integers(1, 6)), draw(st.integers(1, 8))
        inp = helper.make_tensor_value_info("ids", TensorProto.INT64, [batch, length])
        g = _Graph(opset, [inp])
        x = g.node("Gather", [g.const(_weights(draw, (rows, dim)), "table"), "ids"], axis=0)
        feeds = {"ids": rng.integers(0, rows, (batch, length)).astype(np.int64)}
        steps.append(f"Gather(embedding {rows}x{dim})")
    else:
        rank = draw(st.integers(1, 5))
        dims = [batch] + [draw(st.integers(1, 8 if rank <= 3 else 6)) for _ in range(rank - 1)]
        inp = helper.make_tensor_value_info("input", TensorProto.FLOAT, dims)
        g = _Graph(opset, [inp])
        x = "input"
        feeds = {"input": rng.standard_normal(dims).astype(np.float32)}
        steps.append(f"input {tuple(dims)}")
    assert x == "input" or g.infer([x])
    outputs = []
    for _ in range(draw(st.integers(1, max_steps))):
        step = draw(st.sampled_from(STEPS))
        mark = (len(g.nodes), len(g.inits), g.count)
        made = step(draw, g, x, g.shapes[x])
        if made is None or not g.infer([made[0]]) or 0 in g.shapes[made[0]]:
            del g.nodes[mark[0]:], g.inits[mark[1]:]
            continue
        if len(outputs) < 1 and draw(st.integers(0, 7)) == 0:     # an intermediate as a second output
            outputs.append(x)
        x, name = made
        steps.append(name)
    if len(steps) == 1:                          # every drawn step was refused: one that fits all
        x = g.node("Relu", [x])
        assert g.infer([x])
        steps.append("Relu")
    outputs = [x] + [o for o in outputs if o not in (x, "input", "ids")]
    model = g.model(outputs)
    if draw(st.integers(0, 3)) == 0:            # a symbolic batch, as dynamic_axes exports it
        model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    quantizer = draw(st.sampled_from(QUANTIZERS))
    return Case(model, feeds, quantizer, give_inputs=draw(st.integers(0, 3)) > 0, batch=batch, opset=opset,
                steps=steps)
