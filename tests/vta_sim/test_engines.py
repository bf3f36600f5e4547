"""The compiled engine (vta_sim.compiled, native/engine.c) against the reference engine
(timing.Engine driving functional.Machine): identical cycles, statistics, DRAM and errors on
fuzzed programs, on programs with one word broken, and on compiled workloads."""
import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from programs import Layout, chain, image_with, load, store, uop_words
from test_fuzz import runtime_programs
from schedules.measure import run_vta
from vta_sim import Config, Simulator, VTAError, isa, timing
from vta_sim.config import MEM_ACC, MEM_UOP
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


# ------------------------------------------------------------------------------ REQ (ALU opcode 5)
def _req_image(cfg, uops, fields, imm, data, reset=0, use_imm=0, repeat=1):
    """ACC loaded with `data` (int32), the micro-ops, `repeat` REQs over them, OUT of 64 entries stored."""
    lay = Layout()
    n_acc = len(data) // (cfg.BATCH * cfg.BLOCK_OUT)
    base = lay.put(np.asarray(data, dtype="<i4").tobytes(), cfg.buffers["acc"].entry_bytes)
    u = lay.put(uop_words(cfg, uops), 4)
    ob = cfg.buffers["out"].entry_bytes
    out = lay.reserve(64 * ob, ob)
    req = isa.AluInsn(uop_bgn=0, uop_end=len(uops), **fields, reset=reset, alu_opcode=isa.ALU_REQ,
                      use_imm=use_imm, imm=imm)
    insns = chain(compute_part=[load(MEM_ACC, 0, base, 1, n_acc), load(MEM_UOP, 0, u, 1, len(uops))] + [req] * repeat,
                  store_part=[store(0, out, 1, 64)])
    return image_with(cfg, insns, bytes(lay.data))


@st.composite
def req_programs(draw):
    """REQ nests over random micro-ops (many break the hazard rule, some reach outside ACC), any
    shift and zero point, sometimes reset, use_imm or reserved bits; data over all of int32."""
    cfg = Config.load(draw(st.sampled_from(["1x8x8", "8x8x8"])))
    uops = draw(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 80)), min_size=0, max_size=5))
    fields = dict(iter_out=draw(st.integers(0, 4)), iter_in=draw(st.integers(1, 3)),
                  dst_factor_out=draw(st.integers(0, 9)), dst_factor_in=draw(st.integers(0, 9)),
                  src_factor_out=draw(st.integers(0, 9)), src_factor_in=draw(st.integers(0, 9)))
    raw = draw(st.integers(0, (1 << 14) - 1)) | (draw(st.sampled_from([0, 0, 0, 0, 1, 2, 3])) << 14)
    imm = raw - (1 << 16) if raw >= 1 << 15 else raw
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    data = rng.integers(-2**31, 2**31, 128 * lanes)
    data[rng.integers(0, data.size, 20)] = rng.choice([-2**31, 2**31 - 1, 0, 1, -1], 20)
    use_imm = int(draw(st.integers(0, 9)) == 0)
    return cfg, _req_image(cfg, [(d, s, 0) for d, s in uops], fields, imm, data, reset=int(draw(st.booleans())),
                           use_imm=use_imm, repeat=draw(st.integers(1, 2)))


@SETTINGS
@given(case=req_programs())
def test_random_req_programs(case):
    """Both engines: the same bits, cycles and statistics, or the same refusal."""
    cfg, (image, addr, count) = case
    assert_same(cfg, image, addr, count)


def test_req_programs_that_run_and_refuse_agree_in_both_engines(cfg):
    lanes = cfg.BATCH * cfg.BLOCK_OUT
    data = np.random.default_rng(5).integers(-2**31, 2**31, 128 * lanes)
    good = [([(0, 100), (1, 100), (2, 101)], dict(iter_out=3, iter_in=2, dst_factor_out=6, dst_factor_in=3,
                                                  src_factor_out=2), isa.req_imm(s, zp)) for s, zp in
            ((0, 0), (1, -128), (31, 127), (47, 5), (63, -1))]
    bad = [([(0, 100), (0, 101)], dict(iter_out=1), isa.req_imm(3, 3)),          # dst repeats
           ([(0, 100), (100, 5)], dict(iter_out=1), isa.req_imm(3, 3)),          # dst read as src
           ([(0, 100)], dict(iter_out=1), isa.req_imm(3, 3) | 1 << 14)]          # reserved bits
    outcomes = [assert_same(cfg, *_req_image(cfg, [(d, s, 0) for d, s in u], f, imm, data, repeat=2))
                for u, f, imm in good + bad]
    assert all(isinstance(o[0], int) for o in outcomes[:len(good)])
    assert [o[0] for o in outcomes[len(good):]] == ["HazardError", "HazardError", "ProgramError"]
    assert len({o[0] for o in outcomes[:len(good)]}) == 1       # the same nest, the same cycles


@pytest.mark.parametrize("name", ["REQ_READ_INTERVAL", "REQ_KEEP_INTERVAL", "REQ_EXTRA_LATENCY"])
def test_req_timing_comes_from_timing(monkeypatch, name):
    """REQ's latencies are read from vta_sim.timing at each run, never re-typed in C."""
    cfg = Config.default()
    data = np.zeros(128 * cfg.BATCH * cfg.BLOCK_OUT, dtype=np.int64)
    prog = _req_image(cfg, [(0, 100), (1, 100), (2, 101)], dict(iter_out=3, dst_factor_out=3, src_factor_out=2),
                      isa.req_imm(4, 1), data)
    before = assert_same(cfg, *prog)
    monkeypatch.setattr(timing, name, getattr(timing, name) + 2)
    after = assert_same(cfg, *prog)
    assert after[0] != before[0]
