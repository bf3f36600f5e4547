"""Backends run a DRAM image and return a RunResult; users pick one by name.

The simulator is built in; other backends (the Verilated RTL) come in through the
`vta_sim.backends` entry points (pyproject.toml), loaded on first use, so `--backend rtl`
needs no change in callers and `vta_sim` names nothing above it.
"""
from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from .config import Config
from .errors import VTAError
from .simulator import Simulator

GROUP = "vta_sim.backends"


#: The backend that is built in; every other name is an entry point, looked up when asked for
#: (reading the installed distributions' metadata costs milliseconds, as much as a small run).
BUILT_IN = "sim"


def _table() -> dict[str, Callable[[], Any]]:
    """Backend name -> loader: the simulator, then every installed entry point."""
    table: dict[str, Callable[[], Any]] = {BUILT_IN: lambda: Simulator}
    table.update({ep.name: ep.load for ep in entry_points(group=GROUP) if ep.name != BUILT_IN})
    return table


def names() -> tuple[str, ...]:
    return tuple(_table())


def get_backend(name: str, cfg: Config | str | None = None) -> Any:
    """An object with `.run(dram, insn_addr, insn_count, trace=False) -> RunResult`."""
    if name == BUILT_IN:
        return Simulator(Config.load(cfg))
    table = _table()
    if name not in table:
        raise VTAError(f"unknown backend {name!r}; available: {', '.join(table)} (other backends "
                       f"register a {GROUP!r} entry point)")
    try:
        cls = table[name]()
    except ImportError as exc:
        raise VTAError(f"backend {name!r} is not available here ({exc})") from None
    return cls(Config.load(cfg))
