"""Each fact shared by the simulator, the compiler and the RTL has one home; these tests pin
what derives from it, so that a second copy cannot drift."""
import re
from pathlib import Path

import numpy as np
import pytest

from hw.header import header_text
from intrinsics import calls
from intrinsics import tensor_intrin as ti
from vta_sim import Config, isa, registers
from vta_sim.errors import EncodingError
from vta_sim.result import FUNCTIONAL_STATS, SPEC_STATS, TIMING_STATS
from vta_sim.runtime import Runtime, UopKernel
from vta_sim.simulator import Simulator


def _defines(cfg) -> dict:
    return dict(re.findall(r"^`define VTA_(\S+) (.*)$", header_text(cfg), re.M))


SPEC = Path(__file__).resolve().parents[2] / "shared" / "spec" / "vta-isa.md"


def _spec_registers() -> dict:
    """Section 8's register table of the shared spec: register name -> byte offset."""
    section = SPEC.read_text().split("## 8.")[1].split("\n## ")[0]
    rows = re.findall(r"^\| 0x([0-9A-Fa-f]+) \| ([A-Z_/]+)", section, re.M)
    assert rows, f"no register table in section 8 of {SPEC}"
    return {name.split("/")[0]: int(offset, 16) for offset, name in rows}


def test_the_register_map_is_the_specs():
    spec = _spec_registers()
    offsets = {name: getattr(registers, f"REG_{name}") for name in registers.REGISTERS}
    assert {name: offsets[name] for name in spec} == spec
    # the project's registers beyond the spec's follow its last one, as section 8 allows
    assert min(o for n, o in offsets.items() if n not in spec) == max(spec.values()) + 4


@pytest.mark.parametrize("config", ["1x8x8", "8x8x8"])
def test_the_generated_header_carries_vta_sims_register_map_codes_and_counters(config):
    d = _defines(Config.load(config))
    spec = _spec_registers()
    assert {name: 4 * int(d[f"REG_{name}"]) for name in spec} == spec
    assert int(d["REG_COUNTERS"]) * 4 == registers.REG_COUNTERS
    assert {k[4:]: int(v) for k, v in d.items() if k.startswith("ERR_")} == registers.ERROR_CODES
    assert {k[4:].lower(): int(v) for k, v in d.items() if k.startswith("CNT_")} == \
        {name: i for i, name in enumerate(registers.COUNTERS)}
    assert int(d["ERROR_CODE_BITS"]) >= max(registers.ERROR_CODES.values()).bit_length()
    assert {n: int(d[f"ALU_{n}"]) for n in isa.ALU_NAMES.values()} == {n: c for c, n in isa.ALU_NAMES.items()}


def test_the_header_routes_each_token_queue_through_the_flags_of_isa():
    d = _defines(Config.load("1x8x8"))
    for q in isa.TOKEN_QUEUES:
        assert d[f"{q.name.upper()}_PUSH(w)"] == f"`VTA_MEM_{q.push_flag.upper()}(w)"
        assert d[f"{q.name.upper()}_POP(w)"] == f"`VTA_MEM_{q.pop_flag.upper()}(w)"
    for module, flags in isa.DEP_QUEUES.items():
        illegal = {f for f, q in flags.items() if q is None}
        assert set(re.findall(r"VTA_MEM_(\w+)\(w\)", d[f"{module.upper()}_FLAG_ILLEGAL(w)"])) == \
            {f.upper() for f in illegal}


def test_every_flag_of_a_queue_is_named_once_per_module_and_pairs_are_unique():
    for module in isa.MODULES:
        named = [q.name for q in isa.TOKEN_QUEUES for m, f in ((q.producer, q.push_flag), (q.consumer, q.pop_flag))
                 if m == module]
        assert sorted(named) == sorted(q for q in isa.DEP_QUEUES[module].values() if q)
    assert len(isa.QUEUE_BETWEEN) == len(isa.TOKEN_QUEUES)
    assert isa.NEIGHBOURS == {"load": ("compute",), "compute": ("load", "store"), "store": ("compute",)}


def test_a_run_reports_exactly_the_statistics_of_the_register_map():
    cfg = Config.load("1x8x8")
    rt = Runtime(cfg)
    acc = rt.array(np.zeros((2, cfg.BATCH, cfg.BLOCK_OUT), np.int32), "acc")
    rt.load_2d(acc, 0, 2, 1, 2, 0)
    kernel = UopKernel()
    kernel.uop(dst=0, src=1)
    rt.alu(kernel, "add", imm=3)
    result = rt.synchronize()
    assert set(result.stats) == {*SPEC_STATS, *TIMING_STATS}
    assert registers.COUNTERS == FUNCTIONAL_STATS + TIMING_STATS
    assert set(SPEC_STATS) - set(registers.COUNTERS) == {"cycles"}
    assert Simulator(cfg).run(rt.last_program.image, rt.last_program.insn_addr,
                              rt.last_program.insn_count).stats == result.stats


def test_the_compilers_alu_expressions_cover_exactly_the_isa_ops_and_pseudo_ops():
    # REQ (docs/isa-extensions.md) is no binary expression of x and y: the compiler does not offer it yet
    assert set(ti.ALU_EXPRS) == (set(isa.ALU_OPS) - {"req"}) | set(isa.ALU_PSEUDO_OPS)
    assert isa.resolve_alu("shl", 3) == ("shr", -3)
    with pytest.raises(EncodingError, match="accepted: min, max, add, shr, mul, req, shl"):
        isa.resolve_alu("div", 1)


@pytest.mark.parametrize("call", [
    calls.Load2D(1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
    calls.Store2D(1, 2, 3, 4, 5, 6),
    calls.Gemm(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, ((0, 1, 2), (3, 4, 5)), reset=1),
    calls.Alu(1, 2, 0, 4, 5, 6, 7, 0, 9, 10, 0, ((0, 1, 0),), op="shr", use_imm=1, imm=-2),
    calls.UopPush("add", 1, 3, 0, 0, 0),
])
def test_every_call_decodes_from_the_arguments_it_encodes(call):
    assert type(call).from_args(call.args()) == call
    with pytest.raises(ti.CompileError, match=f"{call.NAME}: {len(call.args()) + 1} arguments"):
        type(call).from_args(call.args() + [0])


def test_a_uop_push_refuses_an_op_the_host_cannot_run():
    with pytest.raises(ti.CompileError, match="micro-op 'alu.add.imm'; accepted: gemm, reset, min"):
        calls.UopPush("alu.add.imm", 1, 3, 0, 0, 0)
