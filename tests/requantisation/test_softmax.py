"""The integer softmax on VTA-8's ALU (requantisation.softmax, schedules.vta_softmax,
graph/ops/softmax.py): its arithmetic against float softmax, the ALU program against the numpy
form bit for bit on both simulator engines and the RTL, and the graph level's QDQ softmax on
the accelerator."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model
from intrinsics.alu_program import AluProgram, Level, Param
from requantisation import softmax as sm
from schedules import alu_rows, vta_softmax
from vta_sim.config import Config
from vta_sim.errors import CompileError

CFG = Config.load("1x8x8")
#: (input scale, output scale, output zero point, row length): onnxruntime's two quantisers'
#: softmax scales on the built-in encoder, BERT's rows, a ViT's 197 tokens, a coarse input.
CASES = [(0.04015, 1 / 127, 0, 16), (0.03536, 1 / 255, -128, 16), (0.1, 1 / 255, -128, 128),
         (0.012, 1 / 127, 0, 197), (0.3, 1 / 255, -128, 64), (2.0, 1 / 127, 0, 8)]


def scores(rng, rows, length):
    """Scores as attention writes them: a spread around a few large entries, and rows of
    uniform noise over the whole int8 range."""
    peaked = np.clip(rng.normal(0, 25, (rows, length)), -128, 127)
    return np.concatenate([peaked, rng.integers(-128, 128, (rows, length))]).astype(np.int8)


@pytest.mark.parametrize("scale_in, scale_out, zero_out, length", CASES)
def test_the_integer_softmax_is_within_one_step_of_float_softmax(scale_in, scale_out, zero_out, length):
    """Float softmax on the dequantised scores, quantised (onnxruntime's QDQ), is the
    independent reference: every output within 1 LSB, nearly all equal."""
    rng = np.random.default_rng(length)
    q = scores(rng, 500, length)
    p = sm.choose(scale_in, scale_out, zero_out, length)
    got = sm.reference(q, p).astype(int)
    want = sm.float_reference(q, scale_in, 0, scale_out, zero_out).astype(int)
    assert np.abs(got - want).max() <= 1
    assert (got != want).mean() < 0.01


def test_the_exponent_polynomial_and_the_quotient():
    """P(f) is 2^14 * 2^-(f/2^15) within 2e-4 relative over the centred fraction, 2^14 at 0
    (the row maximum's value), and the division is exact floor division."""
    f = np.arange(-(1 << 14), 1 << 14, dtype=np.int64)
    exact = (1 << sm.E_BITS) * 2.0 ** (-f / (1 << sm.POLY_FRAC))
    assert np.abs(sm.poly(f) / exact - 1).max() < 2e-4
    assert sm.poly(np.zeros(1, np.int64))[0] == 1 << sm.E_BITS
    z, frac = sm.exponent_parts(np.arange(0, 1 << 20, 997, dtype=np.int64), 15)
    assert (frac >= -(1 << 14)).all() and (frac < 1 << 14).all()
    assert np.array_equal(z * (1 << 15) + frac, np.arange(0, 1 << 20, 997))


def test_refusals_name_what_does_not_fit():
    with pytest.raises(CompileError, match="scale <="):
        sm.choose(20000.0, 1 / 255, -128, 16)
    with pytest.raises(CompileError, match="positive finite"):
        sm.choose(0.0, 1 / 255, -128, 16)
    with pytest.raises(CompileError, match="zero point"):
        sm.choose(0.1, 1 / 255, 200, 16)
    with pytest.raises(CompileError, match="dividend"):
        sm.SoftmaxParams(16, 1898, 15, -134217728, 24, 0)      # a dividend wrapped to int32
    assert "ACC holds 2048" in vta_softmax.misfit(CFG, 700)
    assert vta_softmax.misfit(CFG, 681) is None


@pytest.mark.parametrize("engine", ["compiled", "reference"])
@pytest.mark.parametrize("rows, case", [(20, 0), (64, 2), (9, 4), (3, 5), (8, 3)])
def test_the_alu_program_equals_the_numpy_form(rows, case, engine, monkeypatch):
    """Bit for bit on both simulator engines, with rows that leave lanes empty (20, 9, 3),
    several tiles (64 rows of 128) and rows that are no power of two long (197, 5 via the 8-row case)."""
    monkeypatch.setenv("VTA_SIM_ENGINE", engine)
    scale_in, scale_out, zero_out, length = CASES[case]
    p = sm.choose(scale_in, scale_out, zero_out, length)
    kernel = vta_softmax.softmax_kernel(CFG, rows, p)
    x = scores(np.random.default_rng(rows), rows, length)[rows // 2:rows // 2 + rows]
    before = x.copy()
    y, result = kernel(x)
    assert np.array_equal(y, sm.reference(x, p))
    assert np.array_equal(x, before)
    assert result.cycles > 0 and result.stats["alu_counter"] > 0


def test_a_row_of_one_entry_is_certain():
    p = sm.choose(0.1, 1 / 255, -128, 1)
    y, _ = vta_softmax.softmax_kernel(CFG, 5, p)(np.arange(-2, 3, dtype=np.int8).reshape(5, 1))
    assert (y == 127).all()


def softmax_graph(shape=(1, 2, 8, 8)):
    """x -> MatMul(x, x^T-ish weight) scores -> Softmax -> MatMul with a weight: the softmax
    between two quantised matmuls, as attention has it."""
    rng = np.random.default_rng(0)
    n = shape[-1]
    w = helper.make_tensor("w", TensorProto.FLOAT, [n, n], (rng.standard_normal(n * n) * 2).astype(np.float32))
    v = helper.make_tensor("v", TensorProto.FLOAT, [n, n], rng.standard_normal(n * n).astype(np.float32))
    nodes = [helper.make_node("MatMul", ["input", "w"], ["scores"]),
             helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
             helper.make_node("MatMul", ["probs", "v"], ["output"])]
    graph = helper.make_graph(nodes, "softmax", [helper.make_tensor_value_info("input", TensorProto.FLOAT, list(shape))],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, list(shape))], [w, v])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("quantizer, shape", [("onnxruntime", (1, 2, 8, 8)), ("onnxruntime-symmetric", (1, 2, 8, 8)),
                                              ("onnxruntime-symmetric", (1, 1, 8, 128))])
def test_a_quantised_softmax_runs_on_the_accelerator(quantizer, shape):
    """The QDQ softmax becomes an accelerator layer, bit-exact with the CPU build of the integer
    graph, and within 1 LSB of onnxruntime's own QDQ run (rows of 128 at scale 1/127 need a
    dividend above 2^31: its constant must stay int64 through the graph)."""
    rng = np.random.default_rng(3)
    qdq = quantizer_named(quantizer)(softmax_graph(shape), rng.standard_normal((16, *shape[1:])).astype(np.float32))
    case = ModelCase("softmax", qdq, rng.standard_normal(shape).astype(np.float32))
    result = run_model(case, "1x8x8", compare_onnxruntime=True)
    [row] = [r for r in result.layers if r["op"] == "softmax"]
    rows = "x".join(map(str, shape[:-1]))
    assert row["target"] == "vta" and row["verified"] and row["shape"] == f"{rows} rows of {shape[-1]}"
    assert result.verified and result.logits_identical
    agreement = row["onnxruntime"]
    assert agreement["max_abs_lsb"] <= 1 and agreement["identical_fraction"] > 0.97


def test_a_softmax_over_another_axis_stays_on_the_cpu_with_the_reason():
    model = softmax_graph()
    model.graph.node[1].attribute[0].i = 2
    rng = np.random.default_rng(3)
    qdq = quantizer_named("onnxruntime-symmetric")(model, rng.standard_normal((16, 2, 8, 8)).astype(np.float32))
    result = run_model(ModelCase("softmax", qdq, rng.standard_normal((1, 2, 8, 8)).astype(np.float32)), "1x8x8")
    [row] = [r for r in result.layers if r["op"] == "softmax"]
    assert row["target"] == "cpu" and "axis 2" in row["reason"]
    assert result.verified


def test_the_alu_division_is_floor_division():
    """The restoring division alone (schedules.alu_rows.division) on row sums across its whole range:
    the quotient, read back in three bytes, is D // sum exactly (a quotient one off changes the
    probabilities too rarely for the end-to-end tests to see)."""
    p = sm.choose(0.012, 1 / 127, 0, 197)
    groups = 6
    rng = np.random.default_rng(5)
    sums = rng.integers(1 << sm.E_BITS, 197 << sm.E_BITS, (groups, 1, 8)).astype(np.int32)
    sums[0, 0, :2] = (1 << sm.E_BITS, 197 << sm.E_BITS)
    prog = AluProgram(CFG, [Param("sums", sums.shape, "int32", "acc"), Param("q", (3 * groups, 1, 8), "int8", "out")])
    neg, quo, rem, scratch, out = 0, groups, 2 * groups, 3 * groups, 4 * groups
    prog.load("sums", 0, groups, neg)
    prog.alu("mul", neg, imm=-1, outer=Level(groups, 1))
    alu_rows.division(prog, p.dividend, p.steps, quo, neg, rem, scratch, groups)
    for k in range(3):
        prog.copy(out + k * groups, quo, groups)
        prog.alu("shr", out + k * groups, imm=8 * k, outer=Level(groups, 1))
    prog.store("q", 0, 3 * groups, out)
    (raw,), _ = prog.compile()(sums)
    b = raw.reshape(3, groups, 1, 8).astype(np.int64)
    quotient = (b[0] & 0xFF) | ((b[1] & 0xFF) << 8) | (b[2] << 16)
    assert np.array_equal(quotient, p.dividend // sums.astype(np.int64))


def test_the_integer_graph_names_its_numpy_callbacks():
    """graph.ops.packed_form.packed_calls finds the softmax's call in the integer graph: what
    `vta-sim compare` notes on its TVM int8 rows (and skips on a GPU, where numpy cannot run)."""
    from graph.onnx_import import import_onnx
    from graph.ops.packed_form import packed_calls
    from graph.qdq import lower_qdq
    rng = np.random.default_rng(3)
    qdq = quantizer_named("onnxruntime-symmetric")(softmax_graph(), rng.standard_normal((16, 2, 8, 8)).astype(np.float32))
    imported = import_onnx(qdq)
    mod = imported[0] if isinstance(imported, tuple) else imported
    assert packed_calls(mod) == []
    assert packed_calls(lower_qdq(mod)[0]) == ["vta.softmax_int"]
