"""Packed dense (GEMM) on VTA-8: tile choice, the TensorIR schedule, and compile.

A tile is `rows` row blocks (of BATCH rows) x `cols` column blocks (of BLOCK_OUT), accumulated
over chunks of `k_blocks` reduction blocks; per chunk one GEMM instruction runs rows x cols
iterations of a `k_blocks`-uop kernel. Virtual threads split the row or the column blocks.
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

#: Largest GEMM kernel (micro-ops), leaving UOP room for the epilogue kernels of every thread.
MAX_KERNEL_UOPS = 1024


@dataclass(frozen=True)
class DenseShape:
    m: int
    k: int
    n: int

    def macs(self) -> int:
        return self.m * self.k * self.n


@dataclass(frozen=True)
class DenseTiles:
    rows: int            # row blocks per tile (per thread)
    cols: int            # column blocks per tile (per thread)
    k_blocks: int        # reduction blocks per chunk
    vthreads: int = 1
    split: str = "n"     # "m" or "n": the dimension the threads divide


def _blocks(cfg: Config, s: DenseShape):
    return s.m // cfg.BATCH, s.k // cfg.BLOCK_IN, s.n // cfg.BLOCK_OUT


def fits(cfg: Config, s: DenseShape, t: DenseTiles) -> str | None:
    need = {"inp": t.rows * t.k_blocks, "wgt": t.cols * t.k_blocks, "acc": t.rows * t.cols + t.cols}
    for sram, n in need.items():
        have = cfg.buffers[sram].depth // t.vthreads
        if n > have:
            return f"{sram.upper()} needs {n} entries per thread, {have} available"
    if t.k_blocks > MAX_KERNEL_UOPS:
        return f"the GEMM kernel needs {t.k_blocks} micro-ops, at most {MAX_KERNEL_UOPS} allowed"
    return None


def estimate_cycles(cfg: Config, s: DenseShape, t: DenseTiles) -> float:
    """A rough cycle model (docs/timing.md) used only to rank candidate tiles."""
    mb, kb, nb = _blocks(cfg, s)
    bus = cfg.bus_bytes
    tiles = (mb // t.rows) * (nb // t.cols)
    chunks = kb // t.k_blocks
    gemm = t.rows * t.cols * t.k_blocks + cfg.GEMM_PIPELINE
    inp_row = t.k_blocks * cfg.buffers["inp"].entry_bytes
    wgt_row = t.k_blocks * cfg.buffers["wgt"].entry_bytes
    load = t.rows * row_read_cycles(cfg, inp_row) + t.cols * row_read_cycles(cfg, wgt_row)
    out_entries = t.rows * t.cols
    store = out_entries * cfg.buffers["out"].entry_bytes / bus + t.rows * cfg.DMA_WRITE_LATENCY
    return pipelined_cycles(t.vthreads, tiles, chunks, gemm, load, epilogue_cycles(cfg, out_entries), store)


def choose_tiles(cfg: Config, s: DenseShape, vthreads: int = 1) -> DenseTiles:
    if vthreads not in (1, 2):
        raise CompileError(f"vthreads = {vthreads}: use 1 or 2")
    mb, kb, nb = _blocks(cfg, s)
    splits = ["n"] if vthreads == 1 else [d for d, n in (("n", nb), ("m", mb)) if n % vthreads == 0]
    if not splits:
        raise CompileError(f"{vthreads} virtual threads need an even number of row blocks ({mb}) "
                           f"or column blocks ({nb}); use --vthreads 1")
    candidates = [DenseTiles(r, c, kc, vthreads, split)
                  for split in splits
                  for r in divisors(mb // (vthreads if split == "m" else 1))
                  for c in divisors(nb // (vthreads if split == "n" else 1))
                  for kc in divisors(kb)]
    return best_tiles(candidates, lambda t: fits(cfg, s, t), lambda t: estimate_cycles(cfg, s, t),
                      f"dense {s} on {cfg.name} with {vthreads} virtual thread(s)")


def check_tiles(cfg: Config, s: DenseShape, t: DenseTiles) -> None:
    mb, kb, nb = _blocks(cfg, s)
    if t.split not in ("m", "n") or t.vthreads not in (1, 2):
        raise CompileError(f"vthreads = {t.vthreads} on {t.split!r}: use 1 or 2 threads on 'm' or 'n'")
    parts = {"rows": (mb, t.rows * (t.vthreads if t.split == "m" else 1)),
             "cols": (nb, t.cols * (t.vthreads if t.split == "n" else 1)),
             "k_blocks": (kb, t.k_blocks)}
    for name, (total, step) in parts.items():
        if step < 1 or total % step:
            raise CompileError(f"tile {name} = {getattr(t, name)} (x{t.vthreads} threads on "
                               f"{t.split}) does not divide the {total} blocks; use one of "
                               f"{divisors(total)}")
    why = fits(cfg, s, t)
    if why:
        raise CompileError(f"tiles {t} do not fit {cfg.name}: {why}")


def schedule(cfg: Config, s: DenseShape, t: DenseTiles, shift: int):
    """The scheduled, tensorized TensorIR module of a packed dense layer."""
    work = wl.dense(cfg, s.m, s.k, s.n, shift)
    check_tiles(cfg, s, t)
    sch = s_tir.Schedule(te.create_prim_func(work.tensors))
    gemm = sch.get_sblock("gemm")
    i, j, b, o, ko, ki = sch.get_loops(gemm)
    i_t, i_v, i_i = sch.split(i, [None, t.vthreads if t.split == "m" else 1, t.rows])
    j_t, j_v, j_i = sch.split(j, [None, t.vthreads if t.split == "n" else 1, t.cols])
    k_t, k_c = sch.split(ko, [None, t.k_blocks])
    sch.reorder(i_t, j_t, i_v, j_v, k_t, i_i, j_i, k_c, b, o, ki)
    tile = sch.fuse(i_v, j_v)
    if t.vthreads > 1:
        sch.bind(tile, "vthread.x")
    sch.set_scope(gemm, 0, SCOPES["acc"])
    for name, scope in (("data", "inp"), ("weight", "wgt")):
        cache = sch.cache_read(gemm, read_index(sch, gemm, name), SCOPES[scope])
        sch.compute_at(cache, k_t)
    schedule_epilogue(sch, cfg, tile, shift)
    tensorize_reduction(sch, cfg, gemm, k_t)
    return sch.mod


def build(cfg: Config, s: DenseShape, t: DenseTiles, shift: int):
    return compile_vta(schedule(cfg, s, t, shift), cfg)
