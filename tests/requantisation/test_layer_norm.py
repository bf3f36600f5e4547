"""The integer LayerNorm on VTA-8's ALU (requantisation.layer_norm, schedules.vta_layer_norm,
graph/ops/layer_norm.py): its arithmetic against float LayerNorm, the ALU program against the
numpy form bit for bit on both simulator engines and the RTL, the ALU's integer square root
against math.isqrt, and the graph level's QDQ LayerNormalization on the accelerator."""
import math

import numpy as np
import pytest
from onnx import TensorProto, helper

from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model
from intrinsics.alu_program import AluProgram, Level, Param
from requantisation import layer_norm as ln
from schedules import alu_rows, vta_layer_norm
from vta_sim.config import Config
from vta_sim.errors import CompileError

CFG = Config.load("1x8x8")
#: (row length, input scale, output scale, output zero point, spread of the inputs in LSB): the
#: encoder's and BERT's widths, a BERT-base width, and rows of nearly equal values.
CASES = [(64, 0.037, 0.0297, 0, 30), (128, 0.05, 0.03, -5, 20), (128, 0.05, 0.03, 0, 3), (768, 0.02, 0.04, 3, 40),
         (64, 0.037, 0.0297, 0, 1)]


def rows_of(rng, rows, length, spread):
    """Tokens as a residual stream has them: a per-token offset and a spread around it."""
    return np.clip(rng.normal(0, spread, (rows, length)) + rng.normal(0, spread, (rows, 1)), -128, 127).astype(np.int8)


def params_for(rng, length, scale_x, scale_y, zero_y):
    gamma, beta = rng.uniform(0.5, 1.5, length), rng.normal(0, 0.2, length)
    return gamma, beta, ln.choose(scale_x, gamma, beta, 1e-5, scale_y, zero_y)


@pytest.mark.parametrize("length, scale_x, scale_y, zero_y, spread", CASES)
def test_the_integer_layer_norm_is_within_one_step_of_float(length, scale_x, scale_y, zero_y, spread):
    """Float LayerNorm of the dequantised tokens, quantised with ties to even (onnxruntime's QDQ),
    is the independent reference: every output within 1 LSB, 97 % or more equal, rows whose
    values differ by a step or two included (their variance is moved up before its square root)."""
    rng = np.random.default_rng(length + spread)
    gamma, beta, p = params_for(rng, length, scale_x, scale_y, zero_y)
    q = rows_of(rng, 1000, length, spread)
    got = ln.reference(q, p).astype(int)
    want = ln.float_reference(q, scale_x, 0, gamma, beta, 1e-5, scale_y, zero_y).astype(int)
    assert np.abs(got - want).max() <= 1
    assert (got == want).mean() > 0.97


def test_the_input_zero_point_cancels():
    rng = np.random.default_rng(1)
    gamma, beta, p = params_for(rng, 64, 0.037, 0.03, 0)
    q = rows_of(rng, 50, 64, 20)
    shifted = np.clip(q.astype(int) + 7, -128, 127)
    kept = (shifted - 7 == q)[:, None].all(axis=-1).reshape(-1)
    assert np.array_equal(ln.reference(shifted.astype(np.int8), p)[kept], ln.reference(q, p)[kept])


def test_refusals_and_packing():
    g, b = np.ones(64), np.zeros(64)
    with pytest.raises(CompileError, match="epsilon"):
        ln.choose(1e-7, g, b, 1e-5, 0.03, 0)
    with pytest.raises(CompileError, match="positive finite"):
        ln.choose(0.0, g, b, 1e-5, 0.03, 0)
    with pytest.raises(CompileError, match="finite"):
        ln.choose(0.03, np.full(64, np.nan), b, 1e-5, 0.03, 0)
    p = ln.choose(0.03, g, b, 1e-5, 0.03, 0)
    assert ln.LayerNormParams.unpacked(p.packed()) == p
    with pytest.raises(CompileError, match="expected"):
        ln.LayerNormParams.unpacked(p.packed()[:-1])
    assert "ACC holds 2048" in vta_layer_norm.misfit(CFG, 1020)
    assert vta_layer_norm.misfit(CFG, 1019) is None and vta_layer_norm.misfit(CFG, 256) is None
    assert vta_layer_norm.resident(CFG, 509) and not vta_layer_norm.resident(CFG, 510)


@pytest.mark.parametrize("engine", ["compiled", "reference"])
@pytest.mark.parametrize("rows, case", [(16, 0), (20, 1), (9, 4), (128, 2), (12, 3)])
def test_the_alu_program_equals_the_numpy_form(rows, case, engine, monkeypatch):
    """Bit for bit on both simulator engines: rows that leave lanes empty (20, 9), several tiles
    (128 rows of 128), rows of nearly equal values."""
    monkeypatch.setenv("VTA_SIM_ENGINE", engine)
    length, scale_x, scale_y, zero_y, spread = CASES[case]
    rng = np.random.default_rng(rows)
    _, _, p = params_for(rng, length, scale_x, scale_y, zero_y)
    x = rows_of(rng, rows, length, spread)
    before = x.copy()
    y, result = vta_layer_norm.layer_norm_kernel(CFG, rows, p)(x)
    assert np.array_equal(y, ln.reference(x, p))
    assert np.array_equal(x, before) and result.cycles > 0


