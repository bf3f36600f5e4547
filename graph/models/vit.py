"""A ViT image classifier with seeded random weights (no torch, no `transformers`).

What `vta-sim model vit` runs: the graph `torch.onnx.export` (opset 17) writes for a ViT
(`transformers`' ViTForImageClassification, or any ViT of nn.TransformerEncoderLayer(norm_first=True)
layers), written with the onnx helper API:

    input      pixel_values (1, 3, H, W) float
    patches    Conv(kernel = stride = P) -> (1, D, H/P, W/P); Reshape (1, D, N); Transpose (0, 2, 1)
               -> (1, N, D) tokens (what `flatten(2).transpose(1, 2)` exports)
    class      Concat(axis 1) of a learned (1, 1, D) class token in front -> (1, N + 1, D);
               Add of learned position embeddings (1, N + 1, D)
    layers     `layers` PRE-norm encoder layers (graph.models.encoder.GraphBuilder.encoder_layer
               with norm_first=True: x + attention(LayerNorm(x)), x + FFN(LayerNorm(x)), the Erf GELU)
    head       LayerNormalization; Gather(axis 1, index 0): the class token; Gemm(transB=1)

The layers' nodes are the encoder builtin's (nn.TransformerEncoderLayer's export: Q scaled by a
Mul before Q.K^T; `transformers`' ViTSelfAttention divides the scores after it instead, the same
arithmetic) and its LayerNorm epsilon (1e-5; ViTConfig's is 1e-12).

The default shape (`Shape()`) is the issue's: a 64x64 image in 8x8 patches (64 tokens and the
class token: 65), hidden 192, 3 heads, 4 layers, FFN 768 (ViTConfig's 4 x hidden), 10 classes;
`SMALL` is a test's. `reference` is an independent float64 numpy forward pass over the same
weights (the patch Conv as a matmul of the image's patches).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper

from .encoder import (EPSILON, IR_VERSION, OPSET, Dims, GraphBuilder, layer_norm, layer_weights, linear_weights,
                      norm_weights, reference_layer)

SEED = 0
#: Images quantize_static is calibrated on.
CALIBRATION_IMAGES = 8
INPUT = "pixel_values"


@dataclass(frozen=True)
class Shape:
    """image: side of the square RGB image; patch: side of a patch (the Conv's kernel and
    stride); width: hidden size."""
    image: int = 64
    patch: int = 8
    width: int = 192
    heads: int = 3
    layers: int = 4
    ffn: int = 768
    classes: int = 10

    @property
    def patches(self) -> int:
        return (self.image // self.patch) ** 2

    @property
    def tokens(self) -> int:
        """The patches and the class token."""
        return self.patches + 1

    @property
    def dims(self) -> Dims:
        return Dims(self.tokens, self.width, self.heads, self.ffn)

    @property
    def input_shape(self) -> tuple:
        return (1, 3, self.image, self.image)

    def tag(self) -> str:
        return (f"i{self.image}_p{self.patch}_d{self.width}_h{self.heads}_l{self.layers}_f{self.ffn}"
                f"_c{self.classes}")


DEFAULT = Shape()
#: Small enough for a test to compile and run in seconds: 16 patches and the class token.
SMALL = Shape(image=32, patch=8, width=32, heads=2, layers=2, ffn=64, classes=10)


def _weights(shape: Shape, seed: int) -> dict:
    """The network's float32 parameters, drawn in a fixed order."""
    rng = np.random.default_rng(seed)
    d, fan_in = shape.width, 3 * shape.patch ** 2
    p = {"patch_w": (rng.standard_normal((d, 3, shape.patch, shape.patch)) / np.sqrt(fan_in)).astype(np.float32),
         "patch_b": (rng.standard_normal(d) * 0.05).astype(np.float32),
         "cls_token": (rng.standard_normal((1, 1, d)) * 0.5).astype(np.float32),
         "pos_emb": (rng.standard_normal((1, shape.tokens, d)) * 0.1).astype(np.float32)}
    for i in range(shape.layers):
        p.update(layer_weights(rng, shape.dims, prefix=f"l{i}_"))
    p["final_norm_g"], p["final_norm_b"] = norm_weights(rng, d)
    w, p["fc_b"] = linear_weights(rng, d, shape.classes)
    p["fc_w"] = np.ascontiguousarray(w.T)          # Gemm transB=1: (classes, width), nn.Linear's layout
    return p


def float_model(shape: Shape = DEFAULT, seed: int = SEED) -> onnx.ModelProto:
    p = _weights(shape, seed)
    g = GraphBuilder.with_weights(p)
    consts = g.layer_constants(shape.dims)
    side = shape.image // shape.patch
    x = g.node("Conv", [INPUT, "patch_w", "patch_b"], "patch_embeddings", kernel_shape=[shape.patch] * 2,
               strides=[shape.patch] * 2, pads=[0] * 4, dilations=[1, 1], group=1)
    x = g.node("Reshape", [x, g.init("patches_shape", np.array([1, shape.width, side * side], np.int64))],
               "patches_flat")
    x = g.node("Transpose", [x], "patch_tokens", perm=[0, 2, 1])
    x = g.node("Concat", ["cls_token", x], "tokens", axis=1)
    x = g.node("Add", [x, "pos_emb"], "embeddings")
    for i in range(shape.layers):
        x = g.encoder_layer(x, consts, prefix=f"l{i}_", norm_first=True)
    x = g.node("LayerNormalization", [x, "final_norm_g", "final_norm_b"], "final_norm", axis=-1, epsilon=EPSILON)
    cls = g.node("Gather", [x, g.init("cls_index", np.array(0, np.int64))], "cls", axis=1)
    g.node("Gemm", [cls, "fc_w", "fc_b"], "logits", transB=1)

    graph = helper.make_graph(
        g.nodes, "vit",
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, list(shape.input_shape))],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, shape.classes])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="vta-toolkit vit")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def images(count: int, shape: Shape = DEFAULT, seed: int = SEED) -> np.ndarray:
    """Seeded normalised images ~ N(0, 1), shape (count, 3, H, W) float32."""
    return np.random.default_rng(seed + 1).standard_normal((count, *shape.input_shape[1:])).astype(np.float32)


def patch_tokens(x: np.ndarray, shape: Shape) -> np.ndarray:
    """(N, 3, H, W) -> (N, patches, 3 P P): each patch's pixels in the Conv weight's (c, kh, kw)
    order, patches row by row (the Conv output's flattening)."""
    n, s, pp = len(x), shape.image // shape.patch, shape.patch
    return x.reshape(n, 3, s, pp, s, pp).transpose(0, 2, 4, 1, 3, 5).reshape(n, s * s, 3 * pp * pp)


def reference(x: np.ndarray, shape: Shape = DEFAULT, seed: int = SEED) -> np.ndarray:
    """The logits (N, classes) of images `x` (N, 3, H, W) or (3, H, W), in float64 numpy."""
    p = {k: v.astype(np.float64) for k, v in _weights(shape, seed).items()}
    x = np.asarray(x, np.float64)
    if x.ndim == 3:
        x = x[None]
    tokens = patch_tokens(x, shape) @ p["patch_w"].reshape(shape.width, -1).T + p["patch_b"]
    x = np.concatenate([np.broadcast_to(p["cls_token"], (len(x), 1, shape.width)), tokens], axis=1) + p["pos_emb"]
    for i in range(shape.layers):
        x = reference_layer(x, p, shape.dims, prefix=f"l{i}_", norm_first=True)
    x = layer_norm(x, p["final_norm_g"], p["final_norm_b"])
    return x[:, 0] @ p["fc_w"].T + p["fc_b"]
