"""The native testbench (hw/native) behind `--backend rtl`: the same DRAM, CYCLES, statistics and
error codes as vta_sim, and as the cocotb top bench on the same program."""
import numpy as np
import pytest

from hw import native
from hw.build import ECP5_CELLS
from hw.backend import RTLBackend
from rtl_programs import (alu_same_entry_program, blocked_gemm_program, chain_programs, gemm_same_entry_program, high_bits_programs, req_programs,
                          queue_full_program, random_program, single_instruction_programs, token_queue_full_programs)
from test_rtl_top import error_programs
from vta_sim import Config, Simulator
from vta_sim.errors import DeadlockError, MemoryAccessError, VTAError

#: The smallest latencies at which AxiRam (and so the native DRAM) keeps the RTL exact: a read
#: latency of 3 (the burst's last beat must be in a cycle before its end, timing model revision 3,
#: and the read FIFO adds a cycle: it does not bypass) or a write latency of 3 (the OUT SRAM is read
#: through its output register, a cycle more before the W beats) makes it slower than vta_sim, and
#: so would a DRAM that answered one cycle later than AxiRam here.
TIGHT = {"DMA_READ_LATENCY": 4, "DMA_WRITE_LATENCY": 4}


def programs(cfg):
    singles = {name: p for name, *p in single_instruction_programs(cfg)}
    picked = [(name, *singles[name]) for name in ("store", "load_wgt_long_row", "load_uop_misaligned",
                                                  "load_inp_pads2134", "load_acc8")]
    return (picked + chain_programs(cfg)[:2] + token_queue_full_programs(cfg)[:1] + [queue_full_program(cfg)]
            + [random_program(cfg, seed) for seed in range(2)] + [blocked_gemm_program(cfg)] + high_bits_programs(cfg)
            + [gemm_same_entry_program(cfg, np.random.default_rng(5)), alu_same_entry_program(cfg, np.random.default_rng(6))]
            + [p for p in req_programs(cfg) if p[0] in ("req_epilogue", "req_s_patterns")])


def assert_same_as_simulator(cfg, progs):
    rtl = RTLBackend(cfg)
    assert rtl.testbench == "native"
    for name, image, addr, count in progs:
        ref = Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
        got = rtl.run(image, insn_addr=addr, insn_count=count)
        assert got.cycles == ref.cycles, f"{name}: CYCLES rtl={got.cycles} sim={ref.cycles}"
        assert np.array_equal(got.dram, ref.dram), f"{name}: DRAM differs"
        assert {k: got.stats[k] for k in ref.stats} == ref.stats, f"{name}: statistics differ"


def test_native_matches_the_simulator(cfg):
    assert_same_as_simulator(cfg, programs(cfg))


def test_ecp5_cells_match_the_simulator():
    """The RTL as ECP5 synthesises it (VTA_ECP5_CELLS: the GEMM and ALU multipliers as MULT18X18D
    cells with their registers inside, simulated by hw/tests/MULT18X18D.v) runs GEMMs and every
    ALU op (and the same-entry forwards) and REQ with the simulator's DRAM and CYCLES: the cells' operand widths, signedness, bit order
    and registers are wired as the plain RTL's multipliers. On 1x8x8, the configuration placed."""
    cfg = Config.load("1x8x8")
    alu = [p for p in chain_programs(cfg) if p[0].startswith("alu_")]
    assert len(alu) == 9, [p[0] for p in alu]    # every op, imm and tensor; back-to-back on one entry
    same = alu_same_entry_program(cfg, np.random.default_rng(6))   # the doubled and tripled immediates
    # REQ: lo x hi and hi x lo as signed 17 x 17 cells, hi x hi signed 16 x 16 (shared with MUL)
    req = req_programs(cfg)
    for name, image, addr, count in alu + [same] + high_bits_programs(cfg) + [blocked_gemm_program(cfg)] + req:
        ref = Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
        result, dram = native.run(cfg, image, addr, count, timeout_cycles=10 * ref.cycles + 1000,
                                  cells=ECP5_CELLS)
        assert result["cycles"] == ref.cycles, f"{name}: CYCLES rtl={result['cycles']} sim={ref.cycles}"
        assert np.array_equal(dram, ref.dram), f"{name}: DRAM differs"


