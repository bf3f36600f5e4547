"""VTA-8 instruction set: field layouts, typed instructions, encode/decode and the disassembler.

`layout(cfg)` gives the bit positions of a configuration (spec section 3), from the one table in
`vta_sim.encoding`: every format is an ordered list of (field, width) packed from bit 0 upward,
with widths that depend on the config's index widths. The encoder, the decoder, the vectorised
program decoder and the generated Verilog header all read it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar, Self

import numpy as np

from .config import MEM_ACC, MEM_ACC_8BIT, MEM_INP, MEM_NAMES, MEM_UOP, MEM_WGT, Config
from .encoding import IMM_BITS, PAD_BITS, Field, Fields, field_layout
from .errors import EncodingError

# Opcodes (spec section 3).
OP_LOAD, OP_STORE, OP_GEMM, OP_FINISH, OP_ALU = range(5)
OPCODE_NAMES = {OP_LOAD: "LOAD", OP_STORE: "STORE", OP_GEMM: "GEMM", OP_FINISH: "FINISH", OP_ALU: "ALU"}
# ALU opcodes (spec section 5): the code is the position in ALU_NAMES.
#: REQ (docs/isa-extensions.md): requantise with per-lane multipliers from the tensor operand;
#: its immediate packs the right shift (REQ_SHIFT_BITS, unsigned) and the zero point
#: (REQ_ZP_BITS, signed), the bits above them reserved (0).
ALU_NAMES = dict(enumerate(("MIN", "MAX", "ADD", "SHR", "MUL", "REQ")))
ALU_MIN, ALU_MAX, ALU_ADD, ALU_SHR, ALU_MUL, ALU_REQ = ALU_NAMES
REQ_SHIFT_BITS = 6
REQ_ZP_BITS = 8
REQ_ZP_MIN, REQ_ZP_MAX = -(1 << (REQ_ZP_BITS - 1)), (1 << (REQ_ZP_BITS - 1)) - 1
#: REQ's result is clamped to the output element's range (int8).
REQ_OUT_MIN, REQ_OUT_MAX = -128, 127
#: SHR's shift amount is capped here in either direction (spec section 5).
ALU_SHIFT_CAP = 31
#: Lower-case op name -> ALU opcode, the names the runtime and the compiler use.
ALU_OPS = {name.lower(): code for code, name in ALU_NAMES.items()}
#: Pseudo-ops the compiler offers on top of ALU_OPS: name -> (ALU op, immediate transform).
#: SHL by n is SHR by -n (spec section 5: a negative shift amount shifts left).
ALU_PSEUDO_OPS: dict[str, tuple[str, Callable[[int], int]]] = {"shl": ("shr", lambda imm: -imm)}

#: What a word or a program may be given as: anything bytes() takes.
ByteLike = bytes | bytearray | memoryview | np.ndarray

INSN_BYTES = 16
UOP_BYTES = 4
FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")
#: The bounds the fixed-width fields put on what a program may ask for.
MAX_PAD = (1 << PAD_BITS) - 1
IMM_MIN, IMM_MAX = -(1 << (IMM_BITS - 1)), (1 << (IMM_BITS - 1)) - 1


def resolve_alu(op: str, imm: int | None) -> tuple[str, int | None]:
    """(ALU op name, immediate) the hardware runs for `op`, a real ALU op or a pseudo-op.

    Raises EncodingError naming the accepted ops, or the immediate's range when it does not fit."""
    if op in ALU_PSEUDO_OPS:
        if imm is None:
            raise EncodingError(f"{op} needs an immediate amount (a tensor operand is only "
                                f"accepted by {', '.join(ALU_OPS)})")
        op, transform = ALU_PSEUDO_OPS[op]
        imm = transform(int(imm))
    elif op not in ALU_OPS:
        raise EncodingError(f"unknown ALU op {op!r}; accepted: {', '.join([*ALU_OPS, *ALU_PSEUDO_OPS])}")
    elif op == "req" and imm is not None:
        raise EncodingError(f"req takes no immediate operand (got {imm}): its multipliers are the tensor operand, "
                            "its immediate field the shift and zero point (isa.req_imm)")
    if imm is not None and not IMM_MIN <= int(imm) <= IMM_MAX:
        raise EncodingError(f"ALU immediate {imm} does not fit the signed {IMM_BITS}-bit field "
                            f"[{IMM_MIN}, {IMM_MAX}]")
    return op, None if imm is None else int(imm)


