"""A small CNN trained at first use on scikit-learn's bundled digits (1797 8x8 images, no download).

conv 3x3 1->16, ReLU, conv 3x3 16->32, ReLU, max-pool 2x2, dense 512->10: trained in numpy
(im2col convolutions, Adam, cross-entropy), exported to float ONNX, quantised on training images (by graph.quantize, or by onnxruntime's
quantize_static), and cached under models/ in the cache root (vta_sim.paths) so later runs skip all that.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx


from ..quantize import quantizer_named
from . import models_dir
from .onnx_builder import OnnxBuilder

VERSION = 1
SEED = 0
HELD_OUT = 0.2
EPOCHS = 12
BATCH = 32
LEARNING_RATE = 2e-3
CALIBRATION_IMAGES = 256


@dataclass
class Digits:
    qdq: onnx.ModelProto          # the quantised model, QDQ format
    x_test: np.ndarray            # held-out images (N, 1, 8, 8) float32 in [0, 1]
    y_test: np.ndarray            # their labels
    float_accuracy: float         # of the float model on the held-out images
    trained: bool                 # False when it came from the cache


def load_data():
    """(x_train, x_test, y_train, y_test): a seeded stratified split of the digits."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    x = (data.images / 16.0).astype(np.float32)[:, None]
    return train_test_split(x, data.target, test_size=HELD_OUT, random_state=SEED, stratify=data.target)


# ----------------------------------------------------------------------------- numpy training
def _im2col(x: np.ndarray, k: int, pad: int) -> np.ndarray:
    """(N, C, H, W) -> (N, H, W, C*k*k) for a stride-1 'same' conv."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = np.stack([xp[:, :, dy:dy + h, dx:dx + w] for dy in range(k) for dx in range(k)], axis=2)
    return cols.reshape(n, c * k * k, h, w).transpose(0, 2, 3, 1)


def _col2im(dcols: np.ndarray, shape: tuple, k: int, pad: int) -> np.ndarray:
    n, c, h, w = shape
    d = dcols.transpose(0, 3, 1, 2).reshape(n, c, k * k, h, w)
    dx = np.zeros((n, c, h + 2 * pad, w + 2 * pad), dcols.dtype)
    for i, (dy, dxx) in enumerate((a, b) for a in range(k) for b in range(k)):
        dx[:, :, dy:dy + h, dxx:dxx + w] += d[:, :, i]
    return dx[:, :, pad:pad + h, pad:pad + w]


def _conv(x, w, b):
    cols = _im2col(x, 3, 1)
    return (cols @ w.reshape(w.shape[0], -1).T + b).transpose(0, 3, 1, 2), cols


def _forward(p, x):
    c1, cols1 = _conv(x, p["w1"], p["b1"])
    r1 = np.maximum(c1, 0)
    c2, cols2 = _conv(r1, p["w2"], p["b2"])
    r2 = np.maximum(c2, 0)
    n, c, h, w = r2.shape
    win = r2.reshape(n, c, h // 2, 2, w // 2, 2)
    pooled = win.max(axis=(3, 5))
    flat = pooled.reshape(n, -1)
    logits = flat @ p["w3"].T + p["b3"]
    return logits, (x, cols1, c1, r1, cols2, c2, r2, win, pooled, flat)


def _backward(p, cache, dlogits):
    x, cols1, c1, r1, cols2, c2, r2, win, pooled, flat = cache
    g = {"w3": dlogits.T @ flat, "b3": dlogits.sum(0)}
    dpool = (dlogits @ p["w3"]).reshape(pooled.shape)
    mask = win == pooled[:, :, :, None, :, None]
    dr2 = (mask * dpool[:, :, :, None, :, None]).reshape(r2.shape)
    dc2 = (dr2 * (c2 > 0)).transpose(0, 2, 3, 1)
    g["w2"] = (dc2.reshape(-1, dc2.shape[-1]).T @ cols2.reshape(-1, cols2.shape[-1])).reshape(p["w2"].shape)
    g["b2"] = dc2.sum((0, 1, 2))
    dr1 = _col2im(dc2 @ p["w2"].reshape(p["w2"].shape[0], -1), r1.shape, 3, 1)
    dc1 = (dr1 * (c1 > 0)).transpose(0, 2, 3, 1)
    g["w1"] = (dc1.reshape(-1, dc1.shape[-1]).T @ cols1.reshape(-1, cols1.shape[-1])).reshape(p["w1"].shape)
    g["b1"] = dc1.sum((0, 1, 2))
    return g


class Adam:
    """Adam (beta 0.9, 0.999) over a dict of float32 parameters, updated in place; the digits
    builtins' one optimiser."""

    def __init__(self, p: dict):
        self.p, self.step = p, 0
        self.m = {k: np.zeros_like(v) for k, v in p.items()}
        self.v = {k: np.zeros_like(v) for k, v in p.items()}

    def update(self, grads: dict, rate: float) -> None:
        self.step += 1
        for k, grad in grads.items():
            self.m[k] = 0.9 * self.m[k] + 0.1 * grad
            self.v[k] = 0.999 * self.v[k] + 0.001 * grad * grad
            mhat, vhat = self.m[k] / (1 - 0.9 ** self.step), self.v[k] / (1 - 0.999 ** self.step)
            self.p[k] -= (rate * mhat / (np.sqrt(vhat) + 1e-8)).astype(np.float32)


