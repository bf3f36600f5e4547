"""The compiled engine: a whole checked program in one call of native/engine.c.

engine.c ports the reference (timing.py's Engine driving functional.py's Machine) to C, so a
program costs microseconds per instruction instead of tens. It takes every latency, depth and
hand-off delay from the configuration and timing.py at run time. It detects every run-time
refusal (deadlock, an SRAM index outside its buffer, a hazard) but does not word it: the
Simulator then replays the program through the reference, which raises its exact error.
"""
from __future__ import annotations

import numpy as np

from . import isa, native, timing
from .config import Config
from .functional import LOAD_STAT
from .native import layout
from .result import FUNCTIONAL_STATS, TIMING_STATS

_COL = {name: i for i, name in enumerate(layout.COLUMNS)}
_P = layout.offsets(layout.PARAMS)
_S = layout.offsets(layout.STATS)
_QUEUE_NUM = {q.name: i for i, q in enumerate(isa.TOKEN_QUEUES)}
_FIELDS = [c for c in layout.COLUMNS if c not in ("opcode", "module", "npop", "pop0", "pop1", "npush", "push0",
                                                   "push1", "alu_op")]


def _row(insn: isa.Insn, module: int) -> list:
    """The instruction as engine.c's int64 row (layout.COLUMNS)."""
    row = dict.fromkeys(layout.COLUMNS, 0)
    row.update({f: getattr(insn, f) for f in _FIELDS if hasattr(insn, f)})
    row["opcode"], row["module"] = insn.opcode, module
    if isinstance(insn, isa.AluInsn):
        row["alu_op"] = native.ALU_CODES[insn.alu_opcode]
    for kind in ("pop", "push"):
        queues = [_QUEUE_NUM[q] for q in timing.flag_queues(insn, module, kind)]
        row[f"n{kind}"] = len(queues)
        for k, q in enumerate(queues):
            row[f"{kind}{k}"] = q
    return [row[c] for c in layout.COLUMNS]


def params(cfg: Config, insn_addr: int) -> np.ndarray:
    """engine.c's parameter vector (layout.PARAMS) for one configuration and program address."""
    bufs = cfg.buffers
    uop_fields = isa.layout(cfg)["uop"]
    values = {
        "dma_read_latency": cfg.DMA_READ_LATENCY, "dma_write_latency": cfg.DMA_WRITE_LATENCY,
        "gemm_pipeline": cfg.GEMM_PIPELINE, "alu_pipeline": cfg.ALU_PIPELINE,
        "fetch_decode": timing.FETCH_DECODE, "queue_delay": timing.QUEUE_DELAY, "token_delay": timing.TOKEN_DELAY,
        "issue_delay": timing.ISSUE_DELAY, "request_delay": timing.REQUEST_DELAY,
        "cmd_queue_depth": cfg.CMD_QUEUE_DEPTH, "token_depth": cfg.TOKEN_DEPTH, "bus_bytes": cfg.bus_bytes,
        "burst_boundary": cfg.burst_boundary, "insn_addr": insn_addr,
        "batch": cfg.BATCH, "block_in": cfg.BLOCK_IN, "block_out": cfg.BLOCK_OUT,
        "acc_lanes": cfg.BATCH * cfg.BLOCK_OUT,
        **{f"depth_{b}": bufs[b].depth for b in ("uop", "inp", "wgt", "acc")},
        "elem_bytes": [cfg.dram_elem_bytes(mem) for mem in range(layout.PARAMS["elem_bytes"])],
        "uop_lo": [f.lo for f in uop_fields], "uop_mask": [f.mask for f in uop_fields],
        "port_priority": [timing.PORT_PRIORITY.get(agent, 0) for agent in range(layout.PARAMS["port_priority"])],
    }
    out = np.zeros(layout.size(layout.PARAMS), dtype=np.int64)
    for name, value in values.items():
        out[_P[name]:_P[name] + layout.PARAMS[name]] = value
    return out


def run(cfg: Config, image: np.ndarray, distinct: list, modules: list, which: np.ndarray, insn_addr: int):
    """Runs a checked program (its distinct instructions, their modules, and which of them each
    position holds) on `image` in place. Returns (cycles, statistics as the reference orders
    them), or None when the program is refused at run time (the reference words the error)."""
    rows = np.array([_row(insn, mod) for insn, mod in zip(distinct, modules)], dtype=np.int64)
    insns = np.ascontiguousarray(rows[which])
    bufs = cfg.buffers
    sram = {name: np.zeros((b.depth, *b.shape), dtype=b.dtype) for name, b in bufs.items()}
    stats = np.zeros(layout.size(layout.STATS), dtype=np.int64)
    par = params(cfg, insn_addr)
    err = native.run_program(par, insns, image, sram, stats)
    if err:
        return None
    values = stats.tolist()
    functional = dict.fromkeys(FUNCTIONAL_STATS, 0)
    for mem, name in LOAD_STAT.items():
        functional[name] += values[_S["load_bytes"] + mem]
    functional["out_store_nbytes"] = values[_S["store_bytes"]]
    functional["gemm_counter"], functional["alu_counter"] = values[_S["gemm_counter"]], values[_S["alu_counter"]]
    timed = values[_S["module"]:_S["module"] + layout.STATS["module"]]
    timed += [values[_S["fetch_stall_queue"]], values[_S["fetch_stall_port"]]]
    cycles = values[_S["cycles"]]
    return cycles, {**functional, "cycles": cycles, **dict(zip(TIMING_STATS, timed, strict=True))}
