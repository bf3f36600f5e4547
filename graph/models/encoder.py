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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Dims:
    """The shape of one encoder layer: tokens, model width, heads, FFN width."""
    tokens: int
    width: int
    heads: int
    ffn: int

    @property
    def head_dim(self) -> int:
        return self.width // self.heads


DIMS = Dims(TOKENS, WIDTH, HEADS, FFN)


def layer_weights(rng: np.random.Generator, dims: Dims, prefix: str = "") -> dict:
    """One encoder layer's float32 parameters, drawn from `rng` in a fixed order; linear weights
    are stored as (in, out), the layout of the MatMul initializers torch exports (W^T of
    nn.Linear). Keys are `prefix` + q_w, q_b, ..., norm2_b."""
    d, f = dims.width, dims.ffn
    p = {}
    for name, (fi, fo) in (("q", (d, d)), ("k", (d, d)), ("v", (d, d)), ("out", (d, d)), ("ffn1", (d, f)),
                           ("ffn2", (f, d))):
        p[f"{prefix}{name}_w"], p[f"{prefix}{name}_b"] = linear_weights(rng, fi, fo)
    p[f"{prefix}norm1_g"], p[f"{prefix}norm1_b"] = norm_weights(rng, d)
    p[f"{prefix}norm2_g"], p[f"{prefix}norm2_b"] = norm_weights(rng, d)
    return p


def linear_weights(rng: np.random.Generator, fan_in: int, fan_out: int) -> tuple:
    w = rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)
    b = rng.standard_normal(fan_out) * 0.05
    return w.astype(np.float32), b.astype(np.float32)


def norm_weights(rng: np.random.Generator, width: int) -> tuple:
    gamma = 1 + 0.1 * rng.standard_normal(width)
    beta = 0.05 * rng.standard_normal(width)
    return gamma.astype(np.float32), beta.astype(np.float32)


def _weights(seed: int) -> dict:
    """The network's float32 parameters, drawn in a fixed order."""
    rng = np.random.default_rng(seed)
    p = layer_weights(rng, DIMS)
    w, p["fc_b"] = linear_weights(rng, WIDTH, CLASSES)
    p["fc_w"] = np.ascontiguousarray(w.T)          # Gemm transB=1: (classes, width), nn.Linear's layout
    return p


