"""The auto-tuned CPU build: meta_schedule with a small trial budget, database kept on disk.

The database lives in `<work_dir>/meta_schedule/<workload name>/`; a workload that already has
a record there is compiled from it without tuning again, so repeated `vta-sim compare` runs
(and the tests) pay the tuning cost once. Raise `--trials` for better schedules.

Candidates are built and measured in this process (`InProcessBuilder` / `InProcessRunner`):
meta_schedule's default LocalBuilder forks one Python worker per build, which on this 2-core
machine timed out (30 s) before a single candidate compiled. No timeout guards a candidate here,
which is acceptable for the CPU kernels meta_schedule generates.
"""
import importlib
import importlib.util
import inspect
import logging
import sys
import tempfile
from pathlib import Path

import tvm
from tvm.s_tir import meta_schedule as ms
from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
from tvm.s_tir.meta_schedule.runner import EvaluatorConfig, PyRunner
from tvm.s_tir.meta_schedule.runner.local_runner import (
    LocalRunnerFuture, default_alloc_argument, default_run_evaluator)
from tvm.ir.utils import derived_object

from baselines.cpu_schedules import scalar
from vta_sim.paths import cache_dir


class TuningFailed(Exception):
    """meta_schedule found no valid schedule; the message is the `skipped` reason."""


@derived_object
class InProcessBuilder(PyBuilder):
    """Compile each candidate here and export it to a shared library under `out_dir`."""

    def __init__(self, out_dir):
        super().__init__()
        self.out_dir = str(out_dir)

    def build(self, build_inputs):
        results = []
        for bi in build_inputs:
            try:
                # one directory per candidate: meta_schedule deletes the artifact's directory
                path = str(Path(tempfile.mkdtemp(dir=self.out_dir)) / "candidate.so")
                tvm.compile(bi.mod, target=bi.target).export_library(path)
                results.append(BuilderResult(path, None))
            except Exception as err:  # noqa: BLE001 - a failed candidate is reported, not raised
                results.append(BuilderResult(None, f"{type(err).__name__}: {err}"))
        return results


@derived_object
class InProcessRunner(PyRunner):
    """Load each built candidate and time it with TVM's time_evaluator, in this process."""

    def __init__(self):
        super().__init__()
        self.config = EvaluatorConfig(number=1, repeat=3, min_repeat_ms=20)

    def run(self, runner_inputs):
        futures = []
        for ri in runner_inputs:
            try:
                dev = tvm.runtime.device(str(ri.device_type), 0)
                mod = tvm.runtime.load_module(str(ri.artifact_path))
                args = default_alloc_argument(dev, [a.as_json() for a in ri.args_info], 1)
                futures.append(LocalRunnerFuture(res=default_run_evaluator(mod, dev, self.config, args)))
            except Exception as err:  # noqa: BLE001
                futures.append(LocalRunnerFuture(error_message=f"{type(err).__name__}: {err}"))
        return futures


def import_tensor_intrinsics():
    """Import tvm.s_tir.tensor_intrin (meta_schedule needs it) in seconds instead of a minute.

    Each of its ~500 TVMScript functions calls inspect.stack(), and for every frame
    inspect.getmodule scans all of sys.modules (slow through TVM's lazy module attributes):
    54 s on this 2-core machine. Memoising getmodule per source file for the duration of this
    one import gives the same answers and takes 8 s.
    """
    if "tvm.s_tir.tensor_intrin" in sys.modules:
        return
    original, seen = inspect.getmodule, {}

    def getmodule(obj, _filename=None):
        if _filename is None:
            return original(obj)
        if _filename not in seen:
            seen[_filename] = original(obj, _filename)
        return seen[_filename]

    inspect.getmodule = getmodule
    try:
        importlib.import_module("tvm.s_tir.tensor_intrin")
    finally:
        inspect.getmodule = original


def work_root(work_dir: str | Path | None) -> Path:
    """`work_dir`, else `compare/` in the cache root (vta_sim.paths), read at the call."""
    return Path(work_dir) if work_dir else cache_dir("compare")


def database_dir(wl, work_dir):
    return work_root(work_dir) / "meta_schedule" / wl.name


def tuned_module(wl, target, trials, work_dir):
    """(IRModule, tuned now?): the best schedule for `wl` from the on-disk database, tuning
    `trials` trials first if the database has no record of it."""
    if trials < 1:
        raise TuningFailed(f"meta_schedule trial budget must be >= 1, got {trials}")
    mod = scalar(wl)
    path = database_dir(wl, work_dir)
    (path / "artifacts").mkdir(parents=True, exist_ok=True)
    sch = ms.database.JSONDatabase(work_dir=str(path)).query_schedule(mod, target, workload_name="main")
    fresh = sch is None
    if fresh:
        import_tensor_intrinsics()
        logging.getLogger("tvm.s_tir.meta_schedule").setLevel(logging.WARNING)
        db = ms.tune_tir(mod, target, str(path), max_trials_global=trials,
                         num_trials_per_iter=min(trials, 16),
                         # the default population (512) costs minutes to evolve on 2 cores; a
                         # small budget needs a population only a few times its size
                         strategy=ms.search_strategy.EvolutionarySearch(
                             population_size=max(32, 8 * trials),
                             init_min_unmeasured=min(50, max(16, 4 * trials))),
                         builder=InProcessBuilder(path / "artifacts"), runner=InProcessRunner(),
                         # the XGBoost cost model when installed, else random (fine for a few trials)
                         cost_model="xgb" if importlib.util.find_spec("xgboost") else "random",
                         num_tuning_cores=int(target.attrs["num-cores"]))
        sch = ms.tir_integration.compile_tir(db, mod, target)
    if sch is None:
        raise TuningFailed(f"meta_schedule found no valid schedule in {trials} trials")
    return sch.mod, fresh
