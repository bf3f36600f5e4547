"""The mean over tokens (a transformer classifier's ReduceMean over axis 1) on VTA-8's ALU:
requantisation.token_mean against the float definition, the ALU program against it bit for
bit, and the graph op against onnxruntime's QDQ model."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model
from requantisation import token_mean as tm
from schedules.vta_token_mean import misfit, token_mean_kernel
from vta_sim.config import Config
from vta_sim.errors import CompileError


@pytest.mark.parametrize("tokens,zero_in,zero_out", [(16, -7, 3), (65, 0, -128), (300, 120, 0)])
def test_the_integer_mean_is_the_float_mean_requantised(tokens, zero_in, zero_out):
    """Within 1 LSB of round(s_x / (T s_y) sum (x - z_x)) + z_y in float64, and equal to it
    wherever that is not within 2^-12 of a tie (the multiplier is rounded to 31 bits)."""
    rng = np.random.default_rng(tokens)
    scale_in, scale_out = 0.05, 0.013
    p = tm.choose(scale_in, zero_in, scale_out, zero_out, tokens)
    x = rng.integers(-128, 128, (3, tokens, 40), dtype=np.int8)
    exact = scale_in / (tokens * scale_out) * (x.astype(np.float64) - zero_in).sum(axis=1)
    want = np.clip(np.floor(exact + 0.5) + zero_out, -128, 127)
    got = tm.reference(x, p).astype(np.float64)
    assert np.abs(got - want).max() <= 1
    clear = np.abs(exact - np.floor(exact) - 0.5) > 2 ** -12
    assert np.array_equal(got[clear], want[clear])
    assert sum(tm.choose(scale_in, zero_in, scale_out, zero_out, tokens).offset_parts()) == -tokens * zero_in


@pytest.mark.parametrize("config,batch,tokens,channels,zero_in", [
    ("1x8x8", 1, 16, 64, -7), ("1x8x8", 2, 5, 10, 3), ("1x8x8", 1, 65, 192, 0), ("1x8x8", 1, 300, 24, 120),
    ("8x8x8", 2, 9, 72, -1)])
def test_the_alu_program_equals_the_reference(config, batch, tokens, channels, zero_in):
    """Bit for bit, with rows padded to whole groups, tiles of several groups, a -T z_x too wide
    for one immediate, and 8 batch rows to an entry on 8x8x8."""
    cfg = Config.load(config)
    rng = np.random.default_rng(channels)
    p = tm.choose(0.05, zero_in, 0.1, -3, tokens)       # mean(x - z_x) / 2: inside int8, never clamped
    x = rng.integers(-128, 128, (batch, tokens, channels), dtype=np.int8)
    x[:, :, 0] = 127                                        # a channel far from the zero point
    before = x.copy()
    got, result = token_mean_kernel(cfg, batch, p, channels)(x)
    assert np.array_equal(got, tm.reference(x, p)) and np.array_equal(x, before)
    assert -128 < got.min() and got.max() < 127
    assert got.shape == (batch, channels) and result.cycles > 0


def test_a_row_longer_than_acc_is_refused_with_the_limit():
    cfg = Config.load("1x8x8")
    depth = cfg.buffers["acc"].depth
    assert misfit(cfg, depth - 2) is None and f"up to {depth - 2} tokens" in misfit(cfg, depth)
    with pytest.raises(CompileError, match="tokens"):
        token_mean_kernel(cfg, 1, tm.choose(0.1, 0, 0.1, 0, depth), 8)


def _pooled(tokens=12, width=16, keepdims=0):
    rng = np.random.default_rng(0)
    w = helper.make_tensor("w", TensorProto.FLOAT, [width, width],
                           (rng.standard_normal(width * width) / 4).astype(np.float32))
    head = helper.make_tensor("head", TensorProto.FLOAT, [width, 4],
                              (rng.standard_normal(width * 4) / 4).astype(np.float32))
    shape = [1, 1, 4] if keepdims else [1, 4]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("ReduceMean", ["h"], ["pooled"], axes=[1], keepdims=keepdims),
             helper.make_node("MatMul", ["pooled", "head"], ["y"])]
    graph = helper.make_graph(nodes, "pooled", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, tokens, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], [w, head])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("keepdims", [0, 1])
def test_the_mean_over_tokens_runs_on_the_accelerator_within_1_lsb_of_onnxruntime(keepdims):
    rng = np.random.default_rng(1)
    qdq = quantizer_named("onnxruntime")(_pooled(keepdims=keepdims), rng.standard_normal((8, 12, 16)).astype(np.float32))
    result = run_model(ModelCase("pooled", qdq, rng.standard_normal((1, 12, 16)).astype(np.float32)), "1x8x8",
                       compare_onnxruntime=True)
    (mean,) = [r for r in result.layers if r["op"] == "mean"]
    assert mean["target"] == "vta" and mean["verified"] and result.logits_identical
    assert mean["onnxruntime"]["max_abs_lsb"] <= 1 and mean["onnxruntime"]["identical_fraction"] >= 0.9
    assert result.verified
