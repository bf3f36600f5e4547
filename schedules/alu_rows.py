"""Row arithmetic on VTA-8's ALU, for ops whose rows sit one per lane and run along ACC entries
(schedules.vta_softmax, schedules.vta_layer_norm): reductions along a row, and the per-row
integer square root and division that the ALU (MIN, MAX, ADD, SHR, MUL, REQ) has no instruction
for, as fixed instruction sequences over one entry per group of rows.

A group is `length` consecutive entries from `base + g * length`; a per-row vector is one
entry per group, `groups` entries from its base. Every sequence keeps its values below 2^31
(the ALU wraps at 32 bits) for the ranges its docstring states.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from intrinsics.alu_program import AluProgram, Level
from requantisation.bounds import INT8_MAX, INT8_MIN
from requantisation.multiply_shift import MultiplyShift
from vta_sim.config import Config
from vta_sim.errors import CompileError

from .op_kernel import OpKernel


def tree(prog: AluProgram, op: str, base: int, groups: int, length: int, strides: tuple | None = None) -> None:
    """Reduce each group's `length` entries into its first entry with `op` (max or add): halving
    steps, entry i taking entry i + ceil(L/2) for i < floor(L/2), so no iteration reads an
    entry an earlier iteration of the same instruction wrote, and any length works. `strides`
    (group, entry): where group g's entry i is, base + g * group + i * entry; default
    (length, 1), a group's entries one after another (interleaved groups: (1, groups))."""
    group, entry = strides or (length, 1)
    size = length
    while size > 1:
        half = (size + 1) // 2
        prog.alu(op, base, base + half * entry, outer=Level(groups, group, group),
                 inner=Level(size // 2, entry, entry))
        size = half


def gather(prog: AluProgram, dst: int, base: int, groups: int, length: int, negate: bool = False,
           strides: tuple | None = None) -> None:
    """The per-row vector at `dst` = each group's first entry (a tree's result), negated where
    `negate`; `strides` as for `tree`."""
    prog.copy(dst, base, groups, src_step=(strides or (length, 1))[0])
    if negate:
        prog.alu("mul", dst, imm=-1, outer=Level(groups, 1))


def sum_term(prog: AluProgram, x: int, zero: int, factor: int, entries: int) -> None:
    """(x - zero) factor on `entries` entries from x, in place: one operand's term of a REQ sum
    (requantisation.add.ReqSumParams), immediates only."""
    every = Level(entries, 1, 0)
    if zero:
        prog.alu("add", x, imm=-zero, outer=every)
    if factor != 1:
        prog.alu("mul", x, imm=factor, outer=every)


def requantise(prog: AluProgram, x: int, m: int, requant: MultiplyShift, entries: int) -> None:
    """REQ of `entries` entries from x by the multiplier entry m (every lane), then the clip
    where `requant`'s bounds are narrower than int8 (a ReLU's)."""
    every = Level(entries, 1, 0)
    prog.req(x, m, requant.shift, requant.zero_point, outer=every)
    if requant.lo > INT8_MIN:
        prog.alu("max", x, imm=requant.lo, outer=every)
    if requant.hi < INT8_MAX:
        prog.alu("min", x, imm=requant.hi, outer=every)


def fill(prog: AluProgram, dst: int, groups: int, value: int) -> None:
    """The per-row vector at `dst` = `value` (a signed 16-bit immediate)."""
    prog.reset(dst, groups)
    if value:
        prog.alu("add", dst, imm=value, outer=Level(groups, 1))


def division(prog: AluProgram, dividend: int, steps: int, quotient: int, negdiv: int, rem: int, scratch: int,
             groups: int) -> None:
    """ACC[quotient + g] = dividend // d per lane, with ACC[negdiv + g] = -d, d >= 1: restoring
    division over the dividend's low `steps` bits, its top bits (dividend >> steps, which must be
    below every d) the first remainder. Per step: rem = 2 rem + bit - d; m = rem >> 31 (-1:
    below zero); quotient = 2 quotient + m (from 1, so that it ends one above the quotient);
    rem += m * -d. The remainder stays below 2 d, the quotient below 2^31."""
    vec, imm = Level(groups, 1, 1), Level(groups, 1)
    fill(prog, rem, groups, dividend >> steps)
    fill(prog, quotient, groups, 1)
    for k in reversed(range(steps)):
        prog.alu("add", rem, rem, outer=vec)
        if dividend >> k & 1:
            prog.alu("add", rem, imm=1, outer=imm)
        prog.alu("add", rem, negdiv, outer=vec)
        prog.copy(scratch, rem, groups)
        prog.alu("shr", scratch, imm=31, outer=imm)
        prog.alu("add", quotient, quotient, outer=vec)
        prog.alu("add", quotient, scratch, outer=vec)
        prog.alu("mul", scratch, negdiv, outer=vec)
        prog.alu("add", rem, scratch, outer=vec)
    prog.alu("add", quotient, imm=-1, outer=imm)


def normalise(prog: AluProgram, value: int, count: int, scratch: int, groups: int, steps: int, top: int) -> None:
    """Per lane, up to `steps` times: where v = ACC[value + g] < 2^top, v *= 4 and the count at
    ACC[count + g] (from 0) goes up by one. Per step: f = 1 - min(v >> top, 1); v <<= 2 f."""
    vec, imm = Level(groups, 1, 1), Level(groups, 1)
    prog.reset(count, groups)
    for _ in range(steps):
        prog.copy(scratch, value, groups)
        prog.alu("shr", scratch, imm=top, outer=imm)
        prog.alu("min", scratch, imm=1, outer=imm)
        prog.alu("mul", scratch, imm=-1, outer=imm)
        prog.alu("add", scratch, imm=1, outer=imm)
        prog.alu("add", count, scratch, outer=vec)
        prog.alu("mul", scratch, imm=-2, outer=imm)
        prog.alu("shr", value, scratch, outer=vec)


def isqrt(prog: AluProgram, root: int, value: int, cand: int, scratch: int, groups: int, bits: int) -> None:
    """ACC[root + g] = floor(sqrt(v)) per lane, v = ACC[value + g] in [0, 2^(2 bits)), bits <= 15:
    the root's bits from the top, each kept where (root + 2^b)^2 <= v. Per bit: cand = root +
    2^b; scratch = v - cand^2; m = scratch >> 31 (-1: too large); root += (m + 1) 2^b."""
    vec, imm = Level(groups, 1, 1), Level(groups, 1)
    prog.reset(root, groups)
    for b in reversed(range(bits)):
        prog.copy(cand, root, groups)
        prog.alu("add", cand, imm=1 << b, outer=imm)
        prog.copy(scratch, cand, groups)
        prog.alu("mul", scratch, cand, outer=vec)
        prog.alu("mul", scratch, imm=-1, outer=imm)
        prog.alu("add", scratch, value, outer=vec)
        prog.alu("shr", scratch, imm=31, outer=imm)
        prog.alu("add", scratch, imm=1, outer=imm)
        prog.alu("shr", scratch, imm=-b, outer=imm)
        prog.alu("add", root, scratch, outer=vec)


def lane_constants(cfg: Config, values) -> np.ndarray:
    """int32 ACC entries, each value in every lane: the constants input of an ALU program."""
    flat = np.asarray(values, np.int64).reshape(-1)
    return np.repeat(flat, cfg.BATCH * cfg.BLOCK_OUT).reshape(-1, cfg.BATCH, cfg.BLOCK_OUT).astype(np.int32)


def elementwise_kernel(cfg: Config, op: str, shape: tuple, per_tile: int,
                       build: Callable[[int, int], AluProgram], extra: tuple = ()) -> OpKernel:
    """The OpKernel of an elementwise ALU op: plain int8 `shape` in and out, its elements in
    order, BATCH x BLOCK_OUT to an entry, cut into equal tiles of at most `per_tile` entries;
    `build(tiles, tile)` its program, `extra` inputs after the elements (constants)."""
    count = int(np.prod(shape))
    if count < 1:
        raise CompileError(f"{op} of shape {shape}: no elements")
    if per_tile < 1:
        raise CompileError(f"{op}: no ACC left for a tile")
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    entries = -(-count // lanes)
    tiles = -(-entries // per_tile)
    tile = -(-entries // tiles)
    kernel = build(tiles, tile).compile()

    def pack(x: np.ndarray) -> tuple:
        x = np.asarray(x)
        if x.dtype != np.int8 or x.shape != tuple(shape):
            raise CompileError(f"{op} input: expected int8 {tuple(shape)}, got {x.dtype} {x.shape}")
        flat = np.zeros(tiles * tile * lanes, np.int8)
        flat[:count] = x.reshape(-1)
        return (flat.reshape(tiles * tile, cfg.BATCH, cfg.BLOCK_OUT), *extra)

    def unpack(out: np.ndarray) -> np.ndarray:
        return out.reshape(-1)[:count].reshape(shape)

    return OpKernel(op, kernel, pack=pack, unpack=unpack, tiles={"tile_entries": tile, "tiles": tiles})


class RowLayout:
    """Plain int8 (rows, length) <-> the packed entries of `tiles` x `groups` row groups: a row
    per lane, BATCH x BLOCK_OUT rows to a group, a group's `length` elements on consecutive
    entries; rows past the last are zeros (computed, then cropped)."""

    def __init__(self, cfg: Config, rows: int, length: int, groups: int, what: str):
        self.cfg, self.rows, self.length, self.what = cfg, rows, length, what
        self.lanes = cfg.BATCH * cfg.BLOCK_OUT
        total = -(-rows // self.lanes)
        self.groups = min(groups, total)
        self.tiles = -(-total // self.groups)
        self.padded = self.tiles * self.groups

    def pack(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        if x.dtype != np.int8 or x.shape != (self.rows, self.length):
            raise CompileError(f"{self.what} input: expected int8 ({self.rows}, {self.length}), got {x.dtype} {x.shape}")
        cfg = self.cfg
        full = np.zeros((self.padded * self.lanes, self.length), np.int8)
        full[:self.rows] = x
        packed = full.reshape(self.padded, cfg.BATCH, cfg.BLOCK_OUT, self.length).transpose(0, 3, 1, 2)
        return np.ascontiguousarray(packed).reshape(self.padded * self.length, cfg.BATCH, cfg.BLOCK_OUT)

    def unpack(self, out: np.ndarray) -> np.ndarray:
        cfg = self.cfg
        plain = out.reshape(self.padded, self.length, cfg.BATCH, cfg.BLOCK_OUT).transpose(0, 2, 3, 1)
        return plain.reshape(self.padded * self.lanes, self.length)[:self.rows]


def row_kernel(cfg: Config, op: str, rows: int, length: int, groups: int, reason: str | None,
               build: Callable[[int, int], AluProgram], extra: tuple = ()) -> OpKernel:
    """The OpKernel of a row op: plain int8 (rows, length) in and out through a RowLayout of
    `groups` groups a tile, `build(tiles, groups)` its program, `extra` inputs after the rows
    (constants); CompileError with `reason` (the op's misfit) or for no rows."""
    if rows < 1:
        raise CompileError(f"{op} of {rows} rows: at least 1 is needed")
    if reason:
        raise CompileError(reason)
    layout = RowLayout(cfg, rows, length, groups, op)
    kernel = build(layout.tiles, layout.groups).compile()
    return OpKernel(op, kernel, pack=lambda x: (layout.pack(x), *extra), unpack=layout.unpack,
                    tiles={"groups_per_tile": layout.groups, "tiles": layout.tiles})
