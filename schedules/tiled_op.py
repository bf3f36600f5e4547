"""The typed interface of an accelerator op whose tiles the cycle model chooses (conv2d, dense).

Each op module gives its own steps once, as a `TiledOp`: the candidate tilings, why a tiling is
refused, its SRAM footprint, its estimated cycles, the shape it really computes and the
schedule. The shared steps (choose the best tiling, check one, compile) live here, so the
kernel wrappers (vta_ops), the tuner (dse.tune) and the tuning database call one interface
and never a module by duck typing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from intrinsics.build import compile_vta
from requantisation.bounds import INT8_MAX, INT8_MIN
from requantisation.rule import Requant, as_requant
from vta_sim.config import Config
from vta_sim.errors import CompileError

from .vta_common import best_tiles


@dataclass(frozen=True)
class TiledOp:
    name: str                                                  # the reports' and tuning database's
    tiles_type: type                                           # ConvTiles / DenseTiles
    candidates: Callable[[Config, Any, int], list]             # (cfg, shape, vthreads) -> tilings
    usable: Callable[..., str | None]                          # (cfg, shape, tiles, requant) -> why not
    footprint: Callable[..., dict]                             # (cfg, shape, tiles, requant) -> entries
    estimate_cycles: Callable[..., float]                      # (cfg, shape, tiles, requant)
    computed_shape: Callable[[Config, Any, Any], Any]          # the shape with padding
    schedule: Callable[[Config, Any, Any, Requant], Any]       # -> the tensorized IRModule

    def choose_tiles(self, cfg: Config, s, vthreads: int = 1, requant: Requant | None = None):
        """The usable tiling with the lowest estimated cycles with `vthreads`, else with one thread
        (two threads need rows or channel blocks to share and SRAM for two tiles); refuses shapes
        that cannot fit."""
        if vthreads not in (1, 2):
            raise CompileError(f"vthreads = {vthreads}: use 1 or 2")

        def best(v: int, note: str):
            return best_tiles(self.candidates(cfg, s, v), lambda t: self.usable(cfg, s, t, requant),
                              lambda t: self.estimate_cycles(cfg, s, t, requant),
                              f"{self.name} {s} on {cfg.name} with {note}")
        try:
            return best(vthreads, f"{vthreads} virtual thread(s)")
        except CompileError:
            if vthreads == 1:
                raise
        return best(1, "1 virtual thread (2 do not fit)")

    def check_tiles(self, cfg: Config, s, t, requant: Requant | None = None) -> None:
        why = self.usable(cfg, s, t, requant)
        if why:
            raise CompileError(f"tiles {t} for {self.name} {s} on {cfg.name}: {why}")

    def build(self, cfg: Config, s, t, shift, lo: int = INT8_MIN, hi: int = INT8_MAX):
        """The compiled kernel on the packed layouts of `computed_shape(cfg, s, t)`; `shift`: an
        int (with `lo`/`hi`) or a requantisation.Requant."""
        requant = as_requant(shift, lo, hi)
        self.check_tiles(cfg, s, t, requant)
        return compile_vta(self.schedule(cfg, s, t, requant), cfg)
