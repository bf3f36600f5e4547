"""Discrete-event timing model of fetch + load/compute/store (docs/timing.md).

The engine advances from transition to transition, never cycle by cycle, so a 4000-cycle GEMM
costs the same Python work as a 4-cycle one. At each step every agent proposes its next
transition as (cycle, phase, priority); the smallest is applied. Phases order what happens
within one cycle: pushes/enqueues/completions (0), instruction starts (1), read-port grants (2).
Instruction semantics run atomically at the start of each instruction through `execute`.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from . import isa
from .config import Config
from .errors import DeadlockError
from .result import TIMING_STATS
from .functional import COMPUTE, LOAD, MODULE_NAMES

_FLAG_QUEUE = {MODULE_NAMES.index(m): q for m, q in isa.DEP_QUEUES.items()}
FETCH = 3  # fetch is the fourth agent; read-port priority: fetch > compute > load
PORT_PRIORITY = {FETCH: 0, COMPUTE: 1, LOAD: 2}


@lru_cache(maxsize=4096)
def _bursts(offset: int, nbytes: int, bus: int, boundary: int, latency: int) -> tuple[int, ...]:
    """Cycles of each burst of one DMA row: split at `boundary`, each `latency` + its beats.

    Depends on the address only through `offset` = address mod boundary, hence the cache.
    """
    out = []
    pos, end = offset, offset + nbytes
    while pos < end:
        stop = min(end, (pos // boundary + 1) * boundary)
        out.append(latency + -(-(pos % bus + stop - pos) // bus))
        pos = stop
    return tuple(out)


class DmaCost:
    """Cycle costs of DMA rows for one configuration (docs/timing.md, "Bursts")."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.bus = cfg.bus_bytes
        self.boundary = cfg.burst_boundary

    def read_bursts(self, addr: int, nbytes: int) -> tuple[int, ...]:
        return _bursts(addr % self.boundary, nbytes, self.bus, self.boundary, self.cfg.DMA_READ_LATENCY)

    def load_segments(self, insn: isa.MemInsn) -> list[Segment]:
        """A LOAD as (needs read port, cycles) segments: local pad writes and read bursts, in order."""
        elem = self.cfg.dram_elem_bytes(insn.memory_type)
        y0, y1, x0, x1 = insn.pads
        width = x0 + insn.x_size + x1
        segs: list[Segment] = [(False, y0 * width)]
        row_bytes = insn.x_size * elem
        for r in range(insn.y_size):
            segs.append((False, x0))
            segs.extend((True, c) for c in self.read_bursts((insn.dram_base + r * insn.x_stride) * elem, row_bytes))
            segs.append((False, x1))
        segs.append((False, y1 * width))
        merged: list[Segment] = []
        for port, cycles in segs:
            if not port and merged and not merged[-1][0]:
                merged[-1] = (False, merged[-1][1] + cycles)
            elif port or cycles:
                merged.append((port, cycles))
        return merged

    def store_cycles(self, insn: isa.MemInsn) -> int:
        elem = self.cfg.buffers["out"].entry_bytes
        return sum(sum(_bursts(((insn.dram_base + r * insn.x_stride) * elem) % self.boundary, insn.x_size * elem,
                               self.bus, self.boundary, self.cfg.DMA_WRITE_LATENCY))
                   for r in range(insn.y_size))


_IDLE, _PORT, _RUN, _PUSH = range(4)                       # module phases
_FETCH_GRANT, _FETCH_ENQUEUE, _ISSUE, _BEGIN, _GRANT, _DONE, _PUSHED = range(7)

#: The registered hand-offs (docs/timing.md, "Hand-offs"), fixed by the RTL's structure.
FETCH_DECODE = 3   # a word whose last beat is due at D is checked at D + 1 and D + 2, enqueued from D + 3
FETCH_NEXT = 1     # the next word is requested 1 cycle after the enqueue (a registered request)
QUEUE_DELAY = 1    # an instruction enqueued at t can issue from t + 1; a slot freed at t is seen at t + 1
TOKEN_DELAY = 1    # a token pushed at t can be popped from t + 1; a slot freed at t is seen at t + 1
ISSUE_DELAY = 1    # an instruction issued (taken from its queue, tokens popped) at t begins from t + 1
BEGIN_DELAY = 1    # a module freed at t begins its next instruction from t + 1 (registered free)
REQUEST_DELAY = 1  # a read burst requests the port 1 cycle after the segment before it (or the begin)
#: Cycles per ALU micro-op iteration (docs/timing.md, "Why each delay is there"): one with an immediate; with a
#: tensor operand two (its ACC[dst] and ACC[src] reads), three for the ops whose result only the
#: ALU's third stage has (SHR, MUL), so the next iteration can read what this one wrote.
ALU_IMM_INTERVAL = 1
ALU_TENSOR_INTERVAL = {isa.ALU_MIN: 2, isa.ALU_MAX: 2, isa.ALU_ADD: 2, isa.ALU_SHR: 3, isa.ALU_MUL: 3}

