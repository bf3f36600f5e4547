"""One Relax model built the three ways a TVM user builds it, for a CPU or a CUDA target.

- `plain`: the ops legalised to one TIR function each and run one after the other; nothing
  fused (TVM's default pipeline without FuseOps and FuseTIR). On CUDA each function gets dlight's default GPU schedule (Matmul, GEMV, Reduction,
  GeneralReduction, Fallback), as TVM's own CUDA pipeline gives it.
- `fused`: TVM's default pipeline (`tvm.compile`): the same plus `FuseOps` + `FuseTIR`, so an
  injective or reduction tail runs inside the kernel of the op it follows.
- `tuned`: fused, then every fused function tuned by meta_schedule (`tune_relax`), a trial
  budget per task; what the database lacks falls back to the fused build's schedule.

The tuning database is kept under `<work_dir>/models/<key>/`, the key a hash of the model's
Relax text, the target and the budget: a second run with the same three tunes nothing.
Candidates are built and timed in this process (baselines.cpu_autotune explains why).
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import tvm
from tvm import relax

RUNGS = {
    "plain": "legalised op by op, no fusion",
    "fused": "FuseOps + FuseTIR (TVM's default pipeline)",
    "tuned": "fused, then meta_schedule per fused function",
}


@dataclass(frozen=True)
class Tuning:
    trials: int = 8                  # meta_schedule trials per tuning task
    work_dir: str = ""               # "": compare/ in the cache root (vta_sim.paths)


@dataclass
class Built:
    exe: object                      # relax.VMExecutable
    compile_s: float
    note: str


def is_gpu(target) -> bool:
    return relax.pipeline.BackendDispatcher.is_gpu_target(target)


def _gpu_schedules(matmul: bool = True):
    from tvm.s_tir import dlight as dl

    rules = [dl.gpu.Matmul()] if matmul else []
    return [dl.ApplyDefaultSchedule(*rules, dl.gpu.GEMV(), dl.gpu.Reduction(),
                                    dl.gpu.GeneralReduction(), dl.gpu.Fallback())]


def pipeline(target, fused: bool, matmul_rule: bool = True):
    """TVM's default pipeline for `target` (fused=True), or the same without FuseOps/FuseTIR.
    `matmul_rule=False` leaves dlight's GPU Matmul rule out (see `build`)."""
    # the backends' lowering and finalising passes (relax.pipeline's dispatchers to them fail
    # for the CPU in TVM 0.27: cpu_generic does not export them)
    if is_gpu(target):
        from tvm.relax.backend.cuda import pipeline as P
    else:
        from tvm.relax.backend.cpu_generic import pipeline as P

    @tvm.transform.module_pass(opt_level=0)
    def _pipeline(mod, _ctx):
        with target:
            seq = (_front(target, fused)
                   + (_gpu_schedules(matmul_rule) if is_gpu(target) else [])
                   + P.dataflow_lower_passes(target) + P.finalize_passes(target))
            return tvm.transform.Sequential(seq)(mod)

    return _pipeline


def _front(target, fused: bool) -> list:
    """Library dispatch and legalisation, then FuseOps + FuseTIR when `fused`: the part of TVM's
    default pipeline before scheduling (compile_relax prepares modules the same way)."""
    legalise = [relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
                relax.transform.FoldConstant()]
    fuse_ops = [relax.transform.FuseOps(), relax.transform.FuseTIR()] if fused else []
    return relax.pipeline.library_dispatch_passes(target) + legalise + fuse_ops


def fuse(mod, target):
    """`mod` legalised and fused, as the fused build and `compile_relax` prepare it."""
    with target:
        return tvm.transform.Sequential(_front(target, True))(mod)


def model_key(mod, target, trials: int) -> str:
    text = mod.script(show_meta=True)
    return hashlib.sha256(f"{text}\n{target}\n{trials}".encode()).hexdigest()[:16]


def database_dir(mod, target, tuning: Tuning) -> Path:
    from baselines.cpu_autotune import work_root

    return work_root(tuning.work_dir) / "models" / model_key(mod, target, tuning.trials)


