"""The compiled engine: a whole program in one call of native/engine.c.

engine.c ports the reference (timing.py's Engine driving functional.py's Machine) to C, so a
program costs well under a microsecond of Python per instruction instead of tens. The words
are decoded here with numpy (isa.field_columns) into the int64 rows engine.c reads
(native/layout.py). The engine takes every latency, depth and hand-off delay from the
configuration and timing.py at run time.

It only detects refusals: a program that check_program would refuse (`refused`), or one that
fails at run time (deadlock, an SRAM index outside its buffer, a hazard), makes `run` return
None, and the Simulator replays it through the reference, which raises its exact error.
"""
from __future__ import annotations

import numpy as np

from . import isa, native, timing
from .config import MEM_ACC, MEM_ACC_8BIT, MEM_INP, MEM_NAMES, MEM_OUT, MEM_UOP, MEM_WGT, Config
from .functional import COMPUTE, LOAD, LOAD_STAT, MODULE_NAMES, STORE
from .native import layout
from .result import FUNCTIONAL_STATS, TIMING_STATS

_P = layout.offsets(layout.PARAMS)
_S = layout.offsets(layout.STATS)
_QUEUE_NUM = {q.name: i for i, q in enumerate(isa.TOKEN_QUEUES)}
#: (module number, flag) -> token queue number, -1 where the flag is illegal in that module.
_FLAG_QUEUE = np.array([[_QUEUE_NUM.get(isa.DEP_QUEUES[m][f], -1) for f in isa.FLAGS] for m in MODULE_NAMES])
_ALU_CODE = np.array([native.ALU_CODES.get(op, -1) for op in range(8)])
_MEM_BUFFER = {MEM_UOP: "uop", MEM_WGT: "wgt", MEM_INP: "inp", MEM_ACC: "acc", MEM_OUT: "out", MEM_ACC_8BIT: "acc"}
_FORMAT = {isa.OP_LOAD: "mem", isa.OP_STORE: "mem", isa.OP_GEMM: "gemm", isa.OP_ALU: "alu", isa.OP_FINISH: "finish"}


def _columns(cfg: Config, words: np.ndarray) -> dict:
    """Every field by name. A name that two formats place differently (src_factor_* of GEMM and
    ALU when INP and ACC differ in depth) is read from the words of its own format; elsewhere
    a column holds garbage in the words of other formats, which nothing reads."""
    op = (words[:, 0] & 7).astype(np.int64)
    out = {"opcode": op}
    geometry = {}
    for fmt, fields in isa.layout(cfg).items():
        for f in fields:
            geometry.setdefault(f.name, set()).add((f.lo, f.width, f.signed))
    for fmt, cols in isa.field_columns(words, cfg).items():
        for name, v in cols.items():
            if len(geometry[name]) == 1:
                out.setdefault(name, v)
            elif name != "opcode":
                mine = np.isin(op, [o for o, f in _FORMAT.items() if f == fmt])
                out[name] = np.where(mine, v, out.get(name, 0))
    return out


def _module(c: dict) -> np.ndarray:
    """isa.module_of of every instruction, as a module number (garbage where `refused`)."""
    op, mt = c["opcode"], c["memory_type"]
    module = np.full(op.shape, COMPUTE)
    module[op == isa.OP_STORE] = STORE
    module[(op == isa.OP_LOAD) & np.isin(mt, (MEM_INP, MEM_WGT))] = LOAD
    return module


def refused(cfg: Config, c: dict, module: np.ndarray, dram_bytes: int) -> bool:
    """Whether simulator.check_program refuses the program (its checks, vectorised)."""
    op, mt, x, y = c["opcode"], c["memory_type"], c["x_size"], c["y_size"]
    fin = op == isa.OP_FINISH
    if not np.isin(op, list(_FORMAT)).all() or fin[:-1].any() or not fin[-1]:
        return True
    load, store, alu = op == isa.OP_LOAD, op == isa.OP_STORE, op == isa.OP_ALU
    mem = load | store
    if (mem & (~np.isin(mt, list(MEM_NAMES)) | (store & (mt != MEM_OUT)) | (load & (mt == MEM_OUT))
               | (c["unused"] != 0))).any():
        return True
    flags = np.stack([c[f] for f in isa.FLAGS], axis=1).astype(bool)
    if (flags & (_FLAG_QUEUE[module] < 0)).any():
        return True
    loop = alu | (op == isa.OP_GEMM)
    if (alu & (_ALU_CODE[c["alu_opcode"]] < 0)).any() or (loop & ((c["uop_end"] > cfg.buffers["uop"].depth)
                                                                  | (c["uop_bgn"] > c["uop_end"]))).any():
        return True
    y0, y1, x0, x1 = c["y_pad_0"], c["y_pad_1"], c["x_pad_0"], c["x_pad_1"]
    pads = (y0 | y1 | x0 | x1) != 0
    moves = mem & (x != 0)
    mt = np.where(mem, mt, MEM_INP)
    depth = np.array([cfg.buffers[_MEM_BUFFER[m]].depth for m in sorted(MEM_NAMES)])[mt]
    elem = np.array([cfg.dram_elem_bytes(m) for m in sorted(MEM_NAMES)])[mt]
    entries = np.where(store, y * x, (y0 + y + y1) * (x0 + x + x1))
    last = (c["dram_base"] + (y - 1) * c["x_stride"] + x) * elem
    return bool((moves & ((store & pads) | (load & (mt == MEM_UOP) & ((y != 1) | pads))
                          | (c["sram_base"] + entries > depth) | ((y != 0) & (last > dram_bytes)))).any())


def _rows(c: dict, module: np.ndarray) -> np.ndarray:
    """engine.c's instructions: the int64 columns of layout.COLUMNS, one row of n each."""
    n = module.size
    flags = {f: c[f].astype(bool) for f in isa.FLAGS}
    queue = {f: _FLAG_QUEUE[module, k] for k, f in enumerate(isa.FLAGS)}
    cols = dict(c, module=module, alu_op=_ALU_CODE[c["alu_opcode"]])
    for kind in ("pop", "push"):       # in flag order: prev, then next
        prev, nxt = f"{kind}_prev", f"{kind}_next"
        cols[f"n{kind}"] = flags[prev].astype(np.int64) + flags[nxt]
        cols[f"{kind}0"] = np.where(flags[prev], queue[prev], queue[nxt])
        cols[f"{kind}1"] = queue[nxt]
    rows = np.empty((len(layout.COLUMNS), n), dtype=np.int64)
    for k, name in enumerate(layout.COLUMNS):
        rows[k] = cols[name]
    return rows


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


def run(cfg: Config, image: np.ndarray, insn_addr: int, insn_count: int):
    """Runs a program on `image` (a private copy) in place. Returns (cycles, statistics as the
    reference orders them), or None when it is refused (the reference words the error)."""
    end = insn_addr + insn_count * isa.INSN_BYTES
    if insn_count < 1 or insn_addr < 0 or insn_addr % isa.INSN_BYTES or end > image.size:
        return None
    words = image[insn_addr:end].view("<u8").reshape(-1, 2)
    c = _columns(cfg, words)
    module = _module(c)
    if refused(cfg, c, module, image.size):
        return None
    sram = {name: np.zeros((b.depth, *b.shape), dtype=b.dtype) for name, b in cfg.buffers.items()}
    stats = np.zeros(layout.size(layout.STATS), dtype=np.int64)
    if native.run_program(params(cfg, insn_addr), _rows(c, module), image, sram, stats):
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
