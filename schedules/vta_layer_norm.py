"""The integer LayerNorm (requantisation.layer_norm) on VTA-8's ALU: rows of int8 tokens in,
int8 out, bit for bit the module's reference.

Layout as the softmax's (schedules.vta_softmax): a row per lane, groups of BATCH x BLOCK_OUT
rows, a group's D elements on D consecutive ACC entries. A constants input (int32 ACC entries,
each the same in every lane) holds E and the per-element G_i (REQ's multipliers) and B_i,
loaded once where they fit beside a tile ("resident"); where they do not (BERT-base's D = 768
on 1x8x8), E is loaded once and each tile loads B_i, then G_i, into Y once the variance no
longer needs it ("streamed": 2 D more ACC entries loaded a tile, rows up to 1,019 on 1x8x8).

Per tile of G groups (two G*D-entry buffers X, Y, eight G-entry vectors):

    X <- q; Y = X; add tree on Y; M = -sum(q)      X *= D; X += M; X >>= a        c
    Y = X; Y *= X; Y >>= b; add tree on Y          V = max(sum + E, 1)
    V *= 4 while below 2^27 (7 steps, j counts them); isqrt(V) (15 steps);
    r = (2^k // isqrt) << j (k+1 steps)
    X *= r (broadcast); X += B_i; REQ X by G_i, shift h, zero point; store X
"""
from __future__ import annotations

import numpy as np

from intrinsics.alu_program import AluProgram, Level, Param
from requantisation.add import ReqSumParams
from requantisation.layer_norm import NORM_STEPS, NORM_TOP, V_BITS, LayerNormParams
from vta_sim.config import Config
from vta_sim.errors import CompileError

from . import alu_rows
from .op_kernel import OpKernel

ROW_BUFFERS, GROUP_VECTORS = 2, 9


def _constants_entries(length: int) -> int:
    return 1 + 2 * length          # E, G_0.., B_0..


