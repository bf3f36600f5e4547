"""Bit-exact semantics of every instruction (spec section 5), vectorised per instruction.

`Machine` owns the DRAM image and the five SRAMs. Each `execute_*` method applies one
instruction atomically. It also keeps, per SRAM entry shared between two modules (INP and WGT
between load and compute, OUT between compute and store), the sequence number of the last
instruction that wrote and read it; with the vector clocks that dependency tokens carry, that
turns a missing token into a `HazardError` instead of a silently wrong result.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

import numpy as np

from . import isa, native
from .config import MEM_ACC, MEM_ACC_8BIT, MEM_INP, MEM_UOP, MEM_WGT, Config
from .errors import HazardError, MemoryAccessError
from .result import FUNCTIONAL_STATS

MODULE_NAMES = isa.MODULES
LOAD, COMPUTE, STORE = (MODULE_NAMES.index(m) for m in (isa.LOAD_MODULE, isa.COMPUTE_MODULE,
                                                        isa.STORE_MODULE))  # vector-clock positions
_SRAM_OF_MEM = {MEM_INP: "inp", MEM_WGT: "wgt", MEM_ACC: "acc", MEM_ACC_8BIT: "acc", MEM_UOP: "uop"}
LOAD_STAT = {mem: f"{name}_load_nbytes" for mem, name in _SRAM_OF_MEM.items()}  # ACC_8BIT counts as acc
_CHUNK = 1 << 18  # iterations materialised at once: bounds memory on huge loop nests
_NEST_CACHE_SIZE = 64  # memoised loop nests (each at most one chunk of index arrays)
#: Entries of an SRAM: a slice where they form one range, else an index array.
Entries = slice | np.ndarray
#: An instruction's vector clock: per module (LOAD, COMPUTE, STORE), the last instruction of that
#: module it has seen through dependency tokens.
VectorClock = Sequence[int]


class _Chunk(NamedTuple):
    """Index arrays of a run of GEMM/ALU iterations, and the distinct entries they touch as a
    slice where those form one range (numpy slices cost far less than fancy indexing)."""

    a: np.ndarray            # dst (ACC/OUT) index per iteration, in execution order
    s: np.ndarray            # src (INP or ACC)
    w: np.ndarray            # wgt (GEMM)
    dst: Entries             # the distinct dst entries
    srcs: Entries | None     # GEMM: the distinct INP entries read (None otherwise)
    wgts: Entries | None     # GEMM: the distinct WGT entries read (None otherwise)


def _entries(idx: np.ndarray, depth: int) -> Entries:
    """The distinct entries of `idx`, ascending: a slice where they are one range."""
    entries = np.flatnonzero(np.bincount(idx, minlength=depth))
    if entries.size and int(entries[-1]) - int(entries[0]) == entries.size - 1:
        return slice(int(entries[0]), int(entries[-1]) + 1)
    return entries


def _offsets(chunks: Iterable[_Chunk]) -> Iterator[tuple[_Chunk, int]]:
    """Each chunk with the position of its first iteration in the loop nest."""
    offset = 0
    for chunk in chunks:
        yield chunk, offset
        offset += chunk.a.size


def _ijk(insn: isa.LoopInsn, k: int) -> str:
    """The loop position (i, j, u) of iteration k of a loop nest."""
    n_uops = insn.uop_end - insn.uop_bgn
    pair, u = divmod(k, n_uops)
    i, j = divmod(pair, insn.iter_in)
    return f"(i={i}, j={j}, u={insn.uop_bgn + u})"


def _chunk(a: np.ndarray, s: np.ndarray, w: np.ndarray, depth: int, gemm_reads: bool) -> _Chunk:
    if not gemm_reads:
        return _Chunk(a, s, w, _entries(a, depth), None, None)
    return _Chunk(a, s, w, _entries(a, depth), _entries(s, depth), _entries(w, depth))


class _Shared:
    """Last writer / last reader sequence numbers of an SRAM shared by two modules."""

    def __init__(self, depth: int, writer: int, reader: int):
        self.writer, self.reader = writer, reader
        self.w_seq = np.zeros(depth, dtype=np.int64)
        self.r_seq = np.zeros(depth, dtype=np.int64)

    def check_read(self, idx: Entries | None, vc: VectorClock, what: str) -> None:
        need = int(self.w_seq[idx].max(initial=0))
        if need > vc[self.writer]:
            raise HazardError(
                f"{what} reads data that {MODULE_NAMES[self.writer]} instruction #{need} of that "
                f"module writes, but no dependency token orders them (this {MODULE_NAMES[self.reader]} "
                f"instruction has seen {MODULE_NAMES[self.writer]} up to #{vc[self.writer]}): "
                f"add a {MODULE_NAMES[self.writer]}->{MODULE_NAMES[self.reader]} push/pop")
        self.r_seq[idx] = vc[self.reader]

    def check_write(self, idx: Entries, vc: VectorClock, what: str) -> None:
        need = int(self.r_seq[idx].max(initial=0))
        if need > vc[self.reader]:
            raise HazardError(
                f"{what} overwrites data that {MODULE_NAMES[self.reader]} instruction #{need} of that "
                f"module still reads, and no dependency token orders them: add a "
                f"{MODULE_NAMES[self.reader]}->{MODULE_NAMES[self.writer]} push/pop")
        self.w_seq[idx] = vc[self.writer]


class Machine:
    """DRAM image + SRAM state of one run."""

    def __init__(self, cfg: Config, dram: np.ndarray):
        self.cfg = cfg
        self.dram = dram
        bufs = cfg.buffers
        self.sram = {name: np.zeros((b.depth, *b.shape), dtype=b.dtype) for name, b in bufs.items()}
        self.uop_fields = tuple(np.zeros(bufs["uop"].depth, dtype=np.int64) for _ in range(3))
        self._nest_cache: dict[tuple[int, ...], tuple[_Chunk, ...]] = {}  # see _loop_indices
        self.shared = {"inp": _Shared(bufs["inp"].depth, LOAD, COMPUTE),
                       "wgt": _Shared(bufs["wgt"].depth, LOAD, COMPUTE),
                       "out": _Shared(bufs["out"].depth, COMPUTE, STORE)}
        self.stats = dict.fromkeys(FUNCTIONAL_STATS, 0)

    # ------------------------------------------------------------------ DMA
    def _dram_rows(self, insn: isa.MemInsn, elem_bytes: int) -> np.ndarray:
        """(y_size, x_size, elem_bytes) view of the DRAM rows an instruction touches."""
        return np.ndarray((insn.y_size, insn.x_size, elem_bytes), np.uint8, self.dram, insn.dram_base * elem_bytes,
                          (insn.x_stride * elem_bytes, elem_bytes, 1))

    def execute_load(self, insn: isa.MemInsn, vc: VectorClock) -> None:
        if insn.x_size == 0:
            return
        cfg, mem = self.cfg, insn.memory_type
        elem = cfg.dram_elem_bytes(mem)
        name = _SRAM_OF_MEM[mem]
        buf = cfg.buffers[name]
        raw = self._dram_rows(insn, elem)          # little-endian elements; int8 lanes for ACC_8BIT
        data = raw.view(np.int8 if mem == MEM_ACC_8BIT else buf.dtype.newbyteorder("<"))
        data = data.reshape(insn.y_size, insn.x_size, *buf.shape)
        y0, y1, x0, x1 = insn.pads
        rows, width = y0 + insn.y_size + y1, x0 + insn.x_size + x1
        lo, hi = insn.sram_base, insn.sram_base + rows * width
        if name in self.shared:
            self.shared[name].check_write(slice(lo, hi), vc, f"LOAD {name.upper()}")
        block = self.sram[name][lo:hi].reshape(rows, width, *buf.shape)
        if y0 or y1 or x0 or x1:
            block[...] = 0
        block[y0:y0 + insn.y_size, x0:x0 + insn.x_size] = data   # casts (sign-extends ACC_8BIT)
        if mem == MEM_UOP:
            self._nest_cache.clear()
            for dst, src in zip(self.uop_fields, isa.decode_uops(self.sram["uop"][lo:hi], cfg)):
                dst[lo:hi] = src
        self.stats[LOAD_STAT[mem]] += insn.x_size * insn.y_size * elem

    def execute_store(self, insn: isa.MemInsn, vc: VectorClock) -> None:
        if insn.x_size == 0:
            return
        buf = self.cfg.buffers["out"]
        n = insn.x_size * insn.y_size
        lo = insn.sram_base
        self.shared["out"].check_read(slice(lo, lo + n), vc, "STORE")
        data = self.sram["out"][lo:lo + n].view(np.uint8).reshape(insn.y_size, insn.x_size, buf.entry_bytes)
        view = self._dram_rows(insn, buf.entry_bytes)
        if insn.x_stride >= insn.x_size or insn.y_size == 1:
            view[...] = data
        else:  # overlapping rows: the later row wins, as the hardware writes them in order
            for r in range(insn.y_size):
                view[r] = data[r]
        self.stats["out_store_nbytes"] += n * buf.entry_bytes

    # ------------------------------------------------------------------ GEMM / ALU
    def _check_ranges(self, insn: isa.LoopInsn, src_buffer: str) -> None:
        """Refuse an index outside its SRAM before touching anything (analytic maxima)."""
        u = slice(insn.uop_bgn, insn.uop_end)
        fields = [("dst", 0, "acc", insn.dst_factor_out, insn.dst_factor_in),
                  ("src", 1, src_buffer, insn.src_factor_out, insn.src_factor_in)]
        if isinstance(insn, isa.GemmInsn):
            fields.append(("wgt", 2, "wgt", insn.wgt_factor_out, insn.wgt_factor_in))
        if insn.reset:
            fields = fields[:1]  # a reset only writes
        for name, col, buf, f_out, f_in in fields:
            base = self.uop_fields[col][u]
            top = int(base.max()) + (insn.iter_out - 1) * f_out + (insn.iter_in - 1) * f_in
            depth = self.cfg.buffers[buf].depth
            if top >= depth:
                uop = insn.uop_bgn + int(base.argmax())
                raise MemoryAccessError(
                    f"{name} index reaches {top} (uop {uop} at i={insn.iter_out - 1}, j={insn.iter_in - 1}), "
                    f"outside {buf.upper()} (depth {depth}, valid 0..{depth - 1})")

    def _loop_indices(self, insn: isa.LoopInsn, src_buffer: str) -> Iterable[_Chunk]:
        """Range-checked index chunks (`_Chunk`) of a GEMM/ALU loop nest.

        Programs repeat the same nest over the same loaded micro-ops many times, so a nest that
        fits one chunk is memoised (its checks passed) until the next UOP load changes them.
        """
        key = (insn.opcode, insn.reset, insn.uop_bgn, insn.uop_end, insn.iter_out, insn.iter_in,
               insn.dst_factor_out, insn.dst_factor_in, insn.src_factor_out, insn.src_factor_in,
               getattr(insn, "wgt_factor_out", 0), getattr(insn, "wgt_factor_in", 0))
        hit = self._nest_cache.get(key)
        if hit is not None:
            return hit
        self._check_ranges(insn, src_buffer)
        if insn.iterations > _CHUNK:
            return self._chunks(insn)
        chunks = tuple(self._chunks(insn))
        if len(self._nest_cache) >= _NEST_CACHE_SIZE:
            self._nest_cache.clear()
        self._nest_cache[key] = chunks
        return chunks

    def _chunks(self, insn: isa.LoopInsn) -> Iterator[_Chunk]:
        """Index chunks in execution order, a bounded number of iterations at a time."""
        u = slice(insn.uop_bgn, insn.uop_end)
        bases = [f[u] for f in self.uop_fields]
        factors = [(insn.dst_factor_out, insn.dst_factor_in), (insn.src_factor_out, insn.src_factor_in),
                   (getattr(insn, "wgt_factor_out", 0), getattr(insn, "wgt_factor_in", 0))]
        pairs = insn.iter_out * insn.iter_in
        step = max(1, _CHUNK // bases[0].size)
        depth = self.sram["acc"].shape[0]
        for p0 in range(0, pairs, step):
            p = np.arange(p0, min(pairs, p0 + step), dtype=np.int64)
            i, j = (p // insn.iter_in)[:, None], (p % insn.iter_in)[:, None]
            a, s, w = ((b[None, :] + i * fo + j * fi).ravel() for b, (fo, fi) in zip(bases, factors))
            yield _chunk(a, s, w, depth, insn.opcode == isa.OP_GEMM and not insn.reset)  # a reset reads nothing

    def _write_acc(self, dst: Entries, vc: VectorClock, what: str) -> None:
        """OUT mirrors the written ACC entries (each distinct entry once)."""
        acc, out = self.sram["acc"], self.sram["out"]
        self.shared["out"].check_write(dst, vc, what)
        out[dst] = acc[dst].astype(np.int8)

    def execute_gemm(self, insn: isa.GemmInsn, vc: VectorClock) -> None:
        if insn.iterations == 0:
            return
        for chunk in self._loop_indices(insn, "inp"):
            self._gemm_chunk(insn, chunk, vc)

    def _gemm_chunk(self, insn: isa.GemmInsn, chunk: _Chunk, vc: VectorClock) -> None:
        acc = self.sram["acc"]
        if insn.reset:
            acc[chunk.dst] = 0
        else:
            self.shared["inp"].check_read(chunk.srcs, vc, "GEMM")
            self.shared["wgt"].check_read(chunk.wgts, vc, "GEMM")
            native.gemm(acc, self.sram["inp"], self.sram["wgt"], chunk.a, chunk.s, chunk.w)
            self.stats["gemm_counter"] += chunk.a.size
        self._write_acc(chunk.dst, vc, "GEMM")

    def execute_alu(self, insn: isa.AluInsn, vc: VectorClock) -> int | None:
        """Applies an ALU instruction; for REQ returns how many iterations read their
        multipliers (timing.req_cycles), else None."""
        if insn.alu_opcode == isa.ALU_REQ:
            return self._execute_req(insn, vc)
        if insn.iterations == 0:
            return None
        for chunk in self._loop_indices(insn, "acc"):
            self._alu_chunk(insn, chunk, vc)
        return None

    def _execute_req(self, insn: isa.AluInsn, vc: VectorClock) -> int:
        """REQ (docs/isa-extensions.md): ACC[a] = clamp(round(ACC[a] * ACC[s] / 2^n) + zp), lane
        by lane, all iterations at once (the hazard rule, checked first, makes them independent).
        Returns the number of iterations that read ACC[s]: the first, and each whose s differs from
        the iteration's before it (the loop order i, j, u)."""
        if insn.iterations == 0:
            return 0
        acc, depth = self.sram["acc"], self.sram["acc"].shape[0]
        reads, last = 0, -1
        read = np.zeros(depth, dtype=bool)         # the entries any iteration reads as s
        firsts: list[np.ndarray] = []              # a of the first depth + 1 iterations
        kept = 0
        for chunk in self._loop_indices(insn, "acc"):
            s = chunk.s
            reads += int(s[0] != last) + int(np.count_nonzero(s[1:] != s[:-1]))
            last = int(s[-1])
            if insn.reset:
                acc[chunk.dst] = 0
                self._write_acc(chunk.dst, vc, "ALU REQ")
                continue
            read[s] = True
            if kept <= depth:
                firsts.append(chunk.a[:depth + 1 - kept])
                kept += firsts[-1].size
        if insn.reset:
            return reads
        self._check_req_hazard(insn, np.concatenate(firsts), read)
        (chunk,) = self._loop_indices(insn, "acc")   # at most depth(ACC) iterations now: one chunk
        shift, zp, _ = isa.req_fields(insn.imm)
        p = acc[chunk.a].astype(np.int64) * acc[chunk.s].astype(np.int64)   # exact: |p| <= 2^62
        v = p if shift == 0 else (p >> shift) + ((p >> (shift - 1)) & 1)
        acc[chunk.a] = np.clip(v + zp, isa.REQ_OUT_MIN, isa.REQ_OUT_MAX).astype(np.int32)
        self.stats["alu_counter"] += chunk.a.size
        self._write_acc(chunk.dst, vc, "ALU REQ")
        return reads

    def _check_req_hazard(self, insn: isa.AluInsn, a: np.ndarray, read: np.ndarray) -> None:
        """REQ's hazard rule: every iteration's a differs from the a of every earlier iteration
        and from the s of every iteration (its pipeline forwards nothing). `a`: the dst of the
        first depth(ACC) + 1 iterations (where the first offender lies, if any: a nest of more
        iterations than ACC entries repeats a dst), `read`: the entries any iteration reads.
        Raises HazardError naming the first iteration that breaks the rule."""
        _, first_at = np.unique(a, return_index=True)
        repeated = np.ones(a.size, dtype=bool)
        repeated[first_at] = False
        bad = np.flatnonzero(repeated | read[a])
        if not bad.size:
            return
        k = int(bad[0])
        entry = int(a[k])
        if repeated[k]:
            why = f"which iteration {_ijk(insn, int(np.flatnonzero(a == entry)[0]))} before it also writes"
        else:
            other = next(int(np.flatnonzero(c.s == entry)[0]) + offset
                         for c, offset in _offsets(self._loop_indices(insn, "acc")) if (c.s == entry).any())
            why = "which it also reads as its multipliers (src)" if other == k else \
                f"which iteration {_ijk(insn, other)} reads as its multipliers (src)"
        raise HazardError(
            f"REQ iteration {_ijk(insn, k)} writes ACC[{entry}], {why}: REQ's pipeline forwards nothing, "
            f"so every iteration's dst must differ from the dst of every earlier iteration and from the "
            f"src of every iteration")

    def _alu_chunk(self, insn: isa.AluInsn, chunk: _Chunk, vc: VectorClock) -> None:
        acc = self.sram["acc"]
        if insn.reset:
            acc[chunk.dst] = 0
        else:
            native.alu(acc, chunk.a, chunk.s, insn.alu_opcode, insn.imm if insn.use_imm else None)
            self.stats["alu_counter"] += chunk.a.size
        self._write_acc(chunk.dst, vc, "ALU")
