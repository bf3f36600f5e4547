"""The digits ViT (graph.models.digits_vit): its hand-written backward against finite
differences, its ONNX export against its numpy forward, its training, and its run on VTA-8."""
import numpy as np
import onnx
import pytest

from graph.models import digits_vit
from graph.models.encoder import Dims, reference_layer

TINY = Dims(digits_vit.TOKENS, 8, 2, 12)


def _tiny_params(seed: int = 1, layers: int = 2) -> dict:
    """A tiny float64 model, every parameter moved off its initial value (norm gains of 1 and
    biases of 0 would hide terms of the backward)."""
    rng = np.random.default_rng(seed)
    p = digits_vit.init_params(rng, TINY, layers=layers, classes=3, dtype=np.float64)
    return {k: v + 0.2 * rng.standard_normal(v.shape) for k, v in p.items()}


def _ort(proto, x):
    import onnxruntime as ort

    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"input": np.asarray(x, np.float32)})[0]


def _mismatches(p: dict, x, y, seed: int = 2) -> list:
    """(parameter, index) where the backward's gradient differs from a central finite
    difference of the loss, at up to 6 random entries of every parameter."""
    rng = np.random.default_rng(seed)
    _, grads = digits_vit.loss_and_grads(p, x, y, heads=TINY.heads)
    assert set(grads) == set(p)
    wrong = []
    for name, value in p.items():
        for i in rng.choice(value.size, min(value.size, 6), replace=False):
            idx = np.unravel_index(i, value.shape)
            old = value[idx]
            value[idx] = old + 1e-6
            up = digits_vit.loss_and_grads(p, x, y, heads=TINY.heads)[0]
            value[idx] = old - 1e-6
            down = digits_vit.loss_and_grads(p, x, y, heads=TINY.heads)[0]
            value[idx] = old
            numeric = (up - down) / 2e-6
            if abs(grads[name][idx] - numeric) > 1e-6 + 1e-5 * abs(numeric):
                wrong.append((name, idx))
    return wrong


def _batch(seed: int = 3):
    rng = np.random.default_rng(seed)
    return rng.random((3, 1, 8, 8)), np.array([0, 2, 1])


def test_the_backward_equals_finite_differences():
    """Every parameter of a two-layer float64 model: patch embedding, positions, attention,
    LayerNorms, the erf GELU, the mean and the classifier."""
    assert _mismatches(_tiny_params(), *_batch()) == []


def test_a_planted_backward_bug_fails_the_gradient_check(monkeypatch):
    """The check can fail: LayerNorm's backward without its xhat * mean(dxhat * xhat) term is
    caught, in the norms' inputs' parameters and not in the classifier's."""
    def wrong(dy, g, cache):
        xhat, inv = cache
        dxhat = dy * g
        return (dxhat - dxhat.mean(-1, keepdims=True)) * inv, (dy * xhat).sum((0, 1)), dy.sum((0, 1))

    monkeypatch.setattr(digits_vit, "_layer_norm_back", wrong)
    names = {name for name, _ in _mismatches(_tiny_params(), *_batch())}
    assert {"l0_q_w", "l1_ffn1_w", "patch_w", "pos"} <= names and not names & {"fc_w", "fc_b", "l1_norm2_g"}


def test_the_forward_is_the_encoder_builtins_layer():
    """The training forward's encoder layer is the encoder builtin's independent reference."""
    p = _tiny_params(layers=1)
    h = np.random.default_rng(4).standard_normal((2, TINY.tokens, TINY.width))
    ours = digits_vit._layer(h, p, "l0_", TINY.heads)[0]
    np.testing.assert_allclose(ours, reference_layer(h, p, TINY, prefix="l0_"), rtol=1e-10, atol=1e-10)


