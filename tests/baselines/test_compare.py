"""`compare`: rows, verification, speedups, JSON and report; the `vta-sim compare` CLI."""
import argparse
import json

import numpy as np
import pytest

from vta_sim.errors import CompileError
from schedules import measure
from baselines import cli as compare_cli, compare, gpu_schedules, references, workloads

FAST = compare.Options(repeats=1, min_time_s=0.0, trials=0)  # trials=0: meta_schedule skipped
JSON_KEYS = {"workload", "target", "variant", "time_s", "gops", "speedup_vs_scalar", "verified",
             "skipped"}


@pytest.fixture(scope="module")
def gemm_rows():
    return compare.compare(workloads.gemm(16, 32, 24, "int8"), ("cpu", "gpu", "reference"), FAST)


def test_every_row_verified_or_skipped_with_a_reason(gemm_rows):
    for r in gemm_rows:
        assert JSON_KEYS <= set(r.to_json())
        assert r.workload == "gemm_int8_16x32x24"
        if r.skipped:
            assert r.time_s is None and len(r.skipped) > 10
        else:
            assert r.verified, r
            assert r.time_s > 0 and r.gops == pytest.approx(2 * 16 * 32 * 24 / r.time_s / 1e9)
    variants = {(r.target, r.variant) for r in gemm_rows}
    assert {("cpu", "scalar"), ("cpu", "parallel"), ("cpu", "avx2"), ("cpu", "vnni"), ("cpu", "vnni_layout"),
            ("cpu", "meta_schedule"),
            ("gpu", "cuda"), ("reference", "numpy"), ("reference", "onnxruntime")} <= variants
    scalar = next(r for r in gemm_rows if r.variant == "scalar")
    assert scalar.speedup_vs_scalar == pytest.approx(1.0)
    ms = next(r for r in gemm_rows if r.variant == "meta_schedule")
    assert ">= 1" in ms.skipped


def test_wrong_output_is_not_verified():
    ref = np.arange(12, dtype=np.int32).reshape(3, 4)
    bad = ref.copy()
    bad[2, 3] += 1
    assert compare.matches(ref.copy(), ref, "int8") and not compare.matches(bad, ref, "int8")
    assert not compare.matches(ref[:2], ref, "int8")
    f = ref.astype(np.float32)
    assert compare.matches(f * (1 + 1e-6), f, "fp32") and not compare.matches(f + 1, f, "fp32")


def test_baseline_that_disagrees_is_not_timed(monkeypatch):
    wl = workloads.gemm(8, 8, 8, "fp32")
    wrong = references.Baseline("numpy", lambda: np.zeros((8, 8), np.float32), lambda o: o + 1)
    monkeypatch.setattr(references, "numpy_fp32", lambda *a: wrong)
    rows = compare.reference_rows(wl, wl.random_inputs(), wl.reference(wl.random_inputs()), FAST)
    row = next(r for r in rows if r.variant == "numpy")
    assert not row.verified and row.time_s is None


@pytest.mark.parametrize("wl", [workloads.conv2d(1, 4, 6, 6, 8, 3, 3, 1, 1, "int8"),
                                workloads.conv1d(1, 4, 10, 8, 3, 2, 1, "fp32"),
                                workloads.dwsep(1, 4, 5, 5, 8, "int8")], ids=lambda w: w.name)
def test_baselines_verify(wl):
    inputs = wl.random_inputs()
    rows = compare.reference_rows(wl, inputs, wl.reference(inputs), FAST)
    for r in rows:
        assert r.verified or (r.skipped and r.variant.startswith("torch")), r


def test_vta_column():
    wl = workloads.gemm(16, 16, 16, "int8")
    (row,) = compare.vta_rows(wl, None, None, FAST)
    assert not row.skipped and not row.error
    assert row.verified and row.time_s > 0 and "MHz" in row.note
    (fp,) = compare.vta_rows(workloads.gemm(16, 16, 16, "fp32"), None, None, FAST)
    assert "int8" in fp.skipped
    (dw,) = compare.vta_rows(workloads.dwsep(1, 4, 4, 4, 8), None, None, FAST)
    assert "no dwsep schedule" in dw.skipped


def test_vta_column_fails_when_run_vta_raises(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise CompileError("tile does not fit")
    monkeypatch.setattr(measure, "run_vta", broken)
    (row,) = compare.vta_rows(workloads.gemm(16, 16, 16, "int8"), None, None, FAST)
    assert not row.skipped and not row.verified and row.time_s is None
    assert "CompileError: tile does not fit" in row.error
    assert _cli(["--workload", "gemm", "--m", "16", "--n", "16", "--k", "16", "--dtype", "int8",
                 "--targets", "vta", "--repeats", "1"]) == 1
    out, err = capsys.readouterr()
    assert "FAILED: run_vta" in out and "vta/sim (run_vta" in err


def test_gpu_row_skips_with_the_reason(monkeypatch):
    wl = workloads.gemm(8, 8, 8, "int8")
    monkeypatch.setattr(gpu_schedules, "gpu_status",
                        lambda: gpu_schedules.GpuStatus(False, "no NVIDIA driver: libcuda.so.1 missing"))
    (row,) = compare.gpu_rows(wl, None, None, FAST)
    assert row.skipped.startswith("no NVIDIA driver: libcuda.so.1 missing") and not row.error


def test_gpu_status_names_the_missing_piece():
    status = gpu_schedules.gpu_status()
    assert status.usable or status.reason.startswith(
        ("no NVIDIA driver", "no CUDA 13 runtime", "no CUDA device", "no kernel compiler",
         "TVM's CUDA runtime", "TVM_CUDA_COMPILE_MODE")), status
    assert f"GPU: not usable, {status.reason}." in compare_cli.machine_line() or status.usable


def _cli(argv):
    parser = argparse.ArgumentParser()
    compare_cli.register(parser.add_subparsers())
    args = parser.parse_args(["compare", *argv])
    return args.func(args)


def test_cli_json_and_report(tmp_path, capsys):
    out = tmp_path / "new_dir" / "rows.json"  # a directory that does not exist yet
    rc = _cli(["--workload", "conv2d", "--channels", "4", "--height", "6", "--width", "6",
               "--filters", "8", "--targets", "cpu,reference", "--repeats", "1", "--trials", "0",
               "--json", str(out), "--report", str(tmp_path / "rep")])
    assert rc == 0
    rows = json.loads(out.read_text())
    assert all(JSON_KEYS <= set(r) for r in rows)
    assert {r["workload"] for r in rows} == {"conv2d_int8_n1c4h6w6k8r3s3st1p1"}
    report = (tmp_path / "rep" / "report.md").read_text()
    assert "```diff" in report and "cpu / parallel" in report and "T.parallel" in report
    assert (tmp_path / "rep" / "conv2d_int8_n1c4h6w6k8r3s3st1p1.png").stat().st_size > 1000
    assert "| cpu | parallel |" in capsys.readouterr().out


def test_cli_refuses_bad_input(capsys):
    assert _cli(["--workload", "gemm", "--m", "0", "--targets", "cpu"]) == 2
    assert "positive" in capsys.readouterr().err
    assert _cli(["--workload", "gemm", "--m", "4", "--targets", "tpu"]) == 2
    assert "accepted: cpu, gpu, vta, reference" in capsys.readouterr().err
    assert _cli(["--workload", "conv2d", "--layer", "resnet18.C99", "--targets", "cpu"]) == 2
    assert "resnet18.C5" in capsys.readouterr().err
