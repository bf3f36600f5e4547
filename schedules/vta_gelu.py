"""The quantised GELU chain (requantisation.gelu) on VTA-8's ALU: int8 in, int8 out, element by
element, bit for bit the module's reference.

Layout: the elements in order, BATCH x BLOCK_OUT to an ACC entry, cut into tiles of four
buffers (X the input, V the clamped v, W z = v^2 / V^2, A the accumulator) beside four constant
entries (C_2, M_2, M_3, M_4, the same in every lane):

    V = clamp(X - z_x, -V, V); W = (V V z_mult) >> z_shift
    A = c_0; A = ((A W) >> 14) + c_i ...; A = clamp(round(A V / 2^frac))        e - z_e
    A = REQ((A << j) + C_2, M_2) - z_a                                          a - z_a
    A = REQ(A (X - z_x), M_3) - z_m                                             m - z_m
    A = REQ(A, M_4)                                                             y
(dynamo's order, half_first: A = REQ(A, M_3) - z_h, then A = REQ(A (X - z_x), M_4).)
"""
from __future__ import annotations


import numpy as np

from intrinsics.alu_program import AluProgram, Level, Param
from requantisation.gelu import Z_BITS, GeluParams
from vta_sim.config import Config

from . import alu_rows
from .op_kernel import OpKernel

BUFFERS, CONSTANTS = 4, 4


def tile_entries(cfg: Config) -> int:
    return (cfg.buffers["acc"].depth - CONSTANTS) // BUFFERS


def constants(cfg: Config, p: GeluParams) -> np.ndarray:
    return alu_rows.lane_constants(cfg, [p.c2, p.m2, p.m3, p.m4])


def program(cfg: Config, p: GeluParams, tiles: int, tile: int) -> AluProgram:
    shape = (tiles * tile, cfg.BATCH, cfg.BLOCK_OUT)
    prog = AluProgram(cfg, [Param("x", shape, "int8", "acc8"),
                            Param("consts", (CONSTANTS, cfg.BATCH, cfg.BLOCK_OUT), "int32", "acc"),
                            Param("y", shape, "int8", "out")])
    x, v, w, a = (k * tile for k in range(BUFFERS))
    consts = BUFFERS * tile
    prog.load("consts", 0, CONSTANTS, consts)
    for t in range(tiles):
        prog.load("x", t * tile, tile, x)
        emit(prog, p, x, (v, w, a), consts, tile)
        prog.store("y", t * tile, tile, a)
    return prog


def emit(prog: AluProgram, p: GeluParams, x: int, scratch: tuple, consts: int, tile: int) -> None:
    """The chain on `tile` ACC entries from `x` (int8 values, sign-extended; overwritten), its
    result in the last of `scratch` = (V, W, A), three `tile`-entry buffers; the CONSTANTS
    entries (C_2, M_2, M_3, M_4) from `consts`. Also the epilogue of a kernel whose output it
    takes where that kernel wrote it (schedules.fused_epilogue)."""
    v, w, a = scratch
    c2, m2, m3, m4 = (consts + k for k in range(CONSTANTS))
    every, pairs, bcast = Level(tile, 1, 0), Level(tile, 1, 1), Level(tile, 1, 0)
    prog.copy(v, x, tile)
    if p.zero_x:
        prog.alu("add", v, imm=-p.zero_x, outer=every)
    prog.alu("max", v, imm=-p.clip, outer=every)
    prog.alu("min", v, imm=p.clip, outer=every)
    prog.copy(w, v, tile)
    prog.alu("mul", w, v, outer=pairs)
    prog.alu("mul", w, imm=p.z_mult, outer=every)
    if p.z_shift:
        prog.alu("shr", w, imm=p.z_shift, outer=every)
    prog.reset(a, tile)
    prog.alu("add", a, imm=p.coefs[0], outer=every)
    for coef in p.coefs[1:]:
        prog.alu("mul", a, w, outer=pairs)
        prog.alu("shr", a, imm=Z_BITS, outer=every)
        prog.alu("add", a, imm=coef, outer=every)
    prog.alu("mul", a, v, outer=pairs)
    prog.alu("add", a, imm=1 << (p.frac - 1), outer=every)
    prog.alu("shr", a, imm=p.frac, outer=every)
    prog.alu("max", a, imm=p.e_lo, outer=every)
    prog.alu("min", a, imm=p.e_hi, outer=every)                  # e - z_e
    prog.alu("shr", a, imm=-p.j, outer=every)
    prog.alu("add", a, c2, outer=bcast)
    prog.req(a, m2, p.n2, p.zero_a, outer=bcast)
    if p.zero_a:
        prog.alu("add", a, imm=-p.zero_a, outer=every)           # a - z_a
    if p.zero_x:
        prog.alu("add", x, imm=-p.zero_x, outer=every)
    if not p.half_first:
        prog.alu("mul", a, x, outer=pairs)
    prog.req(a, m3, p.n3, p.zero_m, outer=bcast)
    if p.zero_m:
        prog.alu("add", a, imm=-p.zero_m, outer=every)           # m - z_m (h - z_h)
    if p.half_first:
        prog.alu("mul", a, x, outer=pairs)
    prog.req(a, m4, p.n4, p.zero_y, outer=bcast)


def gelu_kernel(cfg: Config, shape: tuple[int, ...], p: GeluParams) -> OpKernel:
    """Compiled GELU chain of plain int8 `shape` -> int8 `shape`, elementwise."""
    return alu_rows.elementwise_kernel(cfg, "gelu", shape, tile_entries(cfg),
                                       lambda tiles, tile: program(cfg, p, tiles, tile), (constants(cfg, p),))
