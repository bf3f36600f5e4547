"""Backends run a DRAM image and return a RunResult; users pick one by name.

The simulator is built in; other backends (the Verilated RTL) register an import path and are
loaded on first use, so `--backend rtl` needs no change in callers.
"""
from __future__ import annotations

import importlib

from .config import Config
from .errors import VTAError

_BACKENDS = {"sim": "vta_sim.simulator:Simulator", "rtl": "hw.backend:RTLBackend"}


def names() -> tuple:
    return tuple(_BACKENDS)


def get_backend(name: str, cfg: Config | str | None = None):
    """An object with `.run(dram, insn_addr, insn_count, trace=False) -> RunResult`."""
    if name not in _BACKENDS:
        raise VTAError(f"unknown backend {name!r}; available: {', '.join(_BACKENDS)}")
    module, attr = _BACKENDS[name].split(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise VTAError(f"backend {name!r} is not available here ({exc})") from None
    return cls(Config.load(cfg))
