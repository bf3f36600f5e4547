"""Automatic dependency tokens, derived from which module reads and writes which SRAM entries.

An op of module M may start only after every earlier op of another module that conflicts with
it (M reads what the other wrote, or overwrites what the other read or wrote). The tracker sees
the whole program before anything is issued, so each token is pushed by exactly the producer op
that must finish and popped by exactly the first consumer op that needs it: a compute op of one
virtual thread never waits for the loads of the other. Pairs are made in program order on both
sides, so the k-th push of a queue meets its k-th pop and every queue balances by construction;
a producer op already covered by an earlier token is not asked again.

Load and store have no queue between them. Where one must wait for the other (a program that
stores a tensor to DRAM and loads it back: the `"dram"` ranges, intrinsics.host), the wait is
relayed through the compute module: the consumer waits for the first compute op that already
waits for the producer's op (a compute op between them in program order must, or the program
is refused). DRAM ranges are never dropped as settled: a compute op's wait covers its own
module, not the other end of the relay.
"""
from __future__ import annotations

from vta_sim.errors import CompileError
from vta_sim.isa import NEIGHBOURS, QUEUE_BETWEEN


class DependencyTracker:
    def __init__(self):
        self.issued = {m: 0 for m in NEIGHBOURS}      # ops recorded per module
        self.covered = {pair: 0 for pair in QUEUE_BETWEEN}      # consumer already waits for ops 1..n
        self.events = {}                               # sram -> [(lo, hi, module, seq, write)]
        self.pops = []                                 # per op: the (producer, consumer) it pops
        self.pushes = {}                               # (module, seq) -> pairs it pushes
        self.waits = {m: [] for m in NEIGHBOURS}       # producer -> [(its ops covered, compute op)]

    def add(self, module: str, reads=(), writes=()) -> None:
        """Record the next op of `module`; `reads`/`writes` are (sram, lo, hi) entry ranges."""
        need = {}
        for accesses, is_write in ((reads, False), (writes, True)):
            for sram, lo, hi in accesses:
                for e_lo, e_hi, other, seq, e_write in self.events.get(sram, ()):
                    if other != module and e_lo < hi and lo < e_hi and (is_write or e_write):
                        need[other] = max(need.get(other, 0), seq)
        for producer, seq in list(need.items()):
            if (producer, module) not in QUEUE_BETWEEN:
                relay = self._relay(producer, seq, module)
                need.pop(producer)
                need["compute"] = max(need.get("compute", 0), relay)
        pops = []
        for producer, seq in need.items():
            pair = (producer, module)
            if self.covered[pair] >= seq:
                continue
            pops.append(pair)
            self.pushes.setdefault((producer, seq), []).append(pair)
            self.covered[pair] = seq
        self.pops.append(pops)
        self.issued[module] += 1
        seq = self.issued[module]
        if module == "compute":
            for producer, consumer in pops:
                self.waits[producer].append((self.covered[(producer, consumer)], seq))
        for accesses, is_write in ((reads, False), (writes, True)):
            for sram, lo, hi in accesses:
                events = self.events.setdefault(sram, [])
                events[:] = [e for e in events
                             if not (sram != "dram" and self._settled(e)) and not _superseded(e, lo, hi, module, is_write)]
                events.append((lo, hi, module, seq, is_write))

    def _relay(self, producer: str, seq: int, module: str) -> int:
        """The first compute op that waits for op `seq` of `producer` (or a later one)."""
        if module == "compute" or producer == "compute":
            raise CompileError(f"{module} accesses data of {producer}, but there is no token queue between them")
        for covered, compute in self.waits[producer]:
            if covered >= seq:
                return compute
        raise CompileError(f"{module} accesses DRAM that {producer} op {seq} wrote or read, and no compute op "
                           f"between them waits for it: put one there (a load into ACC of the range)")

    def issue(self, rt, ops) -> None:
        """Emit the recorded ops, `(module, emit)` in recording order, with their tokens."""
        seq = {m: 0 for m in NEIGHBOURS}
        for (module, emit), pops in zip(ops, self.pops):
            for producer, consumer in pops:
                rt.dep_pop(producer, consumer)
            emit()
            seq[module] += 1
            for producer, consumer in self.pushes.get((module, seq[module]), ()):
                rt.dep_push(producer, consumer)

    def _settled(self, event) -> bool:
        """Every module that could conflict with this access already waits for it."""
        module, seq = event[2], event[3]
        return all(self.covered[(module, n)] >= seq for n in NEIGHBOURS[module])


def _superseded(event, lo: int, hi: int, module: str, is_write: bool) -> bool:
    """A newer access of the same module covers `event`: whoever conflicts with `event` also
    conflicts with the newer one (a write covers reads and writes, a read covers reads), and
    modules run in order, so waiting for the newer one waits for `event` too. Dropping such
    events keeps the list as short as the live SRAM regions, not the program."""
    e_lo, e_hi, other, _, e_write = event
    return other == module and lo <= e_lo and e_hi <= hi and (is_write or not e_write)
