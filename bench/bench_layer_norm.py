"""The integer LayerNorm (requantisation.layer_norm) against float LayerNorm quantised as
onnxruntime does (ties to even), and its ALU program's cycles on the simulator (docs/ops.md,
"LayerNorm on the ALU"): one table row per (row length, input scale, output scale, spread).

    python bench/bench_layer_norm.py [CONFIG]      # 1x8x8
"""
import sys

import numpy as np

from requantisation import layer_norm as ln
from schedules.vta_layer_norm import layer_norm_kernel, misfit
from vta_sim.config import Config

#: (row length, input scale, output scale, output zero point, spread in LSB, rows run on the simulator)
CASES = [(64, 0.037, 0.0297, 0, 30, 16), (128, 0.05, 0.03, -5, 20, 128), (128, 0.05, 0.03, 0, 3, 128),
         (768, 0.02, 0.04, 3, 40, 16), (64, 0.037, 0.0297, 0, 1, 16)]

cfg, rng = Config.load(sys.argv[1] if len(sys.argv) > 1 else "1x8x8"), np.random.default_rng(0)
print("| D | input scale | spread (LSB) | identical to float QDQ | max LSB | cycles | per entry |")
print("|---|---|---|---|---|---|---|")
for length, sx, sy, zy, spread, rows in CASES:
    gamma, beta = rng.uniform(0.5, 1.5, length), rng.normal(0, 0.2, length)
    p = ln.choose(sx, gamma, beta, 1e-5, sy, zy)
    q = np.clip(rng.normal(0, spread, (2000, length)) + rng.normal(0, spread, (2000, 1)), -128, 127).astype(np.int8)
    got = ln.reference(q, p).astype(int)
    want = ln.float_reference(q, sx, 0, gamma, beta, 1e-5, sy, zy).astype(int)
    cycles = "does not fit: " + str(misfit(cfg, length)) if misfit(cfg, length) else ""
    if not cycles:
        y, result = layer_norm_kernel(cfg, rows, p)(q[:rows])
        assert np.array_equal(y, got[:rows]), "the ALU program differs from the numpy form"
        per = result.cycles / (rows * length / (cfg.BATCH * cfg.BLOCK_OUT))
        cycles = f"{result.cycles:,} for {rows}x{length} | {per:.1f}"
    print(f"| {length} | {sx:g} | {spread} | {100 * (got == want).mean():.2f} % | {np.abs(got - want).max()} | {cycles} |")
