"""The vta-sim command line and the trace exports, run as a user would."""
import json
import subprocess
import sys
import types
from importlib.metadata import EntryPoint

import numpy as np
import pytest

from vta_sim import cli
from vta_sim.blocked_gemm import blocked_gemm, random_operands
from vta_sim.cli import main
from vta_sim.runtime import Runtime

PLUGIN_COMMANDS = {"gemm", "conv2d", "resnet18", "compare", "hw", "model", "sweep"}


def _saved_program(tmp_path):
    rt = Runtime()
    a, w = random_operands(rt.cfg, 8, 32, 32)
    blocked_gemm(rt, a, w, tiles=(4, 2))
    prog = rt.last_program
    path = tmp_path / "gemm.bin"
    prog.image.tofile(path)
    return prog, path


def test_run_writes_image_stats_and_traces(tmp_path, capsys):
    prog, path = _saved_program(tmp_path)
    args = [str(path), "--insn-addr", hex(prog.insn_addr), "--insn-count", str(prog.insn_count)]
    out, stats, trace, png = (tmp_path / n for n in ("out.bin", "stats.json", "trace.json", "t.png"))
    assert main(["run", *args, "--out", str(out), "--stats", str(stats), "--trace", str(trace)]) == 0
    printed = capsys.readouterr().out
    figures = json.loads(stats.read_text())
    assert f"{figures['cycles']:,} cycles" in printed
    for key in ("inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
                "gemm_counter", "alu_counter", "compute_busy_cycles", "load_stall_token_cycles"):
        assert key in figures
    final = np.fromfile(out, dtype=np.uint8)
    assert final.size == prog.image.size and not np.array_equal(final, prog.image)
    events = json.loads(trace.read_text())["traceEvents"]
    tracks = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert tracks == {"load", "compute", "store"}
    slices = [e for e in events if e["ph"] == "X" and e.get("cat") != "wait"]
    assert len(slices) == prog.insn_count
    assert main(["run", *args, "--trace", str(png)]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_disasm_prints_one_line_per_instruction(tmp_path, capsys):
    prog, path = _saved_program(tmp_path)
    assert main(["disasm", str(path), "--insn-addr", str(prog.insn_addr), "--insn-count", str(prog.insn_count)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == prog.insn_count and lines[-1].split()[1] == "FINISH"


def test_errors_exit_2_with_the_instruction(tmp_path, capsys):
    prog, path = _saved_program(tmp_path)
    code = main(["run", str(path), "--insn-addr", str(prog.insn_addr), "--insn-count", str(prog.insn_count - 1)])
    assert code == 2
    assert "does not end with FINISH" in capsys.readouterr().err
    assert main(["run", str(path), "--insn-addr", "0", "--insn-count", "1", "--config", "nope"]) == 2


def test_python_dash_m_entry_point():
    proc = subprocess.run([sys.executable, "-m", "vta_sim", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "run" in proc.stdout and "disasm" in proc.stdout


def _ep(name, module):
    return EntryPoint(name, module, cli.PLUGIN_GROUP)


def test_installed_plugins_load_and_declare_their_commands():
    plugins = cli.load_plugins()
    assert [p.error for p in plugins] == [None] * len(plugins)
    assert {c for p in plugins for c in p.commands} == PLUGIN_COMMANDS
    assert set(cli.build_parser(plugins)._subparsers._group_actions[0].choices) == (
        {"run", "disasm", "demo"} | PLUGIN_COMMANDS)


def test_broken_plugin_is_reported_in_help_and_by_its_commands(monkeypatch, capsys):
    installed = list(cli.entry_points(group=cli.PLUGIN_GROUP))
    monkeypatch.setattr(cli, "entry_points", lambda group: [*installed, _ep("ghost", "no_such_vta_plugin"),
                                                            _ep("phantom", "no_such_vta_plugin")])
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    reason = "ModuleNotFoundError: No module named 'no_such_vta_plugin'"
    assert f"unavailable plugins:\n  ghost, phantom (no_such_vta_plugin): {reason}" in out
    assert "gemm" in out and "compare" in out          # the working plugins are still there
    assert main(["ghost", "--shape", "3", "-h"]) == 2  # whatever arguments the real command took
    err = capsys.readouterr().err
    assert "'ghost' is unavailable: its plugin no_such_vta_plugin failed to load" in err and reason in err


def test_a_command_imports_only_the_plugin_it_needs(monkeypatch):
    """Importing every subsystem costs seconds: `model` loads graph.cli alone, `run` none."""
    monkeypatch.setattr(cli, "entry_points", lambda group: [_ep("model", "graph.cli"), _ep("ghost", "no_such_vta_plugin")])
    assert [p.module_name for p in cli.plugins_for(["model", "digits"])] == ["graph.cli"]
    assert cli.plugins_for(["run", "image.bin"]) == []
    assert {p.module_name for p in cli.plugins_for(["--help"])} == {"graph.cli", "no_such_vta_plugin"}


def test_plugin_registering_undeclared_commands_is_refused(capsys):
    plugins = cli.load_plugins([_ep("not_compare", "baselines.cli")])
    assert main(["--help"], plugins) == 2
    assert "registered the commands ['compare']" in capsys.readouterr().err


@pytest.fixture
def demo_plugin(monkeypatch):
    """A plugin module whose demo part returns `verdict` and records the config it was given."""
    module = types.ModuleType("fake_demo_plugin")
    module.register = lambda sub: sub.add_parser("fake")
    module.verdict, module.configs = True, []

    def demo(out_dir, config):
        module.configs.append(config)
        return module.verdict
    module.demo = demo
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def test_demo_runs_the_plugin_parts_with_the_config(tmp_path, demo_plugin, capsys):
    plugins = cli.load_plugins([_ep("fake", "fake_demo_plugin")])
    assert main(["demo", "--config", "8x8x8", "--out-dir", str(tmp_path)], plugins) == 0
    assert demo_plugin.configs == ["8x8x8"]
    assert "on 8x8x8" in capsys.readouterr().out and (tmp_path / "demo_gemm_timeline.png").exists()


def test_demo_fails_when_a_part_fails_or_cannot_load(tmp_path, demo_plugin, capsys):
    demo_plugin.verdict = False
    plugins = cli.load_plugins([_ep("fake", "fake_demo_plugin"), _ep("ghost", "no_such_vta_plugin")])
    assert main(["demo", "--out-dir", str(tmp_path)], plugins) == 1
    err = capsys.readouterr().err
    assert "fake_demo_plugin (not verified)" in err
    assert "no_such_vta_plugin (failed to load: ModuleNotFoundError" in err


def test_demo_end_to_end(tmp_path, capsys):
    """`make demo`'s command (in this process: `python -m vta_sim` is test_python_dash_m_entry_point's):
    GEMM, compiled conv2d, digits model."""
    assert main(["demo", "--out-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("verified bit-exact") == 2 and "logits identical to the CPU build   yes" in out
    for name in ("demo_gemm_timeline.png", "demo_conv2d_C5_timeline.png", "demo_digits.json"):
        assert (tmp_path / name).exists()
