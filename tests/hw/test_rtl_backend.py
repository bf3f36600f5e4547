"""`--backend rtl`: the runtime and the CLI run programs on the Verilated RTL like on vta_sim."""
import json
import os

import numpy as np
import pytest

from vta_sim.blocked_gemm import blocked_gemm, random_operands
from programs import image_with
from rtl_programs import chain_programs
from vta_sim import Config, cli, isa
from vta_sim.backends import get_backend
from vta_sim.runtime import Runtime


def _numpy_gemm(a, w, shift):
    """int64 reference, independent of the simulator: clip((A . W^T) >> shift) in packed layout."""
    mb, kb, b, bi = a.shape
    nb, _, bo, _ = w.shape
    a2 = a.transpose(0, 2, 1, 3).reshape(mb * b, kb * bi).astype(np.int64)
    w2 = w.transpose(0, 2, 1, 3).reshape(nb * bo, kb * bi).astype(np.int64)
    c = np.clip((a2 @ w2.T) >> 6, -128, 127).astype(np.int8)
    return c.reshape(mb, b, nb, bo).transpose(0, 2, 1, 3)


def test_runtime_blocked_gemm_on_rtl_matches_numpy():
    cfg = Config.load("1x8x8")
    a, w = random_operands(cfg, 2 * cfg.BATCH, 3 * cfg.BLOCK_IN, 2 * cfg.BLOCK_OUT, seed=5)
    got, res = blocked_gemm(Runtime(cfg, backend="rtl"), a, w, shift=6, vthreads=2, tiles=(1, 1))
    assert np.array_equal(got, _numpy_gemm(a, w, 6))
    _, ref = blocked_gemm(Runtime(cfg, backend="sim"), a, w, shift=6, vthreads=2, tiles=(1, 1))
    assert res.backend == "rtl" and res.cycles == ref.cycles


def test_cli_run_with_backend_rtl_writes_what_the_simulator_writes(tmp_path, capsys):
    cfg = Config.load("1x8x8")
    name, image, addr, count = chain_programs(cfg)[-1]
    path = tmp_path / "prog.bin"
    image.tofile(path)
    outs = {}
    for backend in ("sim", "rtl"):
        out, stats = tmp_path / f"{backend}.bin", tmp_path / f"{backend}.json"
        assert cli.main(["run", str(path), "--insn-addr", str(addr), "--insn-count", str(count),
                         "--config", cfg.name, "--backend", backend, "--out", str(out),
                         "--stats", str(stats)]) == 0
        outs[backend] = (out.read_bytes(), json.loads(stats.read_text()))
    assert outs["rtl"] == outs["sim"]
    assert "(rtl)" in capsys.readouterr().out


def test_backend_leaves_the_callers_image_untouched():
    cfg = Config.load("1x8x8")
    image, addr, count = image_with(cfg, [isa.FinishInsn()])
    before = image.copy()
    res = get_backend("rtl", cfg).run(image, insn_addr=addr, insn_count=count)
    assert np.array_equal(image, before) and res.dram is not image


def _program_file(cfg, tmp_path):
    name, image, addr, count = chain_programs(cfg)[0]
    path = tmp_path / "prog.bin"
    image.tofile(path)
    return path, image, addr, count


def test_hw_run_with_backpressure_compares_and_writes_dram(tmp_path):
    from vta_sim import Simulator
    cfg = Config.load("1x8x8")
    path, image, addr, count = _program_file(cfg, tmp_path)
    out = tmp_path / "out.bin"
    assert cli.main(["hw", "run", str(path), "--insn-addr", str(addr), "--insn-count", str(count),
                     "--backpressure", "3", "--compare", "--out", str(out), "--workdir", str(tmp_path / "w")]) == 0
    assert np.array_equal(np.fromfile(out, np.uint8), Simulator(cfg).run(image, addr, count).dram)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("VTA_HW_SLOW"), reason="builds a tracing model; set VTA_HW_SLOW=1")
def test_hw_run_dumps_waves(tmp_path):
    cfg = Config.load("1x8x8")
    path, image, addr, count = _program_file(cfg, tmp_path)
    waves = tmp_path / "fail.fst"
    assert cli.main(["hw", "run", str(path), "--insn-addr", str(addr), "--insn-count", str(count),
                     "--waves", str(waves), "--workdir", str(tmp_path / "w")]) == 0
    dumped = list(tmp_path.glob("fail.*"))
    assert dumped and dumped[0].stat().st_size > 10_000


