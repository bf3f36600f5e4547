"""A VTA program written op by op in Python: for kernels that are a fixed sequence of ALU and
GEMM instructions on one layout (an integer softmax, the separable max-pool, the add on the
GEMM core), where a TensorIR schedule would only restate the sequence.

`AluProgram` collects the same typed calls a compiled TensorIR function records
(`intrinsics.calls`: Load2D, Store2D, Gemm, Alu), so the program is built by the
same `KernelProgram.build`: DRAM layout, micro-op kernels and the dependency tokens derived
from the SRAM ranges each op touches. `compile()` returns an `intrinsics.build.CompiledKernel`
like `compile_vta`'s, with no TVM module behind it.

An op's loop nest is (outer, inner) levels, each (extent, dst factor, src factor), over one
micro-op (dst, src) relative to the bases: the ISA's two-level loop (spec section 5).
"""
from __future__ import annotations

import time
from typing import NamedTuple

from vta_sim import isa
from vta_sim.config import Config
from vta_sim.errors import CompileError

from .build import CompiledKernel
from .calls import Alu, Gemm, Load2D, Store2D
from .host import Recording
from .recorded import KernelProgram


class Param(NamedTuple):
    """A kernel parameter: its DRAM tensor and runtime memory kind ("acc8": int8 rows loaded
    sign-extended into ACC; "acc": int32 ACC rows; "inp", "wgt": GEMM operands, loaded by the
    load module; "out": the stored result)."""
    name: str
    shape: tuple
    dtype: str
    kind: str


class Level(NamedTuple):
    extent: int
    dst: int = 0
    src: int = 0


ONE = Level(1)


class AluProgram:
    """The calls of one kernel, in program order."""

    def __init__(self, cfg: Config, params: list[Param]):
        self.cfg = cfg
        self.params = list(params)
        self.calls: list = []
        self._started = time.perf_counter()

    def _param(self, name: str) -> int:
        for i, p in enumerate(self.params):
            if p.name == name:
                return i
        raise CompileError(f"no parameter {name!r}; the kernel has {[p.name for p in self.params]}")

    def load(self, name: str, offset: int, entries: int, sram: int) -> None:
        """`entries` consecutive entries of parameter `name` from entry `offset` into ACC at `sram`."""
        self.load_rows(name, offset, entries, 1, entries, sram)

    def load_rows(self, name: str, offset: int, x_size: int, y_size: int, x_stride: int, sram: int,
                  pad: tuple = (0, 0, 0, 0)) -> None:
        """`y_size` rows of `x_size` entries, `x_stride` apart, of parameter `name` from entry
        `offset` into ACC from `sram`, the DMA adding `pad` = (top, bottom, left, right) zero
        rows and columns: rows of left + x_size + right entries, one after another."""
        self.calls.append(Load2D(self._param(name), offset, x_size, y_size, x_stride, sram, *pad))

    def store(self, name: str, offset: int, entries: int, sram: int) -> None:
        """`entries` OUT entries from `sram` into parameter `name` from entry `offset`."""
        self.calls.append(Store2D(self._param(name), offset, entries, 1, entries, sram))

    def reset(self, dst: int, entries: int) -> None:
        """ACC[dst .. dst + entries) = 0."""
        self.calls.append(Gemm(dst, 0, 0, entries, 1, 1, 0, 0, 0, 0, 0, ((0, 0, 0),), 1))

    def gemm(self, dst: int, src: int, uops: tuple, *, outer: Level = ONE, inner: Level = ONE) -> None:
        """ACC[dst + d] += INP[src + x] . WGT[w]^T for each micro-op (d, x, w) over the loop nest
        (dst and src factors per level; the weight's factors 0: every iteration reads the same
        WGT entries)."""
        self.calls.append(Gemm(dst, src, 0, outer.extent, inner.extent, outer.dst, outer.src, 0, inner.dst,
                               inner.src, 0, tuple(uops), 0))

    def alu(self, op: str, dst: int, src: int = 0, *, imm: int | None = None, outer: Level = ONE,
            inner: Level = ONE) -> None:
        """ACC[a] = op(ACC[a], imm or ACC[s]) over the loop nest, a = dst + i*outer.dst + j*inner.dst,
        s = src + i*outer.src + j*inner.src."""
        if op not in isa.ALU_OPS or op == "req":
            raise CompileError(f"ALU op {op!r}; accepted here: {[o for o in isa.ALU_OPS if o != 'req']} (req: .req)")
        if imm is not None and not -(1 << 15) <= imm < (1 << 15):
            raise CompileError(f"ALU immediate {imm}: the field holds a signed 16-bit value")
        self._alu(op, dst, src, int(imm is not None), int(imm or 0), outer, inner)

    def req(self, dst: int, src: int, shift: int, zero_point: int, *, outer: Level = ONE,
            inner: Level = ONE) -> None:
        """REQ (docs/isa-extensions.md): ACC[a] = clamp(round(ACC[a] * ACC[s] / 2^shift) + zero_point)."""
        self._alu("req", dst, src, 0, isa.req_imm(shift, zero_point), outer, inner)

    def _alu(self, op: str, dst: int, src: int, use_imm: int, imm: int, outer: Level, inner: Level) -> None:
        self.calls.append(Alu(dst, src, 0, outer.extent, inner.extent, outer.dst, outer.src, 0, inner.dst,
                              inner.src, 0, ((0, 0, 0),), op, use_imm, imm))

    def copy(self, dst: int, src: int, entries: int, src_step: int = 1, *, outer: Level | None = None,
             inner: Level = ONE) -> None:
        """ACC[dst + i] = ACC[src + i * src_step] for i < entries: a reset of the `entries` entries
        from dst, then ADD of the source; or, given `outer` (and `inner`), the ADD over that loop
        nest, which must write exactly those entries."""
        self.reset(dst, entries)
        self.alu("add", dst, src, outer=outer or Level(entries, 1, src_step), inner=inner)

    def compile(self) -> CompiledKernel:
        """The kernel: its program built from the calls (tokens, layout), callable on numpy."""
        kinds = tuple(p.kind for p in self.params)
        params = [(p.name, tuple(p.shape), p.dtype) for p in self.params]
        outputs = [i for i, p in enumerate(self.params) if p.kind == "out"]
        recording = Recording(self.cfg.to_text(), kinds, tuple(self.calls))
        program = KernelProgram.build(recording, params, outputs)
        return CompiledKernel(None, params, outputs, time.perf_counter() - self._started, program)
