"""A dense with its bias add, a scale and a GELU run on its accumulator, in one program
(schedules.fused_epilogue): bit for bit the numpy int64 reference of the dense, then the
requantised constant add or rescale (requantisation.add's REQ sum), then the GELU chain
(requantisation.gelu), for both requantisation forms, padded shapes and one or two threads."""
import numpy as np
import pytest

from intrinsics.calls import Store2D
from requantisation import gelu as ge
from requantisation import multiply_shift, rule
from requantisation.add import choose_req_sum, req_sum_ref
from requantisation.rule import PowerOfTwo
from schedules import vta_ops
from schedules.fused_epilogue import ConstantAddStep, GeluStep, dense_epilogue_kernel, with_epilogue
from vta_sim.config import Config
from vta_sim.simulator import Simulator
from vta_sim.errors import CompileError

CFG = Config.load("1x8x8")
#: A GELU chain with zero points (tests/requantisation/test_gelu.py's second).
CHAIN = ge.GeluChain(0.05, 5, 1.4142135, 1 / 127, 3, 1.0, 2 / 127, -4, 0.07, 2, 0.5, 0.05, 3)


def _case(m, k, n, form, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-3000, 3000, n).astype(np.int32)
    if form == "pow2":
        requant, vectors = PowerOfTwo(9, -128, 127), (bias,)
    else:
        requant, mult = multiply_shift.choose(rng.uniform(0.0005, 0.002, n), 3, -128, 127)
        vectors = (bias, mult)
    acc = x.astype(np.int64) @ w.T.astype(np.int64) + bias
    return x, w, vectors, requant, rule.reference(acc, requant, vectors[1:], axis=-1)


@pytest.mark.parametrize("m, k, n, form, vthreads", [(16, 64, 128, "pow2", 2), (37, 40, 50, "ms", 2),
                                                     (9, 24, 13, "ms", 1), (64, 32, 96, "ms", 2)])