def test_the_alu_softmax_on_rtl_equals_the_simulator():
    """The integer softmax's ALU program (schedules.vta_softmax: MAX/ADD trees, shifts by a
    tensor operand, the restoring division, REQ with a broadcast multiplier) on the Verilated
    RTL: the simulator's bits and cycles, and the numpy form's bits."""
    from requantisation import softmax as sm
    from schedules.vta_softmax import softmax_kernel
    cfg = Config.load("1x8x8")
    p = sm.choose(0.04, 1 / 127, 0, 16)
    kernel = softmax_kernel(cfg, 12, p)
    x = np.random.default_rng(0).integers(-128, 128, (12, 16)).astype(np.int8)
    got, res = kernel(x, backend="rtl")
    want, ref = kernel(x)
    assert np.array_equal(got, want) and np.array_equal(got, sm.reference(x, p))
    assert res.backend == "rtl" and res.cycles == ref.cycles


@pytest.mark.parametrize("width", [16, 768])
def test_the_alu_layer_norm_on_rtl_equals_the_simulator(width):
    """The integer LayerNorm's ALU program (the sums, the variance's normalisation, the integer
    square root, the division, per-element G_i and B_i, REQ by 1) on the Verilated RTL: the
    simulator's bits and cycles, and the numpy form's bits; BERT-base's 768 with G_i and B_i
    streamed through ACC a tile."""
    from requantisation import layer_norm as ln
    from schedules.vta_layer_norm import layer_norm_kernel
    cfg = Config.load("1x8x8")
    rng = np.random.default_rng(1)
    p = ln.choose(0.04, rng.uniform(0.5, 1.5, width), rng.normal(0, 0.2, width), 1e-5, 0.03, 2)
    kernel = layer_norm_kernel(cfg, 10, p)
    x = rng.integers(-60, 60, (10, width)).astype(np.int8)
    got, res = kernel(x, backend="rtl")
    want, ref = kernel(x)
    assert np.array_equal(got, want) and np.array_equal(got, ln.reference(x, p))
    assert res.backend == "rtl" and res.cycles == ref.cycles


def test_scores_with_their_mask_and_softmax_in_one_program_on_rtl_equal_the_simulator():
    """graph.fusion's Q.K^T program: S^T = K.Q^T on the GEMM core, the mask added per key (a row
    vector input, RowAddStep) and the softmax over interleaved row groups on its accumulator, on
    the Verilated RTL: the simulator's bits and cycles, and the numpy steps' bits."""
    from requantisation import multiply_shift, rule, softmax as sm
    from requantisation.add import choose_req_sum, req_sum_ref
    from schedules.fused_epilogue import RowAddStep, SoftmaxStep, dense_epilogue_kernel
    cfg = Config.load("1x8x8")
    keys, d, queries = 24, 16, 16
    rng = np.random.default_rng(3)
    p = sm.choose(0.05, 1 / 256, -128, keys)
    add = choose_req_sum([1.0, 0.5], (0, -3), 2)
    requant, mult = multiply_shift.choose(np.full(queries, 0.003), 0, -128, 127)
    k_rows, q_rows = (rng.integers(-128, 128, (n, d)).astype(np.int8) for n in (keys, queries))
    mask = np.where(rng.random(keys) < 0.3, -128, 0).astype(np.int8)
    kernel = dense_epilogue_kernel(cfg, keys, d, queries, requant, (RowAddStep(cfg, add, keys), SoftmaxStep(cfg, p)))
    args = (k_rows, q_rows, np.zeros(queries, np.int32), mult, (mask.astype(np.int64) + 3) * add.factors[1])
    got, res = kernel(*args, backend="rtl")
    want, ref = kernel(*args)
    scores = rule.reference(q_rows.astype(np.int64) @ k_rows.T.astype(np.int64), requant, (mult[:1],), axis=-1)
    steps = sm.reference(req_sum_ref([scores, np.broadcast_to(mask, scores.shape)], add), p)
    assert np.array_equal(got, want) and np.array_equal(got.T, steps)
    assert res.backend == "rtl" and res.cycles == ref.cycles


