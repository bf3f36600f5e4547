"""The compiled engine: a whole program in one call of native/engine.c.

engine.c ports the reference (simulator.check_program, then timing.py's Engine driving
functional.py's Machine) to C, so a program costs microseconds instead of tens of
microseconds per instruction. Everything it needs to know arrives at run time in its parameter
vector (native/layout.py), built here from isa, config and timing: the field tables it decodes
words with, the module and token-queue tables, every latency, depth and hand-off delay.

It only detects refusals: a program check_program refuses, or one that fails at run time
(deadlock, an SRAM index outside its buffer, a hazard), makes `run` return None, and the
Simulator replays it through the reference, which raises its exact error.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from . import isa, native, timing
from .config import MEM_ACC, MEM_ACC_8BIT, MEM_INP, MEM_NAMES, MEM_OUT, MEM_UOP, MEM_WGT, Config
from .functional import LOAD_STAT, MODULE_NAMES
from .native import layout
from .result import FUNCTIONAL_STATS, TIMING_STATS

_P = layout.offsets(layout.PARAMS)
_S = layout.offsets(layout.STATS)
_MEM_BUFFER = {MEM_UOP: "uop", MEM_WGT: "wgt", MEM_INP: "inp", MEM_ACC: "acc", MEM_OUT: "out", MEM_ACC_8BIT: "acc"}


def _field_tables(cfg: Config) -> dict[str, list[int]]:
    """field_lo / field_width / field_signed of every (format, field) of layout.FIELDS."""
    tables = {k: [0] * layout.PARAMS[k] for k in ("field_lo", "field_width", "field_signed")}
    for k, fmt in enumerate(layout.FORMATS):
        for f in isa.layout(cfg)[fmt]:
            if f.lo // 64 != f.hi // 64:
                raise ValueError(f"field {f.name} of {fmt} straddles two 64-bit words; engine.c reads one")
            slot = k * len(layout.FIELDS) + layout.FIELDS.index(f.name)
            tables["field_lo"][slot], tables["field_width"][slot], tables["field_signed"][slot] = \
                f.lo, f.width, int(f.signed)
    return tables


def _delays() -> dict[str, int | tuple[int, ...]]:
    """timing.py's hand-off delays, read at each run (a change to them must reach engine.c)."""
    return {"fetch_decode": timing.FETCH_DECODE, "fetch_next": timing.FETCH_NEXT, "queue_delay": timing.QUEUE_DELAY, "token_delay": timing.TOKEN_DELAY,
            "issue_delay": timing.ISSUE_DELAY, "begin_delay": timing.BEGIN_DELAY, "request_delay": timing.REQUEST_DELAY,
            "alu_imm_interval": timing.ALU_IMM_INTERVAL,
            "req_read_interval": timing.REQ_READ_INTERVAL, "req_keep_interval": timing.REQ_KEEP_INTERVAL,
            "req_extra_latency": timing.REQ_EXTRA_LATENCY,
            "alu_tensor_interval": tuple(timing.ALU_TENSOR_INTERVAL.get(op, 0)
                                         for op in range(layout.PARAMS["alu_tensor_interval"])),
            "port_priority": tuple(timing.PORT_PRIORITY.get(agent, 0) for agent in range(layout.PARAMS["port_priority"]))}


@lru_cache(maxsize=64)
def _params(cfg: Config, delays: tuple[tuple[str, int | tuple[int, ...]], ...]) -> np.ndarray:
    bufs = cfg.buffers
    uop_fields = isa.layout(cfg)["uop"]
    module_num: dict[str | None, int] = {m: i for i, m in enumerate(MODULE_NAMES)}
    mems = range(layout.PARAMS["elem_bytes"])
    values = {
        "dma_read_latency": cfg.DMA_READ_LATENCY, "dma_write_latency": cfg.DMA_WRITE_LATENCY,
        "gemm_pipeline": cfg.GEMM_PIPELINE, "alu_pipeline": cfg.ALU_PIPELINE,
        **dict(delays),
        "cmd_queue_depth": cfg.CMD_QUEUE_DEPTH, "token_depth": cfg.TOKEN_DEPTH, "bus_bytes": cfg.bus_bytes,
        "burst_boundary": cfg.burst_boundary,
        "batch": cfg.BATCH, "block_in": cfg.BLOCK_IN, "block_out": cfg.BLOCK_OUT,
        "acc_lanes": cfg.BATCH * cfg.BLOCK_OUT,
        **{f"depth_{b}": bufs[b].depth for b in ("uop", "inp", "wgt", "acc")},
        "elem_bytes": [cfg.dram_elem_bytes(m) if m in MEM_NAMES else 0 for m in mems],
        "mem_depth": [bufs[_MEM_BUFFER[m]].depth if m in MEM_NAMES else 0 for m in mems],
        "uop_lo": [f.lo for f in uop_fields], "uop_mask": [f.mask for f in uop_fields],
        "format_of_opcode": [layout.FORMATS.index(isa.FORMAT_OF_OPCODE[op]) if op in isa.FORMAT_OF_OPCODE else -1
                             for op in range(layout.PARAMS["format_of_opcode"])],
        "load_module": [module_num.get(isa.module_of(isa.MemInsn(opcode=isa.OP_LOAD, memory_type=m)), -1)
                        for m in mems],
        "flag_queue": [next((k for k, q in enumerate(isa.TOKEN_QUEUES) if q.name == isa.DEP_QUEUES[m][f]), -1)
                       for m in MODULE_NAMES for f in isa.FLAGS],
        "alu_code": [native.ALU_CODES.get(op, -1) for op in range(layout.PARAMS["alu_code"])],
        **_field_tables(cfg),
    }
    out = np.zeros(layout.size(layout.PARAMS), dtype=np.int64)
    for name, value in values.items():
        out[_P[name]:_P[name] + layout.PARAMS[name]] = value
    return out


def params(cfg: Config, insn_addr: int, dram_bytes: int) -> np.ndarray:
    """engine.c's parameter vector (layout.PARAMS) for a configuration and a program's place."""
    out = _params(cfg, tuple(_delays().items())).copy()
    out[_P["insn_addr"]], out[_P["dram_bytes"]] = insn_addr, dram_bytes
    return out


def run(cfg: Config, image: np.ndarray, insn_addr: int, insn_count: int) -> tuple[int, dict[str, int]] | None:
    """Runs a program on `image` (a private copy) in place. Returns (cycles, statistics as the
    reference orders them), or None when it is refused (the reference words the error)."""
    if insn_count < 1 or insn_addr < 0 or insn_addr % isa.INSN_BYTES \
            or insn_addr + insn_count * isa.INSN_BYTES > image.size:
        return None
    sram = {name: np.zeros((b.depth, *b.shape), dtype=b.dtype) for name, b in cfg.buffers.items()}
    stats = np.zeros(layout.size(layout.STATS), dtype=np.int64)
    err = native.run_program(params(cfg, insn_addr, image.size), insn_count, image, sram, stats)
    if err == layout.ERRORS["memory"]:
        raise MemoryError(f"the compiled engine could not allocate its tables for {insn_count} instructions")
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
