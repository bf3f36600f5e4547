"""An output tile stored transposed, by the GEMM core, inside the program that computed it.

Neither the DMA (it moves whole entries) nor the ALU (it works lane by lane) moves a value
from one lane to another; the GEMM does: with an 8 x 8 block W as its weight and the unit
vector e_i as its input it writes ACC[i][o] = W[o][i], the block's column i as an entry. A
WGT block comes from DRAM only, so a tile whose entries hold one column block of many rows
(8 consecutive rows of it are a block [row][lane]) is stored to a scratch tensor of the
program, loaded back as WGT blocks, and written into ACC transposed by one reset and one
GEMM over 8 x blocks iterations, exact (int8 values in int32, narrowed to OUT as written).
The store and the load back are ordered by the dependency tracker through a compute op
between them (intrinsics.deps: a one-entry load of the scratch into ACC).

`TransposedStores` rewrites the STOREs of a tile of R rows x c column blocks, each column
block's rows on consecutive entries (the softmax's tile of S^T = K.Q^T: a key an entry, 8
queries in the lanes, `vta_softmax.emit(compact=True)`), into a STORE of 8c rows x R/8 column
blocks of the transposed matrix (a query a row, 8 keys an entry): the layout in which the next
matmul loads the probabilities as its data. BATCH 1 and square blocks only.
"""
from __future__ import annotations

import numpy as np

from intrinsics.calls import Gemm, Load2D, Store2D
from intrinsics.host import SCRATCH
from vta_sim.config import Config
from vta_sim.errors import CompileError

#: Scratch slots, used by alternate tiles, so a tile's store to DRAM does not wait for the
#: previous tile's load back.
SLOTS = 2


def misfit(cfg: Config) -> str | None:
    if cfg.BATCH != 1 or cfg.BLOCK_IN != cfg.BLOCK_OUT:
        return (f"the GEMM transposes square blocks of one batch row; {cfg.name} has BATCH {cfg.BATCH}, "
                f"blocks {cfg.BLOCK_OUT} x {cfg.BLOCK_IN}")
    return None


def acc_entries(rows: int, cols: int, cfg: Config, free: int = 0) -> int:
    """ACC entries the transposition takes beside the kernel: the transposed tile of `cols`
    column blocks (none where `free` entries the last step no longer needs hold it) and one
    entry the ordering load writes."""
    tile = cols * _padded(rows, cfg)
    return (0 if tile <= free else tile) + 1


