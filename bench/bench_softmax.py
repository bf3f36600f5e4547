"""The integer softmax (requantisation.softmax) against float softmax quantised as onnxruntime
does (ties to even), and its ALU program's cycles on the simulator (docs/ops.md, "Softmax on
the ALU"): one table row per (input scale, output scale, zero point, row length).

    python bench/bench_softmax.py [CONFIG]      # 1x8x8
"""
import sys

import numpy as np

from requantisation import softmax as sm
from schedules.vta_softmax import softmax_kernel
from vta_sim.config import Config

#: (input scale, output scale, output zero point, row length, rows run on the simulator)
CASES = [(0.04015, 1 / 127, 0, 16, 64), (0.03536, 1 / 255, -128, 16, 64), (0.1, 1 / 255, -128, 128, 256),
         (0.012, 1 / 127, 0, 197, 64), (78.78, 1 / 127, 0, 128, 256)]

cfg, rng = Config.load(sys.argv[1] if len(sys.argv) > 1 else "1x8x8"), np.random.default_rng(0)
print("| input scale | output scale | zero point | T | identical to float QDQ | max LSB | quotient bits | cycles | per entry |")
print("|---|---|---|---|---|---|---|---|---|")
for si, so, zo, length, rows in CASES:
    p = sm.choose(si, so, zo, length)
    q = np.concatenate([np.clip(rng.normal(0, 25, (2000, length)), -128, 127),
                        rng.integers(-128, 128, (2000, length))]).astype(np.int8)
    got, want = sm.reference(q, p).astype(int), sm.float_reference(q, si, 0, so, zo).astype(int)
    y, result = softmax_kernel(cfg, rows, p)(q[:rows])
    assert np.array_equal(y, got[:rows]), "the ALU program differs from the numpy form"
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    print(f"| {si:g} | 1/{round(1 / so)} | {zo} | {length} | {100 * (got == want).mean():.2f} % | "
          f"{np.abs(got - want).max()} | {p.steps} | {result.cycles:,} for {rows}x{length} | "
          f"{result.cycles / (rows * length / lanes):.1f} |")
