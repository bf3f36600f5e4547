"""Tile search with the simulator as the cost, on a Dask cluster, driven by optuna.

The space is the tilings `choose_tiles` itself ranks (`TiledOp.candidates` of
`vta_conv2d.CONV2D` / `vta_dense.DENSE`, for 1 up to the asked thread count, both splits), restricted to the
usable ones and sorted by its cycle model. That model is the prior twice over: its choice is
always the first trial (so tuning is never worse than it), and optuna's TPE searches the
candidate's rank in that order on a log scale, so it starts near what the model likes and
learns where the simulator disagrees. Small discrete spaces make optuna repeat itself: a repeat
is told its known cost and never simulated again; a space no larger than the budget is
simply enumerated.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import optuna
from optuna.distributions import IntDistribution
from optuna.trial import TrialState
from tvm.s_tir.schedule import ScheduleError

from schedules import tuning_db
from schedules import vta_conv2d as vc
from schedules import vta_dense as vd
from schedules.measure import op_shape, run_vta
from vta_sim.config import Config
from vta_sim.errors import CompileError, VTAError

#: run_vta's workload name -> the op it compiles.
OPS = {"conv2d": vc.CONV2D, "gemm": vd.DENSE}

#: Asks in a row that only repeat known candidates before the next untried one (in the prior's
#: order) is enqueued: the sampler has converged, the budget is better spent exploring.
MAX_REPEATS = 50


def space(cfg: Config, workload: str, s, vthreads: int) -> list:
    """The usable tilings with 1..vthreads threads, best estimate first."""
    op = OPS[workload]
    usable = [t for v in range(1, vthreads + 1) for t in op.candidates(cfg, s, v)
              if op.usable(cfg, s, t) is None]
    return sorted(usable, key=lambda t: op.estimate_cycles(cfg, s, t))


def trial(workload: str, shape: dict, cfg: Config, tiles, seed: int) -> dict:
    """One simulator trial (a Dask task): cycles, or why these tiles cannot be built or run.

    The project's refusals (VTAError: CompileError, EncodingError, ...) and TVM's ScheduleError
    mean that this candidate, though `usable` accepts it, hits a compiler limitation: the reason
    goes into the trial list and the summary, and the search goes on. Anything else propagates."""
    try:
        f = run_vta(workload, shape, config=cfg, vthreads=tiles.vthreads, tiles=tiles, seed=seed)
    except (VTAError, ScheduleError) as exc:
        first = next((line for line in str(exc).splitlines() if "Error" in line), str(exc))
        return {"cycles": None, "reason": f"{type(exc).__name__}: {first.strip()[:300]}"}
    if not f["verified"]:
        raise RuntimeError(f"{workload} {shape} with tiles {tiles} on {cfg.name} is not bit-exact: "
                           "a compiler or simulator bug")
    return {"cycles": f["cycles"], "reason": None}


@dataclass
class TuneResult:
    workload: str
    shape: dict
    config: str
    default_tiles: object
    default_cycles: int
    best_tiles: object
    best_cycles: int
    space: int                                    # usable candidates
    trials: list = field(default_factory=list)    # [(tiles, cycles or None, reason)] in order run
    db: str = ""
    stored: bool = False

    def summary(self) -> str:
        gain = 100 * (1 - self.best_cycles / self.default_cycles)
        failed = [(t, r) for t, c, r in self.trials if c is None]
        lines = [f"tuning: {len(self.trials)} simulator trials over {self.space} usable tilings"
                 + (f", {len(failed)} of them could not be built:" if failed else "")]
        lines += [f"    {t}: {r}" for t, r in failed]
        lines += [f"  default tiles {self.default_tiles}: {self.default_cycles:,} cycles",
                  f"  best tiles    {self.best_tiles}: {self.best_cycles:,} cycles ({gain:.2f} % fewer)",
                  f"  tuning database {self.db}: "
                  + ("record written" if self.stored else "kept its record (as fast or faster)")]
        return "\n".join(lines)

    def to_json(self) -> dict:
        return {"default_tiles": asdict(self.default_tiles), "default_cycles": self.default_cycles,
                "best_tiles": asdict(self.best_tiles), "best_cycles": self.best_cycles,
                "space": self.space, "db": self.db, "stored": self.stored,
                "trials": [{"tiles": asdict(t), "cycles": c, "reason": r} for t, c, r in self.trials]}


def _tell(study, t, cycles) -> None:
    if cycles is None:
        study.tell(t, state=TrialState.FAIL)
    else:
        study.tell(t, cycles)


def _width(client) -> int:
    """Trials in flight at once: one per worker thread."""
    return max(1, sum(w["nthreads"] for w in client.scheduler_info()["workers"].values()))


def tune(workload: str, shape: dict, config, vthreads: int, trials: int, client, seed: int = 0,
         db=None, retries: int = 1) -> TuneResult:
    """Up to `trials` simulator runs of distinct tilings; the best is stored in the tuning database."""
    if workload not in OPS:
        raise CompileError(f"cannot tune workload {workload!r}; accepted: {', '.join(OPS)}")
    if trials < 1:
        raise CompileError(f"--tune {trials}: give at least one trial")
    op = OPS[workload]
    cfg = Config.load(config)
    s = op_shape(cfg, workload, shape)
    default = op.choose_tiles(cfg, s, vthreads)
    cands = space(cfg, workload, s, vthreads)
    dist = {"rank": IntDistribution(1, len(cands), log=True)}
    optuna.logging.set_verbosity(optuna.logging.WARNING)   # one line per trial is noise here
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    study.enqueue_trial({"rank": cands.index(default) + 1})
    known: dict = {}        # candidate index -> cycles (None: does not compile)
    order: list = []
    budget = min(trials, len(cands))
    while len(known) < budget:
        batch, repeats = {}, 0
        while len(known) + len(batch) < budget and len(batch) < _width(client):
            t = study.ask(dist)
            i = t.params["rank"] - 1
            if i in known:
                _tell(study, t, known[i])
            elif i in batch:
                study.tell(t, state=TrialState.PRUNED)
            else:
                batch[i] = t
                continue
            repeats += 1
            if repeats >= MAX_REPEATS:
                untried = next(j for j in range(len(cands)) if j not in known and j not in batch)
                study.enqueue_trial({"rank": untried + 1})
                repeats = 0
        futures = [client.submit(trial, workload, shape, cfg, cands[i], seed, pure=False, retries=retries)
                   for i in batch]
        for (i, t), result in zip(batch.items(), client.gather(futures)):
            known[i] = result["cycles"]
            order.append((cands[i], result["cycles"], result["reason"]))
            _tell(study, t, result["cycles"])
    default_cycles = known[cands.index(default)]
    if default_cycles is None:
        raise CompileError(f"the default tiles {default} of {workload} {shape} do not compile: "
                           + next(r for t, c, r in order if t == default))
    best_i = min((i for i in known if known[i] is not None), key=lambda i: known[i])
    best = cands[best_i]
    record = {"tiles": asdict(best), "cycles": known[best_i], "default_tiles": asdict(default),
              "default_cycles": default_cycles, "trials": len(order)}
    stored = tuning_db.store(cfg, op.name, s, vthreads, record, db)
    return TuneResult(workload, shape, cfg.name, default, default_cycles, best, known[best_i],
                      len(cands), order, str(tuning_db.db_path(db)), stored)
