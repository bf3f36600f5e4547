"""The small float CNN real quantisers are checked on: 3 input channels, 10 output channels (not
a multiple of the block), a stride-2 conv, a max-pool and a Gemm; seeded random weights."""
from __future__ import annotations

import numpy as np
import onnx

from .onnx_builder import OnnxBuilder

INPUT_SHAPE = (1, 3, 12, 12)


def float_model(seed: int = 4) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    b = OnnxBuilder("small_cnn", INPUT_SHAPE)
    x = b.relu(b.conv("input", rng.normal(0, .3, (10, 3, 3, 3)), rng.normal(0, .1, 10), pad=1))
    x = b.relu(b.conv(x, rng.normal(0, .2, (12, 10, 3, 3)), rng.normal(0, .1, 12), stride=2, pad=1))
    x = b.flatten(b.max_pool(x, 2, 2))
    return b.build(b.dense(x, rng.normal(0, .3, (7, 108)), rng.normal(0, .1, 7)))


def images(count: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((count, *INPUT_SHAPE[1:]), dtype=np.float32)
