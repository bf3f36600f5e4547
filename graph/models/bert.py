"""A BERT-style encoder classifier with seeded random weights (no torch, no `transformers`).

What `vta-sim model bert` runs: the graph `torch.onnx.export` (opset 17) writes for a
`transformers` BertForSequenceClassification, reduced to what matters to the toolkit, written
with the onnx helper API:

    inputs     input_ids (1, T) int64, attention_mask (1, T) int64 (1: a token, 0: padding)
    embedding  Gather(word table (V, D), input_ids) + Gather(position table (T, D), position
               ids 0..T-1), LayerNormalization
    mask       Unsqueeze(attention_mask, [1, 2]) -> (1, 1, 1, T), Cast to float,
               Sub(1, .), Mul(-10000): added to every layer's attention scores
    layers     `layers` post-norm encoder layers (graph.models.encoder.GraphBuilder.encoder_layer,
               the `encoder` builtin's code), the mask added to the scores before the Softmax
    head       Gather(axis 1, index 0): the [CLS] token; Gemm + Tanh (the pooler), Gemm (the
               classifier)

The default shapes are BERT-tiny's (`Shape()`: vocabulary 1000, sequence 128, hidden 128,
2 heads, 2 layers, FFN 512); tests take smaller ones through the same parameters. `reference` is
an independent float64 numpy forward pass over the same weights.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper

from .encoder import (EPSILON, IR_VERSION, OPSET, Dims, GraphBuilder, layer_norm, layer_weights, linear_weights,
                      norm_weights, reference_layer)

SEED = 0
#: The value the mask adds to the scores of a padding token (BERT's original exports).
MASKED = -10000.0
#: Sequences quantize_static is calibrated on.
CALIBRATION_SEQUENCES = 8
INPUTS = ("input_ids", "attention_mask")


@dataclass(frozen=True)
class Shape:
    """vocab: token ids in [0, vocab); tokens: the sequence; width: hidden size."""
    vocab: int = 1000
    tokens: int = 128
    width: int = 128
    heads: int = 2
    layers: int = 2
    ffn: int = 512
    classes: int = 2

    @property
    def dims(self) -> Dims:
        return Dims(self.tokens, self.width, self.heads, self.ffn)

    def tag(self) -> str:
        return f"v{self.vocab}_t{self.tokens}_d{self.width}_h{self.heads}_l{self.layers}_f{self.ffn}_c{self.classes}"


DEFAULT = Shape()
#: Small enough for a test to compile and run in seconds.
SMALL = Shape(vocab=64, tokens=16, width=32, heads=2, layers=2, ffn=64, classes=2)


def _weights(shape: Shape, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    p = {"word_emb": (rng.standard_normal((shape.vocab, shape.width)) * 0.5).astype(np.float32),
         "pos_emb": (rng.standard_normal((shape.tokens, shape.width)) * 0.1).astype(np.float32)}
    p["emb_norm_g"], p["emb_norm_b"] = norm_weights(rng, shape.width)
    for i in range(shape.layers):
        p.update(layer_weights(rng, shape.dims, prefix=f"l{i}_"))
    p["pool_w"], p["pool_b"] = linear_weights(rng, shape.width, shape.width)
    w, p["fc_b"] = linear_weights(rng, shape.width, shape.classes)
    p["fc_w"] = np.ascontiguousarray(w.T)          # Gemm transB=1, nn.Linear's layout
    p["pool_w"] = np.ascontiguousarray(p["pool_w"].T)
    return p


def float_model(shape: Shape = DEFAULT, seed: int = SEED) -> onnx.ModelProto:
    p = _weights(shape, seed)
    g = GraphBuilder.with_weights(p)
    consts = g.layer_constants(shape.dims)
    positions = g.init("position_ids", np.arange(shape.tokens, dtype=np.int64)[None])
    words = g.node("Gather", ["word_emb", "input_ids"], "word_embeddings", axis=0)
    where = g.node("Gather", ["pos_emb", positions], "position_embeddings", axis=0)
    x = g.node("Add", [words, where], "embeddings")
    x = g.node("LayerNormalization", [x, "emb_norm_g", "emb_norm_b"], "emb_norm", axis=-1, epsilon=EPSILON)

    mask = g.node("Unsqueeze", ["attention_mask", g.init("mask_axes", np.array([1, 2], np.int64))], "mask_4d")
    mask = g.node("Cast", [mask], "mask_float", to=TensorProto.FLOAT)
    mask = g.node("Sub", [consts["one"], mask], "mask_inverted")
    mask = g.node("Mul", [mask, g.init("mask_value", np.array(MASKED, np.float32))], "mask_scores")
    for i in range(shape.layers):
        x = g.encoder_layer(x, consts, prefix=f"l{i}_", mask=mask)

    cls = g.node("Gather", [x, g.init("cls_index", np.array(0, np.int64))], "cls", axis=1)
    pooled = g.node("Tanh", [g.node("Gemm", [cls, "pool_w", "pool_b"], "pool_dense", transB=1)], "pooled")
    g.node("Gemm", [pooled, "fc_w", "fc_b"], "logits", transB=1)

    graph = helper.make_graph(
        g.nodes, "bert",
        [helper.make_tensor_value_info(name, TensorProto.INT64, [1, shape.tokens]) for name in INPUTS],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, shape.classes])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="vta-toolkit bert")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def sequences(count: int, shape: Shape = DEFAULT, seed: int = SEED) -> dict:
    """{input_ids, attention_mask}: `count` seeded sequences, each padded after a random length
    of at least half the sequence (ids 0 and mask 0 there), as a tokenizer pads a batch."""
    rng = np.random.default_rng(seed + 1)
    ids = rng.integers(1, shape.vocab, (count, shape.tokens), dtype=np.int64)
    lengths = rng.integers((shape.tokens + 1) // 2, shape.tokens + 1, count)
    mask = (np.arange(shape.tokens)[None] < lengths[:, None]).astype(np.int64)
    return {"input_ids": ids * mask, "attention_mask": mask}


def reference(inputs: dict, shape: Shape = DEFAULT, seed: int = SEED) -> np.ndarray:
    """The logits (N, classes) of `inputs` (as `sequences` gives them), in float64 numpy."""
    p = {k: v.astype(np.float64) for k, v in _weights(shape, seed).items()}
    ids, mask = np.asarray(inputs["input_ids"]), np.asarray(inputs["attention_mask"])
    x = layer_norm(p["word_emb"][ids] + p["pos_emb"][None], p["emb_norm_g"], p["emb_norm_b"])
    extended = (1 - mask[:, None, None, :].astype(np.float64)) * MASKED
    for i in range(shape.layers):
        x = reference_layer(x, p, shape.dims, prefix=f"l{i}_", mask=extended)
    pooled = np.tanh(x[:, 0] @ p["pool_w"].T + p["pool_b"])
    return pooled @ p["fc_w"].T + p["fc_b"]
