"""The quantised residual add on VTA-8: y = clip(((a << sa) + (b << sb) + round) >> shift, lo, hi),
or with zero points and any scales (ScaledAddParams) the fixed-point form
y = clip(round((a - za) M_a + (b - zb) M_b) + zy, lo, hi), as TFLite's quantised ADD does.

Both int8 operands come in through LOAD ACC_8BIT (sign-extended into int32 ACC entries); then
one ALU instruction per stage over the whole tile: SHR by -sa and -sb (the hardware's left
shift), ADD(tensor), ADD imm (rounding, 1 << (shift-1)), SHR imm, MAX lo, MIN hi; the int8
store. Stages that would do nothing (a zero shift) are left out. lo = 0 is a ReLU after the add.

The op is element-wise, so its packed layout is a flat list of ACC entries (NCHW packed per
block, batch and channels padded with zeros, then padded to whole tiles); the tiles are runs of
entries, each loaded operand `tile` entries in ACC (the scaled form loads each operand twice,
for the high and low parts of its multiplier: docs/ops.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from tvm import s_tir, te

from intrinsics.build import compile_vta
from intrinsics.errors import CompileError
from intrinsics.tensor_intrin import ALU_EXPRS, SCOPES, alu_intrin, tensorize_loop
from vta_sim.config import Config, INT32_MAX, INT32_MIN, INT8_MAX, INT8_MIN

from . import fixed_point
from .fixed_point import ScaledRequant
from .op_kernel import OpKernel
from .vta_workloads import Stage
from .vta_pool import blocked, crop_unpack_nchw, pad_pack_nchw

#: The rounding constant 1 << (shift - 1) is an ALU immediate: signed 16 bits.
MAX_SHIFT = 15
#: |x - zero point| of an int8 x with an int8 zero point.
OPERAND_REACH = 255
VTHREADS = 2       # one thread's store overlaps the other's loads and ALU chain (docs/ops.md)


@dataclass(frozen=True)
class AddParams:
    shift_a: int
    shift_b: int
    shift: int
    lo: int
    hi: int

    def program(self) -> tuple:
        """(loads, stages): the ACC_8BIT loads as (block, operand), then the ALU chain as
        vta_workloads.Stage (in place into x; y an immediate or an earlier block)."""
        stages, terms = [], []
        for name, shift in (("a", self.shift_a), ("b", self.shift_b)):
            terms.append(f"{name}_acc")
            if shift:
                stages.append(Stage(f"{name}_shl", "shl", terms[-1], shift))
                terms[-1] = stages[-1].name
        stages.append(Stage("sum", "add", terms[0], terms[1]))
        if self.shift:
            stages += [Stage("round", "add", "sum", 1 << (self.shift - 1)), Stage("shr", "shr", "round", self.shift)]
        stages += [Stage("clip_lo", "max", stages[-1].name, self.lo), Stage("clip_hi", "min", "clip_lo", self.hi)]
        return (("a_acc", "a"), ("b_acc", "b")), tuple(stages)


@dataclass(frozen=True)
class ScaledAddParams:
    """y = clip(round((a - zero_a) M_a + (b - zero_b) M_b) + zp, lo, hi) with M = m / 2^s
    (fixed_point.choose_sum): an operand's product is a*m_hi << SPLIT plus a*m_lo, both by
    16-bit immediates, so each operand is loaded twice (a copy costs as much as a load)."""
    zero_a: int
    zero_b: int
    m_a: int
    m_b: int
    requant: ScaledRequant         # k = fixed_point.SPLIT; t, s, zero point, lo, hi

    def program(self) -> tuple:
        loads, stages, terms = [], [], []
        split = self.requant.k
        for name, zero, m in (("a", self.zero_a, self.m_a), ("b", self.zero_b, self.m_b)):
            for part, factor in (("hi", m >> split), ("lo", m & ((1 << split) - 1))):
                if not factor:
                    continue
                block = f"{name}_{part}_acc"
                loads.append((block, name))
                chain = [Stage(f"{name}_{part}_zp", "add", block, -zero)] if zero else []
                chain.append(Stage(f"{name}_{part}_mul", "mul", chain[-1].name if chain else block, factor))
                if part == "hi":
                    chain.append(Stage(f"{name}_hi_shl", "shl", chain[-1].name, split))
                stages += chain
                terms.append(chain[-1].name)
        for i, term in enumerate(terms[1:]):
            stages.append(Stage(f"sum{i}", "add", terms[0] if i == 0 else f"sum{i - 1}", term))
        r = self.requant
        steps = [("pre_shr", "shr", r.t), ("round", "add", r.rounding), ("shr", "shr", r.s - r.t),
                 ("zero_point", "add", r.zero_point), ("clip_lo", "max", r.lo), ("clip_hi", "min", r.hi)]
        for name, op, value in steps:
            if value or name not in ("pre_shr", "zero_point"):
                stages.append(Stage(name, op, stages[-1].name, value))
        return tuple(loads), tuple(stages)

    @property
    def lo(self) -> int:
        return self.requant.lo

    @property
    def hi(self) -> int:
        return self.requant.hi


def check_params(p) -> None:
    """Refuse what the ALU cannot compute exactly in int32 with 16-bit immediates."""
    if isinstance(p, ScaledAddParams):
        _check_scaled(p)
        return
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


def _check_scaled(p: ScaledAddParams) -> None:
    r = p.requant
    for name in ("zero_a", "zero_b"):
        if not INT8_MIN <= getattr(p, name) <= INT8_MAX:
            raise CompileError(f"{name} = {getattr(p, name)}: an int8 zero point is in [-128, 127]")
    if r.k != fixed_point.SPLIT or min(p.m_a, p.m_b) < 0 or not p.m_a + p.m_b:
        raise CompileError(f"multipliers {p.m_a}, {p.m_b} with split {r.k}: need m >= 0, not both 0, "
                           f"split {fixed_point.SPLIT}")
    top = OPERAND_REACH * (p.m_a + p.m_b) + (1 << (r.s - 1))
    if top > INT32_MAX:
        raise CompileError(f"multipliers {p.m_a}, {p.m_b} at shift {r.s}: the sum reaches {top}, "
                           "outside int32 (use fixed_point.choose_sum)")


def choose_tile(cfg: Config, entries: int, vthreads: int, loads: int = 2) -> tuple:
    """(tile entries, tiles): every loaded operand of each thread's tile in ACC, as few tiles as
    possible (a multiple of the threads), evenly cut."""
    cap = cfg.buffers["acc"].depth // (loads * vthreads)
    tiles = -(-entries // (cap * vthreads)) * vthreads
    return -(-entries // tiles), tiles


def workload(cfg: Config, entries: int, p) -> list:
    """TE tensors [a, b, out] over `entries` flat ACC entries; one stage per load and per ALU
    instruction of `p.program()`."""
    shape = (entries, cfg.BATCH, cfg.BLOCK_OUT)
    inputs = {name: te.placeholder(shape, "int8", name=name) for name in ("a", "b")}
    loads, stages = p.program()
    done = {block: _widen(inputs[src], block) for block, src in loads}
    for st in stages:
        done[st.name] = _alu_stage(done[st.x], st.op, done[st.y] if isinstance(st.y, str) else st.y, st.name)
    last = done[stages[-1].name]
    out = te.compute(shape, lambda *i: last(*i).astype("int8"), name="out")
    return [inputs["a"], inputs["b"], out]


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
        sch.tensorize(tensorize_loop(sch, block, cfg),
                      alu_intrin(cfg, st.op, None if isinstance(st.y, str) else st.y))
    return sch.mod


def add_kernel(cfg: Config, n: int, c: int, h: int, w: int, shift_a: int, shift_b: int, shift: int,
               lo: int = INT8_MIN, hi: int = INT8_MAX, vthreads: int = VTHREADS) -> OpKernel:
    """Compiled quantised add of two plain int8 NCHW (n, c, h, w) tensors -> int8 NCHW."""
    return eltwise_kernel(cfg, (n, c, h, w), AddParams(shift_a, shift_b, shift, lo, hi), vthreads)


def eltwise_kernel(cfg: Config, shape: tuple, p, vthreads: int = VTHREADS) -> OpKernel:
    """Compiled add (AddParams or ScaledAddParams) of two plain int8 NCHW tensors -> int8 NCHW."""
    n, c, h, w = shape
    if min(n, c, h, w) < 1:
        raise CompileError(f"add shape n={n} c={c} h={h} w={w}: all must be >= 1")
    if vthreads not in (1, 2):
        raise CompileError(f"vthreads = {vthreads}: use 1 or 2")
    check_params(p)
    nn, cc = blocked(cfg, n, c)
    entries = nn // cfg.BATCH * (cc // cfg.BLOCK_OUT) * h * w
    tile, tiles = choose_tile(cfg, entries, vthreads, len(p.program()[0]))
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


def scaled_add_ref(a: np.ndarray, b: np.ndarray, p: ScaledAddParams) -> np.ndarray:
    """The scaled add in int64: ((a - zero_a) m_a + (b - zero_b) m_b), rounded as every
    fixed-point requantisation is (fixed_point.round_shift), clipped."""
    total = (a.astype(np.int64) - p.zero_a) * p.m_a + (b.astype(np.int64) - p.zero_b) * p.m_b
    return np.clip(fixed_point.round_shift(total, p.requant), p.lo, p.hi).astype(np.int8)
