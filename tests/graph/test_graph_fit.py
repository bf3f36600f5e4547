"""Layers whose shape does not fit the accelerator's buffers stay on the CPU, decided at
partition time with the schedules' own tile choice (graph/ops/: each spec's misfit)."""
import numpy as np
import pytest

from graph.models.onnx_builder import OnnxBuilder
from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model
from schedules import vta_conv2d as vc
from vta_sim.config import Config
from vta_sim.errors import CompileError

WIDTH = 4096          # one input row of a 1x1 conv: 4096 INP entries, the 1x8x8 INP holds 2048


def _wide(seed=0):
    """conv 1x1 over a 1x4096 image (too wide for INP), ReLU, dense: the conv cannot be tiled,
    the dense can."""
    rng = np.random.default_rng(seed)
    b = OnnxBuilder("wide", (1, 8, 1, WIDTH))
    x = b.relu(b.conv("input", rng.normal(0, .3, (8, 8, 1, 1)), rng.normal(0, .1, 8)))
    return b.build(b.dense(b.flatten(x), rng.normal(0, .03, (4, 8 * WIDTH)), rng.normal(0, .1, 4)))


def test_a_conv_too_wide_for_the_buffers_stays_on_the_cpu_with_the_schedules_reason():
    rng = np.random.default_rng(1)
    qdq = quantizer_named("onnxruntime")(_wide(), rng.random((4, 8, 1, WIDTH), dtype=np.float32))
    result = run_model(ModelCase("wide", qdq, rng.random((2, 8, 1, WIDTH), dtype=np.float32)), "1x8x8")
    conv, dense = result.layers
    assert conv["op"] == "conv2d" and conv["target"] == "cpu"
    assert "cannot be tiled" in conv["reason"] and f"INP needs {WIDTH} entries" in conv["reason"]
    assert dense["op"] == "dense" and dense["target"] == "vta"
    assert result.verified and 0 < result.mac_fraction_vta < 1
    with pytest.raises(CompileError, match=f"INP needs {WIDTH} entries"):     # the schedule's own refusal
        vc.CONV2D.choose_tiles(Config.load("1x8x8"), vc.ConvShape(2, 1, WIDTH, 8, 8, 1, 0, 1, 1), 2)