def req_imm(shift: int, zero_point: int) -> int:
    """REQ's immediate field (a signed 16-bit value) for a right shift and a zero point."""
    if not 0 <= shift < (1 << REQ_SHIFT_BITS):
        raise EncodingError(f"REQ shift {shift}: accepted 0..{(1 << REQ_SHIFT_BITS) - 1}")
    if not REQ_ZP_MIN <= zero_point <= REQ_ZP_MAX:
        raise EncodingError(f"REQ zero point {zero_point}: accepted {REQ_ZP_MIN}..{REQ_ZP_MAX}")
    raw = shift | ((zero_point & ((1 << REQ_ZP_BITS) - 1)) << REQ_SHIFT_BITS)
    return raw - (1 << IMM_BITS) if raw >= 1 << (IMM_BITS - 1) else raw


def req_fields(imm: int) -> tuple[int, int, int]:
    """(shift, zero point, reserved bits) of REQ's immediate field."""
    raw = int(imm) & ((1 << IMM_BITS) - 1)
    shift = raw & ((1 << REQ_SHIFT_BITS) - 1)
    zp = (raw >> REQ_SHIFT_BITS) & ((1 << REQ_ZP_BITS) - 1)
    zp -= (1 << REQ_ZP_BITS) if zp >> (REQ_ZP_BITS - 1) else 0
    return shift, zp, raw >> (REQ_SHIFT_BITS + REQ_ZP_BITS)


def layout(cfg: Config) -> dict[str, Fields]:
    """Field tables by format name: `mem` (LOAD/STORE), `gemm`, `alu`, `finish`, `uop`."""
    return field_layout(cfg.LU, cfg.LI, cfg.LW, cfg.LA)


# ------------------------------------------------------------------------------ typed instructions
@dataclass
class Insn:
    pop_prev: int = 0
    pop_next: int = 0
    push_prev: int = 0
    push_next: int = 0

    FORMAT: ClassVar[str] = "finish"
    OPCODE: ClassVar[int] = OP_FINISH

    @property
    def opcode(self) -> int:  # overridden by MemInsn, whose opcode is a field
        return self.OPCODE

    def flags(self) -> tuple[int, int, int, int]:
        return (self.pop_prev, self.pop_next, self.push_prev, self.push_next)

    def replace(self, **changes: int) -> Self:
        return dataclasses.replace(self, **changes)


@dataclass
class MemInsn(Insn):
    """LOAD or STORE (opcode field), a 2-D strided DMA with zero padding."""

    opcode: int = OP_LOAD
    memory_type: int = 0
    sram_base: int = 0
    dram_base: int = 0
    y_size: int = 0
    x_size: int = 0
    x_stride: int = 0
    y_pad_0: int = 0
    y_pad_1: int = 0
    x_pad_0: int = 0
    x_pad_1: int = 0
    unused: int = 0

    FORMAT: ClassVar[str] = "mem"

    @property
    def pads(self) -> tuple[int, int, int, int]:
        return (self.y_pad_0, self.y_pad_1, self.x_pad_0, self.x_pad_1)


@dataclass
class LoopInsn(Insn):
    """The loop nest GEMM and ALU share: iter_out x iter_in x [uop_bgn, uop_end)."""

    reset: int = 0
    uop_bgn: int = 0
    uop_end: int = 0
    iter_out: int = 1
    iter_in: int = 1
    dst_factor_out: int = 0
    dst_factor_in: int = 0
    src_factor_out: int = 0
    src_factor_in: int = 0

    @property
    def iterations(self) -> int:
        return self.iter_out * self.iter_in * max(0, self.uop_end - self.uop_bgn)


@dataclass
class GemmInsn(LoopInsn):
    wgt_factor_out: int = 0
    wgt_factor_in: int = 0

    FORMAT: ClassVar[str] = "gemm"
    OPCODE: ClassVar[int] = OP_GEMM