def test_native_is_cycle_exact_at_the_tightest_dram_latencies():
    """The native DRAM answers as fast as AxiRam: with no latency slack, CYCLES still equal."""
    cfg = Config.from_dict(Config.load("1x8x8").to_dict() | TIGHT, name="tight")
    assert_same_as_simulator(cfg, programs(cfg))


def test_native_and_cocotb_testbenches_agree():
    cfg = Config.load("1x8x8")
    name, image, addr, count = blocked_gemm_program(cfg)
    nat = RTLBackend(cfg, testbench="native").run(image, insn_addr=addr, insn_count=count)
    coco = RTLBackend(cfg, testbench="cocotb").run(image, insn_addr=addr, insn_count=count)
    assert np.array_equal(nat.dram, coco.dram)
    assert nat.cycles == coco.cycles and nat.stats == coco.stats


def test_illegal_programs_report_their_error_code():
    """The RTL's own checks, past the host's static ones: every illegal program stops with the
    ERROR_CODE the cocotb bench expects."""
    cfg = Config.load("1x8x8")
    for name, image, addr, count, code in error_programs(cfg):
        result, _ = native.run(cfg, image, addr, count, timeout_cycles=5000)
        assert result["done"] and result["error"], name
        assert result["error_code"] == code, f"{name}: ERROR_CODE {result['error_code']}, expected {code}"


@pytest.mark.parametrize("name, error", [("deadlock", DeadlockError), ("gemm_index_past_acc", MemoryAccessError)])
def test_backend_raises_the_simulators_error_for_a_run_time_error(name, error):
    """Errors the static checks cannot see come back from ERROR_CODE as vta_sim's exception."""
    cfg = Config.load("1x8x8")
    image, addr, count, code = next((i, a, c, e) for n, i, a, c, e in error_programs(cfg) if n == name)
    with pytest.raises(error):
        Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    with pytest.raises(error, match=f"ERROR_CODE {code} "):
        RTLBackend(cfg).run(image, insn_addr=addr, insn_count=count)


def test_unknown_testbench_is_refused():
    with pytest.raises(VTAError, match="unknown RTL testbench 'verilog'; available: native, cocotb"):
        RTLBackend("1x8x8", testbench="verilog")


def test_timeout_is_reported(monkeypatch):
    cfg = Config.load("1x8x8")
    name, image, addr, count = blocked_gemm_program(cfg)
    result, dram = native.run(cfg, image, addr, count, timeout_cycles=100)
    assert result["timeout"] and not result["done"] and dram is None
    monkeypatch.setenv("VTA_RTL_TIMEOUT", "100")
    with pytest.raises(VTAError, match="did not finish"):
        RTLBackend(cfg).run(image, insn_addr=addr, insn_count=count)


def test_native_build_key_follows_the_sources():
    cfg = Config.load("1x8x8")
    tight = Config.from_dict(cfg.to_dict() | TIGHT, name="1x8x8")
    assert native.build_dir_for(cfg) != native.build_dir_for(tight)   # the header differs
    assert native.build_dir_for(cfg) == native.build_dir_for(Config.load("1x8x8"))
    assert native.build_dir_for(cfg).name.startswith("native-1x8x8-")


def test_missing_compiler_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("VTA_HW_BUILD", str(tmp_path))
    monkeypatch.setenv("CXX", "no-such-c++")
    with pytest.raises(VTAError, match="needs a C[+][+] compiler"):
        native.build("1x8x8")


def test_failed_build_reports_the_tools_output(tmp_path, monkeypatch):
    monkeypatch.setenv("VTA_HW_BUILD", str(tmp_path))
    monkeypatch.setattr(native, "VERILATOR_OPTIONS", native.VERILATOR_OPTIONS + ["--no-such-option"])
    with pytest.raises(VTAError, match="(?s)native testbench build of 1x8x8 failed.*no-such-option"):
        native.build("1x8x8")
    assert not list(tmp_path.glob("native-1x8x8-*/libvta_native.so"))
