"""One design point, run on a Dask worker: build the config, compile, simulate, verify.

The refusals that make a point infeasible are the project's own: `ConfigError` (the config does
not fit the ISA encoding or the spec's rules) and `CompileError` (the workload cannot be tiled
into its SRAMs, or the graph level cannot map the model). Anything else is a bug or a crash: it
propagates, so Dask retries the task and, if it keeps failing, the sweep records a failed row
and exits non-zero.
"""
from __future__ import annotations

import time

from schedules.measure import run_vta
from vta_sim.config import Config
from vta_sim.errors import CompileError, ConfigError

from .spec import Point

#: Result columns after the config columns (docs/dse.md).
RESULT_COLUMNS = ("workload", "vthreads", "feasible", "reason", "cycles", "utilization", "frames", "sram_bytes",
                  "dram_bytes", "verified", "tiles", "seconds", "error")


def point_config(point: Point) -> Config:
    """The base configuration with the point's overrides (raises ConfigError if they do not fit)."""
    base = Config.load(point.base)
    name = "+".join([base.name] + [f"{k}={v}" for k, v in point.overrides])
    return Config.from_dict({**base.to_dict(), **dict(point.overrides)}, name=name)


def sram_bytes(cfg: Config) -> int:
    """On-chip SRAM of the configuration: the five buffers (UOP, INP, WGT, ACC, OUT)."""
    return sum(b.depth * b.entry_bytes for b in cfg.buffers.values())


def _run_model(name: str, cfg: Config, vthreads: int, seed: int) -> dict:
    """A whole model through the graph level: cycles, DRAM bytes and MACs summed over its
    accelerator layers. Imported here: the graph level is heavy and only model points need it."""
    from graph.run import load_case, run_model

    result = run_model(load_case(name, seed=seed), config=cfg, vthreads=vthreads)
    vta = [r for r in result.layers if r["target"] == "vta"]
    ideal = sum(r["utilization"] * r["cycles"] for r in vta if r["utilization"] is not None)
    return {"cycles": result.total_cycles, "utilization": ideal / max(result.total_cycles, 1),
            "dram_bytes": sum(r["dram_bytes"] for r in vta), "verified": result.verified,
            "tiles": f"{len(vta)} accelerator layers", "frames": result.batch}


def evaluate(point: Point) -> dict:
    """The point's CSV row (without the config columns): figures, or why it is infeasible."""
    t0 = time.perf_counter()
    row = {"workload": point.workload.name, "vthreads": point.vthreads}
    try:
        cfg = point_config(point)
        row["sram_bytes"] = sram_bytes(cfg)
        shape = dict(point.workload.shape)
        if point.workload.kind == "model":
            figures = _run_model(shape["model"], cfg, point.vthreads, point.seed)
        else:
            f = run_vta(point.workload.kind, shape, config=cfg, vthreads=point.vthreads, seed=point.seed)
            figures = {k: f[k] for k in ("cycles", "utilization", "dram_bytes", "verified")}
            figures["tiles"] = " ".join(f"{k}={v}" for k, v in f["tiles"].items())
    except (ConfigError, CompileError) as exc:
        row.update(feasible=False, reason=f"{type(exc).__name__}: {exc}")
    else:
        row.update(feasible=True, **figures)
    row["seconds"] = round(time.perf_counter() - t0, 3)
    return row