@dataclass
class AluInsn(LoopInsn):
    alu_opcode: int = ALU_ADD
    use_imm: int = 0
    imm: int = 0

    FORMAT: ClassVar[str] = "alu"
    OPCODE: ClassVar[int] = OP_ALU


@dataclass
class FinishInsn(Insn):
    OPCODE: ClassVar[int] = OP_FINISH


@dataclass(frozen=True)
class Uop:
    """One micro-op: base indices into ACC (dst), INP or ACC (src) and WGT."""

    dst_idx: int = 0
    src_idx: int = 0
    wgt_idx: int = 0


_CLASS_BY_OPCODE: dict[int, type[Insn]] = {OP_LOAD: MemInsn, OP_STORE: MemInsn, OP_GEMM: GemmInsn, OP_FINISH: FinishInsn,
                    OP_ALU: AluInsn}
#: Opcode -> the name of its format in layout(cfg).
FORMAT_OF_OPCODE = {op: cls.FORMAT for op, cls in _CLASS_BY_OPCODE.items()}


# ------------------------------------------------------------------------------ encode / decode
#: How a field takes a value: (name, lo, smallest, largest, mask, field).
_PlanRow = tuple[str, int, int, int, int, Field]
_PLANS: dict[int, tuple[Fields, tuple[_PlanRow, ...]]] = {}   # id(a cached layout's fields) -> plan


def _plan(fields: Fields) -> tuple[_PlanRow, ...]:
    """(name, lo, smallest, largest, mask, field) per field: what encoding a value takes."""
    plan = _PLANS.get(id(fields))
    if plan is None:
        plan = _PLANS[id(fields)] = (fields, tuple(
            (f.name, f.lo, -(1 << (f.width - 1)) if f.signed else 0,
             (1 << (f.width - 1)) - 1 if f.signed else f.mask, f.mask, f) for f in fields))
    return plan[1]


def _encode_fields(fields: Fields, obj: Insn | Uop, what: str) -> int:
    word = 0
    for name, lo, smallest, largest, mask, f in _plan(fields):
        value = 0 if name == "unused" and not hasattr(obj, "unused") else int(getattr(obj, name))
        if not smallest <= value <= largest:
            kind = f"signed field [{smallest}, {largest}]" if f.signed else \
                f"field (bits {f.hi}:{f.lo}), accepted 0..{f.mask}"
            raise EncodingError(f"{what}: {name}={value} does not fit its {f.width}-bit {kind}")
        word |= (value & mask) << lo
    return word


def encode(insn: Insn, cfg: Config) -> bytes:
    """The 16 little-endian bytes of an instruction."""
    opcode = insn.opcode
    if opcode not in _CLASS_BY_OPCODE or not isinstance(insn, _CLASS_BY_OPCODE[opcode]):
        raise EncodingError(f"cannot encode {type(insn).__name__} with opcode {opcode}")
    word = _encode_fields(layout(cfg)[insn.FORMAT], insn, OPCODE_NAMES[opcode])
    return word.to_bytes(INSN_BYTES, "little")


def _field_value(f: Field, word: int) -> int:
    value = (word >> f.lo) & f.mask
    if f.signed and value >> (f.width - 1):
        value -= 1 << f.width
    return value


def decode(data: ByteLike | int, cfg: Config) -> Insn:
    """An instruction from 16 bytes (or a 128-bit int). Illegal opcodes raise EncodingError."""
    word = int.from_bytes(bytes(data), "little") if not isinstance(data, int) else data
    opcode = word & 7
    if opcode not in _CLASS_BY_OPCODE:
        raise EncodingError(f"illegal opcode {opcode} (legal: "
                            + ", ".join(f"{n}={v}" for v, n in OPCODE_NAMES.items()) + ")")
    cls = _CLASS_BY_OPCODE[opcode]
    values = {f.name: _field_value(f, word) for f in layout(cfg)[cls.FORMAT]}
    if cls is not MemInsn:
        values.pop("opcode")
    return cls(**values)


def encode_uop(uop: Uop, cfg: Config) -> int:
    return _encode_fields(layout(cfg)["uop"], uop, "micro-op")


