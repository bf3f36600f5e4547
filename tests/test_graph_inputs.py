"""Models as users bring them: a fixed batch other than 1, and failures inside a stage of the
graph level reaching the user as one line (issue "Any ONNX file a user brings")."""
import subprocess
import sys

import numpy as np
import onnx
import pytest

from graph.models.onnx_builder import OnnxBuilder
from graph.onnx_import import fixed_batch, in_model_batches
from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model


def conv_model(batch):
    rng = np.random.default_rng(0)
    b = OnnxBuilder("fixed", (batch, 1, 8, 8))
    t = b.relu(b.conv("input", rng.standard_normal((8, 1, 3, 3)).astype(np.float32),
                      rng.standard_normal(8).astype(np.float32) * 0.1, pad=1))
    model = b.build(b.dense(b.flatten(b.max_pool(t, 2, 2)), rng.standard_normal((10, 128)).astype(np.float32) * 0.1,
                            np.zeros(10, np.float32)))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = batch    # as torch exports it: fixed
    return model


def test_batches_follow_the_file():
    data = np.arange(5 * 2, dtype=np.float32).reshape(5, 2)
    assert fixed_batch(conv_model(2)) == 2
    assert [len(c) for c in in_model_batches(conv_model(2), data, 256)] == [2, 2]   # remainder left out
    assert [len(c) for c in in_model_batches(conv_model(8), data, 256)] == [8]      # repeated up to one batch
    free = conv_model(1)
    free.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"        # symbolic again
    assert fixed_batch(free) is None
    assert [len(c) for c in in_model_batches(free, data, 3)] == [3, 2]


@pytest.mark.parametrize("quantizer", ["pow2", "onnxruntime"])
def test_a_model_with_a_fixed_batch_of_2_quantises_and_verifies(quantizer):
    """Calibration used to feed single samples (onnxruntime: "Got: 1 Expected: 2")."""
    model = conv_model(2)
    calib = np.random.default_rng(1).random((5, 1, 8, 8), dtype=np.float32)
    qdq = quantizer_named(quantizer)(model, calib)
    x = np.random.default_rng(2).random((2, 1, 8, 8), dtype=np.float32)
    result = run_model(ModelCase("fixed", qdq, x), "1x8x8")
    assert result.verified and result.total_cycles > 0


def test_a_failure_inside_a_stage_is_one_line_and_debug_shows_the_traceback(tmp_path):
    """A 3-D ReduceMean after a quantised MatMul: the QDQ pass fails on it today; the user sees
    the stage and the error in one line, exit 2, and the traceback only with --debug."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 8], rng.standard_normal(64).astype(np.float32))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["input", "w"], ["h"]),
         helper.make_node("ReduceMean", ["h"], ["out"], axes=[1], keepdims=0)],
        "tokens", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 8])], [w])
    path = tmp_path / "tokens.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    cmd = [sys.executable, "-m", "vta_sim", "model", str(path), "--quantizer", "onnxruntime", "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if proc.returncode == 0:
        pytest.skip("the graph level lowers this model now; the boundary needs another failing case")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    error = [line for line in proc.stderr.splitlines() if line.startswith("vta-sim: error:")]
    assert len(error) == 1 and " failed: " in error[0] and "--debug" in error[0], proc.stderr
    debug = subprocess.run(cmd + ["--debug"], capture_output=True, text=True, timeout=300)
    assert debug.returncode == 2 and "Traceback" in debug.stderr
