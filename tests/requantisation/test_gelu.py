"""torch's quantised GELU chain on VTA-8's ALU (requantisation.gelu, schedules.vta_gelu,
graph/ops/gelu.py): the integer chain against the float32 chain onnxruntime computes, on every
one of the 256 inputs; the ALU program against the numpy form on both simulator engines and the
RTL; the four QDQ blocks of an exported GELU fused into one accelerator layer."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model
from requantisation import gelu as ge
from schedules.vta_gelu import gelu_kernel
from vta_sim.config import Config
from vta_sim.errors import CompileError

CFG = Config.load("1x8x8")
F32 = np.float32
#: The built-in encoder's chain as onnxruntime's symmetric quantiser writes it, and chains with
#: zero points and other scales.
CHAINS = [
    ge.GeluChain(0.035380139946937561, 0, float(F32(1.4142135381698608)), 0.0078739607706665993, 0,
                 float(F32(127) * F32(0.0078740157186985016)), 0.015747975558042526, 0, 0.070760026574134827, 0,
                 float(F32(127) * F32(0.0039370078593492508)), 0.035380013287067413, 0),
    ge.GeluChain(0.05, 5, 1.4142135, 1 / 127, 3, 1.0, 2 / 127, -4, 0.07, 2, 0.5, 0.05, 3),
    ge.GeluChain(0.1, -2, 1.4142135, 1 / 127, 0, 1.0, 2 / 127, 0, 0.2, 0, 0.5, 0.08, -1),
    # torch.export's order: h = Q((1 + erf) 1/2) on [0, 1], then y = Q(x h)
    ge.GeluChain(0.05, 5, 1.4142135, 1 / 127, 3, 1.0, 2 / 127, -4, 1 / 255, -128, 0.5, 0.05, 3, half_first=True),
]
ALL = np.arange(-128, 128, dtype=np.int8)


@pytest.mark.parametrize("chain", CHAINS, ids=["encoder", "zero-points", "coarse", "half-first"])
def test_the_integer_chain_is_within_one_step_of_the_float_chain(chain):
    """On all 256 inputs: within 1 LSB of the float32 chain, and the count of differences is
    the one `choose` reports (a tenth of the inputs at most)."""
    p = ge.choose(chain)
    got, want = ge.reference(ALL, p).astype(int), chain.steps(ALL)[-1]
    assert np.abs(got - want).max() <= 1
    assert int((got != want).sum()) == p.mismatches <= 26


def test_the_encoders_chain_matches_the_float_chain_but_once():
    """The erf polynomial matches e on all but a near-tie, and the 1 added is moved within a
    step of e to reproduce the float32 chain's rounding of (e s_e + 1) / s_a."""
    p = ge.choose(CHAINS[0])
    assert p.mismatches <= 1
    assert ge.GeluParams.unpacked(p.packed()) == p


def test_the_float_chain_is_gelu():
    """The float chain itself, dequantised, is GELU to within the quantisation steps."""
    import math
    chain = CHAINS[0]
    x = ALL.astype(np.float64) * chain.scale_x
    exact = x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    y = (chain.steps(ALL)[-1] - chain.zero_y) * chain.scale_y
    assert np.abs(y - exact).max() < 3 * chain.scale_y


def test_refusals():
    with pytest.raises(CompileError, match="positive finite"):
        ge.choose(ge.GeluChain(0.0, 0, 1.414, 1 / 127, 0, 1.0, 2 / 127, 0, 0.07, 0, 0.5, 0.05, 0))
    with pytest.raises(CompileError, match="expected"):
        ge.GeluParams.unpacked(np.zeros(3, np.int64))


