"""ResNet-18's C8 on every GEMM shape, on the simulator and on the RTL (native testbench): the same
DRAM and the same cycles, or the shape's disagreement.

  python bench/bench_rtl_shapes.py [--layer resnet18.C8] [--shapes 1x8x8 2x8x8 1x8x16 1x16x16 1x32x32]

The small compiled layers per shape are tests/hw/test_rtl_shapes.py (make test); this is the full
layer. Cycle counts are of the timing model at the commit it runs on: compare, never paste.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from schedules.measure import CASES, layer_shape
from vta_sim import Config


def shape_config(shape: str) -> Config:
    batch, block_in, block_out = (int(v) for v in shape.split("x"))
    keys = {**Config.load("1x8x8").to_dict(), "LOG_BATCH": batch.bit_length() - 1,
            "LOG_BLOCK_IN": block_in.bit_length() - 1, "LOG_BLOCK_OUT": block_out.bit_length() - 1}
    return Config.from_dict(keys, name=shape)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layer", default="resnet18.C8")
    ap.add_argument("--shapes", nargs="+", default=["1x8x8", "2x8x8", "1x8x16", "1x16x16", "1x32x32"])
    args = ap.parse_args(argv)
    ok = True
    print(f"{'shape':<8} {'sim cycles':>12} {'rtl cycles':>12} {'DRAM':>6} {'verified':>8} {'rtl s':>6}")
    for shape in args.shapes:
        cfg = shape_config(shape)
        case = CASES["conv2d"](cfg, layer_shape(args.layer), 2, None, np.random.default_rng(0))
        out, sim = case["op"](*case["inputs"], backend="sim")
        t0 = time.perf_counter()
        _, rtl = case["op"](*case["inputs"], backend="rtl")
        same = bool(np.array_equal(rtl.dram, sim.dram))
        verified = bool(np.array_equal(out, case["reference"]()))
        ok &= same and verified and rtl.cycles == sim.cycles
        print(f"{shape:<8} {sim.cycles:>12,} {rtl.cycles:>12,} {'same' if same else 'DIFF':>6} "
              f"{'yes' if verified else 'NO':>8} {time.perf_counter() - t0:>6.1f}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
