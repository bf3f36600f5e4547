"""torch's quantised GELU chain (requantisation.gelu) against the float32 chain onnxruntime
computes, on all 256 int8 inputs, and its ALU program's cycles (docs/ops.md, "GELU on the ALU").

    python bench/bench_gelu.py [CONFIG]      # 1x8x8
"""
import sys

import numpy as np

from requantisation import gelu as ge
from schedules.vta_gelu import gelu_kernel
from vta_sim.config import Config

F32 = np.float32
CHAINS = {
    "encoder (onnxruntime, symmetric)": ge.GeluChain(
        0.035380139946937561, 0, float(F32(1.4142135381698608)), 0.0078739607706665993, 0,
        float(F32(127) * F32(0.0078740157186985016)), 0.015747975558042526, 0, 0.070760026574134827, 0,
        float(F32(127) * F32(0.0039370078593492508)), 0.035380013287067413, 0),
    "zero points": ge.GeluChain(0.05, 5, 1.4142135, 1 / 127, 3, 1.0, 2 / 127, -4, 0.07, 2, 0.5, 0.05, 3),
    "coarse input": ge.GeluChain(0.1, -2, 1.4142135, 1 / 127, 0, 1.0, 2 / 127, 0, 0.2, 0, 0.5, 0.08, -1),
}
cfg = Config.load(sys.argv[1] if len(sys.argv) > 1 else "1x8x8")
q = np.arange(-128, 128, dtype=np.int8)
print("| chain | erf degree | inputs off the float chain (of 256) | max LSB | cycles for 128x512 | per entry |")
print("|---|---|---|---|---|---|")
for name, chain in CHAINS.items():
    p = ge.choose(chain)
    diff = np.abs(ge.reference(q, p).astype(int) - chain.steps(q)[-1])
    x = np.resize(q, (128, 512)).astype(np.int8)
    y, result = gelu_kernel(cfg, x.shape, p)(x)
    assert np.array_equal(y, ge.reference(x, p)), "the ALU program differs from the numpy form"
    print(f"| {name} | {2 * len(p.coefs) - 1} | {p.mismatches} | {diff.max()} | {result.cycles:,} | "
          f"{result.cycles / (x.size / (cfg.BATCH * cfg.BLOCK_OUT)):.1f} |")
