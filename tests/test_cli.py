"""The vta-sim command line and the trace exports, run as a user would."""
import json
import subprocess
import sys

import numpy as np

from vta_sim.blocked_gemm import blocked_gemm, random_operands
from vta_sim.cli import main
from vta_sim.runtime import Runtime


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
