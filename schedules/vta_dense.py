"""Packed dense (GEMM) on VTA-8: tile choice, the TensorIR schedule, and compile.

A tile is `rows` row blocks (of BATCH rows) x `cols` column blocks (of BLOCK_OUT), accumulated
over chunks of `k_blocks` reduction blocks; per chunk one GEMM instruction runs rows x cols
iterations of a `k_blocks`-uop kernel. Virtual threads split the row or the column blocks.

Any M, K, N: the kernel computes `computed_shape(cfg, s, t)`, each dimension padded with zeros
to whole blocks and whole tiles (row tiles are also the batch tiling); `vta_ops` pads the plain
operands and crops the result.
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import s_tir, te

from intrinsics.tensor_intrin import SCOPES
from requantisation.rule import Requant
from vta_sim.config import Config

from . import vta_workloads as wl
from .tiled_op import TiledOp
from .vta_common import (epilogue_acc, epilogue_cycles, fits_buffers, padded_extent, pipelined_cycles,
                          read_index, row_read_cycles, schedule_epilogue, tensorize_reduction,
                          tile_sizes, tile_waste)


@dataclass(frozen=True)
class DenseShape:
    m: int
    k: int
    n: int
    row_term: bool = False   # a per-row int32 input added before the bias (vta_workloads.dense)

    def macs(self) -> int:
        return self.m * self.k * self.n


@dataclass(frozen=True)
class DenseTiles:
    rows: int            # row blocks per tile (per thread)
    cols: int            # column blocks per tile (per thread)
    k_blocks: int        # reduction blocks per chunk
    vthreads: int = 1
    split: str = "n"     # "m" or "n": the dimension the threads divide

    def threads_on(self, dim: str) -> int:
        return self.vthreads if self.split == dim else 1


def blocks(cfg: Config, s: DenseShape):
    """(row, reduction, column) blocks, partial blocks counted whole."""
    return -(-s.m // cfg.BATCH), -(-s.k // cfg.BLOCK_IN), -(-s.n // cfg.BLOCK_OUT)


def computed_shape(cfg: Config, s: DenseShape, t: DenseTiles) -> DenseShape:
    """The shape the kernel computes for `s` with tiles `t`: zero-padded to whole blocks and tiles."""
    mb, kb, nb = blocks(cfg, s)
    return DenseShape(padded_extent(mb, t.rows, t.threads_on("m")) * cfg.BATCH,
                      padded_extent(kb, t.k_blocks) * cfg.BLOCK_IN,
                      padded_extent(nb, t.cols, t.threads_on("n")) * cfg.BLOCK_OUT, s.row_term)


def usable(cfg: Config, s: DenseShape, t: DenseTiles, requant=None) -> str | None:
    """None when the tiles suit the shape (see vta_common.tile_waste) and fit, else the reason."""
    if t.split not in ("m", "n") or t.vthreads not in (1, 2):
        return f"vthreads = {t.vthreads} on {t.split!r}: use 1 or 2 threads on 'm' or 'n'"
    mb, kb, nb = blocks(cfg, s)
    for name, tile, total, unit, threads in (
            ("rows", t.rows, mb, "row blocks", t.threads_on("m")),
            ("cols", t.cols, nb, "column blocks", t.threads_on("n")),
            ("k_blocks", t.k_blocks, kb, "reduction blocks", 1)):
        why = tile_waste(name, tile, total, unit, threads)
        if why:
            return why
    return fits(cfg, s, t, requant)


def footprint(cfg: Config, s: DenseShape, t: DenseTiles, requant=None) -> dict:
    """SRAM entries one thread needs, and the GEMM kernel's micro-ops (`requant`: the epilogue;
    None: power-of-two)."""
    return {"inp": t.rows * t.k_blocks, "wgt": t.cols * t.k_blocks,
            "acc": epilogue_acc(requant, t.rows * t.cols, t.cols, t.rows if s.row_term else 0),
            "uop": t.k_blocks}


def fits(cfg: Config, s: DenseShape, t: DenseTiles, requant=None) -> str | None:
    return fits_buffers(cfg, footprint(cfg, s, t, requant), t.vthreads)


def estimate_cycles(cfg: Config, s: DenseShape, t: DenseTiles, requant=None) -> float:
    """A rough cycle model (docs/timing.md) used only to rank candidate tiles.

    Counts the tiles of the computed (padded) shape, so remainder tiles cost their waste."""
    c = computed_shape(cfg, s, t)
    bus = cfg.bus_bytes
    tiles = (c.m // cfg.BATCH // t.rows) * (c.n // cfg.BLOCK_OUT // t.cols)
    chunks = c.k // cfg.BLOCK_IN // t.k_blocks
    gemm = t.rows * t.cols * t.k_blocks + cfg.GEMM_PIPELINE
    inp_row = t.k_blocks * cfg.buffers["inp"].entry_bytes
    wgt_row = t.k_blocks * cfg.buffers["wgt"].entry_bytes
    load = t.rows * row_read_cycles(cfg, inp_row) + t.cols * row_read_cycles(cfg, wgt_row)
    out_entries = t.rows * t.cols
    store = out_entries * cfg.buffers["out"].entry_bytes / bus + t.rows * cfg.DMA_WRITE_LATENCY
    epilogue = epilogue_cycles(cfg, out_entries, requant, s.row_term)
    if s.row_term:
        load += row_read_cycles(cfg, t.rows * cfg.buffers["acc"].entry_bytes)
    return pipelined_cycles(t.vthreads, tiles, chunks, gemm, load, epilogue, store)


def candidates(cfg: Config, s: DenseShape, v: int) -> list:
    """Every tiling with `v` threads that choose_tiles ranks (usable or not); the tuner's space too."""
    mb, kb, nb = blocks(cfg, s)
    return [DenseTiles(r, c, kc, v, split)
            for split in (("n", "m") if v > 1 else ("n",))
            for r in tile_sizes(-(-mb // (v if split == "m" else 1)))
            for c in tile_sizes(-(-nb // (v if split == "n" else 1)))
            for kc in tile_sizes(kb)]


def schedule(cfg: Config, s: DenseShape, t: DenseTiles, requant: Requant):
    """The scheduled, tensorized TensorIR module of a packed dense layer computing
    `computed_shape(cfg, s, t)`."""
    c = computed_shape(cfg, s, t)
    work = wl.dense(cfg, c.m, c.k, c.n, requant, row_term=s.row_term)
    sch = s_tir.Schedule(te.create_prim_func(work.tensors))
    gemm = sch.get_sblock("gemm")
    i, j, b, o, ko, ki = sch.get_loops(gemm)
    i_t, i_v, i_i = sch.split(i, [None, t.threads_on("m"), t.rows])
    j_t, j_v, j_i = sch.split(j, [None, t.threads_on("n"), t.cols])
    k_t, k_c = sch.split(ko, [None, t.k_blocks])
    sch.reorder(i_t, j_t, i_v, j_v, k_t, i_i, j_i, k_c, b, o, ki)
    tile = sch.fuse(i_v, j_v)
    if t.vthreads > 1:
        sch.bind(tile, "vthread.x")
    sch.set_scope(gemm, 0, SCOPES["acc"])
    for name, scope in (("data", "inp"), ("weight", "wgt")):
        cache = sch.cache_read(gemm, read_index(sch, gemm, name), SCOPES[scope])
        sch.compute_at(cache, k_t)
    schedule_epilogue(sch, cfg, tile, requant, s.row_term)
    tensorize_reduction(sch, cfg, gemm, k_t)
    return sch.mod


#: The op as the kernel wrappers, the tuner and the tuning database see it.
DENSE = TiledOp("dense", DenseTiles, candidates, usable, footprint, estimate_cycles, computed_shape, schedule)