def test_probabilities_stored_transposed_through_dram_on_rtl_equal_the_simulator():
    """The scores' program with the transposed store (schedules.block_transpose): the softmax's
    tile goes to a scratch tensor of the program, comes back as WGT blocks (the load waits for
    the store through a compute op) and the GEMM writes it transposed. On the Verilated RTL with
    its AXI memory: the simulator's bits and cycles; 21 keys (the last block's missing rows read
    as zeros) and 3 query groups in one tile."""
    from requantisation import multiply_shift, rule, softmax as sm
    from schedules.fused_epilogue import SoftmaxStep, dense_epilogue_kernel
    cfg = Config.load("1x8x8")
    keys, d, queries = 21, 16, 24
    rng = np.random.default_rng(5)
    p = sm.choose(0.05, 1 / 256, -128, keys)
    requant, mult = multiply_shift.choose(np.full(queries, 0.003), 0, -128, 127)
    k_rows, q_rows = (rng.integers(-128, 128, (n, d)).astype(np.int8) for n in (keys, queries))
    kernel = dense_epilogue_kernel(cfg, keys, d, queries, requant, (SoftmaxStep(cfg, p),), transpose=True)
    args = (k_rows, q_rows, np.zeros(queries, np.int32), mult)
    got, res = kernel(*args, backend="rtl")
    want, ref = kernel(*args)
    scores = rule.reference(q_rows.astype(np.int64) @ k_rows.T.astype(np.int64), requant, (mult[:1],), axis=-1)
    assert np.array_equal(got, want) and np.array_equal(got, sm.reference(scores, p))
    assert res.backend == "rtl" and res.cycles == ref.cycles and kernel.tiles.cols > 1


def test_a_dense_transposed_into_weight_blocks_on_rtl_equals_the_simulator():
    """Attention's V projection as graph.codegen.chain_regions compiles it: tiles of one column
    block and 8 rows, each tile stored to the program's scratch and transposed by the GEMM into
    8 x 8 weight blocks, the round trip behind the next tile's GEMM, a shorter last tile (3 of 19
    rows) in a slot of its own. On the Verilated RTL: the simulator's bits and cycles."""
    from requantisation.rule import PowerOfTwo
    from schedules import vta_dense as vd
    from schedules.fused_epilogue import dense_epilogue_kernel
    cfg = Config.load("1x8x8")
    rng = np.random.default_rng(11)
    x, w = rng.integers(-128, 128, (19, 16)).astype(np.int8), rng.integers(-128, 128, (16, 16)).astype(np.int8)
    b = rng.integers(-300, 300, 16).astype(np.int32)
    import schedules.fused_epilogue as fe
    chosen = fe._dense_tiles
    try:
        fe._dense_tiles = lambda *a, **k: vd.DenseTiles(rows=8, cols=1, k_blocks=2, vthreads=1, split="n")
        kernel = dense_epilogue_kernel(cfg, 19, 16, 16, PowerOfTwo(8), (), one_block=True, transpose=True,
                                       weight_blocks=True)
    finally:
        fe._dense_tiles = chosen
    got, res = kernel(x, w, b, backend="rtl")
    stored = kernel.last_packed.copy()
    want, ref = kernel(x, w, b)
    assert np.array_equal(got, want) and np.array_equal(stored, kernel.last_packed)
    assert res.backend == "rtl" and res.cycles == ref.cycles


def test_a_dense_with_its_residual_add_and_layer_norm_on_rtl_equals_the_simulator():
    """A post-norm block's dense computed transposed, its bias add, the residual add and the
    LayerNorm on the dense's accumulator (schedules.dense_layer_norm): 20 tokens in tiles of two
    column blocks (two row groups interleaved, a padded last tile), the residual's columns loaded
    per tile. On the Verilated RTL: the simulator's bits and cycles."""
    from requantisation import layer_norm as ln
    from requantisation import multiply_shift
    from requantisation.add import choose_req_sum
    from schedules.dense_layer_norm import dense_add_layer_norm_kernel
    cfg = Config.load("1x8x8")
    rng = np.random.default_rng(5)
    tokens, k, d = 20, 24, 32
    x, r = rng.integers(-128, 128, (tokens, k)).astype(np.int8), rng.integers(-90, 90, (tokens, d)).astype(np.int8)
    w, b = rng.integers(-128, 128, (d, k)).astype(np.int8), rng.integers(-5000, 5000, d).astype(np.int32)
    requant, mult = multiply_shift.choose(np.full(d, 0.002), 3, -128, 127)
    p = ln.choose(0.04, rng.uniform(0.5, 1.5, d), rng.normal(0, 0.2, d), 1e-5, 0.03, -3)
    badd = choose_req_sum([0.9, 0.013], (-7, -2), -8)
    bias_add = (badd, (rng.integers(-128, 128, d) + 2) * badd.factors[1])
    kernel = dense_add_layer_norm_kernel(cfg, tokens, k, d, requant, choose_req_sum([0.7, 0.45], (3, -5), 1), 1, p,
                                         (bias_add,))
    assert kernel.tiles.cols > 1
    got, res = kernel(x, r, w, b, mult, backend="rtl")
    want, ref = kernel(x, r, w, b, mult)
    assert np.array_equal(got, want)
    assert res.backend == "rtl" and res.cycles == ref.cycles


