"""A hand-written blocked 2-D convolution on VTA-8 with `vta_sim.runtime` (no compiler).

Packed layouts (batch = BATCH images at once; `vta_sim.packing` converts from NCHW / OIHW):
data (IC/BI, H, W, BATCH, BI), kernel (OC/BO, IC/BI, KH, KW, BO, BI), out (OC/BO, HO, WO, BATCH, BO).

Output tiles of th x tw pixels x tn output-channel blocks. A tile's input window (with the
halo, and zero padding at the image border done by the LOAD's pads) is loaded per input-channel
block; one micro-op kernel of tn x IC/BI x KH x KW uops walks the window with the GEMM's two
loops over output rows and columns. Two virtual threads alternate SRAM slots as in
vta_sim/blocked_gemm.py; a slot keeps its weights while the output-channel group does not change.

Run it: python examples/blocked_conv2d.py [--h 56 --ic 64 --oc 64 --k 3 --pad 1 --stride 1]
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from vta_sim import packing
from vta_sim.runtime import Runtime, UopKernel


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def out_size(h, k, pad, stride):
    return (h + 2 * pad - k) // stride + 1


def choose_tiles(cfg, h, w, icb, ocb, k, pad, stride, vthreads):
    """(th, tw, tn): the most MACs per tile whose window, weights and outputs fit a slot."""
    bufs = cfg.buffers
    inp, wgt, acc = (bufs[n].depth // vthreads for n in ("inp", "wgt", "acc"))
    uop = bufs["uop"].depth // (2 * vthreads)
    ho, wo = out_size(h, k, pad, stride), out_size(w, k, pad, stride)
    best = None
    for th in _divisors(ho):
        for tw in _divisors(wo):
            rows, cols = (th - 1) * stride + k, (tw - 1) * stride + k
            if icb * rows * cols > inp:
                continue
            for tn in _divisors(ocb):
                if tn * icb * k * k > min(wgt, uop) or th * tw * tn > acc:
                    continue
                score = (th * tw * tn, tn, tw)
                if best is None or score > best[0]:
                    best = (score, (th, tw, tn))
    if best is None:
        raise ValueError(f"IC/BI={icb} blocks of a {k}x{k} kernel do not fit one slot of the buffers "
                         f"(INP {inp}, WGT {wgt} entries per slot); use fewer virtual threads")
    return best[1]


def conv2d(rt: Runtime, data: np.ndarray, kernel: np.ndarray, stride=1, pad=1, shift=8, vthreads=2,
           tiles=None, trace=False):
    """Run the convolution; returns (out packed int8, RunResult)."""
    cfg = rt.cfg
    icb, h, w = data.shape[:3]
    ocb, kicb, k, k2 = kernel.shape[:4]
    if kicb != icb or k != k2:
        raise ValueError(f"kernel {kernel.shape[:4]} does not match data with {icb} input-channel blocks")
    if pad > 15:
        raise ValueError(f"pad={pad}: LOAD pads hold at most 15")
    ho, wo = out_size(h, k, pad, stride), out_size(w, k, pad, stride)
    th, tw, tn = tiles or choose_tiles(cfg, h, w, icb, ocb, k, pad, stride, vthreads)
    rows, cols = (th - 1) * stride + k, (tw - 1) * stride + k
    d = rt.array(data, "inp")
    wt = rt.array(kernel, "wgt")
    out = rt.empty((ocb, ho, wo, cfg.BATCH, cfg.BLOCK_OUT), "out")
    slot = {n: cfg.buffers[n].depth // vthreads for n in ("inp", "wgt", "acc")}
    held = [None] * vthreads                      # output-channel group whose weights a slot holds
    taps = icb * k * k
    order = [(o0, y0, x0) for o0 in range(0, ocb, tn) for y0 in range(0, ho, th) for x0 in range(0, wo, tw)]
    for t, (o0, y0, x0) in enumerate(order):
        s = t % vthreads
        inp0, wgt0, acc0 = s * slot["inp"], s * slot["wgt"], s * slot["acc"]
        if t >= vthreads:
            rt.dep_pop("compute", "load")
        iy, ix = y0 * stride - pad, x0 * stride - pad        # window origin, may be in the padding
        py0, px0 = max(0, -iy), max(0, -ix)
        py1, px1 = max(0, iy + rows - h), max(0, ix + cols - w)
        vy, vx = rows - py0 - py1, cols - px0 - px1
        for c in range(icb):
            rt.load_2d(d, (c * h + iy + py0) * w + ix + px0, vx, vy, w, inp0 + c * rows * cols,
                       pad=(py0, py1, px0, px1))
        if held[s] != o0:
            rt.load_2d(wt, o0 * taps, tn * taps, 1, tn * taps, wgt0)
            held[s] = o0
        rt.dep_push("load", "compute")
        rt.dep_pop("load", "compute")
        if t >= vthreads:
            rt.dep_pop("store", "compute")
        reset = UopKernel()
        with reset.loop(tn, dst=th * tw):
            with reset.loop(th * tw, dst=1):
                reset.uop(acc0)
        rt.gemm(reset, reset=True)
        mac = UopKernel()
        with mac.loop(th, dst=tw, src=stride * cols):
            with mac.loop(tw, dst=1, src=stride):
                for o in range(tn):
                    for c in range(icb):
                        for ky in range(k):
                            for kx in range(k):
                                mac.uop(acc0 + o * th * tw, inp0 + (c * rows + ky) * cols + kx,
                                        wgt0 + o * taps + (c * k + ky) * k + kx)
        rt.gemm(mac)
        rt.dep_push("compute", "load")
        epilogue = UopKernel()
        with epilogue.loop(tn * th * tw, dst=1, src=1):
            epilogue.uop(acc0, acc0)
        for op, imm in (("shr", shift), ("max", -128), ("min", 127)):
            rt.alu(epilogue, op, imm)
        rt.dep_push("compute", "store")
        rt.dep_pop("compute", "store")
        for o in range(tn):
            rt.store_2d(out, ((o0 + o) * ho + y0) * wo + x0, tw, th, wo, acc0 + o * th * tw)
        rt.dep_push("store", "compute")
    for _ in range(min(vthreads, len(order))):
        rt.dep_pop("compute", "load")
        rt.dep_pop("store", "compute")
    result = rt.synchronize(trace=trace)
    return out.numpy(), result


def reference(x, k, stride, pad, shift):
    """NCHW int64 direct convolution, requantised: (N, OC, HO, WO) int8."""
    n, c, h, w = x.shape
    o, _, kh, kw = k.shape
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = out_size(h, kh, pad, stride), out_size(w, kw, pad, stride)
    acc = np.zeros((n, o, ho, wo), dtype=np.int64)
    for dy in range(kh):
        for dx in range(kw):
            win = xp[:, :, dy:dy + stride * ho:stride, dx:dx + stride * wo:stride]
            acc += np.einsum("nchw,oc->nohw", win, k[:, :, dy, dx].astype(np.int64))
    return np.clip(acc >> shift, -128, 127).astype(np.int8)


def run_and_report(config="1x8x8", h=56, ic=64, oc=64, k=3, pad=1, stride=1, vthreads=2, shift=10,
                   timeline=None, out=print):
    rt = Runtime(config)
    cfg = rt.cfg
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (cfg.BATCH, ic, h, h), dtype=np.int8)
    wts = rng.integers(-128, 128, (oc, ic, k, k), dtype=np.int8)
    t0 = time.perf_counter()
    data = packing.pack_nchw(x, cfg.BATCH, cfg.BLOCK_IN)[0]          # one batch block
    got, res = conv2d(rt, data, packing.pack_oihw(wts, cfg.BLOCK_OUT, cfg.BLOCK_IN), stride, pad, shift,
                      vthreads, trace=timeline is not None)
    wall = time.perf_counter() - t0
    ok = np.array_equal(packing.unpack_nchw(got[None]), reference(x, wts, stride, pad, shift))
    ho = out_size(h, k, pad, stride)
    ideal = cfg.BATCH * ho * ho * oc * ic * k * k // cfg.macs_per_cycle
    out(f"conv2d {h}x{h}x{ic} -> {oc}, {k}x{k} pad {pad} stride {stride} on {cfg.name}, {vthreads} vthread(s): "
        f"{'verified' if ok else 'MISMATCH'}; {res.cycles:,} cycles, ideal {ideal:,}, "
        f"utilisation {100 * ideal / res.cycles:.1f} %, {len(rt.instructions):,} instructions, "
        f"built and simulated in {wall:.2f} s")
    if timeline is not None:
        res.trace.save_png(timeline)
    return {"verified": ok, "cycles": res.cycles, "ideal_cycles": ideal, "wall_s": wall,
            "instructions": len(rt.instructions)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="1x8x8")
    for name, default in (("h", 56), ("ic", 64), ("oc", 64), ("k", 3), ("pad", 1), ("stride", 1), ("vthreads", 2)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--timeline")
    a = p.parse_args(argv)
    figures = run_and_report(a.config, a.h, a.ic, a.oc, a.k, a.pad, a.stride, a.vthreads,
                             timeline=a.timeline)
    return 0 if figures["verified"] else 1


if __name__ == "__main__":
    sys.exit(main())
