"""MobileNetV2 at ImageNet shapes (torchvision's layout: 17 inverted residual blocks, ReLU6 as
Clip, depthwise 3x3 convs, the global average pool, 1000 classes) with seeded random weights
and batch norm folded, for benches without torch. `input_size` scales the image (64 or 224)."""
from __future__ import annotations

import numpy as np
import onnx

from .onnx_builder import OnnxBuilder

SEED = 0
#: torchvision's inverted residual settings: expansion t, output channels c, repeats n, stride s.
SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
            (6, 320, 1, 1))


def float_model(input_size: int = 224, seed: int = SEED) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    b = OnnxBuilder("mobilenet_v2", (1, 3, input_size, input_size))

    def conv(x, ic, oc, k, stride=1, groups=1, relu6=True):
        fan_in = ic // groups * k * k
        w = rng.standard_normal((oc, ic // groups, k, k)).astype(np.float32) * np.sqrt(2 / fan_in)
        y = b.conv(x, w, rng.standard_normal(oc).astype(np.float32) * 0.05, stride=stride, pad=k // 2,
                   groups=groups)
        return b.clip(y, 0.0, 6.0) if relu6 else y

    x, channels = conv("input", 3, 32, 3, stride=2), 32
    for t, c, n, s in SETTINGS:
        for i in range(n):
            hidden = channels * t
            y = conv(x, channels, hidden, 1) if t != 1 else x
            y = conv(y, hidden, hidden, 3, stride=s if i == 0 else 1, groups=hidden)
            y = conv(y, hidden, c, 1, relu6=False)
            x = b.add(x, y) if i > 0 and channels == c else y
            channels = c
    x = b.flatten(b.global_avg_pool(conv(x, channels, 1280, 1)))
    fc = rng.standard_normal((1000, 1280)).astype(np.float32) * np.sqrt(1 / 1280)
    return b.build(b.dense(x, fc, np.zeros(1000, np.float32)))


def images(count: int, input_size: int = 224, seed: int = SEED) -> np.ndarray:
    return np.random.default_rng(seed + 1).random((count, 3, input_size, input_size), dtype=np.float32)
