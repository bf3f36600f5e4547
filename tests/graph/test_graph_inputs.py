"""Models as users bring them: a fixed batch other than 1, and failures inside a stage of the
graph level reaching the user as one line (issue "Any ONNX file a user brings")."""
import numpy as np
import onnx
import pytest

from graph.models.onnx_builder import OnnxBuilder
from graph.onnx_import import fixed_batch, in_model_batches
from graph.quantize import quantizer_named
from graph.run import ModelCase, load_case, run_model


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


def _tokens_model(path):
    """A MatMul over tokens, a 3-D ReduceMean over them and a classifier, as a transformer ends."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    w, c = (helper.make_tensor(n, TensorProto.FLOAT, [8, 8], rng.standard_normal(64).astype(np.float32))
            for n in ("w", "c"))
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["input", "w"], ["h"]),
         helper.make_node("ReduceMean", ["h"], ["pooled"], axes=[1], keepdims=0),
         helper.make_node("MatMul", ["pooled", "c"], ["out"])],
        "tokens", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 4, 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 8])], [w, c])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_a_mean_over_tokens_is_not_read_as_a_pool(tmp_path):
    """A 3-D ReduceMean used to end in a traceback inside the QDQ pass (it was read as an NCHW
    pool); it is the mean over tokens (graph.ops.token_mean) and the model runs and verifies."""
    path = _tokens_model(tmp_path / "tokens.onnx")
    case = load_case(str(path), quantizer="onnxruntime")
    result = run_model(case, "1x8x8")
    assert result.verified
    rows = {r["op"]: r for r in result.layers}
    assert "avg_pool" not in rows and rows["mean"]["target"] == "vta" and rows["mean"]["verified"]


def test_a_failure_inside_a_stage_is_one_line_and_debug_shows_the_traceback(tmp_path, monkeypatch, capsys):
    """A stage that fails with an error of its own (here the QDQ pass, made to raise what a bug
    would) reaches the user as one line naming the stage and the error, exit 2, and the
    traceback only with --debug."""
    import graph.run
    from vta_sim.cli import main

    def broken(mod):
        raise ValueError("not enough values to unpack (expected 4, got 3)")
    monkeypatch.setattr(graph.run, "lower_qdq", broken)
    path = _tokens_model(tmp_path / "tokens.onnx")
    cmd = ["model", str(path), "--quantizer", "onnxruntime", "--quiet"]
    assert main(cmd) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    error = [line for line in err.splitlines() if line.startswith("vta-sim: error:")]
    assert len(error) == 1 and "lowering its QDQ blocks to integer ops failed: ValueError: not enough values" \
        in error[0] and "--debug" in error[0], err
    assert main(cmd + ["--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err