def _groups(cfg: Config, length: int, constants: int) -> int:
    free = cfg.buffers["acc"].depth - constants
    return max(free // (ROW_BUFFERS * length + GROUP_VECTORS), 0)


def resident(cfg: Config, length: int) -> bool:
    """Do all the constants fit beside one group (else they are streamed through Y a tile)?"""
    return _groups(cfg, length, _constants_entries(length)) >= 1


def groups_per_tile(cfg: Config, length: int, add: bool = False) -> int:
    """Row groups a tile holds; `add`: beside the residual add's multiplier entry too."""
    return _groups(cfg, length, (_constants_entries(length) if resident(cfg, length) else 1) + add)


def misfit(cfg: Config, length: int) -> str | None:
    if groups_per_tile(cfg, length) < 1:
        return (f"a layer norm over {length} elements: two copies of a row group take {ROW_BUFFERS * length} ACC "
                f"entries beside {1 + GROUP_VECTORS} more, ACC holds {cfg.buffers['acc'].depth}")
    return None


def constants(cfg: Config, p: LayerNormParams) -> np.ndarray:
    """The constants input: E, G_i, B_i, each one ACC entry with the value in every lane."""
    return alu_rows.lane_constants(cfg, [p.eps_term, *p.gamma, *p.beta])


def program(cfg: Config, p: LayerNormParams, tiles: int, groups: int, add: ReqSumParams | None = None) -> AluProgram:
    """The kernel's calls; with `add` (a REQ sum of two operands: the residual add before a
    post-norm LayerNorm) the tile is that add of two inputs, x and b, computed in ACC first."""
    length, span = p.length, groups * p.length
    shape = (tiles * span, cfg.BATCH, cfg.BLOCK_OUT)
    k_entries = _constants_entries(length)
    entry = (1, cfg.BATCH, cfg.BLOCK_OUT)
    prog = AluProgram(cfg, [Param("x", shape, "int8", "acc8"),
                            *([Param("b", shape, "int8", "acc8")] if add else []),
                            Param("consts", (k_entries, cfg.BATCH, cfg.BLOCK_OUT), "int32", "acc"),
                            *([Param("add_m", entry, "int32", "acc")] if add else []),
                            Param("y", shape, "int8", "out")])
    x, y, kbase = 0, span, 2 * span
    kept = k_entries if resident(cfg, length) else 1       # streamed: E stays, G_i and B_i come through Y
    vectors = kbase + kept
    add_m = vectors + GROUP_VECTORS * groups
    pairs = Level(span, 1, 1)
    prog.load("consts", 0, kept, kbase)
    if add:
        prog.load("add_m", 0, 1, add_m)
    for tile in range(tiles):
        offset = tile * span
        prog.load("x", offset, span, x)
        if add:                                   # x = REQ((x - z_x) f_x + (b - z_b) f_b)
            prog.load("b", offset, span, y)
            for buf, zero, factor in zip((x, y), add.zeros, add.factors):
                alu_rows.sum_term(prog, buf, zero, factor, span)
            prog.alu("add", x, y, outer=pairs)
            alu_rows.requantise(prog, x, add_m, add.requant, span)
        streamed = None if kept > 1 else (lambda which: prog.load("consts", 1 + which * length, length, y))
        normalise(prog, p, x, y, kbase, vectors, groups, streamed)
        prog.store("y", offset, span, x)
    return prog


def normalise(prog: AluProgram, p: LayerNormParams, x: int, y: int, consts: int, vectors: int, groups: int,
              streamed=None, interleaved: bool = False) -> None:
    """The LayerNorm of `groups` row groups at ACC entry x (a group's p.length elements on
    consecutive entries, a row per lane; `interleaved`: group g's element i at entry
    i groups + g, as a dense computed transposed leaves a tile of `groups` column blocks), in
    place: Y (as many entries) is scratch, nine vectors of `groups` entries from `vectors`, and
    the constants E, G_i, B_i from `consts` (the constants input's layout). `streamed(which)`:
    G_i (0) and B_i (1) are not resident but loaded into Y by that call just before each is
    read (Y is free by then)."""
    length, span = p.length, groups * p.length
    m, v, root, cand, scratch, neg, rem, quo, up = (vectors + i * groups for i in range(GROUP_VECTORS))
    eps = consts
    gam, bet = (y, y) if streamed else (consts + 1, consts + 1 + length)
    every, pairs = Level(span, 1, 0), Level(span, 1, 1)
    strides = (1, groups) if interleaved else (length, 1)
    if interleaved:         # each element with its row's vector entry; with its G_i / B_i
        rows = Level(length, groups, 0), Level(groups, 1, 1)
        per_element = Level(length, groups, 1), Level(groups, 1, 0)
    else:
        rows = Level(groups, length, 1), Level(length, 1, 0)
        per_element = Level(groups, length, 0), Level(length, 1, 1)
    prog.copy(y, x, span)
    alu_rows.tree(prog, "add", y, groups, length, strides)
    alu_rows.gather(prog, m, y, groups, length, negate=True, strides=strides)
    prog.alu("mul", x, imm=length, outer=every)
    prog.alu("add", x, m, outer=rows[0], inner=rows[1])
    if p.pre_shift:
        prog.alu("shr", x, imm=p.pre_shift, outer=every)       # c
    prog.copy(y, x, span)
    prog.alu("mul", y, x, outer=pairs)
    if p.sq_shift:
        prog.alu("shr", y, imm=p.sq_shift, outer=every)
    alu_rows.tree(prog, "add", y, groups, length, strides)
    alu_rows.gather(prog, v, y, groups, length, strides=strides)
    prog.alu("add", v, eps, outer=Level(groups, 1, 0))
    prog.alu("max", v, imm=1, outer=Level(groups, 1))            # V
    alu_rows.normalise(prog, v, up, scratch, groups, NORM_STEPS, NORM_TOP)      # V 4^j
    alu_rows.isqrt(prog, root, v, cand, scratch, groups, V_BITS // 2)
    prog.copy(neg, root, groups)
    prog.alu("mul", neg, imm=-1, outer=Level(groups, 1))
    alu_rows.division(prog, 1 << p.k, p.k + 1, quo, neg, rem, scratch, groups)
    prog.alu("mul", up, imm=-1, outer=Level(groups, 1))
    prog.alu("shr", quo, up, outer=Level(groups, 1, 1))                          # r = quotient 2^j
    prog.alu("mul", x, quo, outer=rows[0], inner=rows[1])                   # c r
    if streamed:
        streamed(1)                                                         # B_i into Y
    prog.alu("add", x, bet, outer=per_element[0], inner=per_element[1])
    if streamed:
        streamed(0)                                                         # G_i into Y
    prog.req(x, gam, p.shift, p.zero_point, outer=per_element[0], inner=per_element[1])


def layer_norm_kernel(cfg: Config, rows: int, p: LayerNormParams) -> OpKernel:
    """Compiled integer LayerNorm of plain int8 (rows, D) -> int8 (rows, D), D = p.length."""
    return alu_rows.row_kernel(cfg, "layer_norm", rows, p.length, groups_per_tile(cfg, p.length),
                               misfit(cfg, p.length), lambda tiles, groups: program(cfg, p, tiles, groups),
                               (constants(cfg, p),))


def add_layer_norm_kernel(cfg: Config, rows: int, p: LayerNormParams, add: ReqSumParams) -> OpKernel:
    """The residual add before a post-norm LayerNorm and the LayerNorm in one program: plain
    int8 (rows, D) a and b -> LayerNorm(REQ sum of a and b), bit for bit the two references."""
    if rows < 1:
        raise CompileError(f"add+layer_norm of {rows} rows: at least 1 is needed")
    if len(add.zeros) != 2:
        raise CompileError("the add before the LayerNorm takes two operands")
    groups = groups_per_tile(cfg, p.length, add=True)
    if groups < 1:
        raise CompileError(misfit(cfg, p.length) or f"a layer norm over {p.length} with its add does not fit ACC")
    layout = alu_rows.RowLayout(cfg, rows, p.length, groups, "add+layer_norm")
    kernel = program(cfg, p, layout.tiles, layout.groups, add).compile()
    extra = (constants(cfg, p), np.full((1, cfg.BATCH, cfg.BLOCK_OUT), add.m, np.int32))
    return OpKernel("add+layer_norm", kernel, pack=lambda a, b: (layout.pack(a), layout.pack(b), *extra),
                    unpack=layout.unpack, tiles={"groups_per_tile": layout.groups, "tiles": layout.tiles})
