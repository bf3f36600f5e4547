"""Host runtime: the command builder that compilers and hand-written kernels use instead of bits.

In the spirit of VTA's runtime: DRAM buffers filled from numpy, 2-D loads and stores with
padding, micro-op kernels (up to two loop levels) kept resident in the UOP SRAM and cached by
content, GEMM/ALU pushes, and dependency push/pop between modules that become instruction
flags (a token-only no-op is inserted where the flag is already taken). `synchronize()`
appends FINISH, runs the program on a backend and brings the DRAM image back.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import isa
from .backends import get_backend
from .config import MEM_ACC, MEM_ACC_8BIT, MEM_INP, MEM_OUT, MEM_UOP, MEM_WGT, Config
from .errors import EncodingError, RuntimeAPIError
from .result import RunResult

#: Buffer kinds a user allocates: memory type and the SRAM whose entry is one DRAM element.
MEM_KINDS = {"inp": (MEM_INP, "inp"), "wgt": (MEM_WGT, "wgt"), "acc": (MEM_ACC, "acc"),
             "acc8": (MEM_ACC_8BIT, "out"), "out": (MEM_OUT, "out")}
ALU_OPS = isa.ALU_OPS
MODULES = isa.MODULES
#: Micro-ops one compiled GEMM kernel may hold (schedules refuse tiles that need more), so a GEMM
#: kernel and the epilogue kernels of every thread stay resident in the UOP SRAM together.
MAX_KERNEL_UOPS = 1024
_ALIGN = 64


class DramBuffer:
    """A tensor in DRAM: `shape` = (..., *entry shape); elements are the leading dims, row-major."""

    def __init__(self, rt: "Runtime", kind: str, shape: Sequence[int], byte_addr: int):
        self.rt, self.kind, self.shape = rt, kind, tuple(shape)
        self.mem_type, sram = MEM_KINDS[kind]
        self.dtype = np.dtype(np.int8) if kind == "acc8" else rt.cfg.buffers[sram].dtype
        self.elem_bytes = rt.cfg.dram_elem_bytes(self.mem_type)
        self.byte_addr = byte_addr
        self.elem_base = byte_addr // self.elem_bytes
        self.n_elems = int(np.prod(self.shape)) * self.dtype.itemsize // self.elem_bytes
        self.nbytes = self.n_elems * self.elem_bytes

    def numpy(self) -> np.ndarray:
        raw = self.rt.dram[self.byte_addr:self.byte_addr + self.nbytes]
        return raw.view(self.dtype.newbyteorder("<")).astype(self.dtype).reshape(self.shape)

    def write(self, array: npt.ArrayLike) -> None:
        data = _checked(array, self.dtype, self.shape, f"{self.kind} buffer")
        self.rt.dram[self.byte_addr:self.byte_addr + self.nbytes] = data.astype(
            self.dtype.newbyteorder("<")).view(np.uint8).ravel()

    def __repr__(self) -> str:
        return f"DramBuffer({self.kind}, shape={self.shape}, elements {self.elem_base}+{self.n_elems})"


def _checked(array: npt.ArrayLike, dtype: np.dtype[Any], shape: tuple[int, ...] | None, what: str) -> np.ndarray:
    arr = np.asarray(array)
    if arr.dtype.kind not in "iu":
        raise RuntimeAPIError(f"{what}: expected integer data for {dtype}, got dtype {arr.dtype}")
    if shape is not None and arr.shape != shape:
        raise RuntimeAPIError(f"{what}: expected shape {shape}, got {arr.shape}")
    info = np.iinfo(dtype)
    if arr.size and (arr.min() < info.min or arr.max() > info.max):
        raise RuntimeAPIError(f"{what}: values in [{arr.min()}, {arr.max()}] do not fit {dtype} "
                              f"[{info.min}, {info.max}]")
    return arr


@dataclass(frozen=True)
class OutputView:
    """Where a program stores its output instead of a buffer of its own: `offset` elements
    into `tensor`, a packed array that outlives the program (a Concat's output, whose slices
    its producers store: graph.inplace). Device DRAM keeps such a tensor between programs;
    here each program has its own DRAM image, so `tensor` enters the image whole before the
    run and leaves it whole after, and the program's STOREs address its slice inside it."""
    tensor: np.ndarray
    offset: int


