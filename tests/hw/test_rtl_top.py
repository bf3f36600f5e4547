"""Top-level RTL benches: the Verilated VTA-8 against vta_sim on the same DRAM images.

Each test runs a batch of programs in one simulation (hw.backend.run_jobs with compare=True): the
cocotb bench checks every run's DRAM, CYCLES and statistics against vta_sim and fails listing
the programs that disagree. Random programs are seeded; a failure names `random_<seed>`, which
`rtl_programs.random_program(cfg, seed)` rebuilds.
"""
import numpy as np
import pytest

from hw.backend import run_jobs
from hw.sim_check import compare_run
from hw.header import COUNTERS, ERROR_CODES
from programs import image_with, load, store
from rtl_programs import (blocked_gemm_program, chain_programs, random_program, req_programs,
                          single_instruction_programs)
from vta_sim import Config, Simulator, isa
from vta_sim.registers import NO_INDEX
from vta_sim.config import MEM_INP, MEM_OUT, MEM_UOP

RANDOM_SEEDS = range(8)
BACKPRESSURE_SEEDS = range(100, 104)


def run_and_check(cfg, programs, backpressure=False, **extra):
    jobs = [dict(name=name, image=image.tobytes(), insn_addr=addr, insn_count=count,
                 backpressure=(i if backpressure else None), **extra)
            for i, (name, image, addr, count) in enumerate(programs)]
    results, outputs, failures = run_jobs(cfg, jobs, compare=True)
    assert not failures, "\n".join(failures)
    assert len(results) == len(jobs)
    return results, outputs


def test_single_instruction_programs_match_sim_exactly(cfg):
    """DRAM, CYCLES and every statistic equal vta_sim's on one-instruction programs. They run after
    a chain that fills OUT and with the loads first: the GEMM/ALU/STORE programs still see zeroed
    SRAMs only because the bench resets the device between programs (order does not matter)."""
    run_and_check(cfg, chain_programs(cfg)[:1] + single_instruction_programs(cfg)[::-1])


def test_chains_and_double_buffered_gemm_are_bit_exact(cfg):
    run_and_check(cfg, chain_programs(cfg) + [blocked_gemm_program(cfg)])


def test_req_programs_match_sim_exactly(cfg):
    """REQ (docs/isa-extensions.md): OUT in DRAM, CYCLES and every statistic equal vta_sim's on the
    epilogue, every shift, the s patterns (reads, keeps, the queue full), reset and an empty loop;
    a base-ISA chain runs first and after, in the same simulation."""
    base = chain_programs(cfg)[:2]
    run_and_check(cfg, base[:1] + req_programs(cfg) + base[1:])


def test_random_programs(cfg):
    run_and_check(cfg, [random_program(cfg, seed) for seed in RANDOM_SEEDS])


def test_random_programs_under_axi_backpressure(cfg):
    """Random stalls on all five AXI channels change the timing, never the results."""
    results, _ = run_and_check(cfg, [random_program(cfg, seed) for seed in BACKPRESSURE_SEEDS],
                               backpressure=True)
    assert all(r["done"] and not r["error"] for r in results)


def _with_word(cfg, insns, index, patch):
    """An image whose instruction `index` has its first 64-bit word patched by `patch(word)`."""
    image, addr, count = image_with(cfg, insns, size=4096)
    at = addr + 16 * index
    word = int.from_bytes(image[at:at + 8].tobytes(), "little")
    image[at:at + 8] = np.frombuffer(patch(word).to_bytes(8, "little"), np.uint8)
    return image, addr, count


