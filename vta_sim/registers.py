"""The device's register map and error codes (spec section 8), shared by the RTL and the host.

`hw/header.py` writes every name here into the Verilog header, so `hw/rtl/vta_regs.v` decodes
the same offsets and reports the same codes that `hw/backend.py` reads back and translates into
the simulator's exception classes.
"""
from __future__ import annotations

from .errors import DeadlockError, EncodingError, MemoryAccessError, ProgramError
from .result import FUNCTIONAL_STATS, TIMING_STATS

#: 32-bit registers by offset order: CTRL/STATUS, then the words the spec and the project add.
REGISTERS = ("CTRL", "CYCLES", "INSN_COUNT", "INSN_ADDR", "ERROR_CODE", "ERROR_INDEX")
REG_CTRL, REG_CYCLES, REG_INSN_COUNT, REG_INSN_ADDR, REG_ERROR_CODE, REG_ERROR_INDEX = \
    (4 * i for i in range(len(REGISTERS)))
#: CTRL/STATUS bits: written START begins a run; read RUNNING, DONE (sticky), ERROR.
CTRL_START, STATUS_RUNNING, STATUS_DONE, STATUS_ERROR = 0, 0, 1, 2
#: The statistics counters that follow ERROR_INDEX, one 32-bit register each, by their names.
COUNTERS = FUNCTIONAL_STATS + TIMING_STATS
REG_COUNTERS = 4 * len(REGISTERS)
#: ERROR_INDEX when the error belongs to no instruction (a GEMM/ALU index, a deadlock).
NO_INDEX = 0xFFFFFFFF


def counter_offset(name: str) -> int:
    """Byte offset of a statistics counter in the register map."""
    return REG_COUNTERS + 4 * COUNTERS.index(name)


#: ERROR_CODE values (docs/hardware.md explains each) and the simulator's exception class for each.
ERRORS = {
    "NONE": (0, None),
    "OPCODE": (1, EncodingError),           # illegal opcode (5-7)
    "MEM_TYPE": (2, EncodingError),         # memory type the instruction's module does not take
    "DEP_FLAG": (3, EncodingError),         # dependency flag that is illegal in the module
    "ALU_OPCODE": (4, EncodingError),       # illegal ALU opcode (6-7; 5 is REQ, docs/isa-extensions.md)
    "MALFORMED": (5, ProgramError),         # UOP load not 1 row/unpadded, padded STORE, unused bits, uop_bgn > uop_end,
                                            # REQ with use_imm or reserved immediate bits
    "SRAM_RANGE": (6, MemoryAccessError),   # LOAD/STORE/uop range outside its SRAM
    "FINISH": (7, ProgramError),            # FINISH not last, or the last instruction is not FINISH
    "INSN_ADDR": (8, ProgramError),         # insn_addr not 16-byte aligned, or insn_count = 0
    "INDEX": (9, MemoryAccessError),        # GEMM/ALU index (dst/src/wgt) outside its SRAM
    "DEADLOCK": (10, DeadlockError),        # every module waits and FINISH has not completed
    # RTL only (the simulator's DRAM never fails): a read beat or write response was SLVERR/DECERR
    "AXI_RESP": (11, MemoryAccessError),
}
ERROR_CODES = {name: code for name, (code, _) in ERRORS.items()}
ERROR_CLASSES = {name: cls for name, (_, cls) in ERRORS.items() if cls is not None}
ERROR_NAMES = {code: name for name, code in ERROR_CODES.items()}
#: Bits of the ERROR_CODE field in the RTL.
ERROR_CODE_BITS = max(ERROR_CODES.values()).bit_length()
