"""A small vision transformer trained at first use on scikit-learn's digits (no torch, no download).

The transformer twin of the digits CNN (graph.models.digits, whose seeded split `load_data` it
shares): each 8x8 image is cut into 2x2 patches, 16 tokens of 4 pixels, embedded as torch
exports a ViT's patch embedding (`nn.Conv2d(1, D, 2, stride=2)`, then `flatten(2).transpose(1, 2)`:
Conv, Reshape, Transpose) plus a learned position embedding (Add); then `LAYERS` post-norm
encoder layers written node for node by the encoder builtin's code
(graph.models.encoder.GraphBuilder.encoder_layer: what torch.onnx.export writes for
nn.TransformerEncoderLayer(norm_first=False, activation="gelu")), a mean over the tokens
(ReduceMean) and a linear classifier (Gemm). The Reshapes take the batch as -1 (as an export
with a dynamic batch reads it), so the held-out images run as one batch.

It is trained in numpy (a hand-written backward of every op above, exact erf GELU; Adam,
cross-entropy, seeded), exported to float ONNX, quantised on training images (by graph.quantize
or onnxruntime's quantize_static) and cached under models/ in the cache root (vta_sim.paths),
like the CNN.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper
from scipy.special import erf

from ..quantize import quantizer_named
from . import models_dir
from .digits import Adam, load_data
from .encoder import EPSILON, IR_VERSION, OPSET, Dims, GraphBuilder

VERSION = 1
SEED = 0
#: Patch side, tokens (patches of the 8x8 image), model width, heads, FFN width, layers, classes.
PATCH = 2
TOKENS = (8 // PATCH) ** 2
WIDTH, HEADS, FFN, LAYERS, CLASSES = 64, 4, 128, 1, 10
DIMS = Dims(TOKENS, WIDTH, HEADS, FFN)
EPOCHS = 40
BATCH = 32
#: Adam's step at the start, decayed to 0 along a cosine over the epochs.
LEARNING_RATE = 2e-3
CALIBRATION_IMAGES = 256
#: The quantiser `vta-sim model digits-vit` uses unless told otherwise: under it and under
#: onnxruntime's defaults every layer runs on the accelerator (attention's matmuls of two
#: activations with zero points too); its zero points 0 take 6 % fewer cycles.
DEFAULT_QUANTIZER = "onnxruntime-symmetric"
LINEARS = ("q", "k", "v", "out", "ffn1", "ffn2")


@dataclass
class DigitsVit:
    qdq: onnx.ModelProto          # the quantised model, QDQ format
    x_test: np.ndarray            # held-out images (N, 1, 8, 8) float32 in [0, 1]
    y_test: np.ndarray            # their labels
    float_accuracy: float         # of the float model on the held-out images
    trained: bool                 # False when it came from the cache


# ----------------------------------------------------------------------------- parameters
def init_params(rng: np.random.Generator, dims: Dims = DIMS, layers: int = LAYERS, classes: int = CLASSES,
                dtype=np.float32) -> dict:
    """Initial parameters, drawn from `rng` in a fixed order. Layouts are the exported ones:
    patch_w (D, 1, P, P) (Conv), pos (T, D), linear weights (in, out) (MatMul), fc_w (classes, D)
    (Gemm transB=1)."""
    d, f = dims.width, dims.ffn
    p = {"patch_w": rng.standard_normal((d, 1, PATCH, PATCH)) / PATCH, "patch_b": np.zeros(d),
         "pos": rng.standard_normal((dims.tokens, d)) * 0.1}
    for i in range(layers):
        for name, (fi, fo) in zip(LINEARS, ((d, d), (d, d), (d, d), (d, d), (d, f), (f, d))):
            p[f"l{i}_{name}_w"] = rng.standard_normal((fi, fo)) / np.sqrt(fi)
            p[f"l{i}_{name}_b"] = np.zeros(fo)
        for norm in ("norm1", "norm2"):
            p[f"l{i}_{norm}_g"], p[f"l{i}_{norm}_b"] = np.ones(d), np.zeros(d)
    p["fc_w"] = rng.standard_normal((classes, d)) / np.sqrt(d)
    p["fc_b"] = np.zeros(classes)
    return {k: v.astype(dtype) for k, v in p.items()}


def layer_count(p: dict) -> int:
    return sum(1 for k in p if k.endswith("_q_w"))


# ----------------------------------------------------------------------------- forward and backward
def patches(x: np.ndarray) -> np.ndarray:
    """(N, 1, 8, 8) -> (N, T, P*P): token i*4+j is the patch at row i, column j, its pixels in
    (row, column) order (the Conv's (D, 1, P, P) weight flattened)."""
    n, side = len(x), 8 // PATCH
    return x.reshape(n, side, PATCH, side, PATCH).transpose(0, 1, 3, 2, 4).reshape(n, side * side, PATCH * PATCH)


def _mm(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """a (..., K) @ w (K, M) as one 2-D product (numpy would loop over the leading axes)."""
    return (a.reshape(-1, a.shape[-1]) @ w).reshape(*a.shape[:-1], w.shape[-1])


def _layer_norm(y, g, b):
    mean = y.mean(-1, keepdims=True)
    inv = 1 / np.sqrt(((y - mean) ** 2).mean(-1, keepdims=True) + EPSILON)
    xhat = (y - mean) * inv
    return xhat * g + b, (xhat, inv)


def _layer_norm_back(dy, g, cache):
    xhat, inv = cache
    dxhat = dy * g
    dx = (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True)) * inv
    return dx, (dy * xhat).sum((0, 1)), dy.sum((0, 1))


def _layer(x, p, pre, heads):
    n, t, d = x.shape
    dh = d // heads

    def split(y):                                      # (N, T, D) -> (N, H, T, Dh)
        return y.reshape(n, t, heads, dh).transpose(0, 2, 1, 3)

    q, k, v = (split(_mm(x, p[f"{pre}{m}_w"]) + p[f"{pre}{m}_b"]) for m in "qkv")
    scores = (q / np.sqrt(dh)) @ k.transpose(0, 1, 3, 2)
    e = np.exp(scores - scores.max(-1, keepdims=True))
    attn = e / e.sum(-1, keepdims=True)
    ctx = (attn @ v).transpose(0, 2, 1, 3).reshape(n, t, d)
    h1, ln1 = _layer_norm(x + _mm(ctx, p[f"{pre}out_w"]) + p[f"{pre}out_b"], p[f"{pre}norm1_g"],
                          p[f"{pre}norm1_b"])
    f = _mm(h1, p[f"{pre}ffn1_w"]) + p[f"{pre}ffn1_b"]
    cdf = 0.5 * (1 + erf(f / np.sqrt(2)))
    gelu = f * cdf
    h2, ln2 = _layer_norm(h1 + _mm(gelu, p[f"{pre}ffn2_w"]) + p[f"{pre}ffn2_b"], p[f"{pre}norm2_g"],
                          p[f"{pre}norm2_b"])
    return h2, (x, q, k, v, attn, ctx, h1, ln1, f, cdf, gelu, ln2)


def _layer_back(dh2, p, pre, heads, cache):
    x, q, k, v, attn, ctx, h1, ln1, f, cdf, gelu, ln2 = cache
    n, t, d = x.shape
    dh = d // heads
    g = {}

    def linear_back(dy, inp, name):
        g[f"{pre}{name}_w"] = inp.reshape(-1, inp.shape[-1]).T @ dy.reshape(-1, dy.shape[-1])
        g[f"{pre}{name}_b"] = dy.sum((0, 1))
        return _mm(dy, p[f"{pre}{name}_w"].T)

    dr2, g[f"{pre}norm2_g"], g[f"{pre}norm2_b"] = _layer_norm_back(dh2, p[f"{pre}norm2_g"], ln2)
    dgelu = linear_back(dr2, gelu, "ffn2")
    df = dgelu * (cdf + f * np.exp(-0.5 * f * f) / np.sqrt(2 * np.pi))
    dh1 = dr2 + linear_back(df, h1, "ffn1")
    dr1, g[f"{pre}norm1_g"], g[f"{pre}norm1_b"] = _layer_norm_back(dh1, p[f"{pre}norm1_g"], ln1)
    dctx = linear_back(dr1, ctx, "out").reshape(n, t, heads, dh).transpose(0, 2, 1, 3)
    dattn = dctx @ v.transpose(0, 1, 3, 2)
    dv = attn.transpose(0, 1, 3, 2) @ dctx
    dscores = attn * (dattn - (dattn * attn).sum(-1, keepdims=True))
    dq = dscores @ k / np.sqrt(dh)
    dk = dscores.transpose(0, 1, 3, 2) @ q / np.sqrt(dh)
    dx = dr1
    for name, dy in (("q", dq), ("k", dk), ("v", dv)):
        dx = dx + linear_back(dy.transpose(0, 2, 1, 3).reshape(n, t, d), x, name)
    return dx, g


def forward(p: dict, x: np.ndarray, heads: int = HEADS):
    """(logits (N, classes), cache for `backward`) of images `x` (N, 1, 8, 8), in the dtype of
    `p`: what the exported graph computes."""
    tokens = patches(np.asarray(x, p["pos"].dtype))
    d = p["pos"].shape[1]
    h = _mm(tokens, p["patch_w"].reshape(d, -1).T) + p["patch_b"] + p["pos"]
    caches = []
    for i in range(layer_count(p)):
        h, c = _layer(h, p, f"l{i}_", heads)
        caches.append(c)
    pooled = h.mean(1)
    return pooled @ p["fc_w"].T + p["fc_b"], (tokens, caches, pooled, h.shape[1])


def backward(p: dict, cache, dlogits: np.ndarray, heads: int = HEADS) -> dict:
    """The gradients of every parameter given d(loss)/d(logits)."""
    tokens, caches, pooled, t = cache
    g = {"fc_w": dlogits.T @ pooled, "fc_b": dlogits.sum(0)}
    dh = np.repeat((dlogits @ p["fc_w"])[:, None] / t, t, axis=1)
    for i in reversed(range(len(caches))):
        dh, gl = _layer_back(dh, p, f"l{i}_", heads, caches[i])
        g.update(gl)
    g["pos"] = dh.sum(0)
    g["patch_b"] = dh.sum((0, 1))
    g["patch_w"] = (dh.reshape(-1, dh.shape[-1]).T @ tokens.reshape(-1, tokens.shape[-1])).reshape(p["patch_w"].shape)
    return g


def loss_and_grads(p: dict, x: np.ndarray, y: np.ndarray, heads: int = HEADS) -> tuple:
    """(mean cross-entropy, its gradients) of `p` on images `x`, labels `y`."""
    logits, cache = forward(p, x, heads)
    shifted = logits - logits.max(1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    loss = -logp[np.arange(len(y)), y].mean()
    prob = np.exp(logp)
    prob[np.arange(len(y)), y] -= 1
    return float(loss), backward(p, cache, prob / len(y), heads)


def train(x: np.ndarray, y: np.ndarray, progress=None, epochs: int = EPOCHS) -> dict:
    """The ViT's float32 parameters, trained with Adam on (x, y) on one core (small matrices:
    BLAS threads only contend)."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(SEED)
    p = init_params(rng)
    adam, steps = Adam(p), epochs * -(-len(x) // BATCH)
    with threadpool_limits(1):
        for epoch in range(epochs):
            order = rng.permutation(len(x))
            for start in range(0, len(x), BATCH):
                idx = order[start:start + BATCH]
                _, grads = loss_and_grads(p, x[idx], y[idx])
                adam.update(grads, LEARNING_RATE * 0.5 * (1 + math.cos(math.pi * (adam.step + 1) / steps)))
            if progress:
                progress(epoch + 1, epochs)
    return p


def accuracy(p: dict, x: np.ndarray, y: np.ndarray) -> float:
    return float((forward(p, x)[0].argmax(1) == y).mean())


# ----------------------------------------------------------------------------- export
def float_model(p: dict) -> onnx.ModelProto:
    """The float ONNX graph of parameters `p` (the module docstring), batch dynamic."""
    layers = layer_count(p)
    d = p["pos"].shape[1]
    dims = Dims(TOKENS, d, HEADS, p["l0_ffn1_w"].shape[1])
    g = GraphBuilder.with_weights({k: np.asarray(v, np.float32) for k, v in p.items()})
    consts = g.layer_constants(dims)
    for name, shape in (("heads_shape", [-1, dims.tokens, dims.heads, dims.head_dim]),
                        ("tokens_shape", [-1, dims.tokens, dims.width])):
        g.inits = [i for i in g.inits if i.name != name]        # the batch as -1: any batch
        consts[name] = g.init(name, np.array(shape, np.int64))
    x = g.node("Conv", ["input", "patch_w", "patch_b"], "patch_embed", kernel_shape=[PATCH, PATCH],
               strides=[PATCH, PATCH])
    x = g.node("Reshape", [x, g.init("flat_shape", np.array([-1, d, TOKENS], np.int64))], "patch_flat")
    x = g.node("Transpose", [x], "patch_tokens", perm=[0, 2, 1])
    x = g.node("Add", [x, "pos"], "embeddings")
    for i in range(layers):
        x = g.encoder_layer(x, consts, prefix=f"l{i}_")
    x = g.node("ReduceMean", [x], "pooled", axes=[1], keepdims=0)
    g.node("Gemm", [x, "fc_w", "fc_b"], "logits", transB=1)

    graph = helper.make_graph(
        g.nodes, "digits_vit",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", p["fc_w"].shape[0]])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="vta-toolkit digits-vit")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def paths(cache: Path, quantizer: str) -> tuple:
    """(float ONNX, trained weights, metadata, QDQ by `quantizer`) under `cache`."""
    stem = cache / f"digits_vit_v{VERSION}"
    return (Path(f"{stem}_float.onnx"), Path(f"{stem}_weights.npz"), Path(f"{stem}.json"),
            Path(f"{stem}_{quantizer}_qdq.onnx"))


def load(cache_dir: Path | str | None = None, progress=None, quantizer: str = DEFAULT_QUANTIZER) -> DigitsVit:
    """The quantised digits ViT and its held-out split, training it on first use; each
    quantiser's model is cached beside the float one and the trained weights."""
    quantize = quantizer_named(quantizer)
    x_train, x_test, y_train, y_test = load_data()
    cache = models_dir() if cache_dir is None else Path(cache_dir)
    float_path, weights_path, meta_path, qdq_path = paths(cache, quantizer)
    trained = not (float_path.is_file() and weights_path.is_file() and meta_path.is_file())
    if trained:
        params = train(x_train, y_train, progress)
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(weights_path, **params)
        onnx.save(float_model(params), str(float_path))
        meta_path.write_text(json.dumps({"float_accuracy": accuracy(params, x_test, y_test), "seed": SEED,
                                         "epochs": EPOCHS}))
    if not qdq_path.is_file():
        onnx.save(quantize(onnx.load(str(float_path)), x_train[:CALIBRATION_IMAGES]), str(qdq_path))
    meta = json.loads(meta_path.read_text())
    return DigitsVit(onnx.load(str(qdq_path)), x_test, y_test, meta["float_accuracy"], trained)


def weights(cache_dir: Path | str | None = None) -> dict:
    """The cached trained parameters (after `load`)."""
    cache = models_dir() if cache_dir is None else Path(cache_dir)
    with np.load(paths(cache, DEFAULT_QUANTIZER)[1]) as z:
        return dict(z)
