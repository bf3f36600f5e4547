"""The power-of-two residual add on the GEMM core:
y = clip(((a << sa) + (b << sb) + 2^(shift-1)) >> shift, lo, hi) (requantisation.add.AddParams).

The ALU form (vta_eltwise) loads both operands into ACC on the compute module and spends two
shifts, a tensor ADD (2 cycles an entry), the rounding, the shift and the clamp on them: 9 to 10
compute cycles an entry. Here both operands come in through INP on the load module, where two
virtual threads overlap them with the other thread's compute, and one GEMM over two reduction
blocks with diagonal weights 2^sa and 2^sb sums them, exactly, in int32. REQ with multipliers 1
rounds half up and shifts (multiply_shift.from_power_of_two: AddParams' rounding constant is
REQ's own) and clamps to int8; a MAX clips at a ReLU's 0. Per entry on the compute module: a
reset, two GEMM cycles, REQ and, with a ReLU, the MAX (docs/ops.md, "Residual add").

The form needs BLOCK_IN = BLOCK_OUT (an INP entry and an ACC entry hold the same lanes) and
2^sa, 2^sb within an int8 weight (`misfit`); the graph uses vta_eltwise otherwise.

Layout: the flat list of entries vta_eltwise packs (NCHW packed per block, padded to whole
tiles). Per thread, INP holds a tile of a then a tile of b, ACC a tile; WGT holds the two
weight blocks and ACC's last entry REQ's multipliers, both loaded once.
"""
from __future__ import annotations

import numpy as np

from intrinsics.alu_program import AluProgram, Level, Param
from requantisation.add import AddParams
from requantisation.bounds import INT8_MAX, INT8_MIN
from vta_sim.config import Config

#: The largest operand shift: 2^6 = 64 is the largest power of two an int8 weight holds.
MAX_OPERAND_SHIFT = 6


def misfit(cfg: Config, p) -> str | None:
    """Why the add `p` cannot run on the GEMM core, or None."""
    if not isinstance(p, AddParams):
        return "only the power-of-two add (AddParams) is exact with int8 weights"
    if cfg.BLOCK_IN != cfg.BLOCK_OUT:
        return f"BLOCK_IN {cfg.BLOCK_IN} != BLOCK_OUT {cfg.BLOCK_OUT}: an INP entry is not an ACC entry's lanes"
    if max(p.shift_a, p.shift_b) > MAX_OPERAND_SHIFT:
        return (f"operand shifts {p.shift_a}, {p.shift_b}: 2^shift must fit an int8 weight "
                f"(shift <= {MAX_OPERAND_SHIFT})")
    return None


def choose_tile(cfg: Config, entries: int, vthreads: int) -> tuple[int, int]:
    """(tile entries, tiles): two operand tiles per thread in INP, one in ACC beside the
    multiplier entry; as few tiles as possible (a multiple of the threads), evenly cut."""
    cap = min(cfg.buffers["inp"].depth // (2 * vthreads), (cfg.buffers["acc"].depth - 1) // vthreads)
    tiles = -(-entries // (cap * vthreads)) * vthreads
    return -(-entries // tiles), tiles


def weights(cfg: Config, p: AddParams) -> np.ndarray:
    """The two weight blocks (2, BLOCK_OUT, BLOCK_IN): 2^sa and 2^sb on the diagonal."""
    eye = np.eye(cfg.BLOCK_OUT, cfg.BLOCK_IN, dtype=np.int8)
    return np.stack([eye << p.shift_a, eye << p.shift_b]).astype(np.int8)


def constants(cfg: Config, p: AddParams) -> tuple:
    """The kernel's inputs after a and b (`program`'s w and m): the weight blocks and REQ's
    multipliers, 1 in every lane."""
    return weights(cfg, p), np.ones((1, cfg.BATCH, cfg.BLOCK_OUT), np.int32)


def program(cfg: Config, p: AddParams, tile: int, tiles: int, vthreads: int) -> AluProgram:
    """The kernel's calls: a, b (tile * tiles entries each), w, m -> out."""
    entries = tile * tiles
    lanes = (cfg.BATCH, cfg.BLOCK_OUT)
    prog = AluProgram(cfg, [Param("a", (entries, *lanes), "int8", "inp"),
                            Param("b", (entries, *lanes), "int8", "inp"),
                            Param("w", (2, cfg.BLOCK_OUT, cfg.BLOCK_IN), "int8", "wgt"),
                            Param("m", (1, *lanes), "int32", "acc"),
                            Param("out", (entries, *lanes), "int8", "out")])
    m = cfg.buffers["acc"].depth - 1
    prog.load("w", 0, 2, 0)
    prog.load("m", 0, 1, m)
    each, same = Level(tile, 1, 1), Level(tile, 1, 0)
    for t in range(tiles):
        thread = t % vthreads
        inp, acc = thread * 2 * tile, thread * tile
        prog.load("a", t * tile, tile, inp)
        prog.load("b", t * tile, tile, inp + tile)
        prog.reset(acc, tile)
        prog.gemm(acc, inp, ((0, 0, 0), (0, tile, 1)), outer=each)
        prog.req(acc, m, p.shift, 0, outer=same)
        if p.lo > INT8_MIN:
            prog.alu("max", acc, imm=p.lo, outer=same)
        if p.hi < INT8_MAX:
            prog.alu("min", acc, imm=p.hi, outer=same)
        prog.store("out", t * tile, tile, acc)
    return prog