def test_the_alu_gelu_on_rtl_equals_the_simulator():
    """The GELU chain's ALU program (the erf polynomial, three REQs from constant entries) on the
    Verilated RTL, over all 256 int8 inputs: the simulator's bits and cycles."""
    from requantisation import gelu as ge
    from schedules.vta_gelu import gelu_kernel
    cfg = Config.load("1x8x8")
    p = ge.choose(ge.GeluChain(0.05, 5, 1.4142135, 1 / 127, 3, 1.0, 2 / 127, -4, 0.07, 2, 0.5, 0.05, 3))
    x = np.arange(-128, 128, dtype=np.int8).reshape(16, 16)
    kernel = gelu_kernel(cfg, x.shape, p)
    got, res = kernel(x, backend="rtl")
    want, ref = kernel(x)
    assert np.array_equal(got, want) and np.array_equal(got, ge.reference(x, p))
    assert res.backend == "rtl" and res.cycles == ref.cycles


def test_a_whole_encoder_layer_on_rtl_equals_the_simulator():
    """The built-in encoder (one post-norm layer: Q/K/V, Q.K^T, softmax, weights.V, the output
    projection, residual adds, two LayerNorms, the GELU feed-forward, the classifier) with every
    layer but the mean over tokens on VTA-8, on the Verilated RTL: each layer's cycles and the
    logits are the simulator's, and bit-exact with the CPU build."""
    from graph.run import load_case, run_model
    case = load_case("encoder", quantizer="onnxruntime-symmetric")
    rtl, sim = (run_model(case, "1x8x8", backend=b) for b in ("rtl", "sim"))
    assert rtl.verified and rtl.logits_identical and rtl.backend == "rtl"
    kinds = {kind for r in rtl.layers if r["target"] == "vta" for kind in r["op"].split("+")}   # fused: its parts
    assert kinds >= {"softmax", "layer_norm", "gelu", "matmul"}
    assert [(r["name"], r["cycles"]) for r in rtl.layers] == [(r["name"], r["cycles"]) for r in sim.layers]
    np.testing.assert_array_equal(rtl.logits_vta, sim.logits_vta)


def test_an_attention_block_chained_through_dram_on_rtl_equals_the_simulator():
    """BERT's attention block at 64 tokens (graph.codegen.chain_regions): Q stored as S^T's
    weight blocks, K's columns loaded as stored, P and V^T transposed by the GEMM core, the heads
    merged into the output projection's rows. On the Verilated RTL: every layer's cycles and the
    logits are the simulator's, each layer bit-exact, every link made."""
    from attention_models import attention_scores_graph
    from graph.quantize import quantizer_named
    from graph.run import ModelCase, run_model
    rng = np.random.default_rng(9)

    def sample(n):
        x = rng.standard_normal((n, 64, 16)).astype(np.float32)
        return {"input": x, "mask": np.where(rng.random((n, 1, 1, 64)) < 0.25, -10.0, 0.0).astype(np.float32)}
    qdq = quantizer_named("onnxruntime-symmetric")(attention_scores_graph(64, softmax=True, mask=True, values=True),
                                                   sample(8))
    case = ModelCase("attention", qdq, sample(1))
    rtl, sim = (run_model(case, "1x8x8", backend=b) for b in ("rtl", "sim"))
    assert rtl.verified and rtl.logits_identical and rtl.backend == "rtl"
    assert sum(len(r.get("inputs_stored", ())) for r in rtl.layers) == 4
    assert [(r["name"], r["cycles"]) for r in rtl.layers] == [(r["name"], r["cycles"]) for r in sim.layers]
    np.testing.assert_array_equal(rtl.logits_vta, sim.logits_vta)


