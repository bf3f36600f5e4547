"""`vta-sim compare --model`: whole-model rows, verified against independent references.

A small conv + dense network (the shapes of the digits CNN, seeded weights) keeps every build
under seconds; the GPU test runs where `gpu_status()` finds a usable GPU (bench/gpu/run_gpu.sh)."""
import numpy as np
import pytest
import tvm
from tvm import relax

from baselines import model_compare, relax_builds
from baselines.cpu_schedules import cpu_target
from baselines.gpu_schedules import gpu_status
from baselines.model_compare import ModelCase, Options
from graph import onnx_import
from graph.models.onnx_builder import OnnxBuilder
from graph.quantize import quantizer_named
from vta_sim.config import CLOSED_CLOCKS


def small_float_model(seed=0):
    rng = np.random.default_rng(seed)
    b = OnnxBuilder("small", (1, 1, 8, 8))
    t = b.relu(b.conv("input", rng.standard_normal((8, 1, 3, 3)).astype(np.float32) * 0.5,
                      rng.standard_normal(8).astype(np.float32) * 0.1, pad=1))
    t = b.flatten(b.max_pool(t, 2, 2))
    return b.build(b.dense(t, rng.standard_normal((10, 128)).astype(np.float32) * 0.1,
                           np.zeros(10, np.float32)))


@pytest.fixture(scope="module")
def case():
    x = np.random.default_rng(1).random((1, 1, 8, 8), dtype=np.float32)
    proto = small_float_model()
    calib = np.random.default_rng(2).random((8, 1, 8, 8), dtype=np.float32)
    return ModelCase("small", proto, quantizer_named("pow2")(proto, calib), x)


def numpy_forward(proto, x):
    """The float network in numpy float64, from the ONNX initialisers (independent of ORT/TVM)."""
    from onnx import numpy_helper

    w = [numpy_helper.to_array(i).astype(np.float64) for i in proto.graph.initializer]
    conv_w, conv_b, fc_w, fc_b = w[0], w[1], w[2], w[3]
    xp = np.pad(x[0, 0].astype(np.float64), 1)
    y = np.stack([sum(conv_w[o, 0, i, j] * xp[i:i + 8, j:j + 8] for i in range(3) for j in range(3)) + conv_b[o]
                  for o in range(8)])
    y = np.maximum(y, 0).reshape(8, 4, 2, 4, 2).max(axis=(2, 4)).reshape(1, 128)
    return y @ fc_w.T + fc_b


def test_agreement_rules():
    ref = np.array([[1.0, -2.0, 4.0]])
    assert model_compare.fp32_agreement(ref + 1e-4, ref)[0]
    assert not model_compare.fp32_agreement(ref + 1e-2, ref)[0]
    assert not model_compare.fp32_agreement(ref[:, :2], ref)[0]
    assert model_compare.exact_agreement(ref.copy(), ref) == (True, "bit-exact")
    assert model_compare.exact_agreement(ref + [[0, 0, 0.5]], ref) == (False, "1 of 3 outputs differ")
    assert model_compare.lsb_agreement(ref + 0.25 * model_compare.QDQ_LSB, ref, 0.25)[0]
    assert not model_compare.lsb_agreement(ref + 0.25 * (model_compare.QDQ_LSB + 1), ref, 0.25)[0]


