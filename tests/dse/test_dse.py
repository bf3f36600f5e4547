"""vta-sim sweep and --tune on a real 2-worker Dask LocalCluster (one, shared by the module)."""
from __future__ import annotations

import json
import os
import signal
import sys

import cloudpickle
import pytest

from csv_rows import read
from distributed import Client, LocalCluster

from dse import point as dse_point
from dse import spec as specs
from dse.report import write as write_report
from dse.sweep import run_sweep
from dse.tune import space, tune
from schedules import tuning_db
from schedules import vta_conv2d as vc
from schedules.measure import op_shape
from vta_sim.cli import main
from vta_sim.config import Config

SMALL_CONV = {"h": 8, "w": 8, "ic": 16, "oc": 16, "k": 3, "pad": 1, "stride": 1}


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        yield c


def test_spec_mistakes_are_refused_with_what_is_accepted(tmp_path, capsys):
    with pytest.raises(specs.SpecError, match="unknown spec field.*accepted: base, configs"):
        specs.from_dict({"workloads": ["gemm:8x8x8"], "config": {}})
    with pytest.raises(specs.SpecError, match="unknown config key.*LOG_INP_BUF.*accepted: LOG_INP_WIDTH"):
        specs.from_dict({"workloads": ["gemm:8x8x8"], "configs": {"LOG_INP_BUF": [13]}})
    with pytest.raises(specs.SpecError, match="'gemm:8x8' is not understood; accepted: .*gemm:MxKxN"):
        specs.from_dict({"workloads": ["gemm:8x8"]})
    with pytest.raises(specs.SpecError, match="unknown layer 'resnet18.C12'"):
        specs.from_dict({"workloads": ["resnet18.C12"]})
    with pytest.raises(specs.SpecError, match="'vthreads'.*accepted values: 1, 2"):
        specs.from_dict({"workloads": ["gemm:8x8x8"], "vthreads": [4]})
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"workloads": ["model:alexnet"]}))
    assert main(["sweep", str(bad), "--out", str(tmp_path / "r.csv")]) == 2
    assert "accepted: model:digits, model:resnet18" in capsys.readouterr().err
    assert not (tmp_path / "r.csv").exists()


def test_grid_expands_in_spec_order():
    s = specs.from_dict({"configs": {"LOG_BUS_WIDTH": [6, 7], "DMA_READ_LATENCY": [8, 32, 64]},
                         "workloads": ["resnet18.C5", "gemm:8x16x24"], "vthreads": [1, 2]})
    points = s.points()
    assert len(points) == 2 * 3 * 2 * 2 and len({p.ident() for p in points}) == len(points)
    assert points[0].overrides == (("LOG_BUS_WIDTH", 6), ("DMA_READ_LATENCY", 8))
    assert points[0].workload.name == "resnet18.C5" and points[1].vthreads == 2
    assert dict(points[0].workload.shape) == {"h": 28, "w": 28, "ic": 128, "oc": 128, "k": 3, "pad": 1, "stride": 1}
    assert dict(points[-1].workload.shape) == {"m": 8, "k": 16, "n": 24}


def test_sweep_with_a_config_that_does_not_fit_the_encoding(client, tmp_path):
    """One row per point; LOG_ACC_BUFF_SIZE=17 cannot be encoded (micro-op of 34 bits): infeasible
    with the reason; the others verified with cycles. A rerun resumes: nothing runs again."""
    spec = specs.from_dict({"configs": {"LOG_ACC_BUFF_SIZE": [16, 17]},
                            "workloads": ["gemm:16x64x64", "conv2d:8x8x16x16x3x1x1"], "vthreads": [2]})
    out = tmp_path / "results.csv"
    summary = run_sweep(spec, out, client, progress=False)
    rows = read(out)
    assert (summary.points, summary.feasible, summary.infeasible, summary.failed) == (4, 2, 2, 0)
    assert sorted((r["LOG_ACC_BUFF_SIZE"], r["workload"]) for r in rows) == sorted(
        (v, w) for v in ("16", "17") for w in ("gemm:16x64x64", "conv2d:8x8x16x16x3x1x1"))
    for r in rows:
        if r["LOG_ACC_BUFF_SIZE"] == "17":
            assert r["feasible"] == "False" and r["cycles"] == ""
            assert r["reason"].startswith("ConfigError:") and "does not fit the encoding" in r["reason"]
        else:
            assert r["feasible"] == "True" and r["verified"] == "True" and int(r["cycles"]) > 0
            assert int(r["sram_bytes"]) == dse_point.sram_bytes(Config.load("1x8x8"))
            assert 0 < float(r["utilization"]) <= 1 and int(r["dram_bytes"]) > 0
    again = run_sweep(spec, out, client, progress=False)
    assert (again.skipped, again.feasible + again.infeasible) == (4, 0)
    assert read(out) == rows
    figures = write_report(out, spec, tmp_path / "report")
    assert figures["pareto"].stat().st_size > 0 and figures["sensitivity"].stat().st_size > 0
    assert [label for label, _, _ in figures["front"]] == ["LOG_ACC_BUFF_SIZE=16"]


