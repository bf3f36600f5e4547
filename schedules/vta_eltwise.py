"""The quantised residual add on VTA-8, scheduled: its requantisation (requantisation.add:
AddParams, or ScaledAddParams with zero points and any scales) as ALU work over tiles; and the
same for one operand (RescaleParams: a Concat input moved into the Concat's scale). The
power-of-two add (AddParams) runs on the GEMM core instead where `vta_gemm_add.misfit` allows
(its shifts fit an int8 weight, BLOCK_IN = BLOCK_OUT): `eltwise_kernel` chooses, the packing is
the same.

Both int8 operands come in through LOAD ACC_8BIT (sign-extended into int32 ACC entries); then
one ALU instruction per stage over the whole tile: SHR by -sa and -sb (the hardware's left
shift), ADD(tensor), ADD imm (rounding, 1 << (shift-1)), SHR imm, MAX lo, MIN hi; the int8
store. Stages that would do nothing (a zero shift) are left out. lo = 0 is a ReLU after the add.

The op is element-wise, so its packed layout is a flat list of ACC entries (NCHW packed per
block, batch and channels padded with zeros, then padded to whole tiles); the tiles are runs of
entries, each loaded operand `tile` entries in ACC (the scaled form loads each operand twice,
for the high and low parts of its multiplier: docs/ops.md). A REQ form (ReqSumParams) ends in
one REQ instruction whose multiplier entry `m` (one ACC entry, a kernel input the pack adds) is
loaded once per tile and stays in REQ's operand register.
"""
from __future__ import annotations

import numpy as np
from tvm import s_tir, te

from intrinsics.build import compile_vta
from intrinsics.tensor_intrin import ALU_EXPRS, SCOPES, alu_intrin, req_expr, req_intrin, tensorize_loop
from requantisation.add import AddParams, ReqSumParams, check_params
from requantisation.bounds import INT8_MAX, INT8_MIN
from vta_sim.config import Config
from vta_sim.errors import CompileError

from . import vta_gemm_add
from .op_kernel import OpKernel
from .vta_pool import blocked, crop_unpack_nchw, pad_pack_nchw

VTHREADS = 2       # one thread's store overlaps the other's loads and ALU chain (docs/ops.md)


