"""The quantised mean over tokens (requantisation.token_mean) on VTA-8's ALU: a (N, T, D) int8
tensor in, (N, D) out, bit for bit the module's reference.

Layout (schedules.alu_rows.RowLayout): a row per channel, one per lane, its T tokens on
consecutive entries, so the sum over the tokens is a halving ADD tree along entries. The host
lays the channels out as rows as it packs (the transpose every packing of a (T, D) tensor into
lanes of D would do too). Per tile of G groups (G*T entries of X, G entries of S, one of M):

    X <- the int8 tokens                 add tree on X
    S = each group's sum                 S += -T z_x (in 16-bit parts)
    REQ S by M (one entry: m in every lane), shift, zero point
    store S: G entries, one per group of BATCH x BLOCK_OUT rows
"""
from __future__ import annotations

import numpy as np

from intrinsics.alu_program import AluProgram, Level, Param
from requantisation.token_mean import MeanParams
from vta_sim.config import Config
from vta_sim.errors import CompileError

from . import alu_rows
from .op_kernel import OpKernel


def groups_per_tile(cfg: Config, length: int) -> int:
    """How many groups of rows one tile holds in ACC beside the multiplier's entry (0: none)."""
    return (cfg.buffers["acc"].depth - 1) // (length + 1)


def misfit(cfg: Config, length: int) -> str | None:
    if groups_per_tile(cfg, length) < 1:
        depth = cfg.buffers["acc"].depth
        return (f"a mean over {length} tokens: a row group takes {length + 2} ACC entries, ACC holds {depth} "
                f"(up to {depth - 2} tokens)")
    return None


def program(cfg: Config, p: MeanParams, tiles: int, groups: int) -> AluProgram:
    """The kernel's calls: `tiles` tiles of `groups` row groups each."""
    span = groups * p.length
    entry = (cfg.BATCH, cfg.BLOCK_OUT)
    prog = AluProgram(cfg, [Param("x", (tiles * span, *entry), "int8", "acc8"),
                            Param("m", (1, *entry), "int32", "acc"),
                            Param("y", (tiles * groups, *entry), "int8", "out")])
    x, s, m = 0, span, span + groups
    prog.load("m", 0, 1, m)
    for tile in range(tiles):
        prog.load("x", tile * span, span, x)
        alu_rows.tree(prog, "add", x, groups, p.length)
        alu_rows.gather(prog, s, x, groups, p.length)
        for part in p.offset_parts():
            prog.alu("add", s, imm=part, outer=Level(groups, 1))
        prog.req(s, m, p.shift, p.zero_point, outer=Level(groups, 1, 0))
        if p.lo > -128:
            prog.alu("max", s, imm=p.lo, outer=Level(groups, 1))
        if p.hi < 127:
            prog.alu("min", s, imm=p.hi, outer=Level(groups, 1))
        prog.store("y", tile * groups, groups, s)
    return prog


def token_mean_kernel(cfg: Config, batch: int, p: MeanParams, channels: int) -> OpKernel:
    """Compiled mean over tokens of plain int8 (batch, T, channels) -> int8 (batch, channels)."""
    rows, length = batch * channels, p.length
    if rows < 1:
        raise CompileError(f"a mean over tokens of {batch} x {channels} channels: at least 1 is needed")
    reason = misfit(cfg, length)
    if reason:
        raise CompileError(reason)
    layout = alu_rows.RowLayout(cfg, rows, length, groups_per_tile(cfg, length), "mean over tokens")
    kernel = program(cfg, p, layout.tiles, layout.groups).compile()
    multiplier = np.full((1, cfg.BATCH, cfg.BLOCK_OUT), p.m, np.int32)

    def pack(x: np.ndarray) -> tuple:
        x = np.asarray(x)
        if x.dtype != np.int8 or x.shape != (batch, length, channels):
            raise CompileError(f"mean over tokens input: expected int8 ({batch}, {length}, {channels}), "
                               f"got {x.dtype} {x.shape}")
        return layout.pack(np.ascontiguousarray(x.transpose(0, 2, 1)).reshape(rows, length)), multiplier

    def unpack(out: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(out.reshape(-1)[:rows].reshape(batch, channels))

    return OpKernel("mean", kernel, pack=pack, unpack=unpack,
                    tiles={"groups_per_tile": layout.groups, "tiles": layout.tiles})