def test_plain_build_fuses_nothing_and_agrees_with_the_fused_one(case):
    mod, _ = onnx_import.import_onnx(case.float_onnx, batch=1)
    target = cpu_target()
    outs = {}
    for rung in ("plain", "fused"):
        exe = relax_builds.build(mod, target, rung).exe
        outs[rung] = relax.VirtualMachine(exe, tvm.cpu())["main"](tvm.runtime.tensor(case.x)).numpy()
    plain_mod = relax_builds.pipeline(target, False)(mod)
    fused_mod = relax_builds.pipeline(target, True)(mod)
    names = lambda m: {gv.name_hint for gv, f in m.functions_items() if isinstance(f, tvm.tirx.PrimFunc)}  # noqa: E731
    assert not any(n.startswith("fused_") for n in names(plain_mod))
    assert any(n.startswith("fused_") for n in names(fused_mod))
    assert len(names(plain_mod)) > len(names(fused_mod))
    np.testing.assert_allclose(outs["plain"], numpy_forward(case.float_onnx, case.x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outs["fused"], outs["plain"], rtol=1e-5, atol=1e-6)


def test_tuning_database_is_reused(case, tmp_path):
    mod, _ = onnx_import.import_onnx(case.float_onnx, batch=1)
    tuning = relax_builds.Tuning(trials=1, work_dir=str(tmp_path))
    first = relax_builds.build(mod, cpu_target(), "tuned", tuning)
    assert first.note.startswith("tuned now")
    assert (relax_builds.database_dir(mod, cpu_target(), tuning) / "tuned.json").is_file()
    second = relax_builds.build(mod, cpu_target(), "tuned", tuning)
    assert second.note.startswith("database of an earlier tuning")
    out = relax.VirtualMachine(second.exe, tvm.cpu())["main"](tvm.runtime.tensor(case.x)).numpy()
    np.testing.assert_allclose(out, numpy_forward(case.float_onnx, case.x), rtol=1e-4, atol=1e-5)


def test_cpu_and_vta_rows(case, tmp_path):
    rows = model_compare.compare_model(case, Options(repeats=1, min_time_s=0.0, trials=1,
                                                     work_dir=str(tmp_path), devices=("cpu", "vta")))
    by = {(r.device, r.build): r for r in rows}
    assert rows[0].build == "onnxruntime fp32" and rows[0].speedup == pytest.approx(1.0)
    for key in [("cpu", "onnxruntime fp32"), ("cpu", "onnxruntime int8"), ("cpu", "tvm fp32 plain"),
                ("cpu", "tvm fp32 fused"), ("cpu", "tvm fp32 tuned"), ("cpu", "tvm int8 plain"),
                ("cpu", "tvm int8 fused"), ("vta", "VTA-8 accelerator"), ("vta", "VTA-8 + host work")]:
        assert by[key].verified and by[key].time_s > 0, (key, model_compare.status(by[key]))
    assert by[("cpu", "tvm int8 fused")].agreement == "bit-exact"
    acc, both = by[("vta", "VTA-8 accelerator")], by[("vta", "VTA-8 + host work")]
    cycles = int(acc.note.split(":")[1].split("cycles")[0].replace(",", ""))
    assert acc.time_s == pytest.approx(cycles / (CLOSED_CLOCKS["1x8x8"].mhz * 1e6))   # the placed clock
    assert both.time_s > acc.time_s
    torch_row = by[("cpu", "pytorch eager fp32")]
    assert torch_row.verified or torch_row.skipped


def test_a_wrong_reference_fails_the_rows(case, tmp_path):
    """Verification is real: against a perturbed fp32 reference every fp32 build fails."""
    refs = model_compare.references(case)
    refs["fp32"] = refs["fp32"] + np.abs(refs["fp32"]).max() * 0.01
    rows = model_compare.tvm_rows(case, refs, Options(repeats=1, min_time_s=0.0, trials=0,
                                                      work_dir=str(tmp_path)), "cpu")
    fp32 = [r for r in rows if r.dtype == "fp32" and not r.skipped]
    assert fp32 and all(not r.verified and r.time_s is None for r in fp32)
    assert all(r.verified for r in rows if r.dtype == "int8")


def test_host_replay_leaves_the_model_intact(case):
    from graph.build import VtaModel
    from graph.qdq import lower_qdq
    from vta_sim.config import Config

    mod, _ = onnx_import.import_onnx(case.qdq_onnx, batch=1)
    integer, decisions = lower_qdq(mod)
    vta = VtaModel(integer, Config.load("1x8x8"), qdq_decisions=decisions)
    first, runs = vta.run(case.x)
    assert vta.host_seconds(case.x, runs, repeats=2) > 0
    assert vta.build.replay is None
    again, runs2 = vta.run(case.x)
    assert np.array_equal(first, again) and len(runs2) == len(runs)


def test_report_clock_names_its_source():
    from vta_sim.config import Config, report_clock

    clock = report_clock(Config.load("1x8x8"))
    assert clock.mhz == CLOSED_CLOCKS["1x8x8"].mhz and "ECP5-85F" in clock.source and "vta-sim hw synth" in clock.source
    clock = report_clock(Config.load("8x8x8"))
    assert clock.mhz == Config.load("8x8x8").timing["CLOCK_MHZ"] and "nominal CLOCK_MHZ" in clock.source
    changed = Config.from_dict({**Config.load("1x8x8").keys, "LOG_ACC_BUFF_SIZE": 15}, name="1x8x8")
    assert "nominal" in report_clock(changed).source    # a changed 1x8x8 was never placed


def test_cli_refusals(capsys):
    from vta_sim.cli import main

    assert main(["compare", "--model", "no_such_model"]) == 2
    assert "unknown model" in capsys.readouterr().err
    assert main(["compare", "--model", "digits", "--targets", "tpu"]) == 2
    assert "accepted are cpu, gpu, vta" in capsys.readouterr().err


@pytest.mark.skipif(not gpu_status().usable, reason=f"no usable GPU: {gpu_status().reason}")
def test_gpu_rows_verify_on_a_gpu(case, tmp_path):
    rows = model_compare.compare_model(case, Options(repeats=2, min_time_s=0.01, trials=1,
                                                     work_dir=str(tmp_path), devices=("gpu",)))
    gpu = [r for r in rows if r.device == "gpu" and not r.build.startswith("pytorch")]
    assert len(gpu) == 5
    for r in gpu:
        assert r.verified and r.time_s > 0, (r.build, model_compare.status(r))