def choose_tile(cfg: Config, entries: int, vthreads: int, loads: int = 2, fixed: int = 0) -> tuple:
    """(tile entries, tiles): every loaded operand of each thread's tile in ACC, beside `fixed`
    entries per thread (a REQ form's multiplier), as few tiles as possible (a multiple of the
    threads), evenly cut."""
    cap = (cfg.buffers["acc"].depth - fixed * vthreads) // (loads * vthreads)
    tiles = -(-entries // (cap * vthreads)) * vthreads
    return -(-entries // tiles), tiles


def operands(p) -> list:
    """The int8 operands `p.program()` loads, in order: a and b (an add), or a (a rescale)."""
    return list(dict.fromkeys(src for _, src in p.program()[0]))


def workload(cfg: Config, entries: int, p) -> list:
    """TE tensors [*operands, out] over `entries` flat ACC entries; one stage per load and per
    ALU instruction of `p.program()`."""
    shape = (entries, cfg.BATCH, cfg.BLOCK_OUT)
    inputs = {name: te.placeholder(shape, "int8", name=name) for name in operands(p)}
    loads, stages = p.program()
    done = {block: _widen(inputs[src], block) for block, src in loads}
    if isinstance(p, ReqSumParams):
        inputs["m"] = done["m"] = te.placeholder((1, cfg.BATCH, cfg.BLOCK_OUT), "int32", name="m")
    for st in stages:
        if st.op == "req":
            m, (shift, zero_point) = done[st.y], st.imm
            x = done[st.x]
            done[st.name] = te.compute(shape, lambda e, b, o: req_expr(x(e, b, o), m(0, b, o), shift, zero_point),  # noqa: B023
                                       name=st.name)
            continue
        done[st.name] = _alu_stage(done[st.x], st.op, done[st.y] if isinstance(st.y, str) else st.y, st.name)
    last = done[stages[-1].name]
    out = te.compute(shape, lambda *i: last(*i).astype("int8"), name="out")
    return [*inputs.values(), out]


def _widen(x, name: str):
    return te.compute(x.shape, lambda *i: x(*i).astype("int32"), name=name)


def _alu_stage(x, op: str, operand, name: str):
    """One TE stage per ALU instruction; the expression is the intrinsic's own."""
    if isinstance(operand, te.Tensor):
        return te.compute(x.shape, lambda *i: ALU_EXPRS[op](x(*i), operand(*i)), name=name)
    imm = int(operand)
    return te.compute(x.shape, lambda *i: ALU_EXPRS[op](x(*i), imm), name=name)


def schedule(cfg: Config, entries: int, tile: int, p, vthreads: int = 1):
    """Per tile of `tile` entries: the ACC_8BIT loads, the ALU chain in place, the store.
    Two virtual threads take alternate tiles, so one's store overlaps the other's work."""
    sch = s_tir.Schedule(te.create_prim_func(workload(cfg, entries, p)))
    out = sch.get_sblock("out")
    e = sch.get_loops(out)[0]
    _, tile_loop, _ = sch.split(e, [None, vthreads, tile])
    if vthreads > 1:
        sch.bind(tile_loop, "vthread.x")
    loads, stages = p.program()
    for name in [st.name for st in reversed(stages)] + [block for block, _ in reversed(loads)]:
        block = sch.get_sblock(name)
        sch.set_scope(block, 0, SCOPES["acc"])
        sch.compute_at(block, tile_loop)
    for st in stages:
        block = sch.get_sblock(st.name)
        if st.op == "req":     # its multiplier entry into ACC once per tile
            m = sch.cache_read(block, 1, SCOPES["acc"])
            sch.compute_at(m, tile_loop)
            sch.tensorize(tensorize_loop(sch, block, cfg), req_intrin(cfg, *st.imm))
            continue
        sch.tensorize(tensorize_loop(sch, block, cfg),
                      alu_intrin(cfg, st.op, None if isinstance(st.y, str) else st.y))
    return sch.mod


def add_kernel(cfg: Config, n: int, c: int, h: int, w: int, shift_a: int, shift_b: int, shift: int,
               lo: int = INT8_MIN, hi: int = INT8_MAX, vthreads: int = VTHREADS) -> OpKernel:
    """Compiled quantised add of two plain int8 NCHW (n, c, h, w) tensors -> int8 NCHW."""
    return eltwise_kernel(cfg, (n, c, h, w), AddParams(shift_a, shift_b, shift, lo, hi), vthreads)


def eltwise_kernel(cfg: Config, shape: tuple, p, vthreads: int = VTHREADS) -> OpKernel:
    """Compiled add (AddParams or ScaledAddParams) of two plain int8 NCHW tensors -> int8 NCHW,
    or rescale (RescaleParams) of one."""
    n, c, h, w = shape
    if min(n, c, h, w) < 1:
        raise CompileError(f"add shape n={n} c={c} h={h} w={w}: all must be >= 1")
    if vthreads not in (1, 2):
        raise CompileError(f"vthreads = {vthreads}: use 1 or 2")
    check_params(p)
    nn, cc = blocked(cfg, n, c)
    entries = nn // cfg.BATCH * (cc // cfg.BLOCK_OUT) * h * w
    on_gemm = vta_gemm_add.misfit(cfg, p) is None
    if on_gemm:
        tile, tiles = vta_gemm_add.choose_tile(cfg, entries, vthreads)
    else:
        tile, tiles = choose_tile(cfg, entries, vthreads, len(p.program()[0]), int(isinstance(p, ReqSumParams)))
    padded = tile * tiles
    entry = (cfg.BATCH, cfg.BLOCK_OUT)

    def flat(x, what):
        packed = pad_pack_nchw(cfg, x, (n, c, h, w), what).reshape(entries, *entry)
        return np.concatenate([packed, np.zeros((padded - entries, *entry), np.int8)])

    def unflat(out):
        return crop_unpack_nchw(out[:entries].reshape(nn // cfg.BATCH, cc // cfg.BLOCK_OUT, h, w,
                                                      *entry), n, c)

    names = operands(p)
    if on_gemm:
        kernel = vta_gemm_add.program(cfg, p, tile, tiles, vthreads).compile()
        extra = vta_gemm_add.constants(cfg, p)
    else:
        kernel = compile_vta(schedule(cfg, padded, tile, p, vthreads), cfg)
        # a REQ form's multiplier entry: m in every lane
        extra = (np.full((1, *entry), p.m, np.int32),) if isinstance(p, ReqSumParams) else ()

    def pack(*xs):
        if len(xs) != len(names):
            raise CompileError(f"expected {len(names)} operand(s) ({', '.join(names)}), got {len(xs)}")
        return tuple(flat(x, f"operand {name}") for x, name in zip(xs, names)) + extra
    return OpKernel("add" if len(names) == 2 else "rescale", kernel, pack=pack, unpack=unflat,
                    tiles={"tile_entries": tile, "tiles": tiles, "vthreads": vthreads,
                           "core": "gemm" if on_gemm else "alu"})