class UopKernel:
    """Micro-ops inside up to two loops; a GEMM/ALU instruction executes the whole kernel."""

    def __init__(self) -> None:
        self.uops: list[isa.Uop] = []
        self.loops: list[tuple[int, int, int, int]] = []   # (extent, dst_factor, src_factor, wgt_factor), outer first
        self._depth = 0

    @contextlib.contextmanager
    def loop(self, extent: int, dst: int = 0, src: int = 0, wgt: int = 0) -> Iterator[UopKernel]:
        if self._depth == 2 or len(self.loops) == 2:
            raise RuntimeAPIError("a micro-op kernel has at most two loop levels (iter_out, iter_in)")
        if self.uops and self._depth == len(self.loops):
            raise RuntimeAPIError("open the kernel's loops before pushing its micro-ops")
        if extent < 1:
            raise RuntimeAPIError(f"loop extent {extent}: must be at least 1")
        self.loops.append((int(extent), int(dst), int(src), int(wgt)))
        self._depth += 1
        try:
            yield self
        finally:
            self._depth -= 1

    def uop(self, dst: int, src: int = 0, wgt: int = 0) -> None:
        self.uops.append(isa.Uop(int(dst), int(src), int(wgt)))

    @property
    def signature(self) -> tuple[tuple[int, int, int], ...]:
        return tuple((u.dst_idx, u.src_idx, u.wgt_idx) for u in self.uops)

    def loop_fields(self, with_wgt: bool) -> dict[str, int]:
        loops = list(self.loops) + [(1, 0, 0, 0)] * (2 - len(self.loops))
        (eo, do, so, wo), (ei, di, si, wi) = loops
        fields = {"iter_out": eo, "iter_in": ei, "dst_factor_out": do, "dst_factor_in": di,
                  "src_factor_out": so, "src_factor_in": si}
        if with_wgt:
            fields.update(wgt_factor_out=wo, wgt_factor_in=wi)
        return fields


@dataclass
class Program:
    """A runnable DRAM image: what every backend takes."""

    image: np.ndarray
    insn_addr: int
    insn_count: int
    instructions: list[isa.Insn]


