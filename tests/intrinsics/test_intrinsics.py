"""The tensor intrinsics: declared from the config, matched by TVM's tensorize, refusals."""
import pytest
from tvm import s_tir, te, tirx

from intrinsics import tensor_intrin as ti
from vta_sim.config import Config
from vta_sim.errors import CompileError


def _gemm_block_schedule(cfg, scope_a="inp"):
    """A one-entry-deep packed GEMM with its operands cached in the on-chip scopes."""
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    a = te.placeholder((2, 3, B, BI), "int8", name="a")
    w = te.placeholder((2, 3, BO, BI), "int8", name="w")
    ko = te.reduce_axis((0, 3), name="ko")
    ki = te.reduce_axis((0, BI), name="ki")
    c = te.compute((2, 2, B, BO), lambda i, j, b, o: te.sum(
        a[i, ko, b, ki].astype("int32") * w[j, ko, o, ki].astype("int32"), axis=[ko, ki]), name="c")
    out = te.compute(c.shape, lambda *i: c(*i).astype("int8"), name="out")
    sch = s_tir.Schedule(te.create_prim_func([a, w, out]))
    block = sch.get_sblock("c")
    sch.set_scope(block, 0, ti.SCOPES["acc"])
    sch.cache_read(block, 0, ti.SCOPES[scope_a])
    sch.cache_read(block, 1, ti.SCOPES["wgt"])
    i, j, b, o, k_o, k_i = sch.get_loops(block)
    sch.reorder(i, j, k_o, b, o, k_i)
    return sch, block, k_o


def _pushes(mod):
    text = mod.script()
    return {kind: text.count(f'"{ti.UOP_PUSH}", "{kind}"') for kind in ("gemm", "reset")}


@pytest.mark.parametrize("config", ["1x8x8", "8x8x8"])
def test_gemm_and_reset_tensorize_a_packed_gemm(config):
    cfg = Config.load(config)
    sch, block, k_o = _gemm_block_schedule(cfg)
    init = sch.decompose_reduction(block, k_o)
    sch.tensorize(ti.tensorize_loop(sch, init, cfg), ti.reset_intrin(cfg))
    sch.tensorize(ti.tensorize_loop(sch, block, cfg, reduce_dims=1), ti.gemm_intrin(cfg))
    assert _pushes(sch.mod) == {"gemm": 1, "reset": 1}


def test_intrinsic_shapes_come_from_the_config():
    small, batched = Config.load("1x8x8"), Config.load("8x8x8")
    assert ti.gemm_intrin(small) != ti.gemm_intrin(batched)
    desc = s_tir.TensorIntrin.get(ti.gemm_intrin(batched)).desc
    shapes = sorted(tuple(int(x) for x in p.shape) for p in desc.params)
    assert shapes == [(8, 8), (8, 8), (8, 8)]
    desc = s_tir.TensorIntrin.get(ti.gemm_intrin(small)).desc
    shapes = sorted(tuple(int(x) for x in p.shape) for p in desc.params)
    assert shapes == [(1, 8), (1, 8), (8, 8)]


def test_gemm_intrinsic_refuses_a_block_in_the_wrong_scope():
    cfg = Config.load("1x8x8")
    sch, block, _ = _gemm_block_schedule(cfg, scope_a="acc")   # input cached in ACC, not INP
    with pytest.raises(Exception, match="match"):
        sch.tensorize(ti.tensorize_loop(sch, block, cfg, reduce_dims=1), ti.gemm_intrin(cfg))


def test_gemm_intrinsic_of_another_config_does_not_match():
    small, batched = Config.load("1x8x8"), Config.load("8x8x8")
    sch, block, _ = _gemm_block_schedule(small)
    with pytest.raises(Exception, match="match"):
        sch.tensorize(ti.tensorize_loop(sch, block, small, reduce_dims=1), ti.gemm_intrin(batched))


@pytest.mark.parametrize("op,imm", [("add", None), ("add", 3), ("shr", 5), ("shl", 2), ("max", -128),
                                    ("min", 127), ("mul", None), ("mul", -3)])
def test_alu_intrinsics_tensorize_elementwise_stages(op, imm):
    cfg = Config.load("1x8x8")
    B, BO = cfg.BATCH, cfg.BLOCK_OUT
    x = te.placeholder((3, B, BO), "int32", name="x")
    y = te.placeholder((3, B, BO), "int32", name="y")
    xs = te.compute(x.shape, lambda *i: x(*i), name="xs")
    ys = te.compute(y.shape, lambda *i: y(*i), name="ys")
    operand = (lambda *i: ys(*i)) if imm is None else (lambda *i: tirx.const(imm, "int32"))
    r = te.compute(x.shape, lambda *i: ti.ALU_EXPRS[op](xs(*i), operand(*i)), name="r")
    out = te.compute(x.shape, lambda *i: r(*i).astype("int8"), name="out")
    sch = s_tir.Schedule(te.create_prim_func([x, y, out] if imm is None else [x, out]))
    for name in ("xs", "ys", "r") if imm is None else ("xs", "r"):
        sch.set_scope(sch.get_sblock(name), 0, ti.SCOPES["acc"])
    block = sch.get_sblock("r")
    sch.tensorize(ti.tensorize_loop(sch, block, cfg), ti.alu_intrin(cfg, op, imm))
    hw_op = "shr" if op == "shl" else op      # SHL runs as SHR by a negative amount
    hw_imm = 0 if imm is None else -imm if op == "shl" else imm
    # the push carries UopPush's fields in order: op, use_imm, imm, then the pointers
    assert f'"{ti.UOP_PUSH}", "{hw_op}", {int(imm is not None)}, {hw_imm},' in sch.mod.script()


@pytest.mark.parametrize("op,imm,match", [("div", None, "unknown ALU op"), ("add", 1 << 15, "16-bit"),
                                          ("shl", None, "immediate")])
def test_alu_intrinsic_refusals(op, imm, match):
    with pytest.raises(CompileError, match=match):
        ti.alu_intrin(Config.load("1x8x8"), op, imm)