#: REQ (docs/isa-extensions.md): an iteration that reads its multipliers (s differs from the
#: iteration before) costs REQ_READ_INTERVAL, one that keeps them REQ_KEEP_INTERVAL; its result
#: is written REQ_EXTRA_LATENCY cycles later than the other ALU ops'.
REQ_READ_INTERVAL = 2
REQ_KEEP_INTERVAL = 1
REQ_EXTRA_LATENCY = 4   # the RTL's REQ pipeline depth (hw/header.py RTL_REQ_DEPTH, docs/hardware.md "REQ")


def alu_interval(use_imm: int, alu_opcode: int) -> int:
    """Cycles per micro-op iteration of an ALU instruction of the base ISA (REQ's depend on its
    src indices: req_cycles)."""
    if alu_opcode == isa.ALU_REQ:
        raise ValueError("REQ has no fixed cycles per iteration: an iteration that reads its multipliers "
                         f"costs {REQ_READ_INTERVAL}, one that keeps them {REQ_KEEP_INTERVAL} (timing.req_cycles)")
    return ALU_IMM_INTERVAL if use_imm else ALU_TENSOR_INTERVAL[alu_opcode]


def req_cycles(cfg: Config, iterations: int, reads: int) -> int:
    """Cycles of a REQ instruction from its begin to its last write (docs/isa-extensions.md):
    `reads` of its `iterations` read ACC[s] (the first, and each whose s differs from the one
    before it), the others keep the multipliers."""
    return (cfg.ALU_PIPELINE + REQ_EXTRA_LATENCY + reads * REQ_READ_INTERVAL
            + (iterations - reads) * REQ_KEEP_INTERVAL)


@dataclass
class TraceEvent:
    """One instruction's life in its module (cycles)."""

    index: int
    module: str
    text: str
    enqueue: int
    start: int
    grant: int
    done: int
    free: int
    token_wait: int
    pops: tuple[str, ...] = ()
    pushes: tuple[str, ...] = ()


#: A stretch of an instruction's work: (needs the read port, cycles).
Segment = tuple[bool, int]
#: An instruction issued and waiting to begin: (index, enqueue, issue cycle, token wait, vc).
_Issued = tuple[int, int, int, int, list[int]]
#: Called as each instruction starts: (index, instruction, module number, its vector clock).
#: Returns, for a REQ, how many of its iterations read ACC[s] (req_cycles), else None.
Execute = Callable[[int, isa.Insn, int, list[int]], int | None]


class _Running:
    """The instruction a module is executing: its remaining segments and pushes."""

    __slots__ = ("index", "enqueue", "start", "t", "segments", "seg", "body", "grant", "done", "pushes", "push",
                 "last_push", "token_wait")

    def __init__(self, index: int, enqueue: int, start: int, segments: tuple[Segment, ...], body: int,
                 pushes: tuple[str, ...], token_wait: int):
        self.index, self.enqueue, self.start, self.t = index, enqueue, start, start
        self.segments, self.seg, self.body = segments, 0, body  # (needs read port, cycles); seg = next
        self.grant: int | None = None
        self.done: int | None = None
        self.pushes, self.push = pushes, 0           # token queues to push, index of the next
        self.last_push = start
        self.token_wait = token_wait


class _Module:
    """One of load/compute/store: its instruction queue, the issued instruction, statistics."""

    __slots__ = ("num", "queue", "phase", "free", "seq", "vc", "current", "nxt", "n_free", "last_issue",
                 "busy", "stall_token", "stall_port", "stall_push")

    def __init__(self, num: int):
        self.num = num
        self.queue: deque[tuple[int, int]] = deque()   # (index, enqueue cycle)
        self.phase = _IDLE
        self.free = self.seq = self.n_free = 0
        self.last_issue = -1
        self.vc = [0, 0, 0]
        self.current: _Running | None = None
        self.nxt: _Issued | None = None            # issued, waiting to begin
        self.busy = self.stall_token = self.stall_port = self.stall_push = 0


