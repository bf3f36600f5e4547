"""The three requantisations of a conv layer, cycles and bit-exactness: power of two, the base
ISA's fixed-point sequence, REQ (docs/ops.md). Run with an empty tuning database so all three
take the cycle model's tiles:

    VTA_TUNING_DB=/nonexistent.json python bench/bench_requant.py [CONFIG [LAYER ...]]   # 1x8x8 C2 C5 C8 C11
"""
import sys
import time

import numpy as np

from vta_sim import Config
from requantisation import PowerOfTwo, reference, multiply_shift as ms
from requantisation import fixed_point as fp
from schedules import vta_ops as vo, vta_workloads as wl
from schedules.measure import layer_shape
cfg, rng = Config.load(sys.argv[1] if len(sys.argv) > 1 else "1x8x8"), np.random.default_rng(0)
for name in sys.argv[2:] or ["C2", "C5", "C8", "C11"]:
    s = layer_shape(name); h, ic, oc, k, pad = s["h"], s["ic"], s["oc"], s["k"], s["pad"]
    x = rng.integers(-128, 128, (1, ic, h, h), dtype=np.int8)
    w = rng.integers(-128, 128, (oc, ic, k, k), dtype=np.int8)
    b = rng.integers(-5000, 5000, oc).astype(np.int32)
    acc = wl.conv2d_acc(x, w, b, pad, 1)
    mult = rng.uniform(0.5, 2.0, oc) * 60 / (5500 * np.sqrt(ic * k * k))
    r, params = fp.choose(mult, zero_point=-3)
    q, m = ms.choose(mult, zero_point=-3)
    for label, req, extra in (("pow2", PowerOfTwo(10), ()), ("fixed", r, params.arrays()), ("req", q, (m,))):
        t = time.time()
        op = vo.conv2d_kernel(cfg, 1, h, h, ic, oc, k, pad, 1, req, vthreads=2)
        out, res = op(x, w, b, *extra)
        ref = reference(acc, req, extra)
        print(name, label, op.tiles, res.cycles, round(op.macs / 64 / res.cycles, 3), np.array_equal(out, ref), f"{time.time()-t:.1f}s", flush=True)
