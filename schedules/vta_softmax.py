"""The integer softmax (requantisation.softmax) on VTA-8's ALU: rows of int8 scores in, int8
probabilities out, bit for bit the module's reference.

Layout: rows are cut into groups of BLOCK_OUT (x BATCH) rows, one row per lane; a group is T
consecutive ACC entries, entry t holding the group's rows' t-th scores. A reduction along a row
is then a reduction along entries, which the ALU does with a tensor operand (a tree of halving
MAX or ADD instructions, no entry read after an earlier iteration of its instruction wrote
it), and a per-row value is one entry per group that a loop broadcasts (source factor 0).

Per tile of G groups (three G*T-entry buffers X, Y, W and five G-entry vectors in ACC):

    X, Y <- the int8 scores (two loads)          max tree on Y; M = -max
    X += M (broadcast)  X *= -c                  t = u * c
    Y = X; Y += 2^(F-1); Y >>= F                 z
    X <<= 32-F; X >>= 32-F [X <<= 15-F]          f, centred, Q15
    W = X; Horner: W *= a3 ... W += 2^14         P(f)
    W >>= Y (tensor)                             e
    X = W; add tree on X; N = -sum               sum
    restoring division: Q = D // sum             one quotient bit per 9-10 ALU instructions
    REQ W by Q (broadcast), shift n, zp          y
    store W

The division runs once per tile over G entries; everything else is one pass over the tile's
entries (docs/ops.md has the cycles).
"""
from __future__ import annotations


from intrinsics.alu_program import AluProgram, Level, Param
from requantisation.softmax import POLY, POLY_FRAC, SoftmaxParams
from vta_sim.config import Config
from vta_sim.errors import CompileError

from . import alu_rows
from .op_kernel import OpKernel

#: Entries of ACC a tile takes per group of rows (X, Y, W) and per group beside them (M, N, A, Q, S).
ROW_BUFFERS, GROUP_VECTORS = 3, 5


def groups_per_tile(cfg: Config, length: int) -> int:
    """How many groups of rows one tile holds in ACC (0: a row does not fit)."""
    return cfg.buffers["acc"].depth // (ROW_BUFFERS * length + GROUP_VECTORS)


def misfit(cfg: Config, length: int) -> str | None:
    if groups_per_tile(cfg, length) < 1:
        most = (cfg.buffers["acc"].depth - GROUP_VECTORS) // ROW_BUFFERS
        return (f"a softmax over {length} entries: three copies of a row group take {ROW_BUFFERS * length} ACC "
                f"entries, ACC holds {cfg.buffers['acc'].depth} (rows up to {most} entries)")
    return None


def program(cfg: Config, p: SoftmaxParams, tiles: int, groups: int) -> AluProgram:
    """The kernel's calls: `tiles` tiles of `groups` row groups each."""
    length = p.length
    span = groups * length
    entries = tiles * span
    shape = (entries, cfg.BATCH, cfg.BLOCK_OUT)
    prog = AluProgram(cfg, [Param("x", shape, "int8", "acc8"), Param("y", shape, "int8", "out")])
    x, y, w = 0, span, 2 * span
    vectors = tuple(3 * span + k * groups for k in range(GROUP_VECTORS))
    for tile in range(tiles):
        offset = tile * span
        prog.load("x", offset, span, x)
        prog.load("x", offset, span, y)
        emit(prog, p, x, (y, w), vectors, groups, copied=True)
        prog.store("y", offset, span, w)
    return prog


def emit(prog: AluProgram, p: SoftmaxParams, x: int, scratch: tuple, vectors: tuple, groups: int,
         copied: bool = False, strides: tuple | None = None, compact: bool = False) -> int:
    """The softmax of `groups` row groups of p.length entries from `x` (int8 scores,
    sign-extended; overwritten), its result in the last of `scratch` = (Y, W), two buffers of
    as many entries, Y a copy of the scores where `copied`; `vectors` the five per-group
    vectors (M, N, A, Q, S) of `groups` entries each. Also the epilogue of the matmul that
    wrote the scores (schedules.fused_epilogue.SoftmaxStep). `compact`: the result in `x`
    instead, each group's row on consecutive entries (group g's entry t at g length + t)
    whatever `strides` the scores came in: the copy of the exponentials the sum reads anyway
    is made in that order and requantised, the sum taken on the original (no cycle more)."""
    length = p.length
    span = groups * length
    y, w = scratch
    m, neg, rem, quo, scratch_vec = vectors
    every = Level(span, 1, 0)                        # each entry, immediate operand
    pairs = Level(span, 1, 1)                        # each entry with its twin in another buffer
    group, entry = strides or (length, 1)
    rows = Level(groups, group, 1), Level(length, entry, 0)  # each entry with its group's vector entry
    frac = p.frac
    if not copied:
        prog.copy(y, x, span)
    alu_rows.tree(prog, "max", y, groups, length, strides)
    alu_rows.gather(prog, m, y, groups, length, negate=True, strides=strides)
    prog.alu("add", x, m, outer=rows[0], inner=rows[1])           # q - max = -u
    prog.alu("mul", x, imm=-p.c, outer=every)                   # t = u * c
    prog.copy(y, x, span)
    prog.alu("add", y, imm=1 << (frac - 1), outer=every)
    prog.alu("shr", y, imm=frac, outer=every)                   # z
    prog.alu("shr", x, imm=-(32 - frac), outer=every)
    prog.alu("shr", x, imm=32 - frac, outer=every)              # f, centred
    if frac < POLY_FRAC:
        prog.alu("shr", x, imm=-(POLY_FRAC - frac), outer=every)
    prog.reset(w, span)
    prog.alu("add", w, imm=POLY[0], outer=every)
    for coef in POLY[1:]:
        prog.alu("mul", w, x, outer=pairs)
        prog.alu("shr", w, imm=POLY_FRAC, outer=every)
        prog.alu("add", w, imm=coef, outer=every)
    prog.alu("shr", w, y, outer=pairs)                          # e = P(f) >> z
    if compact:
        prog.copy(x, w, span, outer=Level(groups, length, group), inner=Level(length, 1, entry))
        total, out, out_rows = w, x, (Level(groups, length, 1), Level(length, 1, 0))
    else:
        prog.copy(x, w, span)
        total, out, out_rows = x, w, rows
    alu_rows.tree(prog, "add", total, groups, length, strides)
    alu_rows.gather(prog, neg, total, groups, length, negate=True, strides=strides)
    alu_rows.division(prog, p.dividend, p.steps, quo, neg, rem, scratch_vec, groups)
    prog.req(out, quo, p.shift, p.zero_point, outer=out_rows[0], inner=out_rows[1])
    return out


def softmax_kernel(cfg: Config, rows: int, p: SoftmaxParams) -> OpKernel:
    """Compiled integer softmax of plain int8 (rows, T) -> int8 (rows, T), T = p.length."""
    if p.lo != -128 or p.hi != 127:
        raise CompileError("the ALU's softmax clamps to int8 only (REQ's bounds)")
    return alu_rows.row_kernel(cfg, "softmax", rows, p.length, groups_per_tile(cfg, p.length),
                               misfit(cfg, p.length), lambda tiles, groups: program(cfg, p, tiles, groups))
