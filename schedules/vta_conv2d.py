"""Blocked conv2d on VTA-8: tile choice, the TensorIR schedule, and compile.

One output tile is `oc_blocks` output-channel blocks x `rows` output rows x the full output
width, accumulated over chunks of `ic_blocks` input-channel blocks. Per chunk the input rows
(with their halo, zero-padded by the DMA) and the weights are loaded and one GEMM instruction
runs rows x width iterations of an (oc x ic x kh x kw)-uop kernel that is the same for every
tile. Virtual threads split the output rows (or the channel blocks when there is one row tile)
so that one thread's loads overlap the other's GEMM.
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import s_tir, te

from intrinsics.build import compile_vta
from intrinsics.errors import CompileError
from intrinsics.tensor_intrin import SCOPES
from vta_sim.config import Config

from . import vta_workloads as wl
from .vta_common import (best_tiles, divisors, epilogue_cycles, pipelined_cycles, read_index,
                          row_read_cycles, schedule_epilogue, tensorize_reduction)


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

    @property
    def oh(self) -> int:
        return wl.out_size(self.h, self.k, self.pad, self.stride)

    @property
    def ow(self) -> int:
        return wl.out_size(self.w, self.k, self.pad, self.stride)

    def macs(self) -> int:
        return self.n * self.oh * self.ow * self.oc * self.ic * self.k * self.k


@dataclass(frozen=True)
class ConvTiles:
    oc_blocks: int       # output-channel blocks per tile (per thread)
    rows: int            # output rows per tile (per thread)
    ic_blocks: int       # input-channel blocks per reduction chunk
    vthreads: int = 1
    split: str = "h"     # the dimension the virtual threads divide: "h" or "oc"


#: Upper bound of one kernel's micro-ops, so a GEMM kernel and the epilogue kernels of every
#: thread stay resident in the UOP SRAM together.
MAX_KERNEL_UOPS = 1024


def input_rows(s: ConvShape, rows: int) -> int:
    """Input rows one tile of `rows` output rows stages on chip."""
    if wl.subsamples_rows(s.k, s.pad, s.stride):
        return rows
    return (rows - 1) * s.stride + s.k


def footprint(cfg: Config, s: ConvShape, t: ConvTiles) -> dict:
    """SRAM entries one thread needs, and the GEMM kernel's micro-ops."""
    rows_in = input_rows(s, t.rows)
    return {"inp": t.ic_blocks * rows_in * (s.w + 2 * s.pad) * (s.n // cfg.BATCH),
            "wgt": t.oc_blocks * t.ic_blocks * s.k * s.k,
            "acc": t.oc_blocks * t.rows * s.ow * (s.n // cfg.BATCH) + t.oc_blocks,
            "uop": t.oc_blocks * t.ic_blocks * s.k * s.k}


def fits(cfg: Config, s: ConvShape, t: ConvTiles) -> str | None:
    """None when the tiles fit the buffers, else the reason."""
    need = footprint(cfg, s, t)
    for sram in ("inp", "wgt", "acc"):
        have = cfg.buffers[sram].depth // t.vthreads
        if need[sram] > have:
            return f"{sram.upper()} needs {need[sram]} entries per thread, {have} available"
    if need["uop"] > MAX_KERNEL_UOPS:
        return f"the GEMM kernel needs {need['uop']} micro-ops, at most {MAX_KERNEL_UOPS} allowed"
    if s.pad > 15:
        return f"padding {s.pad} exceeds the DMA's 4-bit pad fields (at most 15)"
    return None


def estimate_cycles(cfg: Config, s: ConvShape, t: ConvTiles) -> float:
    """A rough cycle model (docs/timing.md) used only to rank candidate tiles."""
    bus = cfg.bus_bytes
    oc_b, ic_b = s.oc // cfg.BLOCK_OUT, s.ic // cfg.BLOCK_IN
    nb = s.n // cfg.BATCH
    tiles = (oc_b // t.oc_blocks) * (s.oh // t.rows)
    chunks = ic_b // t.ic_blocks
    gemm = nb * t.rows * s.ow * t.oc_blocks * t.ic_blocks * s.k * s.k + cfg.GEMM_PIPELINE
    rows_in = input_rows(s, t.rows)
    inp_entry = cfg.buffers["inp"].entry_bytes
    wgt_bytes = t.ic_blocks * s.k * s.k * cfg.buffers["wgt"].entry_bytes
    load = (t.ic_blocks * nb * rows_in * (row_read_cycles(cfg, s.w * inp_entry) + 2 * s.pad)
            + t.oc_blocks * row_read_cycles(cfg, wgt_bytes))
    out_entries = nb * t.oc_blocks * t.rows * s.ow
    store = out_entries * cfg.buffers["out"].entry_bytes / bus + t.oc_blocks * cfg.DMA_WRITE_LATENCY
    return pipelined_cycles(t.vthreads, tiles, chunks, gemm, load, epilogue_cycles(cfg, out_entries), store)


def choose_tiles(cfg: Config, s: ConvShape, vthreads: int = 1) -> ConvTiles:
    """The feasible tiling with the lowest estimated cycles; refuses shapes that cannot fit."""
    if vthreads not in (1, 2):
        raise CompileError(f"vthreads = {vthreads}: use 1 or 2")
    oc_b, ic_b = s.oc // cfg.BLOCK_OUT, s.ic // cfg.BLOCK_IN
    splits = ["h"] if vthreads == 1 else [d for d, n in (("h", s.oh), ("oc", oc_b)) if n % vthreads == 0]
    if not splits:
        raise CompileError(f"{vthreads} virtual threads need an even number of output rows "
                           f"({s.oh}) or output-channel blocks ({oc_b}); use --vthreads 1")
    candidates = [ConvTiles(to, th, ci, vthreads, split)
                  for split in splits
                  for to in divisors(oc_b // (vthreads if split == "oc" else 1))
                  for th in divisors(s.oh // (vthreads if split == "h" else 1))
                  for ci in divisors(ic_b)]
    return best_tiles(candidates, lambda t: fits(cfg, s, t), lambda t: estimate_cycles(cfg, s, t),
                      f"conv2d {s} on {cfg.name} with {vthreads} virtual thread(s)")


def check_tiles(cfg: Config, s: ConvShape, t: ConvTiles) -> None:
    oc_b, ic_b = s.oc // cfg.BLOCK_OUT, s.ic // cfg.BLOCK_IN
    parts = {"oc": (oc_b, t.oc_blocks * (t.vthreads if t.split == "oc" else 1), "oc_blocks"),
             "h": (s.oh, t.rows * (t.vthreads if t.split == "h" else 1), "rows"),
             "ic": (ic_b, t.ic_blocks, "ic_blocks")}
    for dim, (total, step, name) in parts.items():
        if step < 1 or total % step:
            raise CompileError(f"tile {name} = {getattr(t, name)} (x{t.vthreads} threads on "
                               f"{t.split}) does not divide the {total} {dim} "
                               f"{'rows' if dim == 'h' else 'blocks'}; use one of "
                               f"{[d for d in divisors(total)]}")
    if t.split not in ("h", "oc") or t.vthreads not in (1, 2):
        raise CompileError(f"vthreads = {t.vthreads} on {t.split!r}: use 1 or 2 threads on 'h' or 'oc'")
    why = fits(cfg, s, t)
    if why:
        raise CompileError(f"tiles {t} do not fit {cfg.name}: {why}")


def schedule(cfg: Config, s: ConvShape, t: ConvTiles, shift: int):
    """The scheduled, tensorized TensorIR module of a packed conv2d."""
    check_tiles(cfg, s, t)
    work = wl.conv2d(cfg, s.n, s.h, s.w, s.ic, s.oc, s.k, s.pad, s.stride, shift)
    sch = s_tir.Schedule(te.create_prim_func(work.tensors))
    conv = sch.get_sblock("conv")
    n, c, y, x, b, o, ric, rkh, rkw, rii = sch.get_loops(conv)
    vt_c = t.vthreads if t.split == "oc" else 1
    vt_h = t.vthreads if t.split == "h" else 1
    c_t, c_v, c_i = sch.split(c, [None, vt_c, t.oc_blocks])
    y_t, y_v, y_i = sch.split(y, [None, vt_h, t.rows])
    ic_t, ic_c = sch.split(ric, [None, t.ic_blocks])
    sch.reorder(c_t, y_t, c_v, y_v, n, ic_t, y_i, x, c_i, ic_c, rkh, rkw, b, o, rii)
    tile = sch.fuse(c_v, y_v)
    if t.vthreads > 1:
        sch.bind(tile, "vthread.x")
    sch.set_scope(conv, 0, SCOPES["acc"])
    pad = sch.get_sblock("pad")
    sch.set_scope(pad, 0, SCOPES["inp"])
    sch.compute_at(pad, ic_t)
    wgt = sch.cache_read(conv, read_index(sch, conv, "weight"), SCOPES["wgt"])
    sch.compute_at(wgt, ic_t)
    schedule_epilogue(sch, cfg, n, shift)
    tensorize_reduction(sch, cfg, conv, ic_t)
    return sch.mod


def build(cfg: Config, s: ConvShape, t: ConvTiles, shift: int):
    return compile_vta(schedule(cfg, s, t, shift), cfg)