def _patch_workers(client, raising: bool) -> None:
    """Make dse.point.run_vta raise on every worker (or restore it): an unexpected error in a point."""
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    def patch():
        import dse.point
        import schedules.measure

        def boom(*args, **kwargs):
            raise RuntimeError("boom: simulated bug")
        dse.point.run_vta = boom if raising else schedules.measure.run_vta
    client.run(patch)


def test_unexpected_error_is_a_failed_row_then_rerun(client, tmp_path):
    spec = specs.from_dict({"workloads": ["gemm:8x16x16"], "vthreads": [1]})
    out = tmp_path / "results.csv"
    _patch_workers(client, raising=True)
    try:
        summary = run_sweep(spec, out, client, retries=1, progress=False)
    finally:
        _patch_workers(client, raising=False)
    assert not summary.ok and summary.failed == 1
    [row] = read(out)
    assert row["error"] == "RuntimeError: boom: simulated bug" and row["feasible"] == ""
    summary = run_sweep(spec, out, client, progress=False)     # the failed row is run again
    assert summary.ok and summary.feasible == 1
    [row] = read(out)
    assert row["error"] == "" and row["verified"] == "True"


def test_tune_five_trials_never_worse_than_the_default(client, tmp_path, monkeypatch):
    cfg = Config.load("1x8x8")
    db = tmp_path / "tiles.json"
    result = tune("conv2d", SMALL_CONV, cfg, vthreads=2, trials=5, client=client, db=db)
    s = op_shape(cfg, "conv2d", SMALL_CONV)
    default = vc.CONV2D.choose_tiles(cfg, s, 2)
    tried = [t for t, _, _ in result.trials]
    assert len(tried) == 5 == len(set(tried)) and tried[0] == default
    assert set(tried) <= set(space(cfg, "conv2d", s, 2))
    assert result.default_cycles == result.trials[0][1]
    assert result.best_cycles == min(c for _, c, _ in result.trials if c is not None) <= result.default_cycles
    record = tuning_db.lookup(cfg, "conv2d", s, 2, db)
    assert record["cycles"] == result.best_cycles and vc.ConvTiles(**record["tiles"]) == result.best_tiles
    # The compiler now takes the tuned tiles for this shape, config and thread count.
    monkeypatch.setenv("VTA_TUNING_DB", str(db))
    from schedules.measure import run_vta
    figures = run_vta("conv2d", SMALL_CONV, config=cfg, vthreads=2)
    assert figures["cycles"] == result.best_cycles and figures["verified"]


def test_killed_worker_mid_sweep_every_point_once(client, tmp_path):
    """SIGKILL a worker that is running a point after the first row: the nanny restarts it, the
    scheduler reruns its points, and the CSV holds every point exactly once."""
    spec = specs.from_dict({"configs": {"DMA_READ_LATENCY": [8, 16, 32]},
                            "workloads": ["gemm:16x64x64", "gemm:8x32x64"], "vthreads": [2]})
    killed = []

    def kill_one(row):
        if killed:
            return
        busy = [w for w, keys in client.processing().items() if keys]
        victim = busy[0]
        pid = client.run(os.getpid, workers=[victim])[victim]
        os.kill(pid, signal.SIGKILL)
        killed.append(victim)

    out = tmp_path / "results.csv"
    summary = run_sweep(spec, out, client, retries=2, progress=False, on_row=kill_one)
    assert killed
    rows = read(out)
    assert sorted((r["DMA_READ_LATENCY"], r["workload"]) for r in rows) == sorted(
        (str(v), w) for v in (8, 16, 32) for w in ("gemm:16x64x64", "gemm:8x32x64"))
    assert summary.ok and summary.feasible == 6
    assert all(r["verified"] == "True" and r["error"] == "" for r in rows)
