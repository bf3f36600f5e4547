"""The bit layout of VTA-8's words (spec section 3): which field sits at which bits, and which
widths are fixed whatever the configuration.

A leaf: it imports nothing of vta_sim's, so both `config` (which refuses a configuration whose
index widths overfill a word) and `isa` (which encodes and decodes with these tables) build on
it without importing each other. Every format is an ordered list of (field, width) packed from
bit 0 upward; the index widths (micro-op, input, weight and accumulator buffer depths) are the
only parameters.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

#: Width of LOAD/STORE's sram_base: no buffer may be deeper than it can address.
SRAM_BASE_BITS = 16
#: Widths of the fields that bound what a program may ask for, whatever the configuration.
PAD_BITS, IMM_BITS = 4, 16


@dataclass(frozen=True)
class Field:
    """One field of a word: `width` bits from bit `lo`, two's complement when `signed`."""

    name: str
    lo: int
    width: int
    signed: bool = False

    @property
    def hi(self) -> int:
        return self.lo + self.width - 1

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


#: A format: its fields in bit order.
Fields = tuple[Field, ...]
#: (name, width) or (name, width, signed): one entry of a format's spec.
_Spec = tuple[str, int] | tuple[str, int, bool]


def _pack(spec: list[_Spec], start: int = 0) -> list[Field]:
    fields, pos = [], start
    for entry in spec:
        name, width = entry[0], entry[1]
        signed = len(entry) > 2 and bool(entry[2])
        fields.append(Field(name, pos, width, signed))
        pos += width
    return fields


@lru_cache(maxsize=None)
def field_layout(lu: int, li: int, lw: int, la: int) -> dict[str, Fields]:
    """Field tables by format name (`mem` for LOAD/STORE, `gemm`, `alu`, `finish`, `uop`) for the
    index widths of the micro-op, input, weight and accumulator buffers."""
    common: list[_Spec] = [("opcode", 3), ("pop_prev", 1), ("pop_next", 1), ("push_prev", 1), ("push_next", 1)]
    mem = _pack(common + [("memory_type", 3), ("sram_base", SRAM_BASE_BITS), ("dram_base", 32), ("unused", 6),
                          ("y_size", 16), ("x_size", 16), ("x_stride", 16),
                          ("y_pad_0", PAD_BITS), ("y_pad_1", PAD_BITS), ("x_pad_0", PAD_BITS),
                          ("x_pad_1", PAD_BITS)])
    word0 = _pack(common + [("reset", 1), ("uop_bgn", lu), ("uop_end", lu + 1), ("iter_out", 14), ("iter_in", 14)])
    gemm1 = _pack([("dst_factor_out", la), ("dst_factor_in", la), ("src_factor_out", li),
                   ("src_factor_in", li), ("wgt_factor_out", lw), ("wgt_factor_in", lw)], 64)
    alu1 = _pack([("dst_factor_out", la), ("dst_factor_in", la), ("src_factor_out", la),
                  ("src_factor_in", la), ("alu_opcode", 3), ("use_imm", 1), ("imm", IMM_BITS, True)], 64)
    finish = _pack(common)
    uop = _pack([("dst_idx", la), ("src_idx", max(la, li)), ("wgt_idx", lw)])
    return {"mem": tuple(mem), "gemm": tuple(word0 + gemm1), "alu": tuple(word0 + alu1),
            "finish": tuple(finish), "uop": tuple(uop)}


#: The words whose width depends on the buffer depths: (name, format, first bit, bits).
_SIZED_WORDS = (("micro-op", "uop", 0, 32), ("GEMM/ALU word 0", "gemm", 0, 64),
                ("GEMM word 1", "gemm", 64, 64), ("ALU word 1", "alu", 64, 64))


def overfull_words(lu: int, li: int, lw: int, la: int) -> list[tuple[str, int, int, str]]:
    """(word, bits used, bits available, its fields) for each word the index widths overfill;
    Config.validate refuses a configuration with any."""
    tables = field_layout(lu, li, lw, la)
    out = []
    for word, fmt, base, bits in _SIZED_WORDS:
        fields = [f for f in tables[fmt] if base <= f.lo < base + bits]
        used = max(f.hi for f in fields) + 1 - base
        if used > bits:
            out.append((word, used, bits, " + ".join(f"{f.name} {f.width}" for f in fields)))
    return out
