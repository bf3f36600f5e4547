"""A quantised function of one int8 tensor (requantisation.univariate: Tanh, Sigmoid) on VTA-8's
ALU as its sum of ramps: int8 in, int8 out, element by element, bit for bit the module's
reference.

Layout: the elements in order, BATCH x BLOCK_OUT to an ACC entry, cut into tiles of three
buffers (X the input, W a ramp, A the sum) beside the constants (K and each slope d_i, the same
in every lane, one entry each):

    A = K
    per ramp i:  W = X; W += -b_i; W = max(W, 0) (not for b_0 = -128); W *= d_i; A += W
    A >>= F; A = clamp(A, lo, hi)
"""
from __future__ import annotations


import numpy as np

from intrinsics.alu_program import AluProgram, Level, Param
from requantisation.bounds import INT8_MAX, INT8_MIN
from requantisation.univariate import FRACTION, RampParams
from vta_sim.config import Config

from . import alu_rows
from .op_kernel import OpKernel

BUFFERS = 3


def tile_entries(cfg: Config, p: RampParams) -> int:
    return (cfg.buffers["acc"].depth - 1 - p.segments) // BUFFERS


def constants(cfg: Config, p: RampParams) -> np.ndarray:
    return alu_rows.lane_constants(cfg, [p.k, *p.slopes])


def program(cfg: Config, p: RampParams, tiles: int, tile: int) -> AluProgram:
    shape = (tiles * tile, cfg.BATCH, cfg.BLOCK_OUT)
    count = 1 + p.segments
    prog = AluProgram(cfg, [Param("x", shape, "int8", "acc8"),
                            Param("consts", (count, cfg.BATCH, cfg.BLOCK_OUT), "int32", "acc"),
                            Param("y", shape, "int8", "out")])
    x, w, a = (k * tile for k in range(BUFFERS))
    k = BUFFERS * tile
    every, pairs, bcast = Level(tile, 1, 0), Level(tile, 1, 1), Level(tile, 1, 0)
    prog.load("consts", 0, count, k)
    for t in range(tiles):
        prog.load("x", t * tile, tile, x)
        prog.reset(a, tile)
        prog.alu("add", a, k, outer=bcast)
        for i, b in enumerate(p.breaks):
            prog.copy(w, x, tile)
            if b:
                prog.alu("add", w, imm=-b, outer=every)
            if b > INT8_MIN:
                prog.alu("max", w, imm=0, outer=every)
            prog.alu("mul", w, k + 1 + i, outer=bcast)
            prog.alu("add", a, w, outer=pairs)
        prog.alu("shr", a, imm=FRACTION, outer=every)
        prog.alu("max", a, imm=max(p.lo, INT8_MIN), outer=every)
        prog.alu("min", a, imm=min(p.hi, INT8_MAX), outer=every)
        prog.store("y", t * tile, tile, a)
    return prog


def univariate_kernel(cfg: Config, shape: tuple[int, ...], p: RampParams) -> OpKernel:
    """Compiled ramps of plain int8 `shape` -> int8 `shape`, elementwise."""
    return alu_rows.elementwise_kernel(cfg, p.name, shape, tile_entries(cfg, p),
                                       lambda tiles, tile: program(cfg, p, tiles, tile), (constants(cfg, p),))