class GraphBuilder:
    """The nodes and initializers of one ONNX graph; `node` and `init` return the tensor's name."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.inits: list = []

    @classmethod
    def with_weights(cls, weights: dict) -> "GraphBuilder":
        """A builder whose initializers are `weights` {name: array}, in their order."""
        g = cls()
        for key, value in weights.items():
            g.init(key, value)
        return g

    def init(self, name: str, value) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs: list, name: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op, inputs, [name], name=f"/{name}/{op}", **attrs))
        return name

    def layer_constants(self, dims: Dims) -> dict:
        """The shape and scalar initializers every encoder layer of `dims` shares."""
        return {"heads_shape": self.init("heads_shape", np.array([1, dims.tokens, dims.heads, dims.head_dim],
                                                                  np.int64)),
                "tokens_shape": self.init("tokens_shape", np.array([1, dims.tokens, dims.width], np.int64)),
                "q_scale": self.init("q_scale", np.array(1 / math.sqrt(dims.head_dim), np.float32)),
                "sqrt2": self.init("sqrt2", np.array(math.sqrt(2), np.float32)),
                "one": self.init("one", np.array(1, np.float32)),
                "half": self.init("half", np.array(0.5, np.float32))}

    def encoder_layer(self, x: str, consts: dict, prefix: str = "", mask: str | None = None,
                      norm_first: bool = False) -> str:
        """One post-norm encoder layer over `x` (1, T, D) as torch.onnx.export writes
        nn.TransformerEncoderLayer(norm_first=False, activation="gelu") (the module docstring);
        its weights are the initializers `prefix` + q_w ... (layer_weights). `mask`, when given,
        is added to the attention scores before the Softmax (BERT's extended attention mask).
        `norm_first`: the pre-norm layer (norm_first=True, and ViT's): x + attention(norm1(x)),
        then x + FFN(norm2(x)), no LayerNormalization after the residuals."""
        node, c = self.node, consts

        def norm(h, name):
            return node("LayerNormalization", [h, f"{prefix}{name}_g", f"{prefix}{name}_b"], f"{prefix}{name}",
                        axis=-1, epsilon=EPSILON)

        def linear(h, name):
            return node("Add", [node("MatMul", [h, f"{prefix}{name}_w"], f"{prefix}{name}_matmul"),
                                f"{prefix}{name}_b"], f"{prefix}{name}_add")

        def heads(h, name, perm):
            return node("Transpose", [node("Reshape", [linear(h, name), c["heads_shape"]], f"{prefix}{name}_heads")],
                        f"{prefix}{name}_transpose", perm=perm)

        h = norm(x, "norm1") if norm_first else x
        q = node("Mul", [heads(h, "q", [0, 2, 1, 3]), c["q_scale"]], f"{prefix}q_scaled")
        kt = heads(h, "k", [0, 2, 3, 1])
        v = heads(h, "v", [0, 2, 1, 3])
        scores = node("MatMul", [q, kt], f"{prefix}scores")
        if mask is not None:
            scores = node("Add", [scores, mask], f"{prefix}scores_masked")
        attn = node("Softmax", [scores], f"{prefix}attn", axis=-1)
        ctx = node("Transpose", [node("MatMul", [attn, v], f"{prefix}context")], f"{prefix}context_transpose",
                   perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, c["tokens_shape"]], f"{prefix}context_tokens")
        x = node("Add", [x, linear(ctx, "out")], f"{prefix}residual1")
        if not norm_first:
            x = norm(x, "norm1")
        h = linear(norm(x, "norm2") if norm_first else x, "ffn1")
        erf = node("Erf", [node("Div", [h, c["sqrt2"]], f"{prefix}gelu_div")], f"{prefix}gelu_erf")
        h = node("Mul", [node("Mul", [h, node("Add", [erf, c["one"]], f"{prefix}gelu_add")], f"{prefix}gelu_mul"),
                         c["half"]], f"{prefix}gelu")
        x = node("Add", [x, linear(h, "ffn2")], f"{prefix}residual2")
        return x if norm_first else norm(x, "norm2")


def float_model(seed: int = SEED, norm_first: bool = False) -> onnx.ModelProto:
    """The encoder classifier; `norm_first`: its layer pre-norm, as
    nn.TransformerEncoderLayer(norm_first=True) exports."""
    p = _weights(seed)
    g = GraphBuilder.with_weights(p)
    x = g.encoder_layer("input", g.layer_constants(DIMS), norm_first=norm_first)
    x = g.node("ReduceMean", [x], "pooled", axes=[1], keepdims=0)
    g.node("Gemm", [x, "fc_w", "fc_b"], "logits", transB=1)

    graph = helper.make_graph(
        g.nodes, "encoder",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(INPUT_SHAPE))],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, list(OUTPUT_SHAPE))], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="vta-toolkit encoder")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def tokens(count: int, seed: int = SEED) -> np.ndarray:
    """Seeded already-embedded tokens ~ N(0, 1), shape (count, T, D)."""
    return np.random.default_rng(seed + 1).standard_normal((count, *INPUT_SHAPE[1:])).astype(np.float32)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def layer_norm(y: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> np.ndarray:
    mean = y.mean(-1, keepdims=True)
    var = ((y - mean) ** 2).mean(-1, keepdims=True)
    return (y - mean) / np.sqrt(var + EPSILON) * gamma + beta


def reference_layer(x: np.ndarray, p: dict, dims: Dims, prefix: str = "",
                    mask: np.ndarray | None = None, norm_first: bool = False) -> np.ndarray:
    """One encoder layer (GraphBuilder.encoder_layer) over `x` (N, T, D) in float64 numpy;
    `mask` (N, 1, 1, T) is added to the scores; `norm_first`: the pre-norm layer."""
    t, h, dh = dims.tokens, dims.heads, dims.head_dim

    def split(y):                                      # (N, T, D) -> (N, H, T, Dh)
        return y.reshape(len(y), t, h, dh).swapaxes(1, 2)

    def w(name):
        return p[prefix + name]

    if norm_first:
        return _pre_norm_layer(x, lambda y: _attention(y, w, split, dims, mask), w)
    q, k, v = (split(x @ w(f"{n}_w") + w(f"{n}_b")) for n in "qkv")
    scores = np.einsum("nhtd,nhsd->nhts", q, k) / np.sqrt(dh)
    if mask is not None:
        scores = scores + mask
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    attn = scores / scores.sum(-1, keepdims=True)
    ctx = np.einsum("nhts,nhsd->nthd", attn, v).reshape(len(x), t, dims.width)
    x = layer_norm(x + ctx @ w("out_w") + w("out_b"), w("norm1_g"), w("norm1_b"))
    y = x @ w("ffn1_w") + w("ffn1_b")
    y = 0.5 * y * (1 + _erf(y / np.sqrt(2)))
    return layer_norm(x + y @ w("ffn2_w") + w("ffn2_b"), w("norm2_g"), w("norm2_b"))


def _attention(x: np.ndarray, w, split, dims: Dims, mask) -> np.ndarray:
    """Multi-head self-attention over `x` (N, T, D) with its output projection (float64)."""
    q, k, v = (split(x @ w(f"{n}_w") + w(f"{n}_b")) for n in "qkv")
    scores = np.einsum("nhtd,nhsd->nhts", q, k) / np.sqrt(dims.head_dim)
    if mask is not None:
        scores = scores + mask
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    attn = scores / scores.sum(-1, keepdims=True)
    return np.einsum("nhts,nhsd->nthd", attn, v).reshape(len(x), dims.tokens, dims.width) @ w("out_w") + w("out_b")


def _pre_norm_layer(x: np.ndarray, attention, w) -> np.ndarray:
    """x + attention(norm1(x)); then + FFN(norm2(.)), GELU (erf) between its linears."""
    x = x + attention(layer_norm(x, w("norm1_g"), w("norm1_b")))
    y = layer_norm(x, w("norm2_g"), w("norm2_b")) @ w("ffn1_w") + w("ffn1_b")
    y = 0.5 * y * (1 + _erf(y / np.sqrt(2)))
    return x + y @ w("ffn2_w") + w("ffn2_b")


def reference(x: np.ndarray, seed: int = SEED, norm_first: bool = False) -> np.ndarray:
    """The logits (N, classes) of tokens `x` (N, T, D) or (T, D), in float64 numpy."""
    p = {k: v.astype(np.float64) for k, v in _weights(seed).items()}
    x = np.asarray(x, np.float64)
    if x.ndim == 2:
        x = x[None]
    x = reference_layer(x, p, DIMS, norm_first=norm_first)
    return x.mean(1) @ p["fc_w"].T + p["fc_b"]


def load(cache_dir: Path | str | None = None, quantizer: str = "onnxruntime") -> onnx.ModelProto:
    """The QDQ encoder, built and quantised on first use."""
    return cached_qdq((models_dir() if cache_dir is None else Path(cache_dir)) / f"encoder_v{VERSION}_{quantizer}_qdq.onnx", float_model,
                      lambda: tokens(CALIBRATION_TOKENS, seed=SEED + 100), quantizer)