class Engine:
    """Runs decoded instructions through the timing model, calling `execute` at each start."""

    def __init__(self, cfg: Config, insns: list[isa.Insn], modules: list[int], execute: Execute, insn_addr: int,
                 trace: bool = False, progress: Callable[[int, int, int], None] | None = None):
        self.cfg, self.insns, self.modules_of = cfg, insns, modules
        self.execute = execute
        self.dma = DmaCost(cfg)
        self.insn_addr = insn_addr
        self.mods = [_Module(i) for i in range(3)]
        # each: deque of (push cycle, vc snapshot)
        self.tokens: dict[str, deque[tuple[int, list[int]]]] = {q.name: deque() for q in isa.TOKEN_QUEUES}
        self.last_pop = {q.name: -1 for q in isa.TOKEN_QUEUES}
        # Token queues each instruction pops and pushes, by name, decided once per flag pattern.
        flag_queues: dict[tuple[int, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}
        self.pops: list[tuple[str, ...]] = []
        self.pushes: list[tuple[str, ...]] = []
        for insn, num in zip(insns, modules):
            key = (num, insn.pop_prev, insn.pop_next, insn.push_prev, insn.push_next)
            if key not in flag_queues:
                flag_queues[key] = (self._queues(insn, num, "pop"), self._queues(insn, num, "push"))
            pops, pushes = flag_queues[key]
            self.pops.append(pops)
            self.pushes.append(pushes)
        self._segment_cache: dict[tuple[object, ...], tuple[tuple[Segment, ...], int]] = {}
        self.fetch_k = 0
        self.fetch_stall_queue = self.fetch_stall_port = 0
        self.now = 0
        self.end: int | None = None
        self.events: list[TraceEvent] | None = [] if trace else None
        self.progress = progress

    # ------------------------------------------------------------------ helpers
    def _queues(self, insn: isa.Insn, num: int, kind: str) -> tuple[str, ...]:
        table = _FLAG_QUEUE[num]
        return tuple(q for f in isa.FLAGS if f.startswith(kind) and getattr(insn, f) and (q := table[f]) is not None)

    def _segments(self, insn: isa.Insn, req_reads: int | None = None) -> tuple[tuple[Segment, ...], int]:
        """The instruction's work as ((needs read port, cycles), ...) and their total cycles
        (`req_reads`: what `execute` returned for a REQ).

        A LOAD/STORE's costs depend on its DRAM addresses only modulo the burst boundary, so
        they are cached under that reduced key (compiled programs repeat a few row patterns).
        """
        cfg = self.cfg
        if isinstance(insn, isa.MemInsn):
            if insn.x_size == 0:
                return ((False, 1),), 1
            elem = cfg.dram_elem_bytes(insn.memory_type)
            boundary = self.dma.boundary
            key = (insn.opcode, elem, insn.x_size, insn.y_size, insn.pads, (insn.dram_base * elem) % boundary,
                   (insn.x_stride * elem) % boundary)
            hit = self._segment_cache.get(key)
            if hit is None:
                if insn.opcode == isa.OP_STORE:
                    segments = [(False, self.dma.store_cycles(insn))]
                else:
                    segments = self.dma.load_segments(insn)
                body = sum(c for _, c in segments)
                # a LOAD/STORE that moves no entry (y_size = 0, no y pads) still takes its cycle
                hit = self._segment_cache[key] = (tuple(segments), body) if body else (((False, 1),), 1)
            return hit
        if isinstance(insn, isa.GemmInsn):
            cycles = cfg.GEMM_PIPELINE + insn.iterations
        elif isinstance(insn, isa.AluInsn) and insn.alu_opcode == isa.ALU_REQ:
            if req_reads is None:
                raise AssertionError("a REQ's cycles need the number of its iterations that read ACC[s], "
                                     "which the functional machine's execute returns")
            cycles = req_cycles(cfg, insn.iterations, req_reads)
        elif isinstance(insn, isa.AluInsn):
            cycles = cfg.ALU_PIPELINE + insn.iterations * alu_interval(insn.use_imm, insn.alu_opcode)
        else:
            cycles = 1  # FINISH
        return ((False, cycles),), cycles

    @staticmethod
    def _advance(m: _Module) -> None:
        """Run local segments; stop at the next read burst (port request) or at completion."""
        cur = m.current
        assert cur is not None
        segs, i = cur.segments, cur.seg
        while i < len(segs) and not segs[i][0]:
            cur.t += segs[i][1]
            i += 1
        cur.seg = i
        if i < len(segs):
            cur.t += REQUEST_DELAY     # the request register: busy, not waiting for the port
            cur.body += REQUEST_DELAY
            m.phase = _PORT
        else:
            cur.done = cur.t
            m.phase = _RUN

    # ------------------------------------------------------------------ main loop
    def run(self) -> int:
        """Simulate to the completion of FINISH; returns that cycle.

        Each step, every agent proposes its next transitions as (cycle, phase, priority) and the
        smallest is applied (on a tie, fetch's proposal, made first, wins). Phases order one
        cycle: pushes, enqueues and completions (0), begins (1), issues (2), read-port grants (3).
        A queue slot or token-queue slot freed at t is seen from t + 1 (registered counts).
        """
        n, mods, tokens, last_pop = len(self.insns), self.mods, self.tokens, self.last_pop
        modules_of, progress = self.modules_of, self.progress
        pop_deques = [tuple(tokens[q] for q in pops) for pops in self.pops]
        qdepth, tdepth = self.cfg.CMD_QUEUE_DEPTH, self.cfg.TOKEN_DEPTH
        fetch_cycles = [sum(self.dma.read_bursts(self.insn_addr + k * isa.INSN_BYTES, isa.INSN_BYTES))
                        for k in range(n)]
        fetch_priority = PORT_PRIORITY[FETCH]
        # the hot state lives in locals; written back to self for _deadlock and stats
        now = port_free = fetch_k = fetch_t = 0
        fetch_req = True
        while self.end is None:
            best: tuple[int, int, int] | None = None
            action, bm = _FETCH_GRANT, None
            if fetch_k < n:
                if fetch_req:
                    best, action = (max(now, fetch_t, port_free), 3, fetch_priority), _FETCH_GRANT
                else:
                    target = mods[modules_of[fetch_k]]
                    if len(target.queue) < qdepth:
                        t = max(now, fetch_t + FETCH_DECODE)
                        if len(target.queue) == qdepth - 1:
                            t = max(t, target.last_issue + QUEUE_DELAY)
                        best, action = (t, 0, 0), _FETCH_ENQUEUE
            for m in mods:
                if m.nxt is None and m.queue:
                    idx, enq = m.queue[0]
                    deqs = pop_deques[idx]
                    if all(deqs):
                        t = max(now, enq + QUEUE_DELAY, m.n_free)
                        for d in deqs:
                            t = max(t, d[0][0] + TOKEN_DELAY)
                        key = (t, 2, m.num)
                        if best is None or key < best:
                            best, action, bm = key, _ISSUE, m
                phase = m.phase
                if phase == _IDLE:
                    if m.nxt is None:
                        continue
                    key, act = (max(now, m.free + BEGIN_DELAY, m.nxt[2] + ISSUE_DELAY), 1, m.num), _BEGIN
                elif (cur := m.current) is None:   # a module is idle exactly when it runs nothing
                    raise AssertionError(f"module {m.num} in phase {phase} runs no instruction")
                elif phase == _PORT:
                    key, act = (max(now, cur.t, port_free), 3, PORT_PRIORITY[m.num]), _GRANT
                elif phase == _RUN:
                    assert cur.done is not None
                    key, act = (max(now, cur.done), 0, m.num), _DONE
                else:
                    q = cur.pushes[cur.push]
                    if len(tokens[q]) >= tdepth:
                        continue
                    t = now if len(tokens[q]) < tdepth - 1 else max(now, last_pop[q] + TOKEN_DELAY)
                    key, act = (t, 0, m.num), _PUSHED
                if best is None or key < best:
                    best, action, bm = key, act, m
            if best is None:
                self.now, self.fetch_k = now, fetch_k
                raise self._deadlock()
            t = now = best[0]
            if action == _FETCH_GRANT:
                self.fetch_stall_port += t - fetch_t
                port_free = fetch_t = t + fetch_cycles[fetch_k]
                fetch_req = False
                continue
            if action == _FETCH_ENQUEUE:
                self.fetch_stall_queue += t - fetch_t - FETCH_DECODE
                mods[modules_of[fetch_k]].queue.append((fetch_k, t))
                fetch_k, fetch_req, fetch_t = fetch_k + 1, True, t + FETCH_NEXT
                if progress is not None:
                    progress(fetch_k, n, t)
                continue
            assert bm is not None   # every other action is a module's
            if action == _ISSUE:
                self._issue(bm, t)
            elif action == _BEGIN:
                self._begin(bm, t)
            elif (cur := bm.current) is None:
                raise AssertionError(f"module {bm.num} retires no instruction")
            elif action == _GRANT:
                bm.stall_port += t - cur.t
                if cur.grant is None:
                    cur.grant = t
                cur.t = port_free = t + cur.segments[cur.seg][1]
                cur.seg += 1
                self._advance(bm)
            elif action == _DONE:
                bm.busy += cur.body
                cur.last_push = t
                if cur.pushes:
                    bm.phase = _PUSH
                else:
                    self._retire(bm, t)
            else:  # a push lands
                tokens[cur.pushes[cur.push]].append((t, list(bm.vc)))
                cur.push += 1
                bm.stall_push += t - cur.last_push
                cur.last_push = t
                if cur.push == len(cur.pushes):
                    self._retire(bm, t)
        self.now, self.fetch_k = now, fetch_k
        return self.end

    def _issue(self, m: _Module, t: int) -> None:
        """Take the head from the queue into the issue register, popping its tokens."""
        idx, enq = m.queue.popleft()
        wait = t - max(enq + QUEUE_DELAY, m.n_free)
        m.stall_token += wait
        vc = [0, 0, 0]
        for q in self.pops[idx]:
            _, pushed = self.tokens[q].popleft()
            self.last_pop[q] = t
            vc = [max(a, b) for a, b in zip(vc, pushed)]
        m.last_issue = t
        m.nxt = (idx, enq, t, wait, vc)

    def _begin(self, m: _Module, t: int) -> None:
        assert m.nxt is not None
        idx, enq, _, wait, vc = m.nxt
        m.nxt, m.n_free = None, t
        insn = self.insns[idx]
        m.vc = [max(a, b) for a, b in zip(m.vc, vc)]
        m.seq += 1
        m.vc[m.num] = m.seq
        req_reads = self.execute(idx, insn, m.num, m.vc)
        m.current = _Running(idx, enq, t, *self._segments(insn, req_reads), self.pushes[idx], wait)
        self._advance(m)

    def _retire(self, m: _Module, t: int) -> None:
        cur = m.current
        assert cur is not None and cur.done is not None
        m.free = t
        if cur.index == len(self.insns) - 1:
            self.end = t
        if self.events is not None:
            self.events.append(TraceEvent(
                cur.index, MODULE_NAMES[m.num], isa.disasm(self.insns[cur.index]), cur.enqueue, cur.start,
                cur.start if cur.grant is None else cur.grant, cur.done, t, cur.token_wait,
                self.pops[cur.index], cur.pushes))
        m.current, m.phase = None, _IDLE

    # ------------------------------------------------------------------ diagnostics
    def _deadlock(self) -> DeadlockError:
        lines = []
        for m in self.mods:
            name = MODULE_NAMES[m.num]
            if m.phase == _PUSH and (cur := m.current) is not None:
                lines.append(f"{name}: instruction {cur.index} waits to push {cur.pushes[cur.push]} (full)"
                             f"  {isa.disasm(self.insns[cur.index])}")
            elif m.queue:
                idx = m.queue[0][0]
                missing = [q for q in self.pops[idx] if not self.tokens[q]]
                lines.append(f"{name}: instruction {idx} waits for token(s) {', '.join(missing)}"
                             f"  {isa.disasm(self.insns[idx])}")
            else:
                lines.append(f"{name}: idle, queue empty")
        if self.fetch_k < len(self.insns):
            k = self.fetch_k
            lines.append(f"fetch: instruction {k} waits for a slot in the full "
                         f"{MODULE_NAMES[self.modules_of[k]]} queue")
        counts = ", ".join(f"{q}={len(v)}" for q, v in self.tokens.items())
        blocked = next((m for m in self.mods if m.queue or m.phase == _PUSH), None)
        culprit = (blocked.current.index if blocked and blocked.phase == _PUSH and blocked.current else
                   blocked.queue[0][0] if blocked else None)
        return DeadlockError(f"deadlock at cycle {self.now}: every module waits and FINISH has not "
                             f"completed; token counts {counts}\n  " + "\n  ".join(lines),
                             index=culprit, disasm=isa.disasm(self.insns[culprit]) if culprit is not None else None)

    def stats(self) -> dict[str, int]:
        values = [v for m in self.mods for v in (m.busy, m.stall_token, m.stall_port, m.stall_push, m.seq)]
        values += [self.fetch_stall_queue, self.fetch_stall_port]
        return dict(zip(TIMING_STATS, values, strict=True))
