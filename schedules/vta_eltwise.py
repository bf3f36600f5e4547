"""The quantised residual add on VTA-8: y = clip(((a << sa) + (b << sb) + round) >> shift, lo, hi).

Both int8 operands come in through LOAD ACC_8BIT (sign-extended into int32 ACC entries); then
one ALU instruction per stage over the whole tile: SHR by -sa and -sb (the hardware's left
shift), ADD(tensor), ADD imm (rounding, 1 << (shift-1)), SHR imm, MAX lo, MIN hi; the int8
store. Stages that would do nothing (a zero shift) are left out. lo = 0 is a ReLU after the add.

The op is element-wise, so its packed layout is a flat list of ACC entries (NCHW packed per
block, batch and channels padded with zeros, then padded to whole tiles); the tiles are runs of
entries, two operands of `tile` entries each in ACC.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm import s_tir, te

from intrinsics.build import compile_vta
from intrinsics.errors import CompileError
from intrinsics.tensor_intrin import ALU_EXPRS, SCOPES, alu_intrin, tensorize_loop
from vta_sim.config import Config

from .op_kernel import OpKernel
from .vta_pool import blocked, crop_unpack_nchw, pad_pack_nchw
from .vta_workloads import INT8_MAX, INT8_MIN

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
#: The rounding constant 1 << (shift - 1) is an ALU immediate: signed 16 bits.
MAX_SHIFT = 15
VTHREADS = 2       # one thread's store overlaps the other's loads and ALU chain (docs/ops.md)


@dataclass(frozen=True)
class AddParams:
    shift_a: int
    shift_b: int
    shift: int
    lo: int
    hi: int

    def stages(self) -> list:
        """(block name, ALU op, immediate or None for the tensor operand b) after the operands'
        shifts, in order (`alu_stages` adds the shifts)."""
        out = [("sum", "add", None)]
        if self.shift:
            out += [("round", "add", 1 << (self.shift - 1)), ("shr", "shr", self.shift)]
        return out + [("clip_lo", "max", self.lo), ("clip_hi", "min", self.hi)]


def check_params(p: AddParams) -> None:
    """Refuse what the ALU cannot compute exactly in int32 with 16-bit immediates."""
    for name in ("shift_a", "shift_b", "shift"):
        if not isinstance(getattr(p, name), (int, np.integer)):
            raise CompileError(f"{name} = {getattr(p, name)!r}: must be an integer")
    if not 0 <= p.shift <= MAX_SHIFT:
        raise CompileError(f"shift = {p.shift}: the rounding constant 1 << (shift - 1) is a signed "
                           f"16-bit ALU immediate, so shift must be in 0..{MAX_SHIFT}")
    for name, v in (("shift_a", p.shift_a), ("shift_b", p.shift_b)):
        if v < 0:
            raise CompileError(f"{name} = {v}: operand shifts are left shifts, use 0 or more")
    scale = (1 << p.shift_a) + (1 << p.shift_b)
    top = INT8_MAX * scale + ((1 << (p.shift - 1)) if p.shift else 0)
    bottom = INT8_MIN * scale
    if top > INT32_MAX or bottom < INT32_MIN:
        raise CompileError(f"shift_a = {p.shift_a}, shift_b = {p.shift_b}: the sum of two shifted "
                           f"int8 values reaches [{bottom}, {top}], outside int32; use smaller shifts")
    if not INT8_MIN <= p.lo <= p.hi <= INT8_MAX:
        raise CompileError(f"clip [{p.lo}, {p.hi}]: need {INT8_MIN} <= lo <= hi <= {INT8_MAX} "
                           "(the result is stored as int8)")


def choose_tile(cfg: Config, entries: int, vthreads: int) -> tuple:
    """(tile entries, tiles): both operands of each thread's tile in ACC, as few tiles as
    possible (a multiple of the threads), evenly cut."""
    cap = cfg.buffers["acc"].depth // (2 * vthreads)
    tiles = -(-entries // (cap * vthreads)) * vthreads
    return -(-entries // tiles), tiles


def workload(cfg: Config, entries: int, p: AddParams) -> list:
    """TE tensors [a, b, out] over `entries` flat ACC entries."""
    shape = (entries, cfg.BATCH, cfg.BLOCK_OUT)

    def operand(name: str, shift: int):
        x = te.placeholder(shape, "int8", name=name)
        wide = te.compute(shape, lambda *i: x(*i).astype("int32"), name=f"{name}_acc")
        if shift:
            wide = _alu_stage(wide, "shl", shift, f"{name}_shl")
        return x, wide

    a, x = operand("a", p.shift_a)
    b, y = operand("b", p.shift_b)
    for name, op, imm in p.stages():
        x = _alu_stage(x, op, y if imm is None else imm, name)
    out = te.compute(shape, lambda *i: x(*i).astype("int8"), name="out")
    return [a, b, out]


def _alu_stage(x, op: str, operand, name: str):
    """One TE stage per ALU instruction; the expression is the intrinsic's own."""
    if isinstance(operand, te.Tensor):
        return te.compute(x.shape, lambda *i: ALU_EXPRS[op](x(*i), operand(*i)), name=name)
    imm = int(operand)
    return te.compute(x.shape, lambda *i: ALU_EXPRS[op](x(*i), imm), name=name)


