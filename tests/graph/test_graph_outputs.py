"""Models with several outputs: every output is compared between the builds and with
onnxruntime, and `vta-sim model --json` reports each one's agreement."""
import json

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from graph.onnx_import import onnxruntime_session
from vta_sim.cli import main


def two_outputs(path):
    """A conv feeding both a pooled feature map (output "features") and a classifier ("logits")."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 2, 3, 3)).astype(np.float32) * 0.5, "w"),
             numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32) * 0.5, "fc")]
    graph = helper.make_graph(
        [helper.make_node("Conv", ["input", "w"], ["conv"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["conv"], ["relu"]),
         helper.make_node("MaxPool", ["relu"], ["features"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["relu"], ["pooled"]),
         helper.make_node("Flatten", ["pooled"], ["flat"]),
         helper.make_node("MatMul", ["flat", "fc"], ["logits"])],
        "two", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 2, 6, 6])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("features", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))
    return path


def test_every_output_of_a_two_output_model_is_reported(tmp_path, capsys):
    """Both outputs run, verify, and appear in the JSON with their shapes (onnxruntime's) and
    their agreement with onnxruntime's run of the same QDQ model (used to be refused: "the model
    returns more than one tensor")."""
    path = two_outputs(tmp_path / "two.onnx")
    x = np.random.default_rng(1).random((1, 2, 6, 6), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "r.json"
    rc = main(["model", str(path), "--input", str(tmp_path / "x.npy"), "--quantizer", "pow2", "--quiet",
               "--compare-onnxruntime", "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    report = json.loads(out.read_text())
    float_outputs = onnxruntime_session(onnx.load(str(path))).run(["logits", "features"], {"input": x})
    assert [o["name"] for o in report["outputs"]] == ["logits", "features"]
    assert [o["shape"] for o in report["outputs"]] == [list(v.shape) for v in float_outputs]
    assert report["verified"] and report["outputs_identical"]
    for o in report["outputs"]:
        assert o["identical"] and o["max_abs_diff"] == 0.0
        assert o["onnxruntime"]["max_abs_lsb"] <= 2, o            # the QDQ model's own outputs, within rounding
    assert "output features identical to the CPU build   yes" in text


def test_a_differing_second_output_fails_verification(tmp_path, monkeypatch):
    """The verdict covers every output: a second output that differs makes the run unverified
    (exit 1) while the first still agrees."""
    from graph import build

    real = build.VtaModel.run_all

    def wrong_second(self, x):
        outs, runs = real(self, x)
        return [outs[0], outs[1] + 1], runs
    monkeypatch.setattr(build.VtaModel, "run_all", wrong_second)
    path = two_outputs(tmp_path / "two.onnx")
    out = tmp_path / "r.json"
    assert main(["model", str(path), "--quantizer", "pow2", "--quiet", "--json", str(out)]) == 1
    report = json.loads(out.read_text())
    assert report["logits_identical"] and not report["outputs_identical"] and not report["verified"]
    assert [o["identical"] for o in report["outputs"]] == [True, False]