class Runtime:
    """Builds one program at a time; `synchronize()` runs it and starts the next."""

    def __init__(self, config: Config | str | None = None, backend: Any = "sim"):
        self.cfg = Config.load(config)
        self.backend = backend
        self.dram = np.zeros(0, dtype=np.uint8)
        self._uop_dram: dict[tuple[tuple[int, int, int], ...], int] = {}   # kernel signature -> element base of its uops in DRAM
        self.last_program: Program | None = None
        self._reset_program()

    # ------------------------------------------------------------------ DRAM buffers
    def _alloc_bytes(self, nbytes: int, elem_bytes: int = 1) -> int:
        """Grow DRAM by `nbytes` at an address aligned to the bus and to the element size."""
        align = max(_ALIGN, elem_bytes)
        addr = -(-self.dram.size // align) * align
        grown = np.zeros(addr + nbytes, dtype=np.uint8)
        grown[:self.dram.size] = self.dram
        self.dram = grown
        return addr

    def empty(self, shape: Sequence[int], mem: str) -> DramBuffer:
        if mem not in MEM_KINDS:
            raise RuntimeAPIError(f"unknown memory kind {mem!r}; accepted: {', '.join(MEM_KINDS)}")
        shape = tuple(int(s) for s in shape)
        entry = self.cfg.buffers[MEM_KINDS[mem][1]].shape
        if len(shape) <= len(entry) or shape[-len(entry):] != entry:
            raise RuntimeAPIError(f"{mem} buffer shape {shape} must end with the entry shape {entry} "
                                  "after at least one element dimension")
        probe = DramBuffer(self, mem, shape, 0)
        return DramBuffer(self, mem, shape, self._alloc_bytes(probe.nbytes, probe.elem_bytes))

    def view(self, base: DramBuffer, offset: int, shape: Sequence[int]) -> DramBuffer:
        """A buffer of `shape` inside `base`, `offset` elements of base's dtype in: a slice of a
        larger tensor, addressed by the instructions that write it (OutputView)."""
        probe = DramBuffer(self, base.kind, shape, 0)
        start = offset * base.dtype.itemsize
        if offset < 0 or start % base.elem_bytes or start + probe.nbytes > base.nbytes:
            raise RuntimeAPIError(f"a {base.kind} view of shape {tuple(shape)} at element {offset} is not whole "
                                  f"DRAM elements inside {base!r} ({base.nbytes} bytes)")
        return DramBuffer(self, base.kind, shape, base.byte_addr + start)

    def array(self, array: npt.ArrayLike, mem: str) -> DramBuffer:
        arr = np.asarray(array)
        buf = self.empty(arr.shape, mem)
        buf.write(arr)
        return buf

    # ------------------------------------------------------------------ instruction stream
    def _reset_program(self) -> None:
        self._insns: list[isa.Insn] = []
        # index of each module's last instruction (keyed by isa.module_of, which is never None here)
        self._last: dict[str | None, int | None] = {m: None for m in MODULES}
        self._pending_pops: dict[str | None, list[str]] = {m: [] for m in MODULES}
        self._balance = {q.name: 0 for q in isa.TOKEN_QUEUES}
        self._uop_resident: dict[tuple[tuple[int, int, int], ...], tuple[int, int]] = {}   # signature -> (uop_bgn, uop_end)
        self._uop_next = 0

    @property
    def instructions(self) -> list[isa.Insn]:
        """The instructions pushed so far (or of the last run, once synchronised)."""
        return list(self._insns) if self._insns or self.last_program is None else self.last_program.instructions

    def _emit(self, insn: isa.Insn) -> isa.Insn:
        module = isa.module_of(insn)
        for flag in self._pending_pops[module]:
            setattr(insn, flag, 1)
        self._pending_pops[module] = []
        try:
            isa.encode(insn, self.cfg)
        except EncodingError as exc:
            raise RuntimeAPIError(f"{isa.disasm(insn)}: {exc}") from None
        self._insns.append(insn)
        self._last[module] = len(self._insns) - 1
        return insn

    def _noop(self, module: str) -> isa.Insn:
        opcode, mem = {"load": (isa.OP_LOAD, MEM_INP), "compute": (isa.OP_LOAD, MEM_ACC),
                       "store": (isa.OP_STORE, MEM_OUT)}[module]
        return self._emit(isa.MemInsn(opcode=opcode, memory_type=mem))

    def dep_push(self, src: str, dst: str) -> None:
        """`src` signals `dst` once its instructions so far have completed."""
        queue = self._dep(src, dst)
        last = self._last[src]
        if last is None or getattr(self._insns[last], queue.push_flag):
            last = len(self._insns)
            self._noop(src)
        setattr(self._insns[last], queue.push_flag, 1)
        self._balance[queue.name] += 1

    def dep_pop(self, src: str, dst: str) -> None:
        """`dst`'s next instruction waits for a token from `src`."""
        queue = self._dep(src, dst)
        if queue.pop_flag in self._pending_pops[dst]:
            self._noop(dst)
        self._pending_pops[dst].append(queue.pop_flag)
        self._balance[queue.name] -= 1

    @staticmethod
    def _dep(src: str, dst: str) -> isa.TokenQueue:
        if (src, dst) not in isa.QUEUE_BETWEEN:
            raise RuntimeAPIError(f"no token queue from {src!r} to {dst!r}; queues: "
                                  + ", ".join(f"{a}->{b}" for a, b in isa.QUEUE_BETWEEN))
        return isa.QUEUE_BETWEEN[(src, dst)]

    # ------------------------------------------------------------------ DMA
    def load_2d(self, buf: DramBuffer, offset: int, x_size: int, y_size: int, x_stride: int,
                sram_base: int, pad: Sequence[int] = (0, 0, 0, 0)) -> isa.Insn:
        """Copy y_size rows of x_size elements (row r at offset + r*x_stride) into SRAM, zero-padded."""
        if buf.kind == "out":
            raise RuntimeAPIError("cannot load an 'out' buffer: a LOAD never writes OUT (use 'acc8')")
        self._check_rows(buf, offset, x_size, y_size, x_stride)
        pads = tuple(int(p) for p in pad)
        if len(pads) != 4 or any(not 0 <= p <= isa.MAX_PAD for p in pads):
            raise RuntimeAPIError(f"pad={pad}: give (y_before, y_after, x_before, x_after), "
                                  f"each 0..{isa.MAX_PAD}")
        return self._emit(isa.MemInsn(opcode=isa.OP_LOAD, memory_type=buf.mem_type, sram_base=sram_base,
                                      dram_base=buf.elem_base + offset, y_size=y_size, x_size=x_size,
                                      x_stride=x_stride, y_pad_0=pads[0], y_pad_1=pads[1],
                                      x_pad_0=pads[2], x_pad_1=pads[3]))

    def store_2d(self, buf: DramBuffer, offset: int, x_size: int, y_size: int, x_stride: int,
                 sram_base: int) -> isa.Insn:
        """Copy OUT[sram_base + r*x_size + c] to element offset + r*x_stride + c of `buf`."""
        if buf.kind != "out":
            raise RuntimeAPIError(f"store_2d writes 'out' buffers, got a {buf.kind!r} buffer")
        self._check_rows(buf, offset, x_size, y_size, x_stride)
        return self._emit(isa.MemInsn(opcode=isa.OP_STORE, memory_type=MEM_OUT, sram_base=sram_base,
                                      dram_base=buf.elem_base + offset, y_size=y_size, x_size=x_size,
                                      x_stride=x_stride))

    @staticmethod
    def _check_rows(buf: DramBuffer, offset: int, x_size: int, y_size: int, x_stride: int) -> None:
        if min(offset, x_size, y_size, x_stride) < 0:
            raise RuntimeAPIError("offset, sizes and stride must be non-negative")
        if x_size and y_size:
            last = offset + (y_size - 1) * x_stride + x_size
            if last > buf.n_elems:
                raise RuntimeAPIError(f"rows reach element {last} of {buf!r}, which has {buf.n_elems} elements")

    # ------------------------------------------------------------------ GEMM / ALU
    def _resident(self, kernel: UopKernel) -> tuple[int, int]:
        """(uop_bgn, uop_end) of a kernel in UOP SRAM, loading it (compute module) on a miss."""
        sig = kernel.signature
        if not sig:
            raise RuntimeAPIError("micro-op kernel is empty: push at least one uop")
        if sig in self._uop_resident:
            return self._uop_resident[sig]
        depth = self.cfg.buffers["uop"].depth
        if len(sig) > depth:
            raise RuntimeAPIError(f"kernel of {len(sig)} micro-ops exceeds the UOP buffer ({depth})")
        if self._uop_next + len(sig) > depth:       # full: evict everything (compute runs in order)
            self._uop_resident, self._uop_next = {}, 0
        if sig not in self._uop_dram:
            words = np.array([isa.encode_uop(u, self.cfg) for u in kernel.uops], dtype="<u4")
            addr = self._alloc_bytes(words.nbytes, isa.UOP_BYTES)
            self.dram[addr:addr + words.nbytes] = words.view(np.uint8)
            self._uop_dram[sig] = addr // isa.UOP_BYTES
        bgn = self._uop_next
        self._emit(isa.MemInsn(opcode=isa.OP_LOAD, memory_type=MEM_UOP, sram_base=bgn,
                               dram_base=self._uop_dram[sig], y_size=1, x_size=len(sig), x_stride=len(sig)))
        self._uop_next += len(sig)
        self._uop_resident[sig] = (bgn, bgn + len(sig))
        return self._uop_resident[sig]

    def gemm(self, kernel: UopKernel, reset: bool = False) -> isa.Insn:
        bgn, end = self._resident(kernel)
        return self._emit(isa.GemmInsn(reset=int(reset), uop_bgn=bgn, uop_end=end, **kernel.loop_fields(True)))

    def alu(self, kernel: UopKernel, op: str, imm: int | None = None, *, shift: int | None = None,
            zero_point: int | None = None) -> isa.Insn:
        """Element-wise ACC[dst] = op(ACC[dst], imm or ACC[src]); op in min/max/add/shr/mul.

        op "req" (docs/isa-extensions.md) requantises: ACC[dst] = clamp(round(ACC[dst] * ACC[src]
        / 2^shift) + zero_point, -128, 127), its multipliers always the tensor operand ACC[src];
        give `shift` (0..63) and `zero_point` (-128..127, default 0), not `imm`."""
        if op not in ALU_OPS:
            raise RuntimeAPIError(f"unknown ALU op {op!r}; accepted: {', '.join(ALU_OPS)}")
        if op == "req":
            return self._req(kernel, imm, shift, zero_point)
        if shift is not None or zero_point is not None:
            raise RuntimeAPIError(f"shift= and zero_point= belong to op 'req', not {op!r} (its operand is imm=)")
        try:
            op, imm = isa.resolve_alu(op, imm)
        except EncodingError as exc:
            raise RuntimeAPIError(str(exc)) from None
        bgn, end = self._resident(kernel)
        return self._emit(isa.AluInsn(uop_bgn=bgn, uop_end=end, alu_opcode=ALU_OPS[op],
                                      use_imm=int(imm is not None), imm=int(imm or 0),
                                      **kernel.loop_fields(False)))

    def _req(self, kernel: UopKernel, imm: int | None, shift: int | None, zero_point: int | None) -> isa.Insn:
        if imm is not None:
            raise RuntimeAPIError(f"op 'req' takes no imm= (got {imm}): its multipliers are the tensor "
                                  "operand ACC[src]; give shift= and zero_point=")
        if shift is None:
            raise RuntimeAPIError("op 'req' needs shift= (the right shift after the product, "
                                  f"0..{(1 << isa.REQ_SHIFT_BITS) - 1})")
        try:
            field = isa.req_imm(int(shift), int(zero_point or 0))
        except EncodingError as exc:
            raise RuntimeAPIError(str(exc)) from None
        bgn, end = self._resident(kernel)
        return self._emit(isa.AluInsn(uop_bgn=bgn, uop_end=end, alu_opcode=isa.ALU_REQ, use_imm=0, imm=field,
                                      **kernel.loop_fields(False)))

    def alu_reset(self, kernel: UopKernel) -> isa.Insn:
        bgn, end = self._resident(kernel)
        return self._emit(isa.AluInsn(reset=1, uop_bgn=bgn, uop_end=end, **kernel.loop_fields(False)))

    # ------------------------------------------------------------------ running
    def build(self) -> Program:
        """Close the program: order FINISH after every module's work, check tokens, lay out the image."""
        for src in ("load", "store"):
            if self._last[src] is not None:
                self.dep_push(src, "compute")
                self.dep_pop(src, "compute")
        unbalanced = {q: n for q, n in self._balance.items() if n}
        if unbalanced:
            raise RuntimeAPIError("unbalanced dependency tokens (pushes minus pops): "
                                  + ", ".join(f"{q}: {n:+d}" for q, n in unbalanced.items())
                                  + "; every push needs its pop before synchronize()")
        finish = isa.FinishInsn()
        for flag in self._pending_pops["compute"]:
            setattr(finish, flag, 1)
        for module in ("load", "store"):
            if self._pending_pops[module]:
                self._noop(module)
        insns = self._insns + [finish]
        code = isa.encode_program(insns, self.cfg)
        addr = self._alloc_bytes(len(code), isa.INSN_BYTES)
        self.dram[addr:addr + len(code)] = np.frombuffer(code, dtype=np.uint8)
        program = Program(self.dram.copy(), addr, len(insns), insns)
        self.dram = self.dram[:addr]                    # the code is not part of the user's data
        self.last_program = program
        self._reset_program()
        return program

    def synchronize(self, trace: bool = False, backend: Any = None) -> RunResult:
        """Run everything pushed so far; buffers read back the results."""
        program = self.build()
        backend = backend or self.backend
        runner = get_backend(backend, self.cfg) if isinstance(backend, str) else backend
        result: RunResult = runner.run(program.image, insn_addr=program.insn_addr, insn_count=program.insn_count,
                            trace=trace)
        self.dram = result.dram[:self.dram.size].copy()
        return result