@pytest.mark.parametrize("epilogue", ["bias", "gelu", "bias+gelu", "bias+scale"])
def test_the_fused_program_equals_the_steps_one_after_another(m, k, n, form, vthreads, epilogue):
    x, w, vectors, requant, y = _case(m, k, n, form, m + n)
    rng = np.random.default_rng(n)
    b = rng.integers(-128, 128, n).astype(np.int8)
    add = choose_req_sum([0.9, 0.013], (-7, -2), -8, -128, 127)
    per_channel = (b.astype(np.int64) - add.zeros[1]) * add.factors[1]
    p = ge.choose(CHAIN)
    steps, want = [], y
    if "bias" in epilogue:
        steps.append(ConstantAddStep(CFG, add, per_channel, -(-n // 8)))
        want = req_sum_ref([want, np.broadcast_to(b, want.shape)], add)
    if "scale" in epilogue:            # a rescale by a constant: no per-channel term
        rescale = choose_req_sum([0.37], (3,), -5, -128, 127)
        steps.append(ConstantAddStep(CFG, rescale, None, -(-n // 8)))
        want = req_sum_ref([want], rescale)
    if "gelu" in epilogue:
        steps.append(GeluStep(CFG, p))
        want = ge.reference(want, p)
    before = [a.copy() for a in (x, w, *vectors)]
    kernel = dense_epilogue_kernel(CFG, m, k, n, requant, tuple(steps), vthreads)
    got, result = kernel(x, w, *vectors)
    assert np.array_equal(got, want)
    assert all(np.array_equal(a, c) for a, c in zip((x, w, *vectors), before))
    assert result.cycles > 0


def test_every_store_reads_the_epilogues_result_and_nothing_more_is_stored():
    """As many output STOREs as the dense alone has, each reading a GELU result buffer above
    every entry the dense uses."""
    x, w, vectors, requant, _ = _case(64, 32, 96, "ms", 1)
    kernel = dense_epilogue_kernel(CFG, 64, 32, 96, requant, (GeluStep(CFG, ge.choose(CHAIN)),))
    dense = vta_ops.dense_kernel(CFG, 64, 32, 96, requant, tiles=kernel.tiles)
    stores = [c for c in kernel.kernel.program.calls if isinstance(c, Store2D)]
    plain = [c for c in dense.kernel.program.calls if isinstance(c, Store2D)]
    assert len(stores) == len(plain) and all(s.sram != d.sram for s, d in zip(stores, plain))


def test_an_epilogue_that_does_not_fit_acc_is_refused():
    _, _, _, requant, _ = _case(64, 64, 64, "ms", 2)
    dense = vta_ops.dense_kernel(CFG, 64, 64, 64, requant)
    huge = ConstantAddStep(CFG, choose_req_sum([0.9, 0.013], (0, 0), 0, -128, 127), np.zeros(64),
                           CFG.buffers["acc"].depth)
    with pytest.raises(CompileError, match="ACC holds"):
        with_epilogue(CFG, dense.kernel, (huge,))


@pytest.mark.parametrize("keys, d, queries, vthreads", [(16, 16, 16, 2), (65, 64, 65, 2), (40, 24, 130, 1)])
def test_the_softmax_runs_on_the_scores_the_transposed_matmul_wrote(keys, d, queries, vthreads):
    """S^T = K.Q^T with the softmax of each query's row (a column of S^T) in the same program:
    bit for bit requantisation.softmax.reference of the scores Q.K^T requantised, rows of any
    length, query blocks padded, the row groups interleaved in the tile's accumulator."""
    from requantisation import softmax as rs
    from schedules.fused_epilogue import SoftmaxStep
    rng = np.random.default_rng(keys)
    p = rs.choose(0.05, 1 / 256, -128, keys)
    k_rows = rng.integers(-128, 128, (keys, d), dtype=np.int8)
    q_rows = rng.integers(-128, 128, (queries, d), dtype=np.int8)
    requant, mult = multiply_shift.choose(np.full(queries, 0.003), 0, -128, 127)
    bias = np.full(queries, 5, np.int32)
    st = rule.reference(k_rows.astype(np.int64) @ q_rows.T.astype(np.int64) + bias, requant, (mult,), axis=-1)
    want = rs.reference(np.ascontiguousarray(st.T), p)
    kernel = dense_epilogue_kernel(CFG, keys, d, queries, requant, (SoftmaxStep(CFG, p),), vthreads)
    got, result = kernel(k_rows, q_rows, bias, mult)
    assert np.array_equal(got.T, want) and kernel.tiles.rows == keys
    assert result.cycles > 0


@pytest.mark.parametrize("keys, d, queries, vthreads, backend", [(16, 16, 16, 2, "sim"), (65, 64, 21, 2, "sim"),
                                                                 (40, 24, 130, 1, "sim"), (13, 8, 9, 2, "reference"),
                                                                 (3, 8, 24, 1, "sim")])
def test_the_probabilities_are_stored_transposed_by_the_gemm(keys, d, queries, vthreads, backend):
    """With `transpose` the program stores P (a query a row, 8 keys an entry: the data layout
    of the attn.V matmul) instead of P^T: the tile goes to a scratch tensor of the program,
    comes back as WGT blocks and the GEMM writes it transposed against the unit vectors. Bit
    for bit the untransposed program's result transposed; key counts not a multiple of 8 read
    zeros in the last block's missing rows, so the stored padding lanes are 0."""
    from requantisation import softmax as rs
    from schedules.fused_epilogue import SoftmaxStep
    rng = np.random.default_rng(keys + queries)
    p = rs.choose(0.05, 1 / 256, -128, keys)
    k_rows = rng.integers(-128, 128, (keys, d), dtype=np.int8)
    q_rows = rng.integers(-128, 128, (queries, d), dtype=np.int8)
    requant, mult = multiply_shift.choose(np.full(queries, 0.003), 0, -128, 127)
    bias = rng.integers(-50, 50, queries).astype(np.int32)
    st = rule.reference(k_rows.astype(np.int64) @ q_rows.T.astype(np.int64) + bias, requant, (mult,), axis=-1)
    want = rs.reference(np.ascontiguousarray(st.T), p)
    kernel = dense_epilogue_kernel(CFG, keys, d, queries, requant, (SoftmaxStep(CFG, p),), vthreads, transpose=True)
    inputs = kernel.pack(k_rows, q_rows, bias, mult)
    engine = Simulator(CFG, engine="reference") if backend == "reference" else backend   # the C engine's twin
    (packed,), result = kernel.kernel(*inputs, backend=engine)
    got = kernel.unpack(packed)
    assert np.array_equal(got, want)
    flat = packed.reshape(packed.shape[0], -1)
    assert not flat[:, keys:].any(), "the padding lanes past the last key are not zero"
    stores = [c for c in kernel.kernel.program.calls if isinstance(c, Store2D)]
    groups = -(-queries // 8)
    assert len(stores) == 2 * -(-groups // kernel.tiles.cols)      # a tile to the scratch, then transposed


def test_a_mask_per_key_is_added_to_the_scores_before_their_softmax():
    """BERT's order: Q.K^T requantised, the mask (one value per key) added and requantised
    (REQ sum of two operands), then the softmax: in S^T's program the mask is a per-row input
    vector (RowAddStep), bit for bit the three steps one after another."""
    from requantisation import softmax as rs
    from schedules.fused_epilogue import RowAddStep, SoftmaxStep
    keys, d, queries = 40, 16, 24
    rng = np.random.default_rng(8)
    p = rs.choose(0.05, 1 / 256, -128, keys)
    k_rows = rng.integers(-128, 128, (keys, d), dtype=np.int8)
    q_rows = rng.integers(-128, 128, (queries, d), dtype=np.int8)
    mask = np.where(rng.random(keys) < 0.3, -128, 0).astype(np.int8)
    add = choose_req_sum([1.0, 0.5], (0, -3), 2, -128, 127)
    requant, mult = multiply_shift.choose(np.full(queries, 0.003), 0, -128, 127)
    bias = np.zeros(queries, np.int32)
    scores = rule.reference(q_rows.astype(np.int64) @ k_rows.T.astype(np.int64), requant, (mult[:1],), axis=-1)
    want = rs.reference(req_sum_ref([scores, np.broadcast_to(mask, scores.shape)], add), p)
    steps = (RowAddStep(CFG, add, keys), SoftmaxStep(CFG, p))
    kernel = dense_epilogue_kernel(CFG, keys, d, queries, requant, steps)
    before = mask.copy()
    per_key = (mask.astype(np.int64) - add.zeros[1]) * add.factors[1]
    got, _ = kernel(k_rows, q_rows, bias, mult, per_key)
    assert np.array_equal(got.T, want) and np.array_equal(mask, before)


@pytest.mark.parametrize("rows, width", [(16, 64), (10, 16), (5, 768)])
def test_the_residual_add_and_its_layer_norm_in_one_program(rows, width):
    """A post-norm block's add (REQ sum of two operands with zero points) computed in ACC, then
    the LayerNorm on it: bit for bit the two references one after the other, BERT-base's 768
    with the LayerNorm's constants streamed."""
    from requantisation import layer_norm as ln
    from schedules.vta_layer_norm import add_layer_norm_kernel
    rng = np.random.default_rng(width)
    p = ln.choose(0.04, rng.uniform(0.5, 1.5, width), rng.normal(0, 0.2, width), 1e-5, 0.03, 2)
    add = choose_req_sum([0.7, 0.45], (3, -5), 1)
    a, b = (rng.integers(-60, 60, (rows, width)).astype(np.int8) for _ in range(2))
    before = (a.copy(), b.copy())
    got, _ = add_layer_norm_kernel(CFG, rows, p, add)(a, b)
    assert np.array_equal(got, ln.reference(req_sum_ref([a, b], add), p))
    assert np.array_equal(a, before[0]) and np.array_equal(b, before[1])


def test_a_dense_runs_on_the_tensor_the_dense_before_stored():
    """OpKernel.run_stored: the second dense takes the first one's packed output as its program
    stored it (`rows_out` into `rows_in`), no host packing of it: the same result as the second
    dense on the first one's plain output; where its tiles take more rows than were stored the
    host pads a copy ("padded"), still the same result."""
    rng = np.random.default_rng(12)
    x = rng.integers(-128, 128, (24, 40), dtype=np.int8)
    w1, w2 = rng.integers(-128, 128, (48, 40), dtype=np.int8), rng.integers(-128, 128, (16, 48), dtype=np.int8)
    b1, b2 = rng.integers(-500, 500, 48).astype(np.int32), rng.integers(-500, 500, 16).astype(np.int32)
    first = vta_ops.dense_kernel(CFG, 24, 40, 48, PowerOfTwo(9))
    second = vta_ops.dense_kernel(CFG, 24, 48, 16, PowerOfTwo(8))
    assert first.rows_out and second.rows_in
    y, _ = first(x, w1, b1)
    want, _ = second(y, w2, b2)
    got, _, how = second.run_stored(first.last_packed, np.zeros_like(y), w2, b2)
    assert np.array_equal(got, want) and how == "as stored"
    short = first.last_packed[:16]                      # fewer rows than the second one's tiles take
    got, _, how = second.run_stored(short, np.zeros_like(y), w2, b2)
    assert how == "padded" and np.array_equal(got[:16], want[:16])


def test_denses_store_into_and_load_from_columns_of_a_wider_tensor():
    """schedules.column_slice: two denses each storing their 16 columns into one (rows, 32)
    tensor kept between their programs (attention's heads merged) give the two outputs side by
    side; a dense loading its data from columns 16..31 of that tensor (a head's K from the K
    projection's rows) gives the dense of those columns. Bit for bit the numpy int64 reference."""
    from intrinsics.calls import Load2D
    from schedules import column_slice
    from vta_sim.runtime import OutputView
    rng = np.random.default_rng(14)
    x = rng.integers(-128, 128, (20, 24), dtype=np.int8)
    ws = [rng.integers(-128, 128, (16, 24), dtype=np.int8) for _ in range(2)]
    b = np.zeros(16, np.int32)
    dense = vta_ops.dense_kernel(CFG, 20, 24, 16, PowerOfTwo(8))
    rows = dense.kernel.params[dense.kernel.outputs[0]][1][0]
    merged = np.zeros((rows, 4, 1, 8), np.int8)
    for h, w in enumerate(ws):
        sliced = column_slice.into_columns(dense.kernel, 4, 2 * h)
        sliced(*dense.pack(x, w, b), views={sliced.outputs[0]: OutputView(merged, 0)})
    want = [vta_ops.dense_kernel(CFG, 20, 24, 16, PowerOfTwo(8))(x, w, b)[0] for w in ws]
    got = np.ascontiguousarray(merged.transpose(0, 2, 1, 3)).reshape(rows, 32)[:20]
    assert np.array_equal(got, np.hstack(want))
    w2 = rng.integers(-128, 128, (8, 16), dtype=np.int8)
    second = vta_ops.dense_kernel(CFG, 20, 16, 8, PowerOfTwo(7))
    reading = column_slice.from_columns(second.kernel, 0, 4, 2)
    data_rows = reading.params[0][1][0]
    (out,), _ = reading(merged[:data_rows], *second.pack(np.zeros((20, 16), np.int8), w2, np.zeros(8, np.int32))[1:])
    assert np.array_equal(second.unpack(out), second(want[1], w2, np.zeros(8, np.int32))[0])
    assert all(c.x_stride == 4 for c in reading.program.calls if isinstance(c, Load2D) and c.param == 0)


@pytest.mark.parametrize("m", [24, 21])
def test_a_dense_stores_its_heads_as_the_next_matmuls_weights(m):
    """schedules.column_slice.into_weight_blocks: a dense of tiles one column block wide stores
    each head's columns as 8 x 8 weight blocks, exactly the bytes the host packs for a matmul's
    weight (vta_sim.packing.pack_rows of the head's rows, 8 at a time); 21 rows: the last
    block's missing rows are zero. Its plain output, unpacked from the blocks, is the dense's."""
    from schedules import column_slice
    from schedules.fused_epilogue import dense_epilogue_kernel
    from vta_sim import packing as pk
    rng = np.random.default_rng(m)
    x, w = rng.integers(-128, 128, (m, 24), dtype=np.int8), rng.integers(-128, 128, (32, 24), dtype=np.int8)
    b = rng.integers(-500, 500, 32).astype(np.int32)
    plain = vta_ops.dense_kernel(CFG, m, 24, 32, PowerOfTwo(8))
    want, _ = plain(x, w, b)
    dense = dense_epilogue_kernel(CFG, m, 24, 32, PowerOfTwo(8), (), one_block=True)
    assert dense.tiles.cols == 1
    blocks = column_slice.into_weight_blocks(dense, 2, m, 32)
    got, _ = blocks(x, w, b)
    assert np.array_equal(got, want) and blocks.weight_heads == 2 and not blocks.rows_out
    stored = blocks.last_packed.reshape(2, -1, 2, 8, 8)
    rows = -(-m // 8) * 8
    for h in range(2):
        head = np.zeros((rows, 16), np.int8)
        head[:m] = want[:, 16 * h:16 * (h + 1)]
        assert np.array_equal(stored[h], pk.pack_rows(head, 8, 8, "weight"))


@pytest.mark.parametrize("m", [24, 19])
def test_a_dense_stores_its_result_transposed_as_the_next_matmuls_weight(m):
    """A dense (attention's V projection, m keys x n) whose program stores its result transposed
    by the GEMM core as 8 x 8 weight blocks: exactly the bytes the host packs for the weight of
    attn.V (vta_sim.packing.pack_rows of V^T, keys padded to a block with zeros). Its plain
    output, unpacked from the blocks, is the dense's."""
    from schedules.fused_epilogue import dense_epilogue_kernel
    from vta_sim import packing as pk
    rng = np.random.default_rng(m + 100)
    x, w = rng.integers(-128, 128, (m, 24), dtype=np.int8), rng.integers(-128, 128, (32, 24), dtype=np.int8)
    b = rng.integers(-500, 500, 32).astype(np.int32)
    want, _ = vta_ops.dense_kernel(CFG, m, 24, 32, PowerOfTwo(8))(x, w, b)
    dense = dense_epilogue_kernel(CFG, m, 24, 32, PowerOfTwo(8), (), one_block=True, transpose=True,
                                  weight_blocks=True)
    got, _ = dense(x, w, b)
    assert np.array_equal(got, want) and dense.tiles.cols == 1 and dense.tiles.rows == m
    keys = -(-m // 8) * 8
    vt = np.zeros((32, keys), np.int8)
    vt[:, :m] = want.T
    assert np.array_equal(dense.last_packed.reshape(4, -1, 8, 8), pk.pack_rows(vt, 8, 8, "weight"))
