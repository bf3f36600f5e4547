"""graph.fusion: the bias Add torch exports after a MatMul and the GELU after it run in the
dense's program. Built with the onnx helper API as torch writes a feed-forward block (MatMul +
Add, GELU's Div/Erf/Add/Mul/Mul, MatMul + Add), quantised by onnxruntime: one accelerator
layer where the graph had a dense, CPU glue and a GELU; bit-exact with the CPU build, and the
same outputs as the unfused build."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from graph.quantize import quantizer_named
from attention_models import attention_scores_graph
from graph.run import ModelCase, run_model


def ffn_graph(tokens=8, width=16, hidden=24):
    rng = np.random.default_rng(0)

    def tensor(name, *shape):
        return helper.make_tensor(name, TensorProto.FLOAT, list(shape), (rng.standard_normal(shape) / 2).astype(np.float32).ravel())
    consts = [helper.make_tensor(n, TensorProto.FLOAT, [], [v]) for n, v in (("sqrt2", 2 ** 0.5), ("one", 1.0), ("half", 0.5))]
    nodes = [helper.make_node("MatMul", ["input", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h"]),
             helper.make_node("Div", ["h", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["h", "a"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["g"]),
             helper.make_node("MatMul", ["g", "w2"], ["o0"]), helper.make_node("Add", ["o0", "b2"], ["output"])]
    graph = helper.make_graph(nodes, "ffn", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, tokens, width])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, tokens, width])],
                              [tensor("w1", width, hidden), tensor("b1", hidden), tensor("w2", hidden, width),
                               tensor("b2", width), *consts])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _both(name, qdq, x):
    """(the fused run, compared with onnxruntime; the `--no-fuse` run) of one model."""
    return (run_model(ModelCase(name, qdq, x), "1x8x8", compare_onnxruntime=True),
            run_model(ModelCase(name, qdq, x), "1x8x8", fuse=False))


@pytest.mark.parametrize("quantizer", ["onnxruntime", "onnxruntime-symmetric"])
def test_the_bias_adds_and_the_gelu_run_in_the_denses_programs(quantizer):
    rng = np.random.default_rng(3)
    qdq = quantizer_named(quantizer)(ffn_graph(), rng.standard_normal((16, 8, 16)).astype(np.float32))
    x = rng.standard_normal((1, 8, 16)).astype(np.float32)
    fused, plain = _both("ffn", qdq, x)
    rows = {r["name"]: r for r in fused.layers}
    assert list(rows) == ["dense1+gelu1", "dense2"]
    first, second = rows["dense1+gelu1"], rows["dense2"]
    assert first["op"] == "dense+gelu" and first["epilogue"] == ["bias add", "gelu"]
    assert second["epilogue"] == ["bias add"]
    # the second dense's program loads the GELU's output as the first program stored it
    assert second["inputs_stored"] == [{"from": "dense1+gelu1", "as": "as stored"}] and "inputs_stored" not in first
    for row in (first, second):
        assert row["target"] == "vta" and row["verified"]
        assert row["onnxruntime"]["max_abs_lsb"] <= 1            # against the tensor after the Add / the GELU
    assert fused.verified and fused.logits_identical
    assert [r["name"] for r in plain.layers] == ["dense1", "gelu1", "dense2"]
    assert all("epilogue" not in r for r in plain.layers)
    assert plain.verified and np.array_equal(fused.logits_vta, plain.logits_vta)


@pytest.mark.parametrize("quantizer", ["onnxruntime", "onnxruntime-symmetric"])
def test_the_scale_of_q_runs_in_its_projections_program_behind_the_head_split(quantizer):
    """Q's 1/sqrt(d) (a Mul of the split heads by a constant) becomes an integer rescale
    (graph.ops.scale) in the Q projection's program, after its bias add: bit-exact with the CPU
    build and with the unfused build, and within 1 LSB of onnxruntime's tensor after the Mul
    (compared through the Reshape and Transpose)."""
    rng = np.random.default_rng(4)
    qdq = quantizer_named(quantizer)(attention_scores_graph(), rng.standard_normal((16, 8, 16)).astype(np.float32))
    x = rng.standard_normal((1, 8, 16)).astype(np.float32)
    fused, plain = _both("scores", qdq, x)
    rows = {r["name"]: r for r in fused.layers}
    assert rows["dense1"]["epilogue"] == ["bias add", "scale"] and rows["dense2"]["epilogue"] == ["bias add"]
    for row in fused.layers:
        assert row["target"] == "vta" and row["verified"]
        assert row["onnxruntime"]["max_abs_lsb"] <= 1 and row["onnxruntime"]["identical_fraction"] >= 0.95
    assert fused.verified and plain.verified and np.array_equal(fused.logits_vta, plain.logits_vta)


def test_the_softmax_runs_in_the_scores_program_where_that_saves_cycles():
    """64 tokens: Q.K^T computed transposed with the softmax on its accumulator (one layer
    `matmul1+softmax1`), bit-exact with the CPU build and the unfused build, within 1 LSB of
    onnxruntime's probabilities. 8 tokens: the fused program would take more cycles than the
    two kernels (one program per head, a few rows each), so they stay two layers."""
    rng = np.random.default_rng(6)
    for tokens, fused_expected in ((64, True), (8, False)):
        graph = attention_scores_graph(tokens=tokens, softmax=True)
        qdq = quantizer_named("onnxruntime")(graph, rng.standard_normal((8, tokens, 16)).astype(np.float32))
        x = rng.standard_normal((1, tokens, 16)).astype(np.float32)
        fused, plain = _both("attn", qdq, x)
        names = [r["name"] for r in fused.layers]
        assert ("matmul1+softmax1" in names) == fused_expected, names
        declined = [n for n in fused.notes if n.startswith("matmul1+softmax1 not fused: ")]
        assert len(declined) == (not fused_expected) and (fused_expected or "cycles as one program" in declined[0])
        assert fused.verified and plain.verified and np.array_equal(fused.logits_vta, plain.logits_vta)
        for row in fused.layers:
            assert row["verified"] and row["onnxruntime"]["max_abs_lsb"] <= 1
        if fused_expected:
            [row] = [r for r in fused.layers if r["op"] == "matmul+softmax"]
            cycles = {r["name"]: r["cycles"] for r in plain.layers}
            assert row["cycles"] <= cycles["matmul1"] + cycles["softmax1"]


def test_a_masks_add_between_the_scores_and_their_softmax_joins_them():
    """BERT's order, Q.K^T + mask -> softmax, at 64 tokens: one layer `matmul1+add1+softmax1`,
    the mask (one value per key) an input of its program; bit-exact with the CPU build and the
    unfused build, within 1 LSB of onnxruntime's probabilities."""
    rng = np.random.default_rng(7)
    tokens = 64

    def sample(n):
        x = rng.standard_normal((n, tokens, 16)).astype(np.float32)
        m = np.where(rng.random((n, 1, 1, tokens)) < 0.25, -10.0, 0.0).astype(np.float32)
        return x, m
    x, m = sample(8)
    graph = attention_scores_graph(tokens=tokens, softmax=True, mask=True)
    qdq = quantizer_named("onnxruntime")(graph, {"input": x, "mask": m})
    x, m = sample(1)
    fused, plain = _both("attn", qdq, {"input": x, "mask": m})
    [row] = [r for r in fused.layers if r["op"] == "matmul+add+softmax"]
    assert row["name"] == "matmul1+add1+softmax1" and row["verified"]
    assert row["onnxruntime"]["max_abs_lsb"] <= 1
    cycles = {r["name"]: r["cycles"] for r in plain.layers}
    assert row["cycles"] <= cycles["matmul1"] + cycles["add1"] + cycles["softmax1"]
    assert fused.verified and plain.verified and np.array_equal(fused.logits_vta, plain.logits_vta)