@pytest.mark.parametrize("engine", ["compiled", "reference"])
@pytest.mark.parametrize("shape, chain", [((1, 16, 128), 0), ((3, 7), 1), ((2, 2100, 1), 2), ((5, 40), 3)])
def test_the_alu_program_equals_the_numpy_form(shape, chain, engine, monkeypatch):
    """Bit for bit on both simulator engines, with every int8 value among the inputs, a shape
    that leaves lanes empty and one of several tiles."""
    monkeypatch.setenv("VTA_SIM_ENGINE", engine)
    p = ge.choose(CHAINS[chain])
    x = np.resize(np.random.default_rng(chain).permutation(ALL), shape).astype(np.int8)
    before = x.copy()
    y, result = gelu_kernel(CFG, shape, p)(x)
    assert np.array_equal(y, ge.reference(x, p)) and np.array_equal(x, before)
    assert result.cycles > 0


def gelu_graph(tokens=8, width=16, half_first=False):
    """x -> MatMul -> GELU as torch exports nn.GELU (Div by sqrt 2, Erf, Add 1, Mul by the
    input, Mul by 1/2; `half_first`: Mul by 1/2, then by the input, as torch.export writes it)
    -> MatMul."""
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [width, width], (rng.standard_normal(width * width) / 2).astype(np.float32))
    consts = [helper.make_tensor(n, TensorProto.FLOAT, [], [v]) for n, v in (("sqrt2", 2 ** 0.5), ("one", 1.0), ("half", 0.5))]
    nodes = [helper.make_node("MatMul", ["input", "w"], ["h"]), helper.make_node("Div", ["h", "sqrt2"], ["d"]),
             helper.make_node("Erf", ["d"], ["e"]), helper.make_node("Add", ["e", "one"], ["a"]),
             *([helper.make_node("Mul", ["half", "a"], ["m"]), helper.make_node("Mul", ["h", "m"], ["g"])] if half_first
               else [helper.make_node("Mul", ["h", "a"], ["m"]), helper.make_node("Mul", ["m", "half"], ["g"])]),
             helper.make_node("MatMul", ["g", "w"], ["output"])]
    graph = helper.make_graph(nodes, "gelu", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, tokens, width])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, tokens, width])], [w, *consts])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("quantizer, half_first", [("onnxruntime", False), ("onnxruntime-symmetric", False),
                                                   ("onnxruntime", True)])
def test_an_exported_gelu_runs_on_the_accelerator_as_one_layer(quantizer, half_first):
    """The chain's four QDQ blocks become one accelerator layer, bit-exact with the CPU build
    and within 1 LSB of onnxruntime (compared on the chain's int8 input and output), in both
    of torch's orders."""
    rng = np.random.default_rng(5)
    qdq = quantizer_named(quantizer)(gelu_graph(half_first=half_first), rng.standard_normal((16, 8, 16)).astype(np.float32))
    result = run_model(ModelCase("gelu", qdq, rng.standard_normal((1, 8, 16)).astype(np.float32)), "1x8x8",
                       compare_onnxruntime=True, fuse=False)     # the GELU as a layer of its own: not in the
    [row] = [r for r in result.layers if r["op"] == "gelu"]      # MatMul's program (tests/graph/test_fusion.py)
    assert row["target"] == "vta" and row["verified"] and row["shape"].startswith("1x8x16")
    assert row["onnxruntime"]["max_abs_lsb"] <= 1
    assert result.verified and result.logits_identical


def test_an_erf_outside_the_chain_stays_on_the_cpu_with_the_reason():
    """(1 + erf(x / sqrt2))^2 / 2 is not torch's GELU: its erf stays in float, and the report
    says why (it is quantised, so not "not quantised")."""
    model = gelu_graph()
    model.graph.node[4].CopyFrom(helper.make_node("Mul", ["a", "a"], ["m"]))
    rng = np.random.default_rng(5)
    qdq = quantizer_named("onnxruntime-symmetric")(model, rng.standard_normal((16, 8, 16)).astype(np.float32))
    result = run_model(ModelCase("gelu", qdq, rng.standard_normal((1, 8, 16)).astype(np.float32)), "1x8x8")
    [row] = [r for r in result.layers if r["op"] == "gelu"]
    assert row["target"] == "cpu" and "outside torch's quantised GELU chain" in row["reason"]
    assert result.verified
