"""Generated models through `vta-sim model`, in process: each verifies or is refused in one line
(graph.fuzz), and the classes bench/fuzz_graph.py found, each as the smallest model that showed
it, now verify."""
import numpy as np
import onnx
from hypothesis import HealthCheck, given, settings
from onnx import TensorProto, helper, numpy_helper

from graph.fuzz.models import Case, cases
from graph.fuzz.outcome import run_case
from graph.onnx_import import onnxruntime_session

#: A handful of small models, the same ones every run (derandomized), in a few seconds each.
SLICE = settings(max_examples=8, deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))


@SLICE
@given(cases(max_steps=3))
def test_a_generated_model_verifies_or_is_refused_in_one_line(case):
    """A traceback, a run that did not verify, or a bug of the toolkit's own that only the error
    boundary kept from the user, fails."""
    outcome = run_case(case)
    assert not (outcome.finding or outcome.internal), \
        f"{case.describe()}\n{outcome.key}: {outcome.message}\n{outcome.detail}"


def _model(nodes, inits, shape, opset=13):
    graph = helper.make_graph(nodes, "found", [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)


def _case(model, quantizer, batch=1, give_inputs=True):
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal([batch, *shape[1:]]).astype(np.float32)
    return Case(model, {"input": x}, quantizer, give_inputs, batch, model.opset_import[0].version)


def _verified(case):
    outcome = run_case(case)
    assert outcome.kind == "verified", f"{outcome.key}: {outcome.message}\n{outcome.detail}"


def _weights(*shape):
    return (np.random.default_rng(len(shape)).standard_normal(shape) * 0.5).astype(np.float32)


def test_a_clip_between_two_quantised_convs_keeps_its_function():
    """Found: "There is no definition of I.GlobalVar("maximum")" while compiling. The frontend
    writes Clip (and Pad, ...) as calls of TE functions of the module, and the QDQ pass kept
    only `main`."""
    model = _model([helper.make_node("Conv", ["input", "w1"], ["a"], kernel_shape=[1, 1]),
                    helper.make_node("Clip", ["a", "lo", "hi"], ["b"]),
                    helper.make_node("Conv", ["b", "w2"], ["output"], kernel_shape=[1, 1])],
                   {"w1": _weights(4, 3, 1, 1), "w2": _weights(2, 4, 1, 1), "lo": np.float32(0), "hi": np.float32(6)},
                   [1, 3, 2, 2])
    _verified(_case(model, "pow2"))


def _padded(opset=13):
    """Pad with an explicit constant value, as torch's ConstantPad2d exports it, then a conv."""
    return _model([helper.make_node("Pad", ["input", "pads", "value"], ["p"], mode="constant"),
                   helper.make_node("Conv", ["p", "w"], ["output"], kernel_shape=[3, 3])],
                  {"pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "value": np.float32(0.0),
                   "w": _weights(4, 2, 3, 3)}, [1, 2, 4, 4], opset)


def test_a_pad_whose_value_onnxruntime_quantised_imports_and_verifies():
    """Found: TVM's frontend read a Pad's constant value only from a constant ("'Call' object has
    no attribute 'value'"); onnxruntime's quantiser writes it behind QuantizeLinear/
    DequantizeLinear. The value is folded back to a constant before the import."""
    _verified(_case(_padded(), "onnxruntime"))


def test_the_pow2_quantiser_takes_a_constant_node():
    """Found: a Constant node (no inputs) made the pow2 quantiser fail ("IndexError: list index
    out of range"); opset upgrades and many exporters write them."""
    model = _model([helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(_weights(1, 2, 1, 1))),
                    helper.make_node("Add", ["input", "k"], ["a"]),
                    helper.make_node("Conv", ["a", "w"], ["output"], kernel_shape=[1, 1])],
                   {"w": _weights(3, 2, 1, 1)}, [1, 2, 3, 3])
    _verified(_case(model, "pow2"))


def test_without_inputs_a_model_with_a_fixed_batch_runs_on_one_batch_of_it():
    """Found: with no --input, a model whose Reshape constant fixes its batch at 3 was refused
    ("does not import at a batch of 1"): the seeded inputs are now one batch of the size the file
    fixes, and the outputs match onnxruntime's run of the float model in shape."""
    model = _model([helper.make_node("Reshape", ["input", "shape"], ["r"]),
                    helper.make_node("Relu", ["r"], ["output"])],
                   {"shape": np.array([3, -1], np.int64)}, [3, 2, 4])
    case = _case(model, None, batch=3, give_inputs=False)
    _verified(case)
    assert onnxruntime_session(model).run(None, case.feeds)[0].shape == (3, 8)


def test_the_slice_draws_models_onnx_accepts():
    """The generator's models are valid: ONNX's checker takes them and onnxruntime runs them."""
    drawn = []

    @settings(max_examples=20, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(cases())
    def draw(case):
        onnx.checker.check_model(case.model, full_check=True)
        outputs = onnxruntime_session(case.model).run(None, case.feeds)
        assert all(np.isfinite(o).all() for o in outputs if np.issubdtype(o.dtype, np.floating))
        drawn.append(case)
    draw()
    assert len(drawn) == 20


def test_1d_layers_and_an_unfolded_batch_norm_stay_on_the_cpu_as_report_rows(tmp_path):
    """Found: a Conv1d, a 1-d pool or a BatchNormalization ran on the CPU with no row in the
    report ("0 of 0 layers", their MACs missing); each is now a CPU layer with its reason."""
    import json

    model = _model([helper.make_node("BatchNormalization", ["input", "s", "b", "m", "v"], ["n"]),
                    helper.make_node("Conv", ["n", "w"], ["c"], kernel_shape=[3]),
                    helper.make_node("MaxPool", ["c"], ["output"], kernel_shape=[2])],
                   {"s": _weights(2) + 1, "b": _weights(2), "m": _weights(2), "v": np.ones(2, np.float32),
                    "w": _weights(4, 2, 3)}, [1, 2, 8])
    case = _case(model, "onnxruntime")
    outcome = run_case(case, keep=tmp_path)
    assert outcome.kind == "verified", outcome.message
    rows = {r["op"]: r for r in json.loads((tmp_path / "result.json").read_text())["layers"]}
    assert set(rows) == {"batch_norm", "conv", "pool"} and all(r["target"] == "cpu" for r in rows.values())
    assert rows["conv"]["macs"] == 4 * 6 * 2 * 3         # (4 channels x 6 positions) x (2 inputs x 3 taps)
    assert "1-d or 3-d convolution" in rows["conv"]["reason"] and "1-d or 3-d pool" in rows["pool"]["reason"]
    assert "not folded" in rows["batch_norm"]["reason"]


def test_onnxruntime_calibrates_a_free_batch_model_in_the_batch_it_is_given():
    """Found: a model whose input batch is symbolic but whose Reshape constant holds the batch
    (an export with dynamic axes that still traced the batch), given inputs of that batch, was
    refused: onnxruntime's calibration fed it one sample at a time ("Non-zero status code
    returned while running Reshape node")."""
    model = _model([helper.make_node("Reshape", ["input", "shape"], ["r"]),
                    helper.make_node("MatMul", ["r", "w"], ["output"])],
                   {"shape": np.array([2, -1], np.int64), "w": _weights(8, 3)}, ["N", 2, 4])
    case = _case(model, "onnxruntime", batch=2)
    _verified(case)
    assert onnxruntime_session(model).run(None, case.feeds)[0].shape == (2, 3)
