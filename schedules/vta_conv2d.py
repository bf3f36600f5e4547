"""Blocked conv2d on VTA-8: tile choice, the TensorIR schedule, and compile.

One output tile is `batch_blocks` batch blocks x `oc_blocks` output-channel blocks x `rows`
output rows x the full output width, accumulated over chunks of `ic_blocks` input-channel
blocks. Per chunk the input rows (with their halo, zero-padded by the DMA) and the weights are
loaded and one GEMM instruction runs rows x width iterations of an (oc x ic x kh x kw)-uop
kernel that is the same for every tile. Virtual threads split the output rows (or the channel
blocks) so that one thread's loads overlap the other's GEMM.

Any shape: tiles need not divide it. The kernel computes `computed_shape(cfg, s, t)`: batch and
channels padded to whole blocks and whole tiles, output rows rounded up to whole tiles by extra
zero input rows at the bottom; `vta_ops` pads the plain inputs to it and crops the output.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from tvm import s_tir, te

from vta_sim.errors import CompileError
from intrinsics.tensor_intrin import SCOPES
from requantisation.rule import Requant
from vta_sim.config import Config

from . import vta_workloads as wl
from .tiled_op import TiledOp
from .vta_common import (epilogue_acc, epilogue_cycles, fits_buffers, padded_extent, pipelined_cycles,
                          read_index, row_read_cycles, schedule_epilogue, tensorize_reduction,
                          tile_sizes, tile_waste)


@dataclass(frozen=True)
class ConvShape:
    n: int
    h: int
    w: int
    ic: int
    oc: int
    k: int
    pad: int
    stride: int
    groups: int = 1      # ic/groups input channels per group, as many output channels (depthwise: ic)

    @property
    def oh(self) -> int:
        return wl.out_size(self.h, self.k, self.pad, self.stride)

    @property
    def ow(self) -> int:
        return wl.out_size(self.w, self.k, self.pad, self.stride)

    def macs(self) -> int:
        return self.n * self.oh * self.ow * self.oc * (self.ic // self.groups) * self.k * self.k


@dataclass(frozen=True)
class ConvTiles:
    oc_blocks: int       # output-channel blocks per tile (per thread)
    rows: int            # output rows per tile (per thread)
    ic_blocks: int       # input-channel blocks per reduction chunk
    vthreads: int = 1
    split: str = "h"     # the dimension the virtual threads divide: "h" or "oc"
    batch_blocks: int | None = None   # batch blocks per tile; None: the whole batch

    def threads_on(self, dim: str) -> int:
        return self.vthreads if self.split == dim else 1


def group_blocks(cfg: Config, s: ConvShape) -> int | None:
    """Channel blocks per block group of a grouped conv (None: a dense conv).

    Groups of `per` channels are packed into block groups of lcm(per, block) channels: whole
    groups and whole blocks, so output block c reads only the input blocks of its block group
    (the weight tile block-diagonal inside: the GEMM mapping of docs/ops.md)."""
    if s.groups == 1:
        return None
    if s.ic != s.oc or s.ic % s.groups or cfg.BLOCK_IN != cfg.BLOCK_OUT:
        raise CompileError(f"grouped conv {s}: needs as many output as input channels per group "
                           f"and BLOCK_IN == BLOCK_OUT (got {cfg.BLOCK_IN}, {cfg.BLOCK_OUT})")
    per = s.ic // s.groups
    return math.lcm(per, cfg.BLOCK_IN) // cfg.BLOCK_IN


def blocks(cfg: Config, s: ConvShape) -> tuple:
    """(batch, input-channel, output-channel) blocks of the shape, partial blocks counted whole.

    For a grouped conv, the input-channel blocks are those one output block reduces over (its
    block group's), and the output blocks cover whole block groups."""
    nb = -(-s.n // cfg.BATCH)
    gb = group_blocks(cfg, s)
    if gb is None:
        return nb, -(-s.ic // cfg.BLOCK_IN), -(-s.oc // cfg.BLOCK_OUT)
    return nb, gb, -(-s.ic // (gb * cfg.BLOCK_IN)) * gb


def _input_blocks(cfg: Config, s: ConvShape, t: ConvTiles) -> int:
    """Input-channel blocks one reduction chunk of a tile loads (one group's per group in it)."""
    gb = group_blocks(cfg, s)
    return t.ic_blocks if gb is None else t.ic_blocks * -(-t.oc_blocks // gb)


def batch_tile(cfg: Config, s: ConvShape, t: ConvTiles) -> int:
    return blocks(cfg, s)[0] if t.batch_blocks is None else t.batch_blocks


def computed_shape(cfg: Config, s: ConvShape, t: ConvTiles) -> ConvShape:
    """The shape the kernel computes for `s` with tiles `t`: whole blocks and whole tiles.

    Padded batch and channels are zeros (zero weights and bias for padded output channels); the
    output rows are rounded up by adding zero input rows at the bottom, which read like the
    conv's own zero padding, so the first `s.oh` rows are exact. The rest is cropped."""
    nb, ib, ob = blocks(cfg, s)
    oh = padded_extent(s.oh, t.rows, t.threads_on("h"))
    if wl.subsamples_rows(s.k, s.pad, s.stride):
        h = (oh - 1) * s.stride + 1
    else:
        h = (oh - 1) * s.stride + s.k - 2 * s.pad
    oc = padded_extent(ob, t.oc_blocks, t.threads_on("oc")) * cfg.BLOCK_OUT
    ic = padded_extent(ib, t.ic_blocks) * cfg.BLOCK_IN if s.groups == 1 else oc
    groups = 1 if s.groups == 1 else ic // (s.ic // s.groups)     # padding adds whole (zero) groups
    return ConvShape(padded_extent(nb, batch_tile(cfg, s, t)) * cfg.BATCH, max(s.h, h), s.w, ic, oc,
                     s.k, s.pad, s.stride, groups)


def input_rows(s: ConvShape, rows: int) -> int:
    """Input rows one tile of `rows` output rows stages on chip."""
    if wl.subsamples_rows(s.k, s.pad, s.stride):
        return rows
    return (rows - 1) * s.stride + s.k


def footprint(cfg: Config, s: ConvShape, t: ConvTiles, requant=None) -> dict:
    """SRAM entries one thread needs, and the GEMM kernel's micro-ops (`requant`: the epilogue,
    see vta_workloads.epilogue; None: power-of-two)."""
    rows_in = input_rows(s, t.rows)
    nb = batch_tile(cfg, s, t)
    return {"inp": _input_blocks(cfg, s, t) * rows_in * (s.w + 2 * s.pad) * nb,
            "wgt": t.oc_blocks * t.ic_blocks * s.k * s.k,
            "acc": epilogue_acc(requant, t.oc_blocks * t.rows * s.ow * nb, t.oc_blocks),
            "uop": t.oc_blocks * t.ic_blocks * s.k * s.k}


def usable(cfg: Config, s: ConvShape, t: ConvTiles, requant=None) -> str | None:
    """None when the tiles suit the shape (see vta_common.tile_waste) and fit, else the reason."""
    if t.split not in ("h", "oc") or t.vthreads not in (1, 2):
        return f"vthreads = {t.vthreads} on {t.split!r}: use 1 or 2 threads on 'h' or 'oc'"
    nb, ib, ob = blocks(cfg, s)
    for name, tile, total, unit, threads in (
            ("batch_blocks", batch_tile(cfg, s, t), nb, "batch blocks", 1),
            ("oc_blocks", t.oc_blocks, ob, "output-channel blocks", t.threads_on("oc")),
            ("rows", t.rows, s.oh, "output rows", t.threads_on("h")),
            ("ic_blocks", t.ic_blocks, ib, "input-channel blocks", 1)):
        why = tile_waste(name, tile, total, unit, threads)
        if why:
            return why
    gb = group_blocks(cfg, s)
    if gb is not None:
        if gb % t.ic_blocks:
            return f"ic_blocks = {t.ic_blocks} does not divide the {gb}-block groups"
        if gb % t.oc_blocks and t.oc_blocks % gb:
            return f"oc_blocks = {t.oc_blocks} neither divides nor is a multiple of the {gb}-block groups"
        if (computed_shape(cfg, s, t).oc // cfg.BLOCK_OUT) % gb:
            return f"the padded output channels are not whole {gb}-block groups"
    return fits(cfg, s, t, requant)


def fits(cfg: Config, s: ConvShape, t: ConvTiles, requant=None) -> str | None:
    """None when the tiles fit the buffers, else the reason."""
    why = fits_buffers(cfg, footprint(cfg, s, t, requant), t.vthreads)
    if why:
        return why
    if s.pad > 15:
        return f"padding {s.pad} exceeds the DMA's 4-bit pad fields (at most 15)"
    return None


def estimate_cycles(cfg: Config, s: ConvShape, t: ConvTiles, requant=None) -> float:
    """A rough cycle model (docs/timing.md) used only to rank candidate tiles.

    Counts the tiles of the computed (padded) shape, so remainder tiles cost their waste."""
    bus = cfg.bus_bytes
    c = computed_shape(cfg, s, t)
    nb = batch_tile(cfg, s, t)
    tiles = (c.n // cfg.BATCH // nb) * (c.oc // cfg.BLOCK_OUT // t.oc_blocks) * (c.oh // t.rows)
    chunks = blocks(cfg, c)[1] // t.ic_blocks
    gemm = nb * t.rows * s.ow * t.oc_blocks * t.ic_blocks * s.k * s.k + cfg.GEMM_PIPELINE
    rows_in = input_rows(s, t.rows)
    inp_entry = cfg.buffers["inp"].entry_bytes
    wgt_bytes = t.ic_blocks * s.k * s.k * cfg.buffers["wgt"].entry_bytes
    load = (_input_blocks(cfg, s, t) * nb * rows_in * (row_read_cycles(cfg, s.w * inp_entry) + 2 * s.pad)
            + t.oc_blocks * row_read_cycles(cfg, wgt_bytes))
    out_entries = nb * t.oc_blocks * t.rows * s.ow
    store = out_entries * cfg.buffers["out"].entry_bytes / bus + t.oc_blocks * cfg.DMA_WRITE_LATENCY
    return pipelined_cycles(t.vthreads, tiles, chunks, gemm, load, epilogue_cycles(cfg, out_entries, requant),
                            store)


def candidates(cfg: Config, s: ConvShape, v: int) -> list:
    """Every tiling with `v` threads that choose_tiles ranks (usable or not); the tuner's space too."""
    nb, ib, ob = blocks(cfg, s)
    return [ConvTiles(to, th, ci, v, split, bb)
            for split in (("h", "oc") if v > 1 else ("h",))
            for bb in tile_sizes(nb)
            for to in tile_sizes(-(-ob // (v if split == "oc" else 1)))
            for th in tile_sizes(-(-s.oh // (v if split == "h" else 1)))
            for ci in tile_sizes(ib)]


def schedule(cfg: Config, s: ConvShape, t: ConvTiles, requant: Requant):
    """The scheduled, tensorized TensorIR module of a packed conv2d computing
    `computed_shape(cfg, s, t)`."""
    c = computed_shape(cfg, s, t)
    work = wl.conv2d(cfg, c.n, c.h, c.w, c.ic, c.oc, c.k, c.pad, c.stride, requant,
                     group_blocks=group_blocks(cfg, s))
    sch = s_tir.Schedule(te.create_prim_func(work.tensors))
    conv = sch.get_sblock("conv")
    n, ch, y, x, b, o, ric, rkh, rkw, rii = sch.get_loops(conv)
    n_t, n_i = sch.split(n, [None, batch_tile(cfg, s, t)])
    c_t, c_v, c_i = sch.split(ch, [None, t.threads_on("oc"), t.oc_blocks])
    y_t, y_v, y_i = sch.split(y, [None, t.threads_on("h"), t.rows])
    ic_t, ic_c = sch.split(ric, [None, t.ic_blocks])
    sch.reorder(n_t, c_t, y_t, c_v, y_v, n_i, ic_t, y_i, x, c_i, ic_c, rkh, rkw, b, o, rii)
    tile = sch.fuse(c_v, y_v)
    if t.vthreads > 1:
        sch.bind(tile, "vthread.x")
    sch.set_scope(conv, 0, SCOPES["acc"])
    pad = sch.get_sblock("pad")
    sch.set_scope(pad, 0, SCOPES["inp"])
    sch.compute_at(pad, ic_t)
    wgt = sch.cache_read(conv, read_index(sch, conv, "weight"), SCOPES["wgt"])
    sch.compute_at(wgt, ic_t)
    schedule_epilogue(sch, cfg, n_i, requant)
    tensorize_reduction(sch, cfg, conv, ic_t)
    return sch.mod


#: The op as the kernel wrappers, the tuner and the tuning database see it.
CONV2D = TiledOp("conv2d", ConvTiles, candidates, usable, footprint, estimate_cycles, computed_shape, schedule)