def _padded(rows: int, cfg: Config) -> int:
    return -(-rows // cfg.BLOCK_OUT) * cfg.BLOCK_OUT


class TransposedStores:
    """The calls that store tiles of up to `tile_rows` rows x up to `cols` column blocks
    transposed into an output of (blocks x BLOCK_OUT rows, R/BLOCK_OUT column blocks), R = the
    `rows` of the whole output rounded up to a block (the missing rows of the last block read
    as zeros: the scratch never holds them). Tiles of fewer than all rows (weight blocks only)
    start on a block; a shorter last tile uses a scratch slot of its own, whose padding rows no
    longer tile ever writes."""

    def __init__(self, cfg: Config, rows: int, blocks: int, cols: int, params: list, kinds: tuple, output: int,
                 tops: dict, free: tuple = (0, 0), weight_blocks: bool = False, tile_rows: int | None = None):
        """`tops`: the first free entry of INP, WGT and ACC above the program; `free`: (first,
        count) of ACC entries the last step leaves free after it, where the transposed tile
        goes if it fits; `weight_blocks`: the transposed tile stored as 8 x 8 blocks, each
        block's 8 entries consecutive (a matmul's weight), not as rows."""
        why = misfit(cfg)
        if why:
            raise CompileError(why)
        tile_rows = tile_rows or rows
        if tile_rows < rows and not weight_blocks:
            raise CompileError(f"tiles of {tile_rows} of {rows} rows: a transposed store as rows takes every row")
        self.cfg, self.rows, self.blocks, self.output = cfg, rows, blocks, output
        BO = cfg.BLOCK_OUT
        self.cols, self.weight_blocks = cols, weight_blocks
        self.tile, self.key_blocks = _padded(tile_rows, cfg), _padded(rows, cfg) // BO
        need = {"inp": tops["inp"] + BO, "wgt": tops["wgt"] + cols * self.tile // BO,
                "acc": tops["acc"] + acc_entries(tile_rows, cols, cfg, free[1])}
        for sram, top in need.items():
            depth = cfg.buffers[sram].depth
            if top > depth:
                raise CompileError(f"the transposed store needs {sram.upper()} entries up to {top}; it holds {depth}")
        self.units, self.wgt = tops["inp"], tops["wgt"]
        reuse = cols * self.tile <= free[1]
        self.own_acc = not reuse
        self.acc = free[0] if reuse else tops["acc"]
        self.sync = tops["acc"] if reuse else tops["acc"] + cols * self.tile
        self.slot = cols * self.tile
        entry = (1, BO)
        first = len(params)
        slots = SLOTS + 1                        # the last: a shorter last tile's
        self.params = [
            *params[:output], (params[output][0], (blocks * BO, self.key_blocks, *entry), "int8"), *params[output + 1:],
            ("units", (BO, *entry), "int8"),
            ("scratch", (slots * self.slot, *entry), "int8"),
            ("scratch_wgt", (slots * self.slot // BO, BO, BO), "int8"),
            ("scratch_acc8", (slots * self.slot, *entry), "int8")]
        self.kinds = (*kinds, "inp", SCRATCH, f"wgt@{first + 1}", f"acc8@{first + 1}")
        self.units_param, self.scratch, self.scratch_wgt, self.scratch_acc8 = range(first, first + 4)
        self.stored = 0

    def constants(self) -> np.ndarray:
        """The unit vectors e_0 .. e_7, the `units` input."""
        return np.eye(self.cfg.BLOCK_OUT, dtype=np.int8).reshape(self.cfg.BLOCK_OUT, 1, self.cfg.BLOCK_OUT)

    def start(self) -> list:
        """The unit vectors into INP, once."""
        BO = self.cfg.BLOCK_OUT
        return [Load2D(self.units_param, 0, BO, 1, BO, self.units, 0, 0, 0, 0)]

    def store(self, sram: int, block: int, cols: int, rows: int | None = None, first_row: int = 0) -> list:
        """The calls for one tile at ACC `sram` (column block g's row t at g rows + t; the first
        of the untransposed output's column blocks `block`; `rows` rows from `first_row`, all of
        them where not given), in place of its STORE. (Moving the part after the store to the
        scratch behind the next tile's GEMM gained nothing at BERT's 128 tokens: the next softmax
        then waits for the transposed tile's store instead.)"""
        BO, kb_all = self.cfg.BLOCK_OUT, self.key_blocks
        rows = self.rows if rows is None else rows
        if first_row % BO or (not self.weight_blocks and (first_row or rows != self.rows)):
            raise CompileError(f"a transposed store of rows {first_row}..{first_row + rows}: tiles start on a block, "
                               "and a store as rows takes every row")
        R = _padded(rows, self.cfg)
        kb = R // BO
        short = R < self.tile
        base = (SLOTS if short else self.stored % SLOTS) * self.slot
        self.stored += not short
        out = ((block * kb_all + first_row // BO) * BO, R, cols, kb_all * BO) if self.weight_blocks else \
            (block * BO * kb_all, cols * R, 1, cols * R)
        return [
            Store2D(self.scratch, base, rows, cols, self.tile, sram),
            Load2D(self.scratch_acc8, base, 1, 1, 1, self.sync, 0, 0, 0, 0),             # waits for the store
            Load2D(self.scratch_wgt, base // BO, kb, cols, self.tile // BO, self.wgt, 0, 0, 0, 0),  # waits for that
            Gemm(self.acc, 0, 0, cols * R, 1, 1, 0, 0, 0, 0, 0, ((0, 0, 0),), 1),
            # ACC[acc + g R + i kb + b][o] = sum_k e_i[k] W_(g kb + b)[o][k] = W_(g kb + b)[o][i]: in
            # column block g, the row 8g + i's columns 8b .. 8b + 7 (weight blocks: at g R + 8b + i)
            Gemm(self.acc, self.units, self.wgt, BO, kb, 1 if self.weight_blocks else kb, 1, 0,
                 BO if self.weight_blocks else 1, 0, 1, tuple((g * R, 0, g * kb) for g in range(cols)), 0),
            Store2D(self.output, out[0], out[1], out[2], out[3], self.acc)]
