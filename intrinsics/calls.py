"""The typed calls between the lowering and the host: one frozen dataclass per `vta.*` call.

A TIR `call_packed` / `call_extern` carries a flat list of arguments. Each call here declares
its fields once; `args()` flattens them in field order and `from_args` rebuilds the call from
that list, so the lowering (which builds the calls, with PrimExprs in the fields) and the host
(which receives Python ints and strings) never count positions. A field declared with `ROWS`
holds a variable number of equal-length rows and travels as its row count, then the rows.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from vta_sim import isa

from vta_sim.errors import CompileError

#: Metadata of a field that holds rows of three values (dst, src, wgt): the micro-ops.
ROWS = {"row_len": 3}
#: The `op` of a UopPush that is a GEMM micro-op, or the accumulator reset.
GEMM, RESET = "gemm", "reset"


class Call:
    """Base of the calls: the flat argument codec derived from the dataclass fields."""

    NAME: ClassVar[str]

    def args(self) -> list:
        """The call's arguments, field by field (ROWS fields as a count, then the rows)."""
        out = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("row_len"):
                out.append(len(value))
                out.extend(v for row in value for v in row)
            else:
                out.append(value)
        return out

    @classmethod
    def from_args(cls, args):
        """The call whose `args()` are `args`; int and str fields are converted to int and str."""
        return cls._decode(tuple(args))

    @classmethod
    def _decode(cls, args: tuple, names: tuple = ()):
        """`names`: a str field may come as its index in `names` (encode_calls)."""
        pos, values = 0, {}
        for f in dataclasses.fields(cls):
            width = f.metadata.get("row_len")
            if width:
                count = int(args[pos])
                flat = args[pos + 1:pos + 1 + width * count]
                values[f.name] = tuple(tuple(int(v) for v in flat[r * width:(r + 1) * width])
                                       for r in range(count))
                pos += 1 + width * count
            else:
                value = args[pos]
                if f.type == "str" and names and isinstance(value, int):
                    value = names[value]
                values[f.name] = _CONVERT.get(f.type, lambda v: v)(value)
                pos += 1
        if pos != len(args):
            raise CompileError(f"{cls.NAME}: {len(args)} arguments, its fields take {pos}")
        return cls(**values)

    def map(self, fn):
        """The same call with `fn` applied to every value (rows value by value)."""
        changes = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            changes[f.name] = (tuple(tuple(fn(v) for v in row) for row in value)
                               if f.metadata.get("row_len") else fn(value))
        return dataclasses.replace(self, **changes)


_CONVERT = {"int": int, "str": str}


@dataclass(frozen=True)
class Rows2D(Call):
    """The rows a DMA moves: `y_size` rows of `x_size` elements of DRAM tensor `param` (its
    position in vta.begin) from element `offset`, `x_stride` apart, at SRAM entry `sram`."""

    param: int
    offset: int
    x_size: int
    y_size: int
    x_stride: int
    sram: int


@dataclass(frozen=True)
class Load2D(Rows2D):
    """`Runtime.load_2d`: the rows into SRAM, zero-padded."""

    NAME: ClassVar[str] = "vta.load_2d"
    y_pad_0: int
    y_pad_1: int
    x_pad_0: int
    x_pad_1: int


@dataclass(frozen=True)
class Store2D(Rows2D):
    """`Runtime.store_2d`: OUT entries from `sram` into the rows."""

    NAME: ClassVar[str] = "vta.store_2d"


@dataclass(frozen=True)
class LoopNest(Call):
    """A micro-op kernel: base entries, two loop levels with a factor per operand, the micro-ops
    (entries relative to the bases). GEMM operands are (acc, inp, wgt); ALU ones (acc, acc, -)."""

    dst_base: int
    src_base: int
    wgt_base: int
    iter_out: int
    iter_in: int
    dst_factor_out: int
    src_factor_out: int
    wgt_factor_out: int
    dst_factor_in: int
    src_factor_in: int
    wgt_factor_in: int
    uops: tuple = field(metadata=ROWS)

    @property
    def nest(self) -> tuple:
        """The loop-nest fields alone: what identifies the micro-op kernel."""
        return tuple(getattr(self, f.name) for f in dataclasses.fields(LoopNest))


@dataclass(frozen=True)
class Gemm(LoopNest):
    """A GEMM over the loop nest, or with `reset` the zeroing of its destinations."""

    NAME: ClassVar[str] = "vta.gemm"
    reset: int

    @property
    def label(self) -> str:
        return RESET if self.reset else GEMM


@dataclass(frozen=True)
class Alu(LoopNest):
    """An ALU op (an `isa.ALU_OPS` name) over the loop nest, with `imm` when `use_imm`."""

    NAME: ClassVar[str] = "vta.alu"
    op: str
    use_imm: int
    imm: int

    @property
    def label(self) -> str:
        return f"{self.op} imm" if self.use_imm else self.op


@dataclass(frozen=True)
class UopPush(Call):
    """One micro-op of a tensor intrinsic's implementation: `op` is GEMM, RESET or an
    `isa.ALU_OPS` name; `dst`, `x`, `y` are access pointers (0 where the op has no operand)."""

    NAME: ClassVar[str] = "vta.uop_push"
    op: str
    use_imm: int
    imm: int
    dst: object
    x: object
    y: object

    def __post_init__(self):
        if self.op not in (GEMM, RESET, *isa.ALU_OPS):
            raise CompileError(f"micro-op {self.op!r}; accepted: {', '.join((GEMM, RESET, *isa.ALU_OPS))}")

    @property
    def is_alu(self) -> bool:
        return self.op in isa.ALU_OPS


#: The calls a recorded program holds, by their number in `encode_calls`.
OPS = (Load2D, Store2D, Gemm, Alu)
#: The values a str field takes (an op name), by their number in `encode_calls`.
_NAMES = (GEMM, RESET, *isa.ALU_OPS)


def encode_calls(calls) -> np.ndarray:
    """The calls as one int64 array: per call its number in OPS, its argument count, then its
    `args()` (a str field as its number in _NAMES). Thousands of calls load from a pickle as one
    array, not as thousands of objects."""
    out: list = []
    for call in calls:
        args = [_NAMES.index(a) if isinstance(a, str) else a for a in call.args()]
        out += [OPS.index(type(call)), len(args), *args]
    return np.array(out, dtype=np.int64)


def decode_calls(words: np.ndarray) -> tuple:
    """The inverse of `encode_calls`."""
    values, pos, calls = words.tolist(), 0, []
    while pos < len(values):
        cls, n = OPS[values[pos]], values[pos + 1]
        calls.append(cls._decode(tuple(values[pos + 2:pos + 2 + n]), names=_NAMES))
        pos += 2 + n
    return tuple(calls)