def test_the_alu_square_root_is_floor_sqrt():
    """alu_rows.isqrt alone on values across [0, 2^30), squares and their neighbours included:
    floor(sqrt(v)) exactly, read back in two bytes."""
    groups = 8
    rng = np.random.default_rng(2)
    v = rng.integers(0, 1 << 30, (groups, 1, 8)).astype(np.int64)
    v.reshape(-1)[:12] = [0, 1, 2, 3, 4, 15, 16, 17, (1 << 30) - 1, 46340 ** 2 // 2, 32767 ** 2, 32768 ** 2 - 1]
    prog = AluProgram(CFG, [Param("v", v.shape, "int32", "acc"), Param("r", (2 * groups, 1, 8), "int8", "out")])
    val, root, cand, scratch, out = 0, groups, 2 * groups, 3 * groups, 4 * groups
    prog.load("v", 0, groups, val)
    alu_rows.isqrt(prog, root, val, cand, scratch, groups, 15)
    for k in range(2):
        prog.copy(out + k * groups, root, groups)
        prog.alu("shr", out + k * groups, imm=8 * k, outer=Level(groups, 1))
    prog.store("r", 0, 2 * groups, out)
    (raw,), _ = prog.compile()(v.astype(np.int32))
    b = raw.reshape(2, groups, 1, 8).astype(np.int64)
    got = (b[0] & 0xFF) | (b[1] << 8)
    assert np.array_equal(got, np.vectorize(math.isqrt)(v))


def norm_graph(tokens=8, width=64):
    """x -> MatMul -> Add(x) -> LayerNormalization -> MatMul: a residual stream's LayerNorm
    between quantised layers, as an encoder has it."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [width, width], (rng.standard_normal(width * width) / 8).astype(np.float32))
    gamma = helper.make_tensor("gamma", TensorProto.FLOAT, [width], rng.uniform(0.5, 1.5, width).astype(np.float32))
    beta = helper.make_tensor("beta", TensorProto.FLOAT, [width], rng.normal(0, 0.2, width).astype(np.float32))
    nodes = [helper.make_node("MatMul", ["input", "w"], ["h"]), helper.make_node("Add", ["h", "input"], ["r"]),
             helper.make_node("LayerNormalization", ["r", "gamma", "beta"], ["n"], axis=-1, epsilon=1e-5),
             helper.make_node("MatMul", ["n", "w"], ["output"])]
    graph = helper.make_graph(nodes, "norm", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, tokens, width])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, tokens, width])],
                              [w, gamma, beta])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("quantizer", ["onnxruntime", "onnxruntime-symmetric"])
def test_a_quantised_layer_norm_runs_on_the_accelerator(quantizer):
    """The QDQ LayerNormalization becomes an accelerator layer, bit-exact with the CPU build of
    the integer graph and within 1 LSB of onnxruntime's own QDQ run."""
    rng = np.random.default_rng(4)
    qdq = quantizer_named(quantizer)(norm_graph(), rng.standard_normal((16, 8, 64)).astype(np.float32))
    result = run_model(ModelCase("norm", qdq, rng.standard_normal((1, 8, 64)).astype(np.float32)), "1x8x8",
                       compare_onnxruntime=True, fuse=False)    # the LayerNorm as a layer of its own, not
    [row] = [r for r in result.layers if r["op"] == "layer_norm"]  # with the add before it (tests/graph/test_fusion.py)
    assert row["target"] == "vta" and row["verified"] and row["shape"] == "1x8 rows of 64"
    assert result.verified and result.logits_identical
    assert row["onnxruntime"]["max_abs_lsb"] <= 1 and row["onnxruntime"]["identical_fraction"] > 0.95


def test_a_layer_norm_over_two_axes_stays_on_the_cpu_with_the_reason():
    model = norm_graph()
    node = model.graph.node[2]
    node.attribute[0].i = -2
    model.graph.initializer[1].CopyFrom(helper.make_tensor("gamma", TensorProto.FLOAT, [8, 64], np.ones(512, np.float32)))
    model.graph.initializer[2].CopyFrom(helper.make_tensor("beta", TensorProto.FLOAT, [8, 64], np.zeros(512, np.float32)))
    rng = np.random.default_rng(4)
    qdq = quantizer_named("onnxruntime-symmetric")(model, rng.standard_normal((16, 8, 64)).astype(np.float32))
    result = run_model(ModelCase("norm", qdq, rng.standard_normal((1, 8, 64)).astype(np.float32)), "1x8x8")
    [row] = [r for r in result.layers if r["op"] == "layer_norm"]
    assert row["target"] == "cpu" and "axes" in row["reason"]
    assert result.verified
