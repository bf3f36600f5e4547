"""Concats written in place on VTA-8 (graph.ops.concat.ConcatSpec, graph.inplace) in the shapes
torchvision's exporters write: GoogLeNet's inception block, DenseNet's growing dense block,
ShuffleNetV2's concat of halves; quantised by onnxruntime's quantize_static (QDQ: every Concat
input with its own scale), bit-exact against the CPU build and each layer against onnxruntime;
at batch 1 every slice is stored by a program's STORE into the Concat's one DRAM tensor."""
import numpy as np
import pytest
from onnx import numpy_helper

from graph import inplace
from graph.errors import GraphError
from graph.models.onnx_builder import OnnxBuilder
from graph.quantize import quantizer_named
from graph.run import ModelCase, run_model
from graph.ops.concat import ConcatSpec
from requantisation.add import add_ref
from schedules import vta_eltwise
from vta_sim import isa
from vta_sim import packing as pk
from vta_sim.config import MEM_OUT, Config
from vta_sim.errors import RuntimeAPIError
from vta_sim.runtime import OutputView


def _conv_relu(b, rng, x, ic, oc, k=1):
    return b.relu(b.conv(x, rng.normal(0, 1 / np.sqrt(ic * k * k), (oc, ic, k, k)), rng.normal(0, .1, oc),
                         pad=k // 2))


def _inception(rng):
    """GoogLeNet's block: four branches (1x1; 1x1 then 3x3; 1x1 then 3x3; max-pool then 1x1)
    concatenated, 16+24+8+8 channels, then a conv reading the concat."""
    b = OnnxBuilder("inception", (1, 8, 6, 6))
    x = _conv_relu(b, rng, "input", 8, 16)
    one = _conv_relu(b, rng, x, 16, 16)
    three = _conv_relu(b, rng, _conv_relu(b, rng, x, 16, 8), 8, 24, 3)
    five = _conv_relu(b, rng, _conv_relu(b, rng, x, 16, 8), 8, 8, 3)
    pool = _conv_relu(b, rng, b.max_pool(x, 3, 1, 1), 16, 8)
    y = b.node("Concat", [one, three, five, pool], axis=1)
    y = _conv_relu(b, rng, y, 56, 16)
    return b.build(b.dense(b.flatten(b.global_avg_pool(y)), rng.normal(0, .3, (5, 16)), rng.normal(0, .1, 5)))


def _dense_block(rng):
    """DenseNet's block as torch exports it: each layer concatenates every feature so far
    (a Concat per layer, growing by 8 channels), then the transition conv."""
    b = OnnxBuilder("denseblock", (1, 8, 6, 6))
    features = [_conv_relu(b, rng, "input", 8, 16)]
    for _ in range(3):
        x = b.node("Concat", list(features), axis=1) if len(features) > 1 else features[0]
        channels = 16 + 8 * (len(features) - 1)
        features.append(_conv_relu(b, rng, _conv_relu(b, rng, x, channels, 16), 16, 8, 3))
    y = _conv_relu(b, rng, b.node("Concat", features, axis=1), 40, 16)
    return b.build(b.dense(b.flatten(b.global_avg_pool(y)), rng.normal(0, .3, (5, 16)), rng.normal(0, .1, 5)))


def _halves(rng, cut: int = 8):
    """ShuffleNetV2's unit after quant_pre_process: constant-bound Slices of the input, the
    second part through a conv, the parts concatenated (the channel shuffle's Reshape/Transpose
    after it)."""
    b = OnnxBuilder("halves", (1, 8, 6, 6))
    x = _conv_relu(b, rng, "input", 8, 16)
    b.inits += [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in
                (("zero", [0]), ("one", [1]), ("cut", [cut]), ("sixteen", [16]))]
    left = b.node("Slice", [x, "zero", "cut", "one"])
    right = _conv_relu(b, rng, b.node("Slice", [x, "cut", "sixteen", "one"]), 16 - cut, 16 - cut)
    y = b.node("Concat", [left, right], axis=1)
    y = _conv_relu(b, rng, y, 16, 16)
    return b.build(b.dense(b.flatten(b.global_avg_pool(y)), rng.normal(0, .3, (5, 16)), rng.normal(0, .1, 5)))


MODELS = {"inception": _inception, "dense_block": _dense_block, "halves": _halves}


@pytest.fixture(scope="module", params=sorted(MODELS))
def run(request):
    rng = np.random.default_rng(3)
    model = MODELS[request.param](rng)
    qdq = quantizer_named("onnxruntime")(model, rng.random((8, 8, 6, 6), dtype=np.float32))
    return run_model(ModelCase(request.param, qdq, rng.random((2, 8, 6, 6), dtype=np.float32)), "1x8x8",
                     compare_onnxruntime=True)


def test_every_concat_runs_on_the_accelerator_bit_exact(run):
    concats = [r for r in run.layers if r["op"] == "concat"]
    assert concats and all(r["target"] == "vta" for r in concats), [r.get("reason") for r in concats]
    assert run.verified and all(r["verified"] for r in concats)


def test_each_concat_alone_agrees_with_onnxruntime(run):
    for r in (r for r in run.layers if r["op"] == "concat"):
        assert r["onnxruntime"]["identical_fraction"] == 1.0, r
    assert run.onnxruntime["max_abs_lsb"] <= 1


def test_a_slice_that_does_not_start_on_a_channel_block_stays_on_the_cpu_naming_why():
    """4 + 12 channels: the second input's slice starts at channel 4, inside the first block of
    8, so no producer can store it in place; the Concat stays on the CPU with that reason, and
    the model still matches its CPU build."""
    rng = np.random.default_rng(3)
    qdq = quantizer_named("onnxruntime")(_halves(rng, cut=4), rng.random((8, 8, 6, 6), dtype=np.float32))
    result = run_model(ModelCase("quarter", qdq, rng.random((2, 8, 6, 6), dtype=np.float32)), "1x8x8")
    (concat,) = (r for r in result.layers if r["op"] == "concat")
    assert concat["target"] == "cpu" and "starts at channel 4, not a multiple of the 8-channel block" in concat["reason"]
    assert result.verified


def test_the_last_input_may_end_inside_a_block():
    """Only the slices' starts must be whole blocks: the output's padding lanes take a last
    input's partial block."""
    cfg = Config.load("1x8x8")
    assert ConcatSpec(((1, 8, 4, 4), (1, 12, 4, 4)), (None, None)).misfit(cfg, 2) is None
    assert "input 2 starts at channel 20" in ConcatSpec(((1, 8, 4, 4), (1, 12, 4, 4), (1, 8, 4, 4)),
                                                        (None, None, None)).misfit(cfg, 2)


@pytest.mark.parametrize("name", ["inception", "halves"])
def test_at_batch_1_every_slice_is_stored_by_a_program_and_the_host_copies_none(name, monkeypatch):
    """Producers on VTA-8 store their outputs into their slices of the Concat's tensor, rescaled
    inputs' programs theirs; the host places no slice (ConcatPlacement.place never runs), yet the
    Concat equals its reference: the slices came from the STOREs."""
    placed = []
    monkeypatch.setattr(inplace.ConcatPlacement, "place", lambda self, j, x: placed.append(j))
    rng = np.random.default_rng(3)
    qdq = quantizer_named("onnxruntime")(MODELS[name](rng), rng.random((8, 8, 6, 6), dtype=np.float32))
    result = run_model(ModelCase(name, qdq, rng.random((1, 8, 6, 6), dtype=np.float32)), "1x8x8")
    (concat,) = (r for r in result.layers if r["op"] == "concat")
    writers = [s["writer"] for s in concat["slices"]]
    assert inplace.PRODUCER in writers and inplace.HOST not in writers, concat["slices"]
    assert placed == [] and concat["verified"] and result.verified


def test_at_batch_2_the_host_places_the_slices_naming_why(run):
    for r in (r for r in run.layers if r["op"] == "concat"):
        assert all(s["writer"] == inplace.HOST and s["reason"].startswith("batch of 2 blocks") for s in r["slices"])


def test_a_program_stores_its_output_into_its_slice_of_a_larger_tensor_and_nowhere_else():
    """An add stored at channel block 1 of a 3-block tensor: its STOREs address only that slice
    of the tensor in the program's DRAM image; the other blocks keep their bytes."""
    cfg = Config.load("1x8x8")
    kernel = vta_eltwise.add_kernel(cfg, 1, 8, 6, 6, 1, 0, 1)
    rng = np.random.default_rng(0)
    a, b = (rng.integers(-128, 128, (1, 8, 6, 6), dtype=np.int8) for _ in range(2))
    tensor = np.full((1, 3, 6, 6, 1, 8), 77, np.int8)
    y, _ = kernel(a, b, out=OutputView(tensor, 6 * 6 * 8))
    want = add_ref(a, b, 1, 0, 1)
    assert np.array_equal(y, want) and np.array_equal(pk.unpack_nchw(tensor[:, 1:2]), want)
    assert (tensor[:, [0, 2]] == 77).all()
    (index,) = kernel.kernel.outputs
    program = kernel.kernel.program_for({index: OutputView(tensor, 6 * 6 * 8)})
    ((_, whole),), (slice_,) = program.wholes, program.outputs
    elem = cfg.dram_elem_bytes(MEM_OUT)
    assert whole.shape == tensor.shape and slice_.byte_addr == whole.byte_addr + 6 * 6 * elem
    stores = [i for i in program.instructions if i.opcode == isa.OP_STORE and i.y_size * i.x_size]
    assert stores
    for i in stores:
        assert slice_.byte_addr <= i.dram_base * elem and \
            (i.dram_base + (i.y_size - 1) * i.x_stride + i.x_size) * elem <= slice_.byte_addr + slice_.nbytes


def test_a_view_that_does_not_fit_its_tensor_is_refused():
    cfg = Config.load("1x8x8")
    kernel = vta_eltwise.add_kernel(cfg, 1, 8, 6, 6, 1, 0, 1)
    a = np.zeros((1, 8, 6, 6), np.int8)
    with pytest.raises(RuntimeAPIError, match="not whole DRAM elements inside"):
        kernel(a, a, out=OutputView(np.zeros((1, 3, 6, 6, 1, 8), np.int8), 2 * 6 * 6 * 8 + 8))


def test_a_kernel_whose_output_is_padded_beyond_its_slice_does_not_store_in_place():
    """An add over 5x5 (25 entries) runs two tiles of 13: its 26-entry output would spill into
    the next slice, so its slot is the host's, naming why; over 6x6 (two tiles of 18) it fits."""
    cfg = Config.load("1x8x8")
    padded = inplace.Slot(0, (1, 1, 5, 5, 1, 8)).fits(vta_eltwise.add_kernel(cfg, 1, 8, 5, 5, 1, 0, 1))
    assert "208 bytes" in padded and "holds 200" in padded and "overwrite the next slice" in padded
    assert inplace.Slot(0, (1, 1, 6, 6, 1, 8)).fits(vta_eltwise.add_kernel(cfg, 1, 8, 6, 6, 1, 0, 1)) is None


def test_a_concat_refuses_to_read_a_slice_its_producer_did_not_store_in_this_run():
    placement = inplace.ConcatPlacement.alone(Config.load("1x8x8"), ((1, 8, 2, 2), (1, 8, 2, 2)), (None, None))
    placement.slots[1].writer = inplace.PRODUCER
    with pytest.raises(GraphError, match=r"concat inputs \[1\]: their producers did not store"):
        placement.output()
    placement.stored.add(1)
    assert placement.output().shape == (1, 16, 2, 2)
    with pytest.raises(GraphError, match="did not store"):       # a store counts for one run only
        placement.output()