def alu_stages(p: AddParams) -> list:
    """(block name, op, immediate or None) of every ALU stage, in the order the chain runs."""
    shifts = [(f"{n}_shl", "shl", v) for n, v in (("a", p.shift_a), ("b", p.shift_b)) if v]
    return shifts + p.stages()


def schedule(cfg: Config, entries: int, tile: int, p: AddParams, vthreads: int = 1):
    """Per tile of `tile` entries: two ACC_8BIT loads, the ALU chain in place, the store.
    Two virtual threads take alternate tiles, so one's store overlaps the other's work."""
    sch = s_tir.Schedule(te.create_prim_func(workload(cfg, entries, p)))
    out = sch.get_sblock("out")
    e = sch.get_loops(out)[0]
    _, tile_loop, _ = sch.split(e, [None, vthreads, tile])
    if vthreads > 1:
        sch.bind(tile_loop, "vthread.x")
    stages = [name for name, _, _ in reversed(alu_stages(p))] + ["b_acc", "a_acc"]
    for name in stages:
        block = sch.get_sblock(name)
        sch.set_scope(block, 0, SCOPES["acc"])
        sch.compute_at(block, tile_loop)
    for name, op, imm in alu_stages(p):
        block = sch.get_sblock(name)
        sch.tensorize(tensorize_loop(sch, block, cfg), alu_intrin(cfg, op, imm))
    return sch.mod


def add_kernel(cfg: Config, n: int, c: int, h: int, w: int, shift_a: int, shift_b: int, shift: int,
               lo: int = INT8_MIN, hi: int = INT8_MAX, vthreads: int = VTHREADS) -> OpKernel:
    """Compiled quantised add of two plain int8 NCHW (n, c, h, w) tensors -> int8 NCHW."""
    if min(n, c, h, w) < 1:
        raise CompileError(f"add shape n={n} c={c} h={h} w={w}: all must be >= 1")
    if vthreads not in (1, 2):
        raise CompileError(f"vthreads = {vthreads}: use 1 or 2")
    p = AddParams(shift_a, shift_b, shift, lo, hi)
    check_params(p)
    nn, cc = blocked(cfg, n, c)
    entries = nn // cfg.BATCH * (cc // cfg.BLOCK_OUT) * h * w
    tile, tiles = choose_tile(cfg, entries, vthreads)
    padded = tile * tiles
    entry = (cfg.BATCH, cfg.BLOCK_OUT)

    def flat(x, what):
        packed = pad_pack_nchw(cfg, x, (n, c, h, w), what).reshape(entries, *entry)
        return np.concatenate([packed, np.zeros((padded - entries, *entry), np.int8)])

    def unflat(out):
        return crop_unpack_nchw(out[:entries].reshape(nn // cfg.BATCH, cc // cfg.BLOCK_OUT, h, w,
                                                      *entry), n, c)

    kernel = compile_vta(schedule(cfg, padded, tile, p, vthreads), cfg)
    return OpKernel("add", kernel, pack=lambda a, b: (flat(a, "add operand a"), flat(b, "add operand b")),
                    unpack=unflat, tiles={"tile_entries": tile, "tiles": tiles,
                                                  "vthreads": vthreads})


# ----------------------------------------------------------------------------- reference
def add_ref(a: np.ndarray, b: np.ndarray, shift_a: int, shift_b: int, shift: int,
            lo: int = INT8_MIN, hi: int = INT8_MAX) -> np.ndarray:
    """The quantised add in int64 with round-half-up: the op's definition."""
    total = (a.astype(np.int64) << shift_a) + (b.astype(np.int64) << shift_b)
    rounding = (1 << (shift - 1)) if shift > 0 else 0
    return np.clip((total + rounding) >> shift, lo, hi).astype(np.int8)
