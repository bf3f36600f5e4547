"""Forms torchvision's exporters write that the hand-built models of test_graph.py do not."""
import numpy as np

from graph.models.onnx_builder import OnnxBuilder
from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model


def test_a_mean_over_h_and_w_without_keepdims_is_a_global_pool_on_the_accelerator():
    """MnasNet ends in x.mean([2, 3]): ReduceMean(axes=[2, 3], keepdims=0), then the Gemm."""
    rng = np.random.default_rng(7)
    b = OnnxBuilder("mean", (1, 3, 8, 8))
    x = b.relu(b.conv("input", rng.normal(0, .3, (16, 3, 3, 3)), rng.normal(0, .1, 16), pad=1))
    y = b.node("ReduceMean", [x], axes=[2, 3], keepdims=0)
    model = b.build(b.dense(y, rng.normal(0, .3, (5, 16)), rng.normal(0, .1, 5)))
    qdq = quantizer_named("onnxruntime")(model, rng.random((8, 3, 8, 8), dtype=np.float32))
    result = run_model(ModelCase("mean", qdq, rng.random((2, 3, 8, 8), dtype=np.float32)), "1x8x8",
                       compare_onnxruntime=True)
    pool = next(r for r in result.layers if r["op"] == "avg_pool")
    assert pool["target"] == "vta" and pool["shape"].startswith("8x8/1 dw 16->16")
    assert pool["onnxruntime"]["max_abs_lsb"] <= 1 and pool["onnxruntime"]["identical_fraction"] > 0.9
    assert result.verified and all(r["target"] == "vta" for r in result.layers)
