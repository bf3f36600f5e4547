"""Models of an opset older than 11 are upgraded with onnx.version_converter before they are
quantised, or refused in one line with the converter's reason."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graph.onnx_import import onnxruntime_session, upgraded
from vta_sim.cli import main


def old_cnn(path, opset=9, extra=()):
    """A CNN as an opset-9 exporter wrote it: Pad with its pads as an attribute (an input from
    opset 11), BatchNormalization, Conv, Relu, MaxPool, Flatten, Gemm."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(v.astype(np.float32), n) for n, v in [
        ("w", rng.standard_normal((4, 2, 3, 3)) * 0.5), ("b", rng.standard_normal(4) * 0.1),
        ("gamma", rng.random(2) + 0.5), ("beta", rng.standard_normal(2) * 0.1), ("mean", rng.standard_normal(2) * 0.1),
        ("var", rng.random(2) + 0.5), ("fc", rng.standard_normal((3, 36)) * 0.3), ("fc_b", np.zeros(3))]]
    nodes = [helper.make_node("BatchNormalization", ["input", "gamma", "beta", "mean", "var"], ["bn"]),
             helper.make_node("Pad", ["bn"], ["padded"], pads=[0, 0, 1, 1, 0, 0, 1, 1]),
             helper.make_node("Conv", ["padded", "w", "b"], ["conv"], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["conv"], ["relu"]),
             helper.make_node("MaxPool", ["relu"], ["pool"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Flatten", ["pool"], ["flat"]),
             helper.make_node("Gemm", ["flat", "fc", "fc_b"], ["output"], transB=1), *extra]
    graph = helper.make_graph(nodes, "old", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 2, 6, 6])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 3])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=4)
    onnx.save(model, str(path))
    return model


@pytest.mark.parametrize("quantizer", ["onnxruntime", "pow2"])
def test_an_opset_9_model_is_upgraded_then_quantised_and_verifies(tmp_path, capsys, quantizer):
    """Used to end inside onnxruntime's calibration ("Load model from .../augmented_model.onnx
    failed"): the model is now upgraded to opset 17 first, says so, and runs and verifies."""
    old_cnn(tmp_path / "old.onnx")
    rc = main(["model", str(tmp_path / "old.onnx"), "--quantizer", quantizer, "--quiet"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "upgraded the model from opset 9 to 17 (onnx.version_converter)" in out.out


def test_the_upgrade_computes_what_the_old_model_computes(tmp_path):
    """onnxruntime runs both opsets natively: the upgraded float model gives the old one's
    outputs, and the caller's model is left as it was."""
    model = old_cnn(tmp_path / "old.onnx")
    before = model.SerializeToString()
    new, note = upgraded(model)
    assert note and model.SerializeToString() == before
    assert [o.version for o in new.opset_import if o.domain == ""] == [17]
    x = np.random.default_rng(1).random((1, 2, 6, 6), dtype=np.float32)
    old_out = onnxruntime_session(model).run(None, {"input": x})[0]
    new_out = onnxruntime_session(new).run(None, {"input": x})[0]
    np.testing.assert_allclose(new_out, old_out, rtol=1e-6, atol=1e-6)
    assert upgraded(new) == (new, None)                  # opset 11 and later: taken as it is


def test_a_model_the_converter_cannot_upgrade_is_refused_in_one_line(tmp_path, capsys):
    """An opset-9 model with an op that is not ONNX's: exit 2, one line naming the node's op
    and what would work."""
    old_cnn(tmp_path / "odd.onnx", extra=[helper.make_node("Swish9", ["output"], ["unused"], name="odd")])
    assert main(["model", str(tmp_path / "odd.onnx"), "--quantizer", "onnxruntime", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert "opset 9" in err[0] and "node odd is Swish9" in err[0] and "re-export it at opset 11 or later" in err[0]
