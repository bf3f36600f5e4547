"""A small builder of float ONNX CNNs from numpy weights (what the model zoo here exports)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class OnnxBuilder:
    """Appends nodes to one graph; each method returns the name of its output tensor."""

    def __init__(self, name: str, input_shape: tuple):
        self.name, self.nodes, self.inits = name, [], []
        self.input = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", *input_shape[1:]])
        self.count = 0

    def _fresh(self, op: str) -> str:
        self.count += 1
        return f"{op.lower()}{self.count}"

    def _init(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value, np.float32), name))
        return name

    def node(self, op: str, inputs: list, **attrs) -> str:
        out = self._fresh(op)
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x: str, weight: np.ndarray, bias: np.ndarray, stride: int = 1, pad: int = 0,
             groups: int = 1) -> str:
        """Conv with weight (O, C/groups, K, K); groups = C is a depthwise conv."""
        name = self._fresh("conv_w")
        inputs = [x, self._init(name, weight), self._init(name + "_b", bias)]
        return self.node("Conv", inputs, strides=[stride, stride], pads=[pad] * 4,
                         kernel_shape=list(weight.shape[2:]), group=groups)

    def relu(self, x: str) -> str:
        return self.node("Relu", [x])

    def max_pool(self, x: str, k: int, stride: int, pad: int = 0, ceil_mode: int = 0) -> str:
        return self.node("MaxPool", [x], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                         ceil_mode=ceil_mode)

    def add(self, a: str, b: str) -> str:
        return self.node("Add", [a, b])

    def global_avg_pool(self, x: str) -> str:
        return self.node("GlobalAveragePool", [x])

    def avg_pool(self, x: str, k: int, stride: int, pad: int = 0, ceil_mode: int = 0,
                 count_include_pad: int = 1) -> str:
        """AveragePool as torch.nn.AvgPool2d exports it (count_include_pad=1, its default)."""
        return self.node("AveragePool", [x], kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                         ceil_mode=ceil_mode, count_include_pad=count_include_pad)

    def clip(self, x: str, lo: float, hi: float) -> str:
        """Clip with min/max inputs (ReLU6 as opset 11+ exporters write it)."""
        name = self._fresh("clip")
        return self.node("Clip", [x, self._init(name + "_min", np.array(lo)), self._init(name + "_max", np.array(hi))])

    def flatten(self, x: str) -> str:
        return self.node("Flatten", [x], axis=1)

    def dense(self, x: str, weight: np.ndarray, bias: np.ndarray) -> str:
        """Gemm with weight (N, K), as torch.nn.Linear exports it (transB=1)."""
        name = self._fresh("fc_w")
        return self.node("Gemm", [x, self._init(name, weight), self._init(name + "_b", bias)], transB=1)

    def build(self, output: str) -> onnx.ModelProto:
        """The model whose output "output" is the tensor `output` (which no node may consume)."""
        if any(output in n.input for n in self.nodes):
            raise ValueError(f"{output} feeds another node; the model output must be a final tensor")
        next(n for n in self.nodes if n.output[0] == output).output[0] = "output"
        out = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", None])
        graph = helper.make_graph(self.nodes, self.name, [self.input], [out], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="vta-toolkit")
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def cached_qdq(path, float_model, calibration, quantizer: str) -> onnx.ModelProto:
    """The QDQ model stored at `path`, else `float_model()` quantised by `quantizer` (a name of
    graph.quantize.QUANTIZERS) on `calibration()` and stored there first."""
    from pathlib import Path

    from ..quantize import quantizer_named

    quantize = quantizer_named(quantizer)
    path = Path(path)
    if path.is_file():
        return onnx.load(str(path))
    qdq = quantize(float_model(), calibration())
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(qdq, str(path))
    return qdq