def build(mod, target, rung: str, tuning: Tuning = Tuning(), progress=None) -> Built:
    """The `rung` build of `mod` for `target` (see RUNGS)."""
    if rung not in RUNGS:
        raise ValueError(f"unknown build {rung!r}; accepted: {', '.join(RUNGS)}")
    t0 = time.perf_counter()
    if rung in ("plain", "fused"):
        fused = rung == "fused"
        try:
            exe = tvm.compile(mod, target=target, relax_pipeline=pipeline(target, fused))
            return Built(exe, time.perf_counter() - t0, RUNGS[rung])
        except Exception as err:  # noqa: BLE001 - retried once without the rule, else raised
            if not is_gpu(target) or "fragment_info" not in str(err):
                raise
        # TVM 0.27's dlight Matmul rule picks tensor cores for int8 matmuls on sm_80 and newer and
        # then fails in its fragment lowering (fragment_info_ check); the other rules schedule them.
        exe = tvm.compile(mod, target=target, relax_pipeline=pipeline(target, fused, matmul_rule=False))
        return Built(exe, time.perf_counter() - t0,
                     RUNGS[rung] + "; dlight's Matmul rule left out (it fails on this module in TVM 0.27)")
    exe, how = _tuned(mod, target, tuning, progress)
    return Built(exe, time.perf_counter() - t0, how)


def quiet_meta_schedule() -> None:
    """meta_schedule's logger at WARNING, without unnamed handlers: its logging set-up names
    each handler of that logger in a dictConfig and fails on one without a name (pytest's
    capture handler, left there after a first tuning in the same process)."""
    logger = logging.getLogger("tvm.s_tir.meta_schedule")
    logger.setLevel(logging.WARNING)
    for handler in list(logger.handlers):
        if handler.get_name() is None:
            logger.removeHandler(handler)


def _tuned(mod, target, tuning: Tuning, progress):
    from tvm.s_tir import meta_schedule as ms

    from baselines.cpu_autotune import InProcessBuilder, InProcessRunner, import_tensor_intrinsics

    if tuning.trials < 1:
        raise ValueError(f"the meta_schedule trial budget must be >= 1 per task, got {tuning.trials}")
    path = database_dir(mod, target, tuning)
    done = path / "tuned.json"
    if done.is_file():
        how = f"database of an earlier tuning ({json.loads(done.read_text())['trials_run']} trials)"
    else:
        import_tensor_intrinsics()
        quiet_meta_schedule()
        fused = fuse(mod, target)   # the TIR functions the database keys on (as compile_relax fuses)
        tasks = ms.relax_integration.extract_tasks(fused, target)
        (path / "artifacts").mkdir(parents=True, exist_ok=True)
        if progress:
            progress(f"tuning {len(tasks)} tasks x {tuning.trials} trials for {target.kind.name}")
        t0 = time.perf_counter()
        ms.relax_integration.tune_relax(
            fused, {}, target, str(path), max_trials_global=tuning.trials * len(tasks),
            max_trials_per_task=tuning.trials, num_trials_per_iter=min(tuning.trials, 16),
            strategy=ms.search_strategy.EvolutionarySearch(
                population_size=max(32, 8 * tuning.trials),
                init_min_unmeasured=min(50, max(16, 4 * tuning.trials))),
            builder=InProcessBuilder(path / "artifacts"), runner=InProcessRunner(),
            cost_model="xgb" if importlib.util.find_spec("xgboost") else "random")
        trials_run = tuning.trials * len(tasks)
        done.write_text(json.dumps({"tasks": len(tasks), "trials_per_task": tuning.trials,
                                    "trials_run": trials_run,
                                    "tuning_s": round(time.perf_counter() - t0, 1)}))
        how = f"tuned now: {len(tasks)} tasks x {tuning.trials} trials"
    db = ms.database.JSONDatabase(work_dir=str(path))
    exe = ms.relax_integration.compile_relax(db, mod, target, None)
    return exe, f"{how}; database {path}"
