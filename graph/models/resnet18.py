"""ResNet-18 at ImageNet shapes (224x224, 1000 classes) with seeded random weights (no download).

Batch norm is folded into the convolutions, as a deployment export does, so every conv has a
bias. Weights are He-initialised; the quantiser calibrates on seeded random images. The QDQ
model is cached under models/ in the cache root (vta_sim.paths).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx


from . import models_dir
from .onnx_builder import OnnxBuilder, cached_qdq

VERSION = 1
SEED = 0
INPUT_SHAPE = (1, 3, 224, 224)
CALIBRATION_IMAGES = 2
#: (output channels, stride of the stage's first block) of the four stages, two blocks each.
STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))


def float_model(seed: int = SEED) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)

    def conv(b, x, ic, oc, k, stride, pad):
        w = rng.standard_normal((oc, ic, k, k)).astype(np.float32) * np.sqrt(2 / (ic * k * k))
        bias = rng.standard_normal(oc).astype(np.float32) * 0.05
        return b.conv(x, w, bias, stride=stride, pad=pad)

    b = OnnxBuilder("resnet18", INPUT_SHAPE)
    x = b.max_pool(b.relu(conv(b, "input", 3, 64, 7, 2, 3)), 3, 2, pad=1)
    channels = 64
    for oc, stride in STAGES:
        for block in range(2):
            s = stride if block == 0 else 1
            shortcut = x
            if s != 1 or channels != oc:
                shortcut = conv(b, x, channels, oc, 1, s, 0)
            y = b.relu(conv(b, x, channels, oc, 3, s, 1))
            y = conv(b, y, oc, oc, 3, 1, 1)
            x = b.relu(b.add(y, shortcut))
            channels = oc
    x = b.flatten(b.global_avg_pool(x))
    fc = rng.standard_normal((1000, 512)).astype(np.float32) * np.sqrt(1 / 512)
    return b.build(b.dense(x, fc, np.zeros(1000, np.float32)))


def images(count: int, seed: int = SEED) -> np.ndarray:
    """Seeded random images in [0, 1), the network's input range here."""
    return np.random.default_rng(seed + 1).random((count, *INPUT_SHAPE[1:]), dtype=np.float32)


def load(cache_dir: Path | str | None = None, quantizer: str = "pow2") -> onnx.ModelProto:
    """The QDQ ResNet-18, built and quantised on first use."""
    return cached_qdq((models_dir() if cache_dir is None else Path(cache_dir)) / f"resnet18_v{VERSION}_{quantizer}_qdq.onnx", float_model,
                      lambda: images(CALIBRATION_IMAGES, seed=SEED + 100), quantizer)
