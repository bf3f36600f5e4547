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

`TransposedStores` rewrites the STOREs of a tile of R rows x 1 column block (the softmax's
tile of S^T = K.Q^T: a key an entry, 8 queries in the lanes) into a STORE of 8 rows x R/8
column blocks of the transposed matrix (a query a row, 8 keys an entry): the layout in which
the next matmul loads the probabilities as its data. BATCH 1 and square blocks only.
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


def acc_entries(rows: int, cfg: Config) -> int:
    """ACC entries the transposition takes beside the kernel: the transposed tile and one entry
    the ordering load writes."""
    return _padded(rows, cfg) + 1


def _padded(rows: int, cfg: Config) -> int:
    return -(-rows // cfg.BLOCK_OUT) * cfg.BLOCK_OUT


class TransposedStores:
    """The calls that store tiles of `rows` rows x 1 column block transposed into an output of
    (blocks x BLOCK_OUT rows, R/BLOCK_OUT column blocks), R = rows rounded up to a block (the
    missing rows of the last block read as zeros: they are never written in the scratch)."""

    def __init__(self, cfg: Config, rows: int, blocks: int, params: list, kinds: tuple, output: int,
                 tops: dict):
        why = misfit(cfg)
        if why:
            raise CompileError(why)
        self.cfg, self.rows, self.blocks, self.output = cfg, rows, blocks, output
        BO = cfg.BLOCK_OUT
        self.padded = _padded(rows, cfg)
        self.key_blocks = self.padded // BO
        need = {"inp": tops["inp"] + BO, "wgt": tops["wgt"] + self.key_blocks, "acc": tops["acc"] + acc_entries(rows, cfg)}
        for sram, top in need.items():
            depth = cfg.buffers[sram].depth
            if top > depth:
                raise CompileError(f"the transposed store needs {sram.upper()} entries up to {top}; it holds {depth}")
        self.units, self.wgt, self.acc, self.sync = tops["inp"], tops["wgt"], tops["acc"], tops["acc"] + self.padded
        entry = (1, BO)
        first = len(params)
        self.params = [
            *params[:output], (params[output][0], (blocks * BO, self.key_blocks, *entry), "int8"), *params[output + 1:],
            ("units", (BO, *entry), "int8"),
            ("scratch", (SLOTS * self.padded, *entry), "int8"),
            ("scratch_wgt", (SLOTS * self.key_blocks, BO, BO), "int8"),
            ("scratch_acc8", (SLOTS * self.padded, *entry), "int8")]
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

    def store(self, sram: int, block: int) -> list:
        """The calls for one tile at ACC `sram` (rows entries, the output's column block `block`
        of the untransposed matrix), in place of its STORE."""
        BO, R, kb = self.cfg.BLOCK_OUT, self.padded, self.key_blocks
        slot = self.stored % SLOTS
        self.stored += 1
        return [
            Store2D(self.scratch, slot * R, self.rows, 1, self.rows, sram),
            Load2D(self.scratch_acc8, slot * R, 1, 1, 1, self.sync, 0, 0, 0, 0),      # waits for the store
            Load2D(self.scratch_wgt, slot * kb, kb, 1, kb, self.wgt, 0, 0, 0, 0),    # waits for that load
            Gemm(self.acc, 0, 0, BO, kb, kb, 0, 0, 1, 0, 0, ((0, 0, 0),), 1),
            # ACC[acc + i kb + b][o] = sum_k e_i[k] W_b[o][k] = W_b[o][i]: query i's keys 8b .. 8b+7
            Gemm(self.acc, self.units, self.wgt, BO, kb, kb, 1, 0, 1, 0, 1, ((0, 0, 0),), 0),
            Store2D(self.output, block * BO * kb, BO * kb, 1, BO * kb, self.acc)]