@pytest.mark.parametrize("quantizer, tokens", [("onnxruntime", 64), ("onnxruntime-symmetric", 57)])
def test_the_probabilities_reach_the_values_matmul_as_the_scores_program_stored_them(quantizer, tokens, monkeypatch):
    """softmax(Q.K^T + mask).V: one layer `matmul1+add1+softmax1+matmul2` of two programs per
    head, the scores' program storing P transposed by the GEMM core and the values' program
    taking that tensor as its data, its first rows as stored (no host copy, no padding), bit-
    exact with the CPU build and the unfused build, within 1 LSB of onnxruntime's output. Each
    head's attn.V program stores its columns of the merged rows, and the output projection takes
    them as stored: the head merge's Transpose and Reshape copy nothing; each head's scores'
    program loads its K from its columns of the K projection's rows and its Q from the 8 x 8
    weight blocks the Q projection's program stores, and its attn.V program V^T's weight blocks,
    which the V projection's program transposes: nor do the head split's.
    57 tokens: the last key block one key full, its other lanes zero as stored."""
    from graph.attention import AttentionKernel
    chained = []
    original = AttentionKernel._chained

    def spy(self, stored, shape):
        data = original(self, stored, shape)
        chained.append((np.shares_memory(data, stored), self.padded))
        return data
    monkeypatch.setattr(AttentionKernel, "_chained", spy)
    rng = np.random.default_rng(9)

    def sample(n):
        x = rng.standard_normal((n, tokens, 16)).astype(np.float32)
        m = np.where(rng.random((n, 1, 1, tokens)) < 0.25, -10.0, 0.0).astype(np.float32)
        return {"input": x, "mask": m}
    graph = attention_scores_graph(tokens=tokens, softmax=True, mask=True, values=True)
    qdq = quantizer_named(quantizer)(graph, sample(8))
    fused, plain = _both("attn", qdq, sample(1))
    [row] = [r for r in fused.layers if r["op"] == "matmul+add+softmax+matmul"]
    assert row["name"] == "matmul1+add1+softmax1+matmul2" and row["verified"]
    assert row["onnxruntime"]["max_abs_lsb"] <= 1
    scores, values = row["pieces"]          # each program's MACs and cycles, the two heads summed
    assert (scores["op"], values["op"]) == ("matmul+add+softmax", "matmul")
    assert scores["cycles"] + values["cycles"] == row["cycles"] and scores["macs"] + values["macs"] == row["macs"]
    assert fused.verified and plain.verified and np.array_equal(fused.logits_vta, plain.logits_vta)
    assert chained and all(view and padded == 0 for view, padded in chained), chained
    out = next(r for r in fused.layers if r["name"].startswith("dense4"))
    assert out["inputs_stored"] == [{"from": "matmul1+add1+softmax1+matmul2", "as": "as stored"}] and out["verified"]
    # and each head's scores' program loads its Q (weight blocks the Q projection stored) and its
    # K (its columns of the K projection's rows), its attn.V program its V (V^T's weight blocks,
    # transposed by the V projection's program), as stored
    assert row["inputs_stored"] == [{"from": f"dense{k}", "as": "as stored"} for k in (1, 2, 3)]


