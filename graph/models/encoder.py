"""A one-layer post-norm transformer encoder classifier with seeded random weights (no torch).

The "Transformer" workload of `vta-sim compare --model encoder`: the CNNs of the zoo exercise
Conv/Gemm, this exercises what attention adds (4-D batched MatMuls of two activations, Softmax,
LayerNormalization, the Erf GELU, Reshape/Transpose head splitting). The graph is written node
for node as `torch.onnx.export` (opset 17) writes `nn.TransformerEncoderLayer(norm_first=False,
activation="gelu")` over already-embedded tokens, followed by a mean over the tokens and a
linear classifier, so the toolkit sees what a real export gives it without depending on torch:

    Q, K, V   MatMul(x, W) + Add(b); Reshape (1, T, H, Dh); Transpose (0, 2, 1, 3) for Q and V,
              (0, 2, 3, 1) for K (K^T directly); Q scaled by Mul(1/sqrt(Dh))
    attention MatMul(Q, K^T), Softmax(axis=-1), MatMul(., V), Transpose (0, 2, 1, 3),
              Reshape (1, T, D), MatMul + Add (output projection)
    block     Add (residual), LayerNormalization, MatMul + Add, GELU (Div, Erf, Add, Mul, Mul),
              MatMul + Add, Add (residual), LayerNormalization
    head      ReduceMean(axes=[1], keepdims=0), Gemm(transB=1)

`reference` is an independent float64 numpy forward pass over the same weights. The QDQ model
(onnxruntime's quantiser by default: the power-of-two one needs constant weights on every
MatMul, which attention's activation-by-activation MatMuls lack) is cached under models/ in the
cache root (vta_sim.paths).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


from . import models_dir
from .onnx_builder import cached_qdq

VERSION = 1
SEED = 0
#: Tokens, model width, heads, FFN width, classes.
TOKENS, WIDTH, HEADS, FFN, CLASSES = 16, 64, 4, 128, 10
HEAD_DIM = WIDTH // HEADS
INPUT_SHAPE = (1, TOKENS, WIDTH)
OUTPUT_SHAPE = (1, CLASSES)
EPSILON = 1e-5
OPSET = 17
#: What torch 2.x writes for an opset-17 export (onnxruntime reads it).
IR_VERSION = 8
CALIBRATION_TOKENS = 8


def _weights(seed: int) -> dict:
    """The network's float32 parameters, drawn in a fixed order; linear weights are stored as
    (in, out), the layout of the MatMul initializers torch exports (W^T of nn.Linear)."""
    rng = np.random.default_rng(seed)

    def linear(fan_in, fan_out):
        w = rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)
        b = rng.standard_normal(fan_out) * 0.05
        return w.astype(np.float32), b.astype(np.float32)

    def norm():
        gamma = 1 + 0.1 * rng.standard_normal(WIDTH)
        beta = 0.05 * rng.standard_normal(WIDTH)
        return gamma.astype(np.float32), beta.astype(np.float32)

    p = {}
    for name, (fi, fo) in (("q", (WIDTH, WIDTH)), ("k", (WIDTH, WIDTH)), ("v", (WIDTH, WIDTH)),
                           ("out", (WIDTH, WIDTH)), ("ffn1", (WIDTH, FFN)), ("ffn2", (FFN, WIDTH))):
        p[f"{name}_w"], p[f"{name}_b"] = linear(fi, fo)
    p["norm1_g"], p["norm1_b"] = norm()
    p["norm2_g"], p["norm2_b"] = norm()
    w, p["fc_b"] = linear(WIDTH, CLASSES)
    p["fc_w"] = np.ascontiguousarray(w.T)          # Gemm transB=1: (classes, width), nn.Linear's layout
    return p


def float_model(seed: int = SEED) -> onnx.ModelProto:
    p = _weights(seed)
    nodes, inits = [], []

    def init(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=f"/{name}/{op}", **attrs))
        return name

    for key, value in p.items():
        init(key, value)
    heads_shape = init("heads_shape", np.array([1, TOKENS, HEADS, HEAD_DIM], np.int64))
    tokens_shape = init("tokens_shape", np.array([1, TOKENS, WIDTH], np.int64))
    scale = init("q_scale", np.array(1 / math.sqrt(HEAD_DIM), np.float32))
    sqrt2 = init("sqrt2", np.array(math.sqrt(2), np.float32))
    one = init("one", np.array(1, np.float32))
    half = init("half", np.array(0.5, np.float32))

    def linear(x, name):
        return node("Add", [node("MatMul", [x, f"{name}_w"], f"{name}_matmul"), f"{name}_b"], f"{name}_add")

    def heads(x, name, perm):
        return node("Transpose", [node("Reshape", [linear(x, name), heads_shape], f"{name}_heads")],
                    f"{name}_transpose", perm=perm)

    x = "input"
    q = node("Mul", [heads(x, "q", [0, 2, 1, 3]), scale], "q_scaled")
    kt = heads(x, "k", [0, 2, 3, 1])
    v = heads(x, "v", [0, 2, 1, 3])
    attn = node("Softmax", [node("MatMul", [q, kt], "scores")], "attn", axis=-1)
    ctx = node("Transpose", [node("MatMul", [attn, v], "context")], "context_transpose", perm=[0, 2, 1, 3])
    ctx = node("Reshape", [ctx, tokens_shape], "context_tokens")
    x = node("Add", [x, linear(ctx, "out")], "residual1")
    x = node("LayerNormalization", [x, "norm1_g", "norm1_b"], "norm1", axis=-1, epsilon=EPSILON)
    h = linear(x, "ffn1")
    erf = node("Erf", [node("Div", [h, sqrt2], "gelu_div")], "gelu_erf")
    h = node("Mul", [node("Mul", [h, node("Add", [erf, one], "gelu_add")], "gelu_mul"), half], "gelu")
    x = node("Add", [x, linear(h, "ffn2")], "residual2")
    x = node("LayerNormalization", [x, "norm2_g", "norm2_b"], "norm2", axis=-1, epsilon=EPSILON)
    x = node("ReduceMean", [x], "pooled", axes=[1], keepdims=0)
    node("Gemm", [x, "fc_w", "fc_b"], "logits", transB=1)

    graph = helper.make_graph(
        nodes, "encoder",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(INPUT_SHAPE))],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, list(OUTPUT_SHAPE))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="vta-toolkit encoder")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def tokens(count: int, seed: int = SEED) -> np.ndarray:
    """Seeded already-embedded tokens ~ N(0, 1), shape (count, T, D)."""
    return np.random.default_rng(seed + 1).standard_normal((count, *INPUT_SHAPE[1:])).astype(np.float32)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def reference(x: np.ndarray, seed: int = SEED) -> np.ndarray:
    """The logits (N, classes) of tokens `x` (N, T, D) or (T, D), in float64 numpy."""
    p = {k: v.astype(np.float64) for k, v in _weights(seed).items()}
    x = np.asarray(x, np.float64)
    if x.ndim == 2:
        x = x[None]

    def layer_norm(y, gamma, beta):
        mean = y.mean(-1, keepdims=True)
        var = ((y - mean) ** 2).mean(-1, keepdims=True)
        return (y - mean) / np.sqrt(var + EPSILON) * gamma + beta

    def split(y):                                      # (N, T, D) -> (N, H, T, Dh)
        return y.reshape(len(y), TOKENS, HEADS, HEAD_DIM).swapaxes(1, 2)

    q, k, v = (split(x @ p[f"{n}_w"] + p[f"{n}_b"]) for n in "qkv")
    scores = np.einsum("nhtd,nhsd->nhts", q, k) / np.sqrt(HEAD_DIM)
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    attn = scores / scores.sum(-1, keepdims=True)
    ctx = np.einsum("nhts,nhsd->nthd", attn, v).reshape(len(x), TOKENS, WIDTH)
    x = layer_norm(x + ctx @ p["out_w"] + p["out_b"], p["norm1_g"], p["norm1_b"])
    h = x @ p["ffn1_w"] + p["ffn1_b"]
    h = 0.5 * h * (1 + _erf(h / np.sqrt(2)))
    x = layer_norm(x + h @ p["ffn2_w"] + p["ffn2_b"], p["norm2_g"], p["norm2_b"])
    return x.mean(1) @ p["fc_w"].T + p["fc_b"]


def load(cache_dir: Path | str | None = None, quantizer: str = "onnxruntime") -> onnx.ModelProto:
    """The QDQ encoder, built and quantised on first use."""
    return cached_qdq((models_dir() if cache_dir is None else Path(cache_dir)) / f"encoder_v{VERSION}_{quantizer}_qdq.onnx", float_model,
                      lambda: tokens(CALIBRATION_TOKENS, seed=SEED + 100), quantizer)
