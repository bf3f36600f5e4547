"""`vta-sim sweep --area`: one synthesis per hardware config, shared through hw.synth's cache; the
area model against the committed synthesis data it was not fitted on; the cost figures."""
from __future__ import annotations

import re
import shutil

import pytest

from csv_rows import read
from distributed import Client, LocalCluster

from dse import area as areas
from dse import spec as specs
from dse.report import write as write_report
from dse.sweep import run_sweep
from hw import synth
from vta_sim.cli import main
from vta_sim.config import TIMING_DEFAULTS

CLOCK = TIMING_DEFAULTS["CLOCK_MHZ"]   # a configuration's clock where no Fmax is measured


@pytest.fixture(scope="module")
def client():
    """One in-process worker, so that the fake synthesis tool below is what it runs (one thread:
    TVM's compiler is not safe to run from two threads at once)."""
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as c:
        yield c


@pytest.fixture
def fake_yosys(monkeypatch, tmp_path):
    """hw.synth.synthesize replaced by counts read off the header, its calls recorded; the cache
    (hw.synth.synth_root(), by $VTA_SYNTH_BUILD) in tmp_path. Everything between the sweep and the tool is real."""
    calls = []

    def synthesize(sources, top, target, workdir, pnr=True, progress=None, seed=synth.SEED):
        header = next(p for p in sources if str(p).endswith(".vh")).read_text()
        block_out = int(re.search(r"`define VTA_BLOCK_OUT (\d+)", header).group(1))
        calls.append((block_out, target) if not pnr else (block_out, target, "pnr"))
        return {"lut": 1000 * block_out, "ff": 300 * block_out, "dsp": block_out * 8, "bram": 40,
                "target": target, "fmax_mhz": 40.0 if pnr else None}

    monkeypatch.setenv("VTA_SYNTH_BUILD", str(tmp_path / "synth"))
    monkeypatch.setattr(synth, "synthesize", synthesize)
    return calls


SPEC = {"configs": {"LOG_BLOCK_OUT": [3, 4], "LOG_BUS_WIDTH": [6, 7]},
        "workloads": ["gemm:8x64x64", "conv2d:6x6x16x16x3x1x1"], "vthreads": [2]}


def test_sweep_synthesises_each_config_once_and_a_rerun_nothing(client, tmp_path, fake_yosys):
    spec = specs.from_dict(SPEC)
    out = tmp_path / "r.csv"
    area = areas.parse_area("xc7")
    summary = run_sweep(spec, out, client, progress=False, area=area)
    assert summary.ok and summary.feasible == 8
    assert sorted(fake_yosys) == [(8, "xilinx"), (16, "xilinx")]      # 2 configs the RTL serves, once each
    rows = read(out)
    for r in rows:
        if r["LOG_BUS_WIDTH"] == "7":      # 8-byte INP entries on a 16-byte bus: refused with the rule
            assert r["lut"] == "" and r["area_reason"].startswith("ConfigError:")
            assert "INP elements of at least one bus beat" in r["area_reason"]
            continue
        block_out = 1 << int(r["LOG_BLOCK_OUT"])
        assert (int(r["lut"]), int(r["dsp"]), r["area_source"]) == (1000 * block_out, 8 * block_out, "yosys xilinx")
        assert (r["clock_mhz"], r["clock_source"]) == (str(CLOCK), "CLOCK_MHZ")
        assert float(r["latency_us"]) == pytest.approx(int(r["cycles"]) / CLOCK, abs=1e-3)
    # a second sweep over the same hardware synthesises nothing: hw.synth's cache answers
    fake_yosys.clear()
    again = run_sweep(spec, tmp_path / "again.csv", client, progress=False, area=area)
    assert again.feasible == 8, [(r["workload"], r["reason"]) for r in read(tmp_path / "again.csv")]
    assert fake_yosys == []
    figures = write_report(out, spec, tmp_path / "report")
    assert figures["pareto_area"].stat().st_size > 0
    front = read(figures["pareto_csv"])
    assert [r["shape"] for r in front] == ["1x8x8", "1x8x16"]     # twice the lanes: faster, more LUTs
    assert float(front[1]["latency_us"]) < float(front[0]["latency_us"])


def test_place_and_route_where_the_design_fits_and_its_clock_is_used(client, tmp_path, fake_yosys):
    """1x8x8 (64 DSPs here) is placed: its rows run at its Fmax; 1x8x32 (256 > 156) is not placed,
    with the resource it exceeds, and keeps CLOCK_MHZ."""
    spec = specs.from_dict({"configs": {"LOG_BLOCK_OUT": [3, 5]}, "workloads": ["gemm:8x64x64"]})
    out = tmp_path / "r.csv"
    assert run_sweep(spec, out, client, progress=False, area=areas.parse_area("ecp5", pnr=True)).ok
    assert sorted(fake_yosys) == [(8, "ecp5"), (8, "ecp5", "pnr"), (32, "ecp5")]
    small, big = sorted(read(out), key=lambda r: r["LOG_BLOCK_OUT"])
    assert (small["fmax_mhz"], small["clock_mhz"], small["clock_source"]) == ("40.0", "40.0", "fmax (nextpnr)")
    assert float(small["latency_us"]) == pytest.approx(int(small["cycles"]) / 40, abs=1e-3)
    assert big["fmax_mhz"] == "" and big["fmax_reason"] == "does not fit the LFE5UM-85F: DSP 256 > 156"
    assert (big["clock_mhz"], big["clock_source"]) == (str(CLOCK), "CLOCK_MHZ")


