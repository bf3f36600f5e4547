"""PyTorch eager, from an ONNX graph: each node run as the torch op it names, in graph order.

This is the "PyTorch eager" row of `vta-sim compare --model`: the same weights and the same op
sequence as the ONNX file, executed by torch's own kernels without a compiler, on the CPU or a
CUDA device. torch is not a dependency of the toolkit: without it the row is skipped. A node
whose op has no entry in OPS makes the row skipped with that op named.
"""
from __future__ import annotations

import numpy as np


class Unsupported(Exception):
    """The graph holds an op this interpreter does not map; the message names it."""


def _attrs(node) -> dict:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _pads(a, nd):
    p = list(a.get("pads", [0] * 2 * nd))
    if p[:nd] != p[nd:]:
        raise Unsupported("asymmetric padding")
    return p[:nd]


def _conv(F, x, w, b=None, **a):
    nd = w.dim() - 2
    fn = F.conv2d if nd == 2 else F.conv1d
    return fn(x, w, b, stride=a.get("strides", [1] * nd), padding=_pads(a, nd),
              dilation=a.get("dilations", [1] * nd), groups=a.get("group", 1))


def _gemm(torch, a, b, c=None, **at):
    a = a.t() if at.get("transA") else a
    b = b.t() if at.get("transB") else b
    y = at.get("alpha", 1.0) * (a @ b)
    return y if c is None else y + at.get("beta", 1.0) * c


def _reduce_mean(x, axes=None, *rest, keepdims=1, **_):
    dims = [int(d) for d in (axes.tolist() if hasattr(axes, "tolist") else axes or range(x.dim()))]
    return x.mean(dim=dims, keepdim=bool(keepdims))


def ops(torch):
    """{ONNX op: fn(*inputs, **attributes)} over torch tensors."""
    F = torch.nn.functional
    return {
        "Conv": lambda *i, **a: _conv(F, *i, **a),
        "Relu": lambda x, **_: F.relu(x),
        "Clip": lambda x, lo=None, hi=None, **_: torch.clamp(x, lo.item() if lo is not None else None,
                                                              hi.item() if hi is not None else None),
        "MaxPool": lambda x, **a: F.max_pool2d(x, a["kernel_shape"], a.get("strides", a["kernel_shape"]),
                                               _pads(a, 2)),
        "AveragePool": lambda x, **a: F.avg_pool2d(x, a["kernel_shape"], a.get("strides", a["kernel_shape"]),
                                                   _pads(a, 2), count_include_pad=bool(a.get("count_include_pad", 0))),
        "GlobalAveragePool": lambda x, **_: x.mean(dim=tuple(range(2, x.dim())), keepdim=True),
        "Flatten": lambda x, axis=1, **_: x.reshape(int(np.prod(x.shape[:axis])), -1),
        "Gemm": lambda *i, **a: _gemm(torch, *i, **a),
        "MatMul": lambda a, b, **_: a @ b,
        "Add": lambda a, b, **_: a + b, "Sub": lambda a, b, **_: a - b,
        "Mul": lambda a, b, **_: a * b, "Div": lambda a, b, **_: a / b,
        "Erf": lambda x, **_: torch.erf(x), "Sqrt": lambda x, **_: torch.sqrt(x),
        "Tanh": lambda x, **_: torch.tanh(x), "Sigmoid": lambda x, **_: torch.sigmoid(x),
        "Pow": lambda x, y, **_: torch.pow(x, y),
        "Reshape": lambda x, s, **_: x.reshape([int(d) if d != 0 else x.shape[i]
                                                for i, d in enumerate(s.tolist())]),
        "Transpose": lambda x, perm=None, **_: x.permute(*(perm or reversed(range(x.dim())))),
        "Softmax": lambda x, axis=-1, **_: torch.softmax(x, dim=axis),
        "LayerNormalization": lambda x, w, b=None, axis=-1, epsilon=1e-5, **_: F.layer_norm(
            x, x.shape[axis:], w, b, epsilon),
        "ReduceMean": _reduce_mean,
        "Concat": lambda *xs, axis=0, **_: torch.cat(xs, dim=axis),
        "Gelu": lambda x, approximate="none", **_: F.gelu(x, approximate=approximate),
    }


class EagerModel:
    """A float ONNX model as a sequence of torch calls on `device` ("cpu" or "cuda")."""

    def __init__(self, proto, device: str = "cpu"):
        import torch
        from onnx import numpy_helper

        self.torch, self.device, self.table = torch, device, ops(torch)
        graph = proto.graph
        missing = sorted({n.op_type for n in graph.node} - set(self.table))
        if missing:
            raise Unsupported(f"no torch mapping for the ONNX op(s) {', '.join(missing)}")
        self.consts = {}
        for init in graph.initializer:
            arr = numpy_helper.to_array(init)
            # shapes, axes and permutations stay on the host as numpy; tensors go to the device
            self.consts[init.name] = arr if arr.dtype == np.int64 else torch.from_numpy(arr.copy()).to(device)
        self.nodes = [(n.op_type, list(n.input), list(n.output), _attrs(n)) for n in graph.node]
        self.input = next(i.name for i in graph.input if i.name not in self.consts)
        self.output = graph.output[0].name

    def to_device(self, x: np.ndarray):
        return self.torch.from_numpy(np.ascontiguousarray(x)).to(self.device)

    def __call__(self, x):
        env = dict(self.consts)
        env[self.input] = x
        with self.torch.inference_mode():
            for op, ins, outs, attrs in self.nodes:
                args = [env[i] if i else None for i in ins]
                env[outs[0]] = self.table[op](*args, **attrs)
        return env[self.output]

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()


def available(device: str) -> str | None:
    """None when torch can run on `device`, else why not."""
    try:
        import torch
    except ImportError:
        return "torch not installed (not a dependency of the toolkit)"
    if device == "cuda" and not torch.cuda.is_available():
        return "torch sees no CUDA device here"
    return None

