"""A hand-written, double-buffered blocked GEMM on VTA-8, built with `vta_sim.runtime`.

It lives in vta_sim because `vta-sim demo` runs it and the tests and benches use it as a
known-good program; `python examples/blocked_gemm.py` runs it with a shape of your choice.

C = clip((A . W^T) >> shift, -128, 127) in the packed layouts
A: (M/B, K/BI, B, BI) int8, W: (N/BO, K/BI, BO, BI) int8, C: (M/B, N/BO, B, BO) int8.

Output tiles of (tm x tn) blocks take the whole K. With two virtual threads, tile t uses SRAM
slot t % 2, so the load module fills one slot while compute works on the other; tokens order
the hand-offs: load -> compute (data ready), compute -> load (slot free again), compute ->
store (result ready), store -> compute (OUT slot free again).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from vta_sim import packing
from vta_sim.config import Config
from vta_sim.isa import MODULES
from vta_sim.result import RunResult, busy_fraction
from vta_sim.runtime import Runtime, UopKernel
from vta_sim.trace import Trace


def choose_tiles(cfg: Config, mb: int, kb: int, nb: int, vthreads: int) -> tuple[int, int]:
    """Largest (tm, tn) dividing (mb, nb) whose per-slot footprint fits 1/vthreads of each SRAM."""
    bufs = cfg.buffers
    inp, wgt, acc = (bufs[n].depth // vthreads for n in ("inp", "wgt", "acc"))
    best: tuple[tuple[int, int], tuple[int, int]] | None = None
    for tm in (d for d in range(1, mb + 1) if mb % d == 0):
        for tn in (d for d in range(1, nb + 1) if nb % d == 0):
            if tm * kb <= inp and tn * kb <= wgt and tm * tn <= acc:
                score = (tm * tn, tm)       # most compute per tile, then fewer INP reloads
                if best is None or score > best[0]:
                    best = (score, (tm, tn))
    if best is None:
        raise ValueError(f"K/BLOCK_IN={kb} blocks do not fit one slot of the INP ({inp}) or WGT ({wgt}) "
                         "buffer; split K or use fewer virtual threads")
    return best[1]


def blocked_gemm(rt: Runtime, a_packed: np.ndarray, w_packed: np.ndarray, shift: int = 8,
                 vthreads: int = 2, tiles: tuple[int, int] | None = None,
                 trace: bool = False) -> tuple[np.ndarray, RunResult]:
    """Run the kernel; returns (C packed int8, RunResult)."""
    if vthreads not in (1, 2):
        raise ValueError(f"vthreads={vthreads}: 1 or 2 are supported")
    mb, kb = a_packed.shape[:2]
    nb = w_packed.shape[0]
    if w_packed.shape[1] != kb:
        raise ValueError(f"A has {kb} K blocks but W has {w_packed.shape[1]}")
    tm, tn = tiles or choose_tiles(rt.cfg, mb, kb, nb, vthreads)
    a = rt.array(a_packed, "inp")
    w = rt.array(w_packed, "wgt")
    c = rt.empty((mb, nb, rt.cfg.BATCH, rt.cfg.BLOCK_OUT), "out")
    bufs = rt.cfg.buffers
    slot = {n: bufs[n].depth // vthreads for n in ("inp", "wgt", "acc")}
    order = [(m0, n0) for m0 in range(0, mb, tm) for n0 in range(0, nb, tn)]
    for t, (m0, n0) in enumerate(order):
        s = t % vthreads
        inp0, wgt0, acc0 = s * slot["inp"], s * slot["wgt"], s * slot["acc"]
        # load: wait until compute has released this slot (tile t - vthreads), then fill it
        if t >= vthreads:
            rt.dep_pop("compute", "load")
        rt.load_2d(a, m0 * kb, tm * kb, 1, tm * kb, inp0)
        rt.load_2d(w, n0 * kb, tn * kb, 1, tn * kb, wgt0)
        rt.dep_push("load", "compute")
        # compute: data ready; OUT slot free once store finished tile t - vthreads
        rt.dep_pop("load", "compute")
        if t >= vthreads:
            rt.dep_pop("store", "compute")
        reset = UopKernel()
        with reset.loop(tm, dst=tn):
            with reset.loop(tn, dst=1):
                reset.uop(acc0)
        rt.gemm(reset, reset=True)
        mac = UopKernel()
        with mac.loop(tm, dst=tn, src=kb):
            with mac.loop(tn, dst=1, wgt=kb):
                for k in range(kb):
                    mac.uop(acc0, inp0 + k, wgt0 + k)
        rt.gemm(mac)
        rt.dep_push("compute", "load")          # INP/WGT slot may be refilled
        epilogue = UopKernel()
        with epilogue.loop(tm * tn, dst=1, src=1):
            epilogue.uop(acc0, acc0)
        rt.alu(epilogue, "shr", shift)
        rt.alu(epilogue, "max", -128)
        rt.alu(epilogue, "min", 127)
        rt.dep_push("compute", "store")
        # store: the tile's rows go to C[m0:m0+tm, n0:n0+tn]
        rt.dep_pop("compute", "store")
        rt.store_2d(c, m0 * nb + n0, tn, tm, nb, acc0)
        rt.dep_push("store", "compute")
    for _ in range(min(vthreads, len(order))):  # drain the tokens no later tile consumed
        rt.dep_pop("compute", "load")
        rt.dep_pop("store", "compute")
    result = rt.synchronize(trace=trace)
    return c.numpy(), result


def reference(a_packed: np.ndarray, w_packed: np.ndarray, shift: int) -> np.ndarray:
    """numpy int64 reference in the packed layout."""
    a = packing.unpack_rows(a_packed).astype(np.int64)
    w = packing.unpack_rows(w_packed).astype(np.int64)
    c = np.clip((a @ w.T) >> shift, -128, 127).astype(np.int8)
    return packing.pack_rows(c, a_packed.shape[2], w_packed.shape[2], "C")


def random_operands(cfg: Config, m: int, k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random int8 A (m, k) and W (n, k), packed; refuses dimensions that are not whole blocks."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    return (packing.pack_rows(a, cfg.BATCH, cfg.BLOCK_IN, "A"), packing.pack_rows(w, cfg.BLOCK_OUT, cfg.BLOCK_IN, "W"))


def run_and_report(config: Config | str = "1x8x8", m: int = 64, k: int = 256, n: int = 256, vthreads: int = 2,
                   shift: int = 8, timeline: str | Path | None = None, image: str | Path | None = None,
                   out: Callable[[str], None] = print) -> dict[str, float | int | bool]:
    """Build, run, verify and print the figures a user wants; returns a dict of them."""
    rt = Runtime(config)
    cfg = rt.cfg
    a, w = random_operands(cfg, m, k, n)
    t0 = time.perf_counter()
    got, res = blocked_gemm(rt, a, w, shift=shift, vthreads=vthreads, trace=timeline is not None)
    wall = time.perf_counter() - t0
    ok = np.array_equal(got, reference(a, w, shift))
    ideal = m * k * n // cfg.macs_per_cycle
    st = res.stats
    figures = {"verified": ok, "cycles": res.cycles, "ideal_cycles": ideal,
               "utilization": ideal / res.cycles, "wall_s": wall, "instructions": len(rt.instructions)}
    out(f"blocked GEMM {m}x{k}x{n} on {cfg.name}, {vthreads} virtual thread(s): "
        f"{'verified bit-exact against numpy' if ok else 'MISMATCH against numpy'}")
    out(f"  cycles {res.cycles:,}   ideal {ideal:,} (MACs / {cfg.macs_per_cycle} per cycle)   "
        f"utilisation {100 * ideal / res.cycles:.1f} %")
    out("  busy: " + "   ".join(f"{mod} {100 * busy_fraction(st, mod, res.cycles):.1f} %"
                                for mod in MODULES)
        + f"   ({len(rt.instructions)} instructions, simulated in {wall:.2f} s)")
    if image is not None:
        prog = rt.last_program
        assert prog is not None   # synchronize() keeps the program it ran
        prog.image.tofile(image)
        out(f"  program image written to {image}; replay it with\n"
            f"    vta-sim run {image} --insn-addr {prog.insn_addr:#x} --insn-count {prog.insn_count}"
            f" --config {cfg.name}")
    if timeline is not None:
        assert isinstance(res.trace, Trace)   # run with trace=True
        res.trace.save_png(timeline, title=f"blocked GEMM {m}x{k}x{n}, {vthreads} vthreads: {res.cycles:,} cycles")
        out(f"  timeline written to {timeline}")
    return figures