def train(x: np.ndarray, y: np.ndarray, progress=None) -> dict:
    """The CNN's float32 parameters, trained with Adam on (x, y)."""
    rng = np.random.default_rng(SEED)
    he = lambda shape, fan_in: (rng.standard_normal(shape) * np.sqrt(2 / fan_in)).astype(np.float32)  # noqa: E731
    p = {"w1": he((16, 1, 3, 3), 9), "b1": np.zeros(16, np.float32),
         "w2": he((32, 16, 3, 3), 144), "b2": np.zeros(32, np.float32),
         "w3": he((10, 512), 512), "b3": np.zeros(10, np.float32)}
    adam = Adam(p)
    for epoch in range(EPOCHS):
        order = rng.permutation(len(x))
        for start in range(0, len(x), BATCH):
            idx = order[start:start + BATCH]
            logits, cache = _forward(p, x[idx])
            prob = np.exp(logits - logits.max(1, keepdims=True))
            prob /= prob.sum(1, keepdims=True)
            prob[np.arange(len(idx)), y[idx]] -= 1
            adam.update(_backward(p, cache, prob / len(idx)), LEARNING_RATE)
        if progress:
            progress(epoch + 1, EPOCHS)
    return p


def accuracy(p: dict, x: np.ndarray, y: np.ndarray) -> float:
    return float((_forward(p, x)[0].argmax(1) == y).mean())


def float_model(p: dict) -> onnx.ModelProto:
    b = OnnxBuilder("digits_cnn", (1, 1, 8, 8))
    t = b.relu(b.conv("input", p["w1"], p["b1"], pad=1))
    t = b.relu(b.conv(t, p["w2"], p["b2"], pad=1))
    t = b.flatten(b.max_pool(t, 2, 2))
    return b.build(b.dense(t, p["w3"], p["b3"]))


def load(cache_dir: Path | str | None = None, progress=None, quantizer: str = "pow2") -> Digits:
    """The quantised digits CNN and its held-out split, training it on first use; each
    quantiser's model is cached beside the float one."""
    quantize = quantizer_named(quantizer)
    x_train, x_test, y_train, y_test = load_data()
    cache = models_dir() if cache_dir is None else Path(cache_dir)
    float_path, meta_path = cache / f"digits_v{VERSION}_float.onnx", cache / f"digits_v{VERSION}.json"
    qdq_path = cache / f"digits_v{VERSION}_{quantizer}_qdq.onnx"
    trained = not (float_path.is_file() and meta_path.is_file())
    if trained:
        params = train(x_train, y_train, progress)
        cache.mkdir(parents=True, exist_ok=True)
        onnx.save(float_model(params), str(float_path))
        meta_path.write_text(json.dumps({"float_accuracy": accuracy(params, x_test, y_test), "seed": SEED,
                                         "epochs": EPOCHS}))
    if not qdq_path.is_file():
        onnx.save(quantize(onnx.load(str(float_path)), x_train[:CALIBRATION_IMAGES]), str(qdq_path))
    meta = json.loads(meta_path.read_text())
    return Digits(onnx.load(str(qdq_path)), x_test, y_test, meta["float_accuracy"], trained)
