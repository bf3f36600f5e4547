"""Tanh and Sigmoid on VTA-8's ALU as exact sums of ramps: requantisation.univariate against
onnxruntime's float32 QDQ table, the ALU program against it bit for bit, and the graph op
against onnxruntime."""
import math

import numpy as np
import pytest
from onnx import TensorProto, helper

from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model
from requantisation import univariate as uv
from schedules.vta_univariate import univariate_kernel
from vta_sim.config import Config
from vta_sim.errors import CompileError

SCALES = [("tanh", 0.02, 0, 2 / 255, 0), ("tanh", 0.5, 7, 0.0039, -128), ("sigmoid", 0.1, 3, 1 / 255, -128),
          ("sigmoid", 0.013, -20, 0.0078, 0), ("gelu_erf", 0.05, 4, 0.03, -20), ("gelu_tanh", 0.04, -9, 0.025, -30),
          # a step of 1e-4 on GELU's negative lobe, where its two forms differ by a few steps
          ("gelu_erf", 0.03, 0, 1e-4, 127), ("gelu_tanh", 0.03, 0, 1e-4, 127)]


def _float64(name: str, x: np.ndarray) -> np.ndarray:
    """The functions in float64, from their definitions (not requantisation.univariate's)."""
    erf = np.vectorize(math.erf)
    return {"tanh": lambda: np.tanh(x), "sigmoid": lambda: 1 / (1 + np.exp(-x)),
            "gelu_erf": lambda: x * (1 + erf(x / math.sqrt(2))) / 2,
            "gelu_tanh": lambda: x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))) / 2}[name]()


@pytest.mark.parametrize("name,sx,zx,sy,zy", SCALES)
def test_the_ramps_equal_the_float32_table_on_every_input(name, sx, zx, sy, zy):
    """All 256 inputs: the table is computed here independently (float64 function, rounded
    half to even), so only float32's last bit may move a near-tie (at most 1 LSB, rarely)."""
    p = uv.choose(name, sx, zx, sy, zy)
    q = np.arange(-128, 128)
    x = (q - zx) * sx
    f = _float64(name, x)
    want = np.clip(np.rint(f / sy) + zy, -128, 127)
    got = uv.reference(q, p).astype(np.int64)
    assert np.abs(got - want).max() <= 1 and (got == want).mean() >= 0.98
    assert np.array_equal(got, uv.table(name, sx, zx, sy, zy))
    assert uv.RampParams.unpacked(p.packed()) == p


def test_a_fit_matches_any_table_exactly():
    """Not only smooth functions: a random walk of 256 steps is matched on every input."""
    rng = np.random.default_rng(0)
    target = np.clip(np.cumsum(rng.integers(-3, 4, 256)), -128, 127)
    k, breaks, slopes = uv.fit(target)
    p = uv.RampParams(0, k, -128, 127, breaks, slopes)
    assert np.array_equal(uv.reference(np.arange(-128, 128), p).astype(np.int64), target)


@pytest.mark.parametrize("config,case,shape", [("1x8x8", 0, (1, 128)), ("1x8x8", 2, (3, 50, 7)),
                                               ("1x8x8", 1, (5000,)), ("8x8x8", 3, (2, 100))])
def test_the_alu_program_equals_the_reference(config, case, shape):
    cfg = Config.load(config)
    name, sx, zx, sy, zy = SCALES[case]
    p = uv.choose(name, sx, zx, sy, zy)
    x = np.random.default_rng(case).integers(-128, 128, shape).astype(np.int8)
    before = x.copy()
    y, result = univariate_kernel(cfg, shape, p)(x)
    assert np.array_equal(y, uv.reference(x, p)) and np.array_equal(x, before) and result.cycles > 0


def test_refusals_name_what_is_wrong():
    with pytest.raises(CompileError, match="accepted"):
        uv.choose("erf", 0.1, 0, 0.1, 0)
    with pytest.raises(CompileError, match="positive finite"):
        uv.choose("tanh", 0.0, 0, 0.1, 0)
    with pytest.raises(CompileError, match="segment count"):
        uv.RampParams.unpacked(np.array([0, 1, -128, 127, 3, 0]))


def _pooler(op, opset=17, **attrs):
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [16, 16], (rng.standard_normal(256) / 3).astype(np.float32))
    head = helper.make_tensor("head", TensorProto.FLOAT, [16, 4], (rng.standard_normal(64) / 3).astype(np.float32))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node(op, ["h"], ["a"], **attrs),
             helper.make_node("MatMul", ["a", "head"], ["y"])]
    graph = helper.make_graph(nodes, "pooler", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w, head])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


@pytest.mark.parametrize("op", ["Tanh", "Sigmoid"])
def test_tanh_and_sigmoid_run_on_the_accelerator_as_onnxruntime_computes_them(op):
    """BERT's pooler (a Gemm, then Tanh) and a gate's Sigmoid: on VTA-8, bit-exact with the CPU
    build, within 1 LSB of onnxruntime's own tensor."""
    rng = np.random.default_rng(1)
    qdq = quantizer_named("onnxruntime")(_pooler(op), rng.standard_normal((8, 16)).astype(np.float32))
    result = run_model(ModelCase("pooler", qdq, rng.standard_normal((1, 16)).astype(np.float32)), "1x8x8",
                       compare_onnxruntime=True)
    (row,) = [r for r in result.layers if r["op"] == op.lower()]
    assert row["target"] == "vta" and row["verified"] and result.logits_identical
    assert row["onnxruntime"]["max_abs_lsb"] <= 1 and row["onnxruntime"]["identical_fraction"] >= 0.9


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_onnx_gelu_runs_on_the_accelerator_as_onnxruntime_computes_it(approximate):
    """ONNX Gelu (opset 20) between two MatMuls, both of its forms: one rounding, so one sum of
    ramps; on VTA-8, bit-exact with the CPU build, within 1 LSB of onnxruntime's own tensor."""
    rng = np.random.default_rng(2)
    model = _pooler("Gelu", opset=20, approximate=approximate)
    qdq = quantizer_named("onnxruntime")(model, rng.standard_normal((8, 16)).astype(np.float32))
    result = run_model(ModelCase("gelu", qdq, rng.standard_normal((1, 16)).astype(np.float32)), "1x8x8",
                       compare_onnxruntime=True)
    kind = "gelu_tanh" if approximate == "tanh" else "gelu_erf"
    (row,) = [r for r in result.layers if r["op"] == kind]
    assert row["target"] == "vta" and row["verified"] and result.logits_identical
    assert row["onnxruntime"]["max_abs_lsb"] <= 1 and row["onnxruntime"]["identical_fraction"] >= 0.9