def test_area_mistakes_are_refused(tmp_path, capsys):
    with pytest.raises(areas.AreaError, match="accepted: ecp5, xc7, model"):
        areas.parse_area("ice40")
    with pytest.raises(areas.AreaError, match="--place-and-route needs --area ecp5"):
        areas.parse_area("xc7", pnr=True)
    spec = tmp_path / "s.json"
    spec.write_text('{"workloads": ["gemm:8x8x8"]}')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r.csv"), "--place-and-route"]) == 2
    assert "--place-and-route needs --area ecp5" in capsys.readouterr().err


@pytest.mark.parametrize("target", ["xilinx", "ecp5"])
def test_block_rams_are_counted_as_yosys_maps_them(target):
    """Every synthesised config of the committed data: the count from the memories' shapes."""
    for row in areas.load_data(target):
        cfg = areas.config_of(row["overrides"])
        assert areas.bram_blocks(cfg, target) == row["bram"], row["overrides"]


@pytest.mark.parametrize("target", ["xilinx", "ecp5"])
def test_model_on_configs_it_was_not_fitted_on(target):
    """Held-out synthesis runs: LUT within 10 %, DSP and block RAM exact."""
    held = [r for r in areas.load_data(target) if areas.role(r["overrides"]) == "heldout"]
    assert held, f"no held-out rows for {target}"
    for row in held:
        got = areas.predict(areas.config_of(row["overrides"]), target)
        assert abs(got["lut"] - row["lut"]) <= 0.10 * row["lut"], (row["overrides"], got, row)
        assert (got["dsp"], got["bram"]) == (row["dsp"], row["bram"]), (row["overrides"], got, row)


def test_a_list_of_designs_is_zipped_not_crossed():
    """The shapes of the study, not every combination of their keys; missing keys take the base's value."""
    spec = specs.from_dict({"configs": [{}, {"LOG_BATCH": 1}, {"LOG_BLOCK_IN": 4, "LOG_BLOCK_OUT": 4}],
                            "workloads": ["resnet18.C8"]})
    assert spec.keys == ("LOG_BATCH", "LOG_BLOCK_IN", "LOG_BLOCK_OUT")
    assert [p.overrides for p in spec.points()] == [
        (("LOG_BATCH", 0), ("LOG_BLOCK_IN", 3), ("LOG_BLOCK_OUT", 3)),
        (("LOG_BATCH", 1), ("LOG_BLOCK_IN", 3), ("LOG_BLOCK_OUT", 3)),
        (("LOG_BATCH", 0), ("LOG_BLOCK_IN", 4), ("LOG_BLOCK_OUT", 4))]
    with pytest.raises(specs.SpecError, match="as a list must hold objects of config keys"):
        specs.from_dict({"configs": [13], "workloads": ["resnet18.C8"]})


@pytest.mark.parametrize("target", ["xilinx", "ecp5"])
def test_the_area_data_describe_todays_rtl(target):
    """The model's data were synthesised from the RTL as it is: after a change to the logic, refit
    (`python bench/bench_area.py --target T`) and commit the data with the change."""
    assert areas.stale(target) is None, areas.stale(target)


def test_the_rtl_hash_ignores_comments_and_sees_logic(tmp_path, monkeypatch, capsys):
    from hw import build
    shutil.copytree(build.RTL_DIR, tmp_path / "rtl")
    monkeypatch.setattr(build, "RTL_DIR", tmp_path / "rtl")
    before = build.rtl_digest()
    top = tmp_path / "rtl" / "vta_top.v"
    top.write_text("// a comment\n/* and a block\n   comment */\n" + top.read_text().replace("\n", "\n  ", 3))
    assert build.rtl_digest() == before
    top.write_text(top.read_text().replace("endmodule", "wire unused_x;\nendmodule", 1))
    assert build.rtl_digest() != before
    monkeypatch.setattr(areas, "rtl_digest", build.rtl_digest)
    assert "refit it with `python bench/bench_area.py --target ecp5`" in areas.stale("ecp5")
    spec = tmp_path / "s.json"
    spec.write_text('{"workloads": ["gemm:8x8x8"]}')
    assert main(["sweep", str(spec), "--out", str(tmp_path / "r.csv"), "--area", "model", "--workers", "1"]) == 0
    assert "warning: the area model for ecp5 was fitted on RTL" in capsys.readouterr().err
