"""The gemm / conv2d / resnet18 subcommands and run_vta's figures."""
import json

import pytest

from schedules import measure
from schedules.layers import RESNET18, TABLE_LAYERS, get_layer
from vta_sim import cli as vta_cli

KEYS = {"verified", "cycles", "ideal_cycles", "roofline_cycles", "utilization", "compile_s", "sim_s",
        "vthreads", "config", "stats"}


def test_gemm_subcommand_verifies_and_writes_json(tmp_path, capsys):
    path = tmp_path / "gemm.json"
    rc = vta_cli.main(["gemm", "--m", "1", "--k", "64", "--n", "32", "--vthreads", "2",
                       "--json", str(path)])
    assert rc == 0
    figures = json.loads(path.read_text())
    assert KEYS <= set(figures)
    assert figures["verified"] is True and figures["vthreads"] == 2 and figures["config"] == "1x8x8"
    assert figures["ideal_cycles"] == 1 * 64 * 32 / 64
    assert figures["utilization"] == pytest.approx(figures["ideal_cycles"] / figures["cycles"])
    assert figures["roofline_cycles"] >= figures["ideal_cycles"]
    assert figures["stats"]["gemm_counter"] == 1 * 64 * 32 // 64
    out = capsys.readouterr().out
    assert "verified bit-exact     yes" in out and "roofline bound" in out


def test_conv2d_subcommand_with_explicit_shape_and_trace(tmp_path, capsys):
    trace = tmp_path / "t.json"
    rc = vta_cli.main(["conv2d", "--h", "6", "--ic", "8", "--oc", "16", "--k", "3", "--pad", "1",
                       "--stride", "2", "--vthreads", "1", "--trace", str(trace)])
    assert rc == 0
    assert json.loads(trace.read_text())["traceEvents"]
    assert "verified bit-exact     yes" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["conv2d", "--h", "9", "--w", "11", "--ic", "3", "--oc", "10", "--k", "3", "--pad", "1"],
    ["gemm", "--m", "3", "--k", "20", "--n", "10", "--config", "8x8x8"],
    ["gemm", "--m", "8", "--k", "64", "--n", "64", "--config", "8x8x8", "--tiles", "1", "3", "1",
     "--vthreads", "1"],                                          # a remainder tile
])
def test_any_shape_and_any_tile_verify(argv, capsys):
    assert vta_cli.main(argv) == 0
    assert "verified bit-exact     yes" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["conv2d", "--layer", "resnet18.C99"], "accepted: resnet18.C1"),
    (["conv2d", "--h", "8"], "missing: --ic, --oc, --k"),
    (["conv2d", "--h", "8", "--ic", "8", "--oc", "8", "--k", "3", "--tiles", "1", "9", "1",
      "--vthreads", "1"], "tile rows = 9 with 1 thread(s) exceeds the 6 output rows"),
    (["gemm", "--m", "8", "--k", "64", "--n", "64", "--config", "8x8x8", "--tiles", "1", "9", "1"],
     "tile cols = 9 with 2 thread(s) exceeds the 8 column blocks"),
    (["gemm", "--m", "0", "--k", "64", "--n", "64"], "m = 0"),
])
def test_unmappable_requests_are_refused_with_a_clear_message(argv, message, capsys):
    assert vta_cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_layer_table_and_lookup():
    assert len(RESNET18) == 11 and get_layer("resnet18.C5") == get_layer("c5") == (28, 128, 128, 3, 1, 1)
    assert get_layer("C1") == (224, 3, 64, 7, 3, 2)
    assert TABLE_LAYERS == tuple(f"C{i}" for i in range(2, 12))
    assert {name for name, l in RESNET18.items() if l.K == 1} == {"C4", "C7", "C10"}


def test_run_resnet18_tags_each_layer(monkeypatch):
    calls = []

    def fake_run_vta(workload, shape, *args, **kwargs):
        calls.append(shape)
        return {"verified": True, "cycles": 1, "utilization": 1.0, "shape": shape}
    monkeypatch.setattr(measure, "run_vta", fake_run_vta)
    rows = measure.run_resnet18(progress=None)
    assert [r["layer"] for r in rows] == list(TABLE_LAYERS)
    assert calls[3] == {"h": 28, "w": 28, "ic": 128, "oc": 128, "k": 3, "pad": 1, "stride": 1}