def test_matmuls_with_zero_points_on_rtl_equal_the_simulator():
    """Attention's matmuls quantised by onnxruntime's defaults (zero points on both operands: the
    dense kernel's per-row term) run on the Verilated RTL with the simulator's cycles, bit-exact."""
    from graph.quantize import quantizer_named
    from graph.run import ModelCase, run_model
    from attention_models import attention
    rng = np.random.default_rng(1)
    qdq = quantizer_named("onnxruntime")(attention(), rng.standard_normal((16, 4, 8)).astype(np.float32))
    case = ModelCase("attention", qdq, rng.standard_normal((1, 4, 8)).astype(np.float32))
    rtl, sim = (run_model(case, "1x8x8", backend=b) for b in ("rtl", "sim"))
    assert rtl.verified and rtl.logits_identical
    assert [r["target"] for r in rtl.layers if r["op"] == "matmul"] == ["vta", "vta"]
    assert [(r["name"], r["cycles"]) for r in rtl.layers] == [(r["name"], r["cycles"]) for r in sim.layers]


def test_the_alu_ramps_of_tanh_on_rtl_equal_the_simulator():
    """Tanh as its exact sum of ramps (graph.ops.univariate) on the Verilated RTL: the simulator's
    bits and cycles, and onnxruntime's QDQ table."""
    from requantisation import univariate as uv
    from schedules.vta_univariate import univariate_kernel
    cfg = Config.load("1x8x8")
    p = uv.choose("tanh", 0.05, -10, 1 / 128, 0)
    kernel = univariate_kernel(cfg, (3, 40), p)
    x = np.random.default_rng(2).integers(-128, 128, (3, 40)).astype(np.int8)
    got, res = kernel(x, backend="rtl")
    want, ref = kernel(x)
    assert np.array_equal(got, want) and np.array_equal(got.astype(np.int64), uv.table("tanh", 0.05, -10, 1 / 128, 0)[x.astype(np.int64) + 128])
    assert res.backend == "rtl" and res.cycles == ref.cycles


@pytest.mark.parametrize("form", ["pool in place, DMA padded", "pool 3x3/1, two threads", "add on the GEMM core",
                                  "power-of-two conv as REQ"])
def test_the_op_by_op_kernels_on_rtl_equal_the_simulator(form):
    """The separable max-pool (in place and through its own region), the power-of-two add on
    the GEMM core and the power-of-two epilogue as REQ on the Verilated RTL: the simulator's
    bits and cycles, and the numpy references' bits."""
    from requantisation import PowerOfTwo, rule
    from requantisation.add import add_ref
    from schedules import vta_ops, vta_workloads
    from schedules.vta_eltwise import add_kernel
    from schedules.vta_pool import max_pool_kernel, max_pool_ref
    cfg = Config.load("1x8x8")
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 16, 9, 9)).astype(np.int8)
    if form == "pool in place, DMA padded":
        kernel, args, ref = max_pool_kernel(cfg, 1, 16, 9, 9, 3, 2, 1), (x,), max_pool_ref(x, 3, 2, 1)
    elif form == "pool 3x3/1, two threads":
        x = x[:, :, :8, :8]
        kernel, args, ref = max_pool_kernel(cfg, 1, 16, 8, 8, 3, 1, 0, vthreads=2), (x,), max_pool_ref(x, 3, 1, 0)
    elif form == "add on the GEMM core":
        a, b = (rng.integers(-128, 128, (1, 24, 9, 11)).astype(np.int8) for _ in range(2))
        kernel, args, ref = add_kernel(cfg, 1, 24, 9, 11, 1, 0, 1, 0, 127), (a, b), add_ref(a, b, 1, 0, 1, 0, 127)
        assert kernel.tiles["core"] == "gemm"
    else:
        d = rng.integers(-128, 128, (1, 16, 6, 6)).astype(np.int8)
        w = rng.integers(-128, 128, (16, 16, 3, 3)).astype(np.int8)
        bias = rng.integers(-5000, 5000, 16).astype(np.int32)
        r = PowerOfTwo(9, 0, 127)
        kernel, args = vta_ops.conv2d_kernel(cfg, 1, 6, 6, 16, 16, 3, 1, 1, r), (d, w, bias)
        ref = rule.reference(vta_workloads.conv2d_acc(d, w, bias, 1, 1), r)
    got, res = kernel(*args, backend="rtl")
    want, sim = kernel(*args)
    assert np.array_equal(got, want) and np.array_equal(got, ref)
    assert res.cycles == sim.cycles
