"""What every backend returns (spec section 8)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .isa import MODULES

#: Bytes each DMA moved, by memory (spec section 8).
BYTES_STATS = ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes",
               "out_store_nbytes")
#: What the functional model counts: bytes moved, GEMM and ALU iterations.
FUNCTIONAL_STATS = BYTES_STATS + ("gemm_counter", "alu_counter")
#: Statistics every backend reports, besides the timing statistics below.
SPEC_STATS = FUNCTIONAL_STATS + ("cycles",)
#: Per-module timing statistics; each module reports `<module>_<name>` (docs/timing.md).
MODULE_STATS = ("busy_cycles", "stall_token_cycles", "stall_port_cycles", "stall_push_cycles",
                "insn_count")
#: Fetch's timing statistics, reported as `fetch_<name>`.
FETCH_STATS = ("stall_queue_cycles", "stall_port_cycles")
#: The timing statistics by full name, in register-map order (vta_sim.registers).
TIMING_STATS = tuple(f"{m}_{s}" for m in MODULES for s in MODULE_STATS) + \
    tuple(f"fetch_{s}" for s in FETCH_STATS)


def busy_fraction(stats: dict[str, int], module: str, cycles: int) -> float:
    """The share of `cycles` a module (load, compute, store) was busy; 0 when not reported."""
    return float(stats.get(f"{module}_{MODULE_STATS[0]}", 0)) / max(cycles, 1)


@dataclass
class RunResult:
    dram: np.ndarray          # final DRAM image (uint8), a fresh array
    cycles: int               # start to the completion of FINISH
    stats: dict[str, int] = field(default_factory=dict)
    trace: object = None      # vta_sim.trace.Trace when run(..., trace=True)
    backend: str = "sim"

    def to_json(self) -> dict[str, int]:
        return {"cycles": int(self.cycles), **{k: int(v) for k, v in self.stats.items()}}
