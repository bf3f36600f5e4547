"""The compiled engine (vta_sim.compiled, native/engine.c) against the reference engine
(timing.Engine driving functional.Machine): identical cycles, statistics, DRAM and errors on
fuzzed programs, on programs with one word broken, and on compiled workloads."""
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from test_fuzz import runtime_programs
from schedules.measure import run_vta
from vta_sim import Config, Simulator, VTAError, timing
from vta_sim.blocked_gemm import blocked_gemm, random_operands
from vta_sim.errors import ConfigError
from vta_sim.runtime import Runtime
from vta_sim.simulator import ENGINE_ENV

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _outcome(engine, cfg, image, addr, count):
    try:
        r = Simulator(cfg, engine=engine).run(image, insn_addr=addr, insn_count=count)
    except VTAError as exc:
        return type(exc).__name__, str(exc)
    return r.cycles, r.stats, r.dram.tobytes()


def assert_same(cfg, image, addr, count):
    """Both engines give the same result or the same error; returns the reference's."""
    expected = _outcome("reference", cfg, image, addr, count)
    assert _outcome("compiled", cfg, image, addr, count) == expected
    return expected


@SETTINGS
@given(case=runtime_programs())
def test_random_programs(case):
    cfg, prog = case
    cycles = assert_same(cfg, prog.image, prog.insn_addr, prog.insn_count)[0]
    assert isinstance(cycles, int)


@SETTINGS
@given(case=runtime_programs(), which=st.integers(0, 10**6), bit=st.integers(0, 127))
def test_programs_with_one_bit_flipped(case, which, bit):
    """A flipped bit drops a token (hazard or deadlock), moves an index out of range, makes a
    field illegal, or changes a size: whatever the reference answers, the compiled engine too."""
    cfg, prog = case
    image = prog.image.copy()
    k = which % prog.insn_count
    image[prog.insn_addr + 16 * k + bit // 8] ^= 1 << (bit % 8)
    assert_same(cfg, image, prog.insn_addr, prog.insn_count)


def test_every_dropped_token():
    """Each dependency flag of a double-buffered GEMM cleared in turn: hazards and deadlocks,
    found and worded alike."""
    cfg = Config.default()
    rec = _Recorder(cfg)
    blocked_gemm(Runtime(cfg, backend=rec), *random_operands(cfg, 32, 64, 32), vthreads=2)
    (image, addr, count), = rec.programs
    errors = set()
    for k in range(count):
        for bit in range(3, 7):          # pop_prev, pop_next, push_prev, push_next
            at = addr + 16 * k
            if image[at] >> bit & 1:
                broken = image.copy()
                broken[at] ^= 1 << bit
                errors.add(assert_same(cfg, broken, addr, count)[0])
    assert {"HazardError", "DeadlockError"} <= errors


@SETTINGS
@given(words=st.lists(st.integers(0, (1 << 128) - 1), min_size=1, max_size=8), finish_last=st.booleans())
def test_random_words(words, finish_last):
    code = b"".join(w.to_bytes(16, "little") for w in words + ([3] if finish_last else []))
    image = np.zeros(8192, dtype=np.uint8)
    image[4096:4096 + len(code)] = np.frombuffer(code, np.uint8)
    assert_same(Config.default(), image, 4096, len(code) // 16)


@pytest.mark.parametrize("addr,count", [(4096, 0), (4100, 1), (8192 - 16, 2), (-16, 1)])
def test_program_placement_errors(addr, count):
    image = np.zeros(8192, dtype=np.uint8)
    assert isinstance(assert_same(Config.default(), image, addr, count)[0], str)


class _Recorder:
    def __init__(self, cfg):
        self.cfg, self.programs = cfg, []

    def run(self, image, insn_addr, insn_count, trace=False):
        self.programs.append((np.array(image, dtype=np.uint8), insn_addr, insn_count))
        return Simulator(self.cfg, engine="reference").run(image, insn_addr=insn_addr, insn_count=insn_count)


@pytest.mark.parametrize("workload,shape", [("conv2d", {"h": 8, "w": 8, "ic": 16, "oc": 16, "k": 3, "pad": 1,
                                                        "stride": 1}),
                                            ("gemm", {"m": 16, "k": 64, "n": 32})])
def test_compiled_workloads(cfg, workload, shape):
    rec = _Recorder(cfg)
    assert run_vta(workload, shape, cfg, 2, backend=rec)["verified"]
    for image, addr, count in rec.programs:
        assert_same(cfg, image, addr, count)


def test_blocked_gemm_with_other_timing_parameters():
    """Latencies, queue depths and the bus come from the configuration at run time."""
    cfg = Config.from_dict({**Config.default().to_dict(), "DMA_READ_LATENCY": 3, "DMA_WRITE_LATENCY": 11,
                            "GEMM_PIPELINE": 9, "ALU_PIPELINE": 1, "TOKEN_DEPTH": 1, "CMD_QUEUE_DEPTH": 2,
                            "LOG_BUS_WIDTH": 7})
    rec = _Recorder(cfg)
    rt = Runtime(cfg, backend=rec)
    blocked_gemm(rt, *random_operands(cfg, 32, 128, 64), vthreads=2)
    (image, addr, count), = rec.programs
    cycles = assert_same(cfg, image, addr, count)[0]
    assert cycles != _outcome("reference", Config.default(), image, addr, count)[0]


@pytest.mark.parametrize("name", ["FETCH_DECODE", "FETCH_NEXT", "QUEUE_DELAY", "TOKEN_DELAY", "ISSUE_DELAY",
                                  "BEGIN_DELAY", "REQUEST_DELAY", "ALU_IMM_INTERVAL"])
def test_hand_off_delays_come_from_timing(monkeypatch, name):
    """The structural delays are read from vta_sim.timing at each run, never re-typed in C."""
    cfg = Config.default()
    rec = _Recorder(cfg)
    blocked_gemm(Runtime(cfg, backend=rec), *random_operands(cfg, 16, 64, 32), vthreads=2)
    (image, addr, count), = rec.programs
    before = assert_same(cfg, image, addr, count)
    monkeypatch.setattr(timing, name, getattr(timing, name) + 2)
    assert assert_same(cfg, image, addr, count)[:2] != before[:2]   # cycles or statistics moved


def test_engine_choice(monkeypatch):
    monkeypatch.setenv(ENGINE_ENV, "reference")
    assert Simulator().engine == "reference"
    monkeypatch.delenv(ENGINE_ENV)
    assert Simulator().engine == "compiled"
    with pytest.raises(ConfigError, match="unknown simulator engine 'fast'.*compiled, reference"):
        Simulator(engine="fast")


def test_trace_comes_from_the_reference():
    cfg = Config.default()
    rec = _Recorder(cfg)
    blocked_gemm(Runtime(cfg, backend=rec), *random_operands(cfg, 16, 64, 32), vthreads=1)
    (image, addr, count), = rec.programs
    traced = Simulator(cfg).run(image, insn_addr=addr, insn_count=count, trace=True)
    plain = Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    assert traced.trace is not None and len(traced.trace.events) == count
    assert (traced.cycles, traced.stats) == (plain.cycles, plain.stats)
    assert dataclasses.is_dataclass(traced.trace.events[0])