def test_the_exported_graph_computes_the_numpy_forward():
    p = digits_vit.init_params(np.random.default_rng(5))
    p = {k: (v + 0.1 * np.random.default_rng(6).standard_normal(v.shape)).astype(np.float32) for k, v in p.items()}
    proto = digits_vit.float_model(p)
    ops = [n.op_type for n in proto.graph.node]
    assert ops[:4] == ["Conv", "Reshape", "Transpose", "Add"] and ops[-2:] == ["ReduceMean", "Gemm"]
    assert ops.count("LayerNormalization") == 2 * digits_vit.LAYERS and "Erf" in ops and "Softmax" in ops
    x = np.random.default_rng(7).random((5, 1, 8, 8)).astype(np.float32)
    want = digits_vit.forward({k: v.astype(np.float64) for k, v in p.items()}, x)[0]
    np.testing.assert_allclose(_ort(proto, x), want, atol=1e-4)
    np.testing.assert_allclose(_ort(proto, x[:1]), want[:1], atol=1e-4)      # any batch


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Trained at first use in an empty cache (as `vta-sim model digits-vit` does it), then
    loaded again from that cache."""
    cache = tmp_path_factory.mktemp("digits_vit")
    d = digits_vit.load(cache_dir=cache)
    return cache, d, digits_vit.load(cache_dir=cache)


def test_training_reaches_95_percent_held_out_and_is_cached(trained):
    cache, d, again = trained
    assert d.trained and not again.trained
    assert d.float_accuracy >= 0.95 and again.float_accuracy == d.float_accuracy
    assert d.x_test.shape == (360, 1, 8, 8)
    # the cached float ONNX computes the cached weights' numpy forward on the held-out images
    p = digits_vit.weights(cache)
    proto = onnx.load(str(digits_vit.paths(cache, digits_vit.DEFAULT_QUANTIZER)[0]))
    logits = _ort(proto, d.x_test)
    np.testing.assert_allclose(logits, digits_vit.forward({k: v.astype(np.float64) for k, v in p.items()},
                                                          d.x_test)[0], atol=1e-4)
    assert float((logits.argmax(1) == d.y_test).mean()) == pytest.approx(d.float_accuracy)


def test_on_the_accelerator_bit_exact_with_every_layer_offloaded(trained):
    from graph.run import ModelCase, run_model

    cache, d, _ = trained
    n = 24
    result = run_model(ModelCase("digits-vit", d.qdq, d.x_test[:n], d.y_test[:n]), "1x8x8")
    j = result.to_json()
    assert j["logits_identical"] and j["verified"]
    assert j["accuracy_vta"] == j["accuracy_cpu"] >= 0.9
    ops = {r["op"] for r in j["layers"]}
    kinds = {kind for op in ops for kind in op.split("+")}      # a fused layer (graph.fusion) is its parts
    assert {"conv2d", "dense", "matmul", "softmax", "layer_norm", "gelu", "add", "mean"} <= kinds
    assert [r["op"] for r in j["layers"] if r["target"] != "vta"] == []
    # the int8 model's answers are the float model's (the numpy forward, independent of the toolkit)
    p = digits_vit.weights(cache)
    float_answers = digits_vit.forward({k: v.astype(np.float64) for k, v in p.items()}, d.x_test[:n])[0].argmax(1)
    assert (result.logits_vta.argmax(1) == float_answers).mean() >= 0.9


def test_untrained_weights_run_bit_exact_with_every_layer_offloaded():
    """The layers and the bits without the 20 s of training (the trained model's run, with its
    accuracy, is the slow tier's test above): perturbed initial weights, calibrated on digits
    images by the model's own quantiser."""
    from graph.models.digits import load_data
    from graph.quantize import quantizer_named
    from graph.run import ModelCase, run_model

    rng = np.random.default_rng(8)
    p = {k: (v + 0.1 * rng.standard_normal(v.shape)).astype(np.float32)
         for k, v in digits_vit.init_params(np.random.default_rng(digits_vit.SEED)).items()}
    x_train, x_test, _, y_test = load_data()
    qdq = quantizer_named(digits_vit.DEFAULT_QUANTIZER)(digits_vit.float_model(p), x_train[:64])
    result = run_model(ModelCase("digits-vit", qdq, x_test[:8], y_test[:8]), "1x8x8")
    j = result.to_json()
    assert j["logits_identical"] and j["verified"]
    kinds = {kind for r in j["layers"] for kind in r["op"].split("+")}      # a fused layer is its parts
    assert {"conv2d", "dense", "matmul", "softmax", "layer_norm", "gelu", "add", "mean"} <= kinds
    assert [r["op"] for r in j["layers"] if r["target"] != "vta"] == []


def test_the_cli_runs_it_and_reports_the_accuracies(trained, monkeypatch, capsys):
    """`vta-sim model digits-vit --compare-onnxruntime` on every held-out image (slow tier)."""
    from vta_sim.cli import main

    cache, d, _ = trained
    monkeypatch.setattr(digits_vit, "models_dir", lambda: cache)
    assert main(["model", "digits-vit", "--compare-onnxruntime", "--quiet"]) == 0
    out = capsys.readouterr().out
    import re
    assert "digits ViT from" in out and re.search(r"(\d+) of \1 layers on the accelerator", out)
    line = next(s for s in out.splitlines() if s.strip().startswith("accuracy"))
    cpu, vta, ort = (float(line.split(word)[1].split()[0]) for word in ("cpu", "vta", "onnxruntime"))
    assert cpu == vta >= 0.95 and abs(ort - vta) <= 0.01
