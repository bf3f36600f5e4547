"""Every failing path of a placed design, grouped: static timing over nextpnr's routed SDF.

nextpnr reports one critical path per clock; timing closure needs the whole list (at 100 MHz
the 1x8x8 design had some 1,600 failing endpoints behind its worst path). This reads the SDF
nextpnr writes (`--sdf`: cell delays, interconnect delays and setup checks, in ps), computes the
latest arrival at every register input from every register output, and groups the failing
endpoints by (launching register, capturing register) with the worst path of each.
"""
from __future__ import annotations

import collections
import re
from dataclasses import dataclass
from pathlib import Path

#: Cell inputs that are clocks: a delay arc from one of them launches a path.
CLOCK_PINS = frozenset({"CLK", "CLKA", "CLKB", "WCK", "CLK0", "CLK1", "CLK2", "CLK3"})
#: What Yosys and nextpnr append to an RTL register's name when they split and pack it.
_SUFFIX = re.compile(r"(_TRELLIS_FF_Q(_\d+)?|\$.*|_(LUT4|PFUMX|CCU2C|L6MUX21|TRELLIS|DPRAM).*)$")
_CHECK = re.compile(r"\((SETUPHOLD|SETUP) \((?:posedge|negedge) (\S+)\) \((?:posedge|negedge) (\S+)\) \(([^)]*)\)")

Pin = tuple  # (instance, port)


@dataclass(frozen=True)
class PathGroup:
    """Failing endpoints launched by one register and captured by another (RTL names)."""
    source: str
    sink: str
    endpoints: int
    worst_ns: float             # latest arrival plus setup
    through: tuple              # the RTL names of the worst path's cells between the two


def _unescape(name: str) -> str:
    return name.replace("\\", "")


def _pin(ref: str) -> Pin:
    """`inst/port` with SDF escapes (`\\$`, `\\/`) into (instance, port)."""
    for i in range(len(ref) - 1, -1, -1):
        if ref[i] == "/" and (i == 0 or ref[i - 1] != "\\"):
            return _unescape(ref[:i]), ref[i + 1:]
    raise ValueError(f"SDF pin reference without an instance: {ref!r}")


def _max_ns(triple: str) -> float:
    """The slow corner of `(min:typ:max)` ps, in ns."""
    return float(triple.strip("()").split(":")[-1]) / 1000.0


def parse_sdf(text: str):
    """(arcs, launches, setups): arcs[pin] = [(pin, ns)], launches[pin] = clock-to-out ns,
    setups[pin] = setup ns of a clocked input."""
    arcs, launch, setup = collections.defaultdict(list), {}, {}
    cell = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("(INSTANCE"):
            cell = _unescape(line[len("(INSTANCE"):-1].strip())
        elif line.startswith("(INTERCONNECT"):
            _, a, b, delay = line[1:].split()[:4]
            arcs[_pin(a)].append((_pin(b), _max_ns(delay)))
        elif line.startswith("(IOPATH"):
            _, src, dst, delay = line[1:].split()[:4]
            if src in CLOCK_PINS:
                launch[(cell, dst)] = max(launch.get((cell, dst), 0.0), _max_ns(delay))
            else:
                arcs[(cell, src)].append(((cell, dst), _max_ns(delay)))
        elif line.startswith("(SETUP"):
            m = _CHECK.match(line)
            if m and m.group(3) in CLOCK_PINS:
                key = (cell, m.group(2))
                setup[key] = max(setup.get(key, 0.0), _max_ns(m.group(4)))
    return arcs, launch, setup


def arrivals(arcs: dict, launch: dict):
    """Latest arrival at every pin reached from a launch, and the pin it came from (the graph
    is acyclic once register outputs start paths)."""
    indeg = collections.Counter(b for succ in arcs.values() for b, _ in succ)
    arrive, prev = dict(launch), {}
    ready = [p for p in set(arcs) | set(launch) if indeg[p] == 0]
    while ready:
        pin = ready.pop()
        t = arrive.get(pin)
        for nxt, d in arcs.get(pin, ()):
            if t is not None and nxt not in launch and t + d > arrive.get(nxt, -1.0):
                arrive[nxt], prev[nxt] = t + d, pin
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                ready.append(nxt)
    return arrive, prev


def rtl_name(instance: str) -> str:
    return _SUFFIX.sub("", instance)


def failing_groups(sdf: Path, period_ns: float) -> tuple:
    """(endpoints timed, failing endpoints, [PathGroup] worst first) at `period_ns`."""
    arcs, launch, setup = parse_sdf(Path(sdf).read_text())
    arrive, prev = arrivals(arcs, launch)
    ends = sorted(((arrive[p] + s, p) for p, s in setup.items() if p in arrive), reverse=True)
    groups: dict = {}
    for t, end in ends:
        if t <= period_ns:
            break
        path = [end]
        while path[-1] in prev:
            path.append(prev[path[-1]])
        key = (rtl_name(path[-1][0]), rtl_name(end[0]))
        if key in groups:
            groups[key][0] += 1
            continue
        mids = []
        for inst, _ in reversed(path[1:-1]):
            name = rtl_name(inst)
            if name and name not in mids and name not in key:
                mids.append(name)
        groups[key] = [1, t, tuple(mids)]
    out = [PathGroup(src, dst, n, round(t, 2), mids) for (src, dst), (n, t, mids) in groups.items()]
    return len(ends), sum(g.endpoints for g in out), out
