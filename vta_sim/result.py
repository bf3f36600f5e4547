"""What every backend returns (spec section 8)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Statistics every backend reports, besides per-module busy/stall cycles.
SPEC_STATS = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
              "out_store_nbytes", "gemm_counter", "alu_counter", "cycles")


@dataclass
class RunResult:
    dram: np.ndarray          # final DRAM image (uint8), a fresh array
    cycles: int               # start to the completion of FINISH
    stats: dict = field(default_factory=dict)
    trace: object = None      # vta_sim.trace.Trace when run(..., trace=True)
    backend: str = "sim"

    def to_json(self) -> dict:
        return {"cycles": int(self.cycles), **{k: int(v) for k, v in self.stats.items()}}