def error_programs(cfg):
    F = isa.FinishInsn
    gemm = isa.GemmInsn(uop_bgn=0, uop_end=1)
    depth_inp = cfg.buffers["inp"].depth
    cases = [
        ("opcode_5", _with_word(cfg, [gemm, F()], 0, lambda w: (w & ~7) | 5), "OPCODE"),
        ("opcode_7", _with_word(cfg, [F()], 0, lambda w: w | 7), "OPCODE"),
        ("alu_opcode_6", image_with(cfg, [isa.AluInsn(uop_end=1, alu_opcode=6, use_imm=1), F()]), "ALU_OPCODE"),
        ("load_out", image_with(cfg, [load(MEM_OUT, 0, 0, 1, 1), F()], size=4096), "MEM_TYPE"),
        ("store_inp", image_with(cfg, [store(0, 0, 1, 1).replace(memory_type=MEM_INP), F()], size=4096),
         "MEM_TYPE"),
        ("load_pop_prev", image_with(cfg, [load(MEM_INP, 0, 0, 1, 1, pop_prev=1), F()], size=4096), "DEP_FLAG"),
        ("store_push_next", image_with(cfg, [store(0, 0, 1, 1, push_next=1), F()], size=4096), "DEP_FLAG"),
        ("uop_two_rows", image_with(cfg, [load(MEM_UOP, 0, 0, 2, 1), F()], size=4096), "MALFORMED"),
        ("store_padded", image_with(cfg, [store(0, 0, 1, 1).replace(x_pad_0=1), F()], size=4096), "MALFORMED"),
        ("inp_past_sram", image_with(cfg, [load(MEM_INP, depth_inp - 1, 0, 1, 2), F()], size=4096),
         "SRAM_RANGE"),
        ("uop_bgn_after_end", image_with(cfg, [isa.GemmInsn(uop_bgn=3, uop_end=2), F()]), "MALFORMED"),
        ("load_unused_bits", _with_word(cfg, [load(MEM_INP, 0, 0, 1, 1), F()], 0, lambda w: w | 1 << 60),
         "MALFORMED"),
        ("uop_end_past_sram", image_with(cfg, [isa.GemmInsn(uop_bgn=0, uop_end=cfg.buffers["uop"].depth + 1), F()]),
         "SRAM_RANGE"),
        ("deadlock", image_with(cfg, [load(MEM_INP, 0, 0, 1, 1, pop_next=1, push_next=1), F(pop_prev=1)],
                                size=4096), "DEADLOCK"),
        ("no_finish", image_with(cfg, [gemm]), "FINISH"),
        ("finish_not_last", image_with(cfg, [F(), gemm, F()]), "FINISH"),
        ("req_use_imm", image_with(cfg, [isa.AluInsn(uop_end=1, alu_opcode=isa.ALU_REQ, use_imm=1), F()]),
         "MALFORMED"),
        ("req_reserved_bits", image_with(cfg, [isa.AluInsn(uop_end=1, alu_opcode=isa.ALU_REQ,
                                                            imm=isa.req_imm(3, -2) | -(1 << 15)), F()]), "MALFORMED"),
        ("req_reserved_bit_14", image_with(cfg, [isa.AluInsn(uop_end=1, alu_opcode=isa.ALU_REQ, imm=1 << 14), F()]),
         "MALFORMED"),
        ("gemm_index_past_acc", image_with(cfg, [isa.GemmInsn(uop_end=1, iter_out=3,
                                                               dst_factor_out=cfg.buffers["acc"].depth // 2), F()]),
         "INDEX"),
    ]
    return [(name, image, addr, count, ERROR_CODES[code]) for name, (image, addr, count), code in cases]


def test_illegal_programs_set_error_and_code_instead_of_hanging(cfg):
    """What vta_sim refuses, the RTL flags in STATUS.error and ERROR_CODE, and stops (done)."""
    programs = error_programs(cfg)
    jobs = [dict(name=name, image=image.tobytes(), insn_addr=addr, insn_count=count, expect_error=code,
                 timeout_cycles=5000) for name, image, addr, count, code in programs]
    image, addr, count = image_with(cfg, [isa.FinishInsn()])
    jobs.append(dict(name="insn_addr_misaligned", image=image.tobytes(), insn_addr=addr + 8, insn_count=count,
                     expect_error=ERROR_CODES["INSN_ADDR"], timeout_cycles=5000))
    results, _, failures = run_jobs(cfg, jobs, compare=True)
    assert not failures, "\n".join(failures)
    assert all(r["done"] and r["error"] for r in results)
    by_name = {r["name"]: r for r in results}
    assert by_name["finish_not_last"]["error_index"] == 0
    assert by_name["opcode_5"]["error_index"] == 0


def test_axi_read_error_sets_error_code(cfg):
    """A read beat answered SLVERR (an INP load's data, or an instruction fetch) halts the device
    with ERROR_CODE AXI_RESP and no instruction index; vta_sim's DRAM never fails, so it has no
    counterpart there."""
    inp_bytes = cfg.buffers["inp"].entry_bytes
    # FINISH waits for the load's token, so the run is still going when the failed beat arrives
    image, addr, count = image_with(cfg, [load(MEM_INP, 0, 0, 1, 1, push_next=1), isa.FinishInsn(pop_prev=1)],
                                    data=bytes(inp_bytes))
    jobs = [dict(name="inp_data", image=image.tobytes(), insn_addr=addr, insn_count=count,
                 read_error=[0, inp_bytes], timeout_cycles=5000),
            dict(name="fetch", image=image.tobytes(), insn_addr=addr, insn_count=count,
                 read_error=[addr + 16, addr + 32], timeout_cycles=5000)]
    results, _, failures = run_jobs(cfg, jobs)
    assert not failures, "\n".join(failures)
    for res in results:
        assert res["done"] and res["error"], res
        assert res["error_code"] == ERROR_CODES["AXI_RESP"] and res["error_index"] == NO_INDEX, res


@pytest.mark.parametrize("backpressure, delta, accepted", [
    (None, 0, True), (None, 1, False), (None, -1, False),      # no stalls: equal cycles
    (7, 0, True), (7, 250, True), (7, -1, False),             # stalls may only slow the RTL down
], ids=["exact", "exact_slower", "exact_faster", "bp_equal", "bp_slower", "bp_faster"])
def test_compare_checks_the_cycle_relation(tmp_path, backpressure, delta, accepted):
    """hw.sim_check: RTL cycles == sim cycles without back-pressure, >= with it (timing.md)."""
    cfg = Config.default()
    name, image, addr, count = chain_programs(cfg)[0]
    path = tmp_path / "prog.bin"
    path.write_bytes(image.tobytes())
    ref = Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    job = dict(name=name, image=str(path), insn_addr=addr, insn_count=count, backpressure=backpressure)
    result = dict(done=True, error=False, cycles=ref.cycles + delta,
                  stats={k: ref.stats[k] for k in COUNTERS})
    problems = compare_run(cfg, job, result, ref.dram)
    assert (problems == []) == accepted, problems
    assert accepted or "CYCLES" in problems[0]
