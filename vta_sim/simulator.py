"""The functional + timing simulator: `Simulator(cfg).run(dram, insn_addr=, insn_count=)`.

A run first decodes and checks the whole program against the spec's static rules (section 7),
so a malformed program is refused before anything executes; then the timing engine drives the
instructions through the modules and the functional machine applies each one.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import compiled, isa
from .config import MEM_NAMES, MEM_OUT, MEM_UOP, Config
from .errors import ConfigError, EncodingError, MemoryAccessError, ProgramError, VTAError
from .functional import MODULE_NAMES, Machine
from .isa import ByteLike
from .result import RunResult
from .timing import Engine
from .trace import Trace

#: Called as instructions are fetched: (fetched, total, cycle).
Progress = Callable[[int, int, int], None]

_MODULE_NUM = {name: i for i, name in enumerate(MODULE_NAMES)}


def as_image(dram: object) -> np.ndarray:
    """A private uint8 copy of a DRAM image given as bytes or a 1-D uint8 array."""
    if isinstance(dram, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(dram), dtype=np.uint8).copy()
    if not isinstance(dram, np.ndarray):
        raise ProgramError(f"DRAM image must be bytes or a numpy uint8 array, got {type(dram).__name__}")
    if dram.dtype != np.uint8 or dram.ndim != 1:
        raise ProgramError(f"DRAM image must be a 1-D uint8 array, got {dram.dtype} with shape {dram.shape}")
    return dram.copy()


def check_program(cfg: Config, image: np.ndarray, insn_addr: int, insn_count: int) -> tuple[list[isa.Insn], list[int]]:
    """Decode and statically check a program; returns (instructions, module number of each).

    Programs repeat the same instruction words many times over, so each distinct word is decoded
    and checked once, and its occurrences share one (read-only) instruction object. The error
    raised is still the one of the first offending instruction in program order."""
    if insn_count < 1:
        raise ProgramError(f"insn_count={insn_count}: a program has at least one instruction (FINISH)")
    if insn_addr < 0 or insn_addr % isa.INSN_BYTES:
        raise ProgramError(f"insn_addr={insn_addr:#x} is not 16-byte aligned "
                           f"(nearest aligned: {insn_addr - insn_addr % 16:#x})")
    end = insn_addr + insn_count * isa.INSN_BYTES
    if end > image.size:
        raise MemoryAccessError(f"instructions [{insn_addr:#x}, {end:#x}) run past the end of the "
                                f"{image.size}-byte DRAM image")
    words = np.frombuffer(image[insn_addr:end].tobytes(), dtype="<u8").reshape(-1, 2)
    _, first, inverse = np.unique(words, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first)                      # distinct words by first occurrence
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    first = first[order]
    try:
        distinct = isa.decode_program(words[first].tobytes(), cfg)
    except VTAError as exc:
        raise type(exc)(exc.reason, index=int(first[exc.index]), disasm=exc.disasm) from None
    errors: dict[int, tuple[VTAError, isa.Insn]] = {}   # index -> (error, instruction) at that index
    modules: list[int] = []
    for k, insn in enumerate(distinct):
        try:
            modules.append(_MODULE_NUM[_check_insn(cfg, insn, image.size)])
        except VTAError as exc:
            errors[int(first[k])] = (exc, insn)
            modules.append(-1)   # never returned: the error is raised below
    which = rank[inverse.ravel()]
    n = len(words)
    finishes = np.flatnonzero((words[:, 0] & 7) == isa.OP_FINISH)
    if finishes.size and finishes[0] < n - 1:      # position rules come first at their index
        errors[int(finishes[0])] = (ProgramError("FINISH before the end of the program: it must be the last "
                                                 "instruction"), distinct[which[finishes[0]]])
    elif not finishes.size:
        errors[n - 1] = (ProgramError("the program does not end with FINISH"), distinct[which[n - 1]])
    if errors:
        i = min(errors)
        err, insn = errors[i]
        raise type(err)(err.reason, index=i, disasm=isa.disasm(insn)) from None
    order_of = which.tolist()
    return [distinct[k] for k in order_of], [modules[k] for k in order_of]


def _check_insn(cfg: Config, insn: isa.Insn, dram_bytes: int) -> str:
    """The static refusals of spec section 7 for one instruction, its position aside (see
    check_program); returns its module."""
    if isinstance(insn, isa.MemInsn):
        if insn.memory_type not in MEM_NAMES:
            raise EncodingError(f"illegal memory type {insn.memory_type} (legal 0-5: "
                                + ", ".join(f"{v}={k}" for k, v in MEM_NAMES.items()) + ")")
        if insn.opcode == isa.OP_STORE and insn.memory_type != MEM_OUT:
            raise EncodingError(f"STORE of memory type {MEM_NAMES[insn.memory_type]}: the store module "
                                "only takes OUT")
        if insn.opcode == isa.OP_LOAD and insn.memory_type == MEM_OUT:
            raise EncodingError("LOAD of memory type OUT: a LOAD never writes OUT (load takes INP/WGT, "
                                "compute takes UOP/ACC/ACC_8BIT)")
        if insn.unused:
            raise EncodingError(f"bits 63:58 of a LOAD/STORE must be 0, got {insn.unused:#x}")
    module = isa.module_of(insn)
    if module is None:   # the memory-type checks above leave none
        raise EncodingError(f"no module executes {isa.disasm(insn)}")
    for flag, queue in isa.DEP_QUEUES[module].items():
        if queue is None and getattr(insn, flag):
            raise EncodingError(f"{flag} is illegal in the {module} module (legal: "
                                + ", ".join(f for f, q in isa.DEP_QUEUES[module].items() if q) + ")")
    if isinstance(insn, isa.MemInsn) and insn.x_size:
        _check_mem(cfg, insn, dram_bytes)
    elif isinstance(insn, isa.LoopInsn):
        if isinstance(insn, isa.AluInsn) and insn.alu_opcode not in isa.ALU_NAMES:
            raise EncodingError(f"illegal ALU opcode {insn.alu_opcode} (legal: "
                                + ", ".join(f"{v}={k}" for k, v in isa.ALU_NAMES.items()) + ")")
        if isinstance(insn, isa.AluInsn) and insn.alu_opcode == isa.ALU_REQ:
            _check_req(insn)
        depth = cfg.buffers["uop"].depth
        if insn.uop_end > depth:
            raise MemoryAccessError(f"uop_end={insn.uop_end} is outside UOP (depth {depth})")
        if insn.uop_bgn > insn.uop_end:
            raise ProgramError(f"uop_bgn={insn.uop_bgn} > uop_end={insn.uop_end}")
    return module


def _check_req(insn: isa.AluInsn) -> None:
    """REQ's encoding refusals (docs/isa-extensions.md, section 7): the RTL's MALFORMED."""
    shift, zp, reserved = isa.req_fields(insn.imm)
    if insn.use_imm:
        raise ProgramError(f"malformed REQ: use_imm=1, but REQ takes its multipliers from the tensor operand "
                           f"ACC[src] and its immediate field is shift={shift}, zero_point={zp}; use_imm must be 0")
    if reserved:
        raise ProgramError(f"malformed REQ: reserved immediate bits 15:14 (instruction bits 127:126) must be 0, "
                           f"got {reserved:#x} (imm={insn.imm & 0xFFFF:#06x}: shift={shift}, zero_point={zp})")


def _check_mem(cfg: Config, insn: isa.MemInsn, dram_bytes: int) -> None:
    name = MEM_NAMES[insn.memory_type]
    if insn.opcode == isa.OP_STORE:
        if any(insn.pads):
            raise ProgramError(f"malformed STORE: pads must be 0, got (y0,y1,x0,x1)={insn.pads}")
        entries, buf = insn.y_size * insn.x_size, cfg.buffers["out"]
    else:
        if insn.memory_type == MEM_UOP and (insn.y_size != 1 or any(insn.pads)):
            raise ProgramError(f"malformed UOP load: needs y_size=1 and no pads, got y_size={insn.y_size} "
                               f"pads={insn.pads}")
        y0, y1, x0, x1 = insn.pads
        entries = (y0 + insn.y_size + y1) * (x0 + insn.x_size + x1)
        buf = cfg.buffers[{"ACC_8BIT": "acc"}.get(name, name.lower())]
    if insn.sram_base + entries > buf.depth:
        raise MemoryAccessError(f"{name} SRAM entries [{insn.sram_base}, {insn.sram_base + entries}) "
                                f"fall outside the buffer (depth {buf.depth})")
    if insn.y_size:
        elem = cfg.dram_elem_bytes(insn.memory_type)
        last = (insn.dram_base + (insn.y_size - 1) * insn.x_stride + insn.x_size) * elem
        if last > dram_bytes:
            raise MemoryAccessError(f"DRAM bytes up to {last:#x} lie outside the {dram_bytes}-byte image "
                                    f"({name} elements of {elem} B from element {insn.dram_base})")


#: The engines: "compiled" (vta_sim.compiled, C) and "reference" (timing.Engine + functional.Machine).
ENGINES = ("compiled", "reference")
#: Chooses the engine when the Simulator is not told; the compiled one by default.
ENGINE_ENV = "VTA_SIM_ENGINE"


class Simulator:
    """Bit-exact functional simulator with the cycle model of docs/timing.md.

    `engine` (default: $VTA_SIM_ENGINE, else "compiled") picks the implementation; both give
    identical cycles, statistics, DRAM and errors. Traces and progress reports always come from
    the reference engine."""

    name = "sim"

    def __init__(self, cfg: Config | str | None = None, engine: str | None = None):
        self.cfg = Config.load(cfg)
        engine = engine or os.environ.get(ENGINE_ENV) or ENGINES[0]
        if engine not in ENGINES:
            raise ConfigError(f"unknown simulator engine {engine!r} (from {ENGINE_ENV} or engine=): "
                              f"give one of {', '.join(ENGINES)}")
        self.engine = engine

    def run(self, dram: ByteLike, insn_addr: int, insn_count: int, trace: bool = False,
            progress: Progress | None = None) -> RunResult:
        if self.engine == "reference" or trace or progress is not None:
            return self._run_reference(dram, insn_addr, insn_count, trace, progress)
        image = as_image(dram)
        done = compiled.run(self.cfg, image, insn_addr, insn_count)
        if done is None:   # refused: the reference raises its exact error
            self._run_reference(dram, insn_addr, insn_count, False, None)
            raise RuntimeError(f"the compiled engine refused a program that the reference engine runs "
                               f"(insn_addr={insn_addr:#x}, insn_count={insn_count}): a bug in vta_sim/compiled.py or native/engine.c")
        cycles, stats = done
        return RunResult(dram=image, cycles=cycles, stats=stats, trace=None, backend=self.name)

    def _run_reference(self, dram: ByteLike, insn_addr: int, insn_count: int, trace: bool,
                       progress: Progress | None) -> RunResult:
        cfg = self.cfg
        image = as_image(dram)
        insns, modules = check_program(cfg, image, insn_addr, insn_count)
        machine = Machine(cfg, image)
        execute: dict[int, Callable[[Any, Sequence[int]], int | None]] = {isa.OP_LOAD: machine.execute_load, isa.OP_STORE: machine.execute_store,
                   isa.OP_GEMM: machine.execute_gemm, isa.OP_ALU: machine.execute_alu}

        def run_one(index: int, insn: isa.Insn, module: int, vc: list[int]) -> int | None:
            fn = execute.get(insn.opcode)
            if fn is None:
                return None
            try:
                return fn(insn, vc)
            except VTAError as exc:
                raise type(exc)(exc.reason, index=index, disasm=isa.disasm(insn)) from None

        engine = Engine(cfg, insns, modules, run_one, insn_addr, trace=trace, progress=progress)
        cycles = engine.run()
        stats = {**machine.stats, "cycles": cycles, **engine.stats()}
        tr = Trace(engine.events or [], cycles, cfg.name) if trace else None
        return RunResult(dram=image, cycles=cycles, stats=stats, trace=tr, backend=self.name)
