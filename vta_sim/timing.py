"""Discrete-event timing model of fetch + load/compute/store (docs/timing.md).

The engine advances from transition to transition, never cycle by cycle, so a 4000-cycle GEMM
costs the same Python work as a 4-cycle one. At each step every agent proposes its next
transition as (cycle, phase, priority); the smallest is applied. Phases order what happens
within one cycle: pushes/enqueues/completions (0), instruction starts (1), read-port grants (2).
Instruction semantics run atomically at the start of each instruction through `execute`.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache

from . import isa
from .config import Config
from .errors import DeadlockError
from .functional import COMPUTE, LOAD, MODULE_NAMES, STORE

# Token queues: name -> (producer, consumer).
TOKEN_QUEUES = {"l2c": (LOAD, COMPUTE), "c2l": (COMPUTE, LOAD), "c2s": (COMPUTE, STORE),
                "s2c": (STORE, COMPUTE)}
_MODULE_NUM = {name: i for i, name in enumerate(MODULE_NAMES)}
_FLAG_QUEUE = {_MODULE_NUM[m]: q for m, q in isa.DEP_QUEUES.items()}
FETCH = 3  # fetch is the fourth agent; read-port priority: fetch > compute > load
_PORT_PRIORITY = {FETCH: 0, COMPUTE: 1, LOAD: 2}
INF = float("inf")


@lru_cache(maxsize=4096)
def _bursts(offset: int, nbytes: int, bus: int, boundary: int, latency: int) -> tuple:
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
        self.boundary = min(4096, 256 * self.bus)

    def read_bursts(self, addr: int, nbytes: int) -> tuple:
        return _bursts(addr % self.boundary, nbytes, self.bus, self.boundary, self.cfg.DMA_READ_LATENCY)

    def load_segments(self, insn: isa.MemInsn) -> list:
        """A LOAD as (needs read port, cycles) segments: local pad writes and read bursts, in order."""
        elem = self.cfg.dram_elem_bytes(insn.memory_type)
        y0, y1, x0, x1 = insn.pads
        width = x0 + insn.x_size + x1
        segs = [(False, y0 * width)]
        row_bytes = insn.x_size * elem
        for r in range(insn.y_size):
            segs.append((False, x0))
            segs.extend((True, c) for c in self.read_bursts((insn.dram_base + r * insn.x_stride) * elem, row_bytes))
            segs.append((False, x1))
        segs.append((False, y1 * width))
        merged = []
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
    pops: tuple = ()
    pushes: tuple = ()


@dataclass
class _Module:
    num: int
    queue: deque = field(default_factory=deque)     # (index, enqueue cycle)
    phase: str = "idle"                             # idle | port | run | push
    free: int = 0
    seq: int = 0
    vc: list = field(default_factory=lambda: [0, 0, 0])
    current: object = None                          # dict describing the running instruction
    busy: int = 0
    stall_token: int = 0
    stall_port: int = 0
    stall_push: int = 0


class Engine:
    """Runs decoded instructions through the timing model, calling `execute` at each start."""

    def __init__(self, cfg: Config, insns: list, modules: list, execute, insn_addr: int,
                 trace: bool = False, progress=None):
        self.cfg, self.insns, self.modules_of = cfg, insns, modules
        self.execute = execute
        self.dma = DmaCost(cfg)
        self.insn_addr = insn_addr
        self.mods = [_Module(i) for i in range(3)]
        self.tokens = {q: deque() for q in TOKEN_QUEUES}           # each: deque of vc snapshots
        self.port_free = 0
        self.fetch_k, self.fetch_phase, self.fetch_t = 0, "req", 0
        self.fetch_stall_queue = self.fetch_stall_port = 0
        self.now = 0
        self.end = None
        self.events = [] if trace else None
        self.progress = progress

    # ------------------------------------------------------------------ helpers
    def _queues(self, insn, num, kind: str) -> list:
        table = _FLAG_QUEUE[num]
        return [table[f] for f in isa.FLAGS if f.startswith(kind) and getattr(insn, f)]

    def _segments(self, insn) -> list:
        """The instruction's work as (needs read port, cycles) segments."""
        cfg = self.cfg
        if isinstance(insn, isa.MemInsn):
            if insn.x_size == 0:
                return [(False, 1)]
            if insn.opcode == isa.OP_STORE:
                segments = [(False, self.dma.store_cycles(insn))]
            else:
                segments = self.dma.load_segments(insn)
            # a LOAD/STORE that moves no entry (y_size = 0, no y pads) still takes its cycle
            return segments if sum(c for _, c in segments) else [(False, 1)]
        if isinstance(insn, isa.GemmInsn):
            return [(False, cfg.GEMM_PIPELINE + insn.iterations)]
        if isinstance(insn, isa.AluInsn):
            return [(False, cfg.ALU_PIPELINE + insn.iterations * (1 if insn.use_imm else 2))]
        return [(False, 1)]  # FINISH

    def _advance(self, m: _Module) -> None:
        """Run local segments; stop at the next read burst (port request) or at completion."""
        cur = m.current
        segs = cur["segments"]
        while segs and not segs[0][0]:
            cur["t"] += segs.pop(0)[1]
        if segs:
            m.phase = "port"
        else:
            cur["done"] = cur["t"]
            m.phase = "run"

    # ------------------------------------------------------------------ proposals
    def _proposals(self):
        props = []
        now, n = self.now, len(self.insns)
        if self.fetch_k < n:
            if self.fetch_phase == "req":
                props.append((max(now, self.fetch_t, self.port_free), 2, _PORT_PRIORITY[FETCH], "fetch_grant", None))
            else:
                m = self.mods[self.modules_of[self.fetch_k]]
                if len(m.queue) < self.cfg.CMD_QUEUE_DEPTH:
                    props.append((max(now, self.fetch_t), 0, 0, "fetch_enqueue", None))
        for m in self.mods:
            if m.phase == "idle":
                if m.queue:
                    idx = m.queue[0][0]
                    if all(self.tokens[q] for q in self._queues(self.insns[idx], m.num, "pop")):
                        props.append((max(now, m.free, m.queue[0][1]), 1, m.num, "start", m))
            elif m.phase == "port":
                props.append((max(now, m.current["t"], self.port_free), 2, _PORT_PRIORITY[m.num], "grant", m))
            elif m.phase == "run":
                props.append((max(now, m.current["done"]), 0, m.num, "done", m))
            elif m.phase == "push":
                q = m.current["pushes"][0]
                if len(self.tokens[q]) < self.cfg.TOKEN_DEPTH:
                    props.append((now, 0, m.num, "push", m))
        return props

    # ------------------------------------------------------------------ main loop
    def run(self) -> int:
        """Simulate to the completion of FINISH; returns that cycle."""
        while self.end is None:
            props = self._proposals()
            if not props:
                raise self._deadlock()
            t, _, _, action, m = min(props, key=lambda p: (p[0], p[1], p[2]))
            self.now = t
            if action == "fetch_grant":
                self.fetch_stall_port += t - self.fetch_t
                cycles = sum(self.dma.read_bursts(self.insn_addr + self.fetch_k * isa.INSN_BYTES, isa.INSN_BYTES))
                self.port_free = self.fetch_t = t + cycles
                self.fetch_phase = "enqueue"
            elif action == "fetch_enqueue":
                k = self.fetch_k
                self.fetch_stall_queue += t - self.fetch_t
                self.mods[self.modules_of[k]].queue.append((k, t))
                self.fetch_k, self.fetch_phase, self.fetch_t = k + 1, "req", t
                if self.progress is not None:
                    self.progress(k + 1, len(self.insns), t)
            elif action == "start":
                self._start(m, t)
            elif action == "grant":
                cur = m.current
                m.stall_port += t - cur["t"]
                cur.setdefault("grant", t)
                cur["t"] = self.port_free = t + cur["segments"].pop(0)[1]
                self._advance(m)
            elif action == "done":
                m.busy += m.current["body"]
                m.current["last_push"] = t
                if m.current["pushes"]:
                    m.phase = "push"
                else:
                    self._retire(m, t)
            else:  # push
                cur = m.current
                q = cur["pushes"].pop(0)
                self.tokens[q].append(list(m.vc))
                m.stall_push += t - cur["last_push"]
                cur["last_push"] = t
                if not cur["pushes"]:
                    self._retire(m, t)
        return self.end

    def _start(self, m: _Module, t: int):
        idx, enq = m.queue.popleft()
        insn = self.insns[idx]
        ready = max(m.free, enq)
        m.stall_token += t - ready
        pops = self._queues(insn, m.num, "pop")
        for q in pops:
            vc = self.tokens[q].popleft()
            m.vc = [max(a, b) for a, b in zip(m.vc, vc)]
        m.seq += 1
        m.vc[m.num] = m.seq
        self.execute(idx, insn, m.num, m.vc)
        segments = self._segments(insn)
        pushes = self._queues(insn, m.num, "push")
        m.current = {"index": idx, "enqueue": enq, "start": t, "t": t, "segments": segments,
                     "body": sum(c for _, c in segments), "pops": tuple(pops), "pushes": pushes,
                     "pushed": tuple(pushes), "token_wait": t - ready}
        self._advance(m)

    def _retire(self, m: _Module, t: int):
        cur = m.current
        m.free = t
        if cur["index"] == len(self.insns) - 1:
            self.end = t
        if self.events is not None:
            self.events.append(TraceEvent(
                cur["index"], MODULE_NAMES[m.num], isa.disasm(self.insns[cur["index"]]), cur["enqueue"],
                cur["start"], cur.get("grant", cur["start"]), cur["done"], t, cur["token_wait"], cur["pops"], cur["pushed"]))
        m.current, m.phase = None, "idle"

    # ------------------------------------------------------------------ diagnostics
    def _deadlock(self) -> DeadlockError:
        lines = []
        for m in self.mods:
            name = MODULE_NAMES[m.num]
            if m.phase == "push":
                idx = m.current["index"]
                lines.append(f"{name}: instruction {idx} waits to push {m.current['pushes'][0]} (full)"
                             f"  {isa.disasm(self.insns[idx])}")
            elif m.queue:
                idx = m.queue[0][0]
                missing = [q for q in self._queues(self.insns[idx], m.num, "pop") if not self.tokens[q]]
                lines.append(f"{name}: instruction {idx} waits for token(s) {', '.join(missing)}"
                             f"  {isa.disasm(self.insns[idx])}")
            else:
                lines.append(f"{name}: idle, queue empty")
        if self.fetch_k < len(self.insns):
            k = self.fetch_k
            lines.append(f"fetch: instruction {k} waits for a slot in the full "
                         f"{MODULE_NAMES[self.modules_of[k]]} queue")
        counts = ", ".join(f"{q}={len(v)}" for q, v in self.tokens.items())
        blocked = next((m for m in self.mods if m.queue or m.phase == "push"), None)
        idx = (blocked.current["index"] if blocked and blocked.phase == "push" else
               blocked.queue[0][0] if blocked else None)
        return DeadlockError(f"deadlock at cycle {self.now}: every module waits and FINISH has not "
                             f"completed; token counts {counts}\n  " + "\n  ".join(lines),
                             index=idx, disasm=isa.disasm(self.insns[idx]) if idx is not None else None)

    def stats(self) -> dict:
        out = {}
        for m in self.mods:
            name = MODULE_NAMES[m.num]
            out[f"{name}_busy_cycles"] = m.busy
            out[f"{name}_stall_token_cycles"] = m.stall_token
            out[f"{name}_stall_port_cycles"] = m.stall_port
            out[f"{name}_stall_push_cycles"] = m.stall_push
            out[f"{name}_insn_count"] = m.seq
        out["fetch_stall_queue_cycles"] = self.fetch_stall_queue
        out["fetch_stall_port_cycles"] = self.fetch_stall_port
        return out