def decode_uop(word: int, cfg: Config) -> Uop:
    return Uop(**{f.name: _field_value(f, word) for f in layout(cfg)["uop"]})


def decode_uops(words: np.ndarray, cfg: Config) -> tuple[np.ndarray, ...]:
    """Vectorised: (dst, src, wgt) index arrays of a uint32 micro-op array."""
    words = np.asarray(words, dtype=np.uint32).astype(np.int64)
    return tuple((words >> f.lo) & f.mask for f in layout(cfg)["uop"])


def encode_program(insns: Iterable[Insn], cfg: Config) -> bytes:
    return b"".join(encode(i, cfg) for i in insns)


def decode_program(data: ByteLike, cfg: Config) -> list[Insn]:
    """Decode a whole instruction stream at once (vectorised field extraction).

    Raises EncodingError naming the first instruction with an illegal opcode.
    """
    raw = np.frombuffer(bytes(data), dtype="<u8")
    if raw.size % 2:
        raise EncodingError(f"instruction stream of {raw.size * 8} bytes is not a multiple of 16")
    words = raw.reshape(-1, 2)
    opcodes = (words[:, 0] & 7).astype(np.int64)
    bad = np.flatnonzero(~np.isin(opcodes, list(_CLASS_BY_OPCODE)))
    if bad.size:
        i = int(bad[0])
        raise EncodingError(f"illegal opcode {opcodes[i]}", index=i, disasm=disasm_word(words[i]))
    columns: dict[str, dict[str, list[int]]] = {}
    for fmt, fields in layout(cfg).items():
        if fmt == "uop":
            continue
        cols: dict[str, list[int]] = {}
        for f in fields:
            w = words[:, f.lo // 64]
            v = ((w >> np.uint64(f.lo % 64)) & np.uint64(f.mask)).astype(np.int64)
            if f.signed:
                v = np.where(v >> (f.width - 1), v - (1 << f.width), v)
            cols[f.name] = v.tolist()
        columns[fmt] = cols
    out = []
    for i, op in enumerate(opcodes.tolist()):
        cls = _CLASS_BY_OPCODE[op]
        cols = columns[cls.FORMAT]
        values = {name: col[i] for name, col in cols.items()}
        if cls is not MemInsn:
            values.pop("opcode")
        out.append(cls(**values))
    return out


# ------------------------------------------------------------------------------ module routing
LOAD_MODULE, COMPUTE_MODULE, STORE_MODULE = "load", "compute", "store"
MODULES = (LOAD_MODULE, COMPUTE_MODULE, STORE_MODULE)


def module_of(insn: Insn) -> str | None:
    """Which module executes an instruction (spec section 4); None if no module takes it."""
    op = insn.opcode
    if isinstance(insn, MemInsn) and op == OP_LOAD:
        if insn.memory_type in (MEM_INP, MEM_WGT):
            return LOAD_MODULE
        if insn.memory_type in (MEM_UOP, MEM_ACC, MEM_ACC_8BIT):
            return COMPUTE_MODULE
        return None
    if op == OP_STORE:
        return STORE_MODULE
    return COMPUTE_MODULE




@dataclass(frozen=True)
class TokenQueue:
    """A dependency-token queue: `producer` pushes it with `push_flag`, `consumer` pops it with
    `pop_flag` (spec section 6)."""

    name: str
    producer: str
    push_flag: str
    consumer: str
    pop_flag: str


#: The token-queue topology, the one table every other view of it derives from.
TOKEN_QUEUES = (
    TokenQueue("l2c", LOAD_MODULE, "push_next", COMPUTE_MODULE, "pop_prev"),
    TokenQueue("c2l", COMPUTE_MODULE, "push_prev", LOAD_MODULE, "pop_next"),
    TokenQueue("c2s", COMPUTE_MODULE, "push_next", STORE_MODULE, "pop_prev"),
    TokenQueue("s2c", STORE_MODULE, "push_prev", COMPUTE_MODULE, "pop_next"),
)
#: (producer, consumer) -> its TokenQueue.
QUEUE_BETWEEN = {(q.producer, q.consumer): q for q in TOKEN_QUEUES}
#: Which token queue each flag names, per module; None = the flag is illegal there.
DEP_QUEUES = {m: {flag: next((q.name for q in TOKEN_QUEUES
                              if (q.producer, q.push_flag) == (m, flag) or (q.consumer, q.pop_flag) == (m, flag)),
                             None)
                  for flag in FLAGS}
              for m in MODULES}
#: The modules each module exchanges tokens with.
NEIGHBOURS = {m: tuple(q.consumer for q in TOKEN_QUEUES if q.producer == m) for m in MODULES}


# ------------------------------------------------------------------------------ disassembler
def _deps(insn: Insn) -> str:
    module = module_of(insn)
    table = DEP_QUEUES.get(module, {}) if module else {}
    parts = []
    for flag in FLAGS:
        if getattr(insn, flag):
            queue = table.get(flag) or f"illegal {flag}"
            parts.append(f"{flag.split('_')[0]} {queue}")
    return ("  [" + ", ".join(parts) + "]") if parts else ""


def disasm(insn: Insn) -> str:
    """One readable line per instruction."""
    op = insn.opcode
    if isinstance(insn, MemInsn):
        mem = MEM_NAMES.get(insn.memory_type, f"mem{insn.memory_type}")
        if insn.x_size == 0:
            body = f"{OPCODE_NAMES[op]:<6} {mem:<8} nop"
        else:
            body = (f"{OPCODE_NAMES[op]:<6} {mem:<8} sram={insn.sram_base} dram={insn.dram_base} "
                    f"y={insn.y_size} x={insn.x_size} stride={insn.x_stride}")
            if any(insn.pads):
                body += " pad(y0,y1,x0,x1)=({},{},{},{})".format(*insn.pads)
    elif isinstance(insn, LoopInsn):
        if isinstance(insn, AluInsn):
            name = ALU_NAMES.get(insn.alu_opcode, f"op{insn.alu_opcode}")
            if insn.alu_opcode == ALU_REQ:   # the immediate field packs REQ's parameters
                shift, zp, reserved = req_fields(insn.imm)
                head = (f"ALU    {name:<8} tensor shift={shift} zp={zp}" + (" use_imm=1" if insn.use_imm else "")
                        + (f" reserved={reserved:#x}" if reserved else ""))
            else:
                head = f"ALU    {name:<8}" + (f" imm={insn.imm}" if insn.use_imm else " tensor")
        else:
            head = "GEMM  "
        body = (f"{head}{' reset' if insn.reset else ''} uop=[{insn.uop_bgn},{insn.uop_end}) "
                f"iter=({insn.iter_out},{insn.iter_in}) dst=({insn.dst_factor_out},{insn.dst_factor_in}) "
                f"src=({insn.src_factor_out},{insn.src_factor_in})")
        if isinstance(insn, GemmInsn):
            body += f" wgt=({insn.wgt_factor_out},{insn.wgt_factor_in})"
    else:
        body = "FINISH"
    return body + _deps(insn)


def disasm_word(word_or_bytes: ByteLike | int, cfg: Config | None = None) -> str:
    """Disassemble a raw word, printing the raw hex when it does not decode."""
    if isinstance(word_or_bytes, np.ndarray):
        word = int(word_or_bytes[0]) | (int(word_or_bytes[1]) << 64)
    elif isinstance(word_or_bytes, int):
        word = word_or_bytes
    else:
        word = int.from_bytes(bytes(word_or_bytes), "little")
    text = f"0x{word:032x}"
    if cfg is None or word & 7 not in _CLASS_BY_OPCODE:
        return text + f"  (opcode {word & 7})"
    return text + "  " + disasm(decode(word, cfg))


def disasm_program(data: ByteLike, cfg: Config, start_index: int = 0) -> list[str]:
    lines = []
    for i in range(len(data) // INSN_BYTES):
        chunk = data[i * INSN_BYTES:(i + 1) * INSN_BYTES]
        word = int.from_bytes(bytes(chunk), "little")
        text = disasm(decode(word, cfg)) if word & 7 in _CLASS_BY_OPCODE else \
            f"<illegal opcode {word & 7}> 0x{word:032x}"
        lines.append(f"{start_index + i:6d}: {text}")
    return lines