def post_norm_graph(tokens=16, width=32):
    """x + (x W + b), then LayerNormalization (opset 17): a post-norm block's residual."""
    rng = np.random.default_rng(2)

    def tensor(name, *shape, scale=0.5):
        return helper.make_tensor(name, TensorProto.FLOAT, list(shape),
                                  (rng.standard_normal(shape) * scale).astype(np.float32).ravel())
    gamma = helper.make_tensor("gamma", TensorProto.FLOAT, [width], (1 + 0.1 * rng.standard_normal(width)).astype(np.float32))
    nodes = [helper.make_node("MatMul", ["input", "w"], ["h0"]), helper.make_node("Add", ["h0", "b"], ["h"]),
             helper.make_node("Add", ["input", "h"], ["r"]),
             helper.make_node("LayerNormalization", ["r", "gamma", "beta"], ["output"], axis=-1, epsilon=1e-5)]
    graph = helper.make_graph(nodes, "postnorm", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, tokens, width])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, tokens, width])],
                              [tensor("w", width, width, scale=0.2), tensor("b", width), gamma, tensor("beta", width, scale=0.1)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_post_norm_residual_add_and_its_layer_norm_are_one_program():
    """The residual add (two activations with zero points) and the LayerNorm after it: one layer
    `add1+layer_norm1` (10,380 cycles against 944 + 9,776 apart), bit-exact with the CPU build and the
    unfused build, within 1 LSB of onnxruntime's LayerNorm output."""
    rng = np.random.default_rng(9)
    qdq = quantizer_named("onnxruntime")(post_norm_graph(), rng.standard_normal((16, 16, 32)).astype(np.float32))
    fused, plain = _both("postnorm", qdq, rng.standard_normal((1, 16, 32)).astype(np.float32))
    rows = {r["name"]: r for r in fused.layers}
    cycles = {r["name"]: r["cycles"] for r in plain.layers}
    row = rows["add1+layer_norm1"]
    assert row["op"] == "add+layer_norm" and row["cycles"] <= cycles["add1"] + cycles["layer_norm1"]
    for row in fused.layers:
        assert row["verified"] and row["onnxruntime"]["max_abs_lsb"] <= 1
    assert fused.verified and plain.verified and np.array_equal(fused.logits_vta, plain.logits_vta)


def test_a_dense_its_residual_add_and_layer_norm_are_one_program_where_that_saves_cycles():
    """At 64 tokens of 128 the dense before the residual add joins them: `dense1+add1+layer_norm1`,
    the dense computed transposed so the LayerNorm runs on its accumulator, fewer cycles than the
    three layers apart (85,779 against 100,090), bit-exact with the CPU build and the unfused
    build, within 1 LSB of onnxruntime's LayerNorm output (its inputs: the dense's and the
    residual, the add's first operand here). At 16 tokens of 32 it takes more cycles and is not
    fused, with the reason in the notes."""
    rng = np.random.default_rng(9)
    qdq = quantizer_named("onnxruntime")(post_norm_graph(64, 128), rng.standard_normal((16, 64, 128)).astype(np.float32))
    fused, plain = _both("postnorm", qdq, rng.standard_normal((1, 64, 128)).astype(np.float32))
    (row,) = fused.layers
    assert row["name"] == "dense1+add1+layer_norm1" and row["op"] == "dense+add+layer_norm"
    assert row["epilogue"] == ["bias add", "add", "layer_norm"]
    assert row["cycles"] < sum(r["cycles"] for r in plain.layers)
    assert row["verified"] and row["onnxruntime"]["max_abs_lsb"] <= 1 and row["onnxruntime"]["identical_fraction"] > 0.99
    assert fused.verified and plain.verified and np.array_equal(fused.logits_vta, plain.logits_vta)
    small = quantizer_named("onnxruntime")(post_norm_graph(), rng.standard_normal((16, 16, 32)).astype(np.float32))
    run = run_model(ModelCase("postnorm", small, rng.standard_normal((1, 16, 32)).astype(np.float32)), "1x8x8")
    assert "dense1" in [r["name"] for r in run.layers]
    assert any(n.startswith("dense1+add1+layer_norm1 not fused: ") for n in run.notes)


def test_the_cli_fuses_by_default_and_not_with_no_fuse(tmp_path):
    """`vta-sim model FILE --json` reports the fused layers and their epilogues; `--no-fuse`
    the layers as the graph has them; both verified, both outputs the CPU build's."""
    import json

    from vta_sim.cli import main
    rng = np.random.default_rng(3)
    path = tmp_path / "ffn.onnx"
    path.write_bytes(quantizer_named("onnxruntime")(ffn_graph(), rng.standard_normal((16, 8, 16)).astype(np.float32))
                     .SerializeToString())
    reports = {}
    for flag in ((), ("--no-fuse",)):
        out = tmp_path / f"report{len(flag)}.json"
        assert main(["model", str(path), "--quiet", "--json", str(out), *flag]) == 0
        reports[flag] = json.loads(out.read_text())
    fused, plain = reports[()], reports[("--no-fuse",)]
    assert [r["name"] for r in fused["layers"]] == ["dense1+gelu1", "dense2"]
    assert fused["layers"][0]["epilogue"] == ["bias add", "gelu"]
    assert [r["name"] for r in plain["layers"]] == ["dense1", "gelu1", "dense2"]
    assert fused["verified"] and plain["verified"]
    assert all(o["identical"] for o in fused["outputs"] + plain["outputs"])     # both equal to the CPU build's
