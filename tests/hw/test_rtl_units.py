"""Unit benches of the RTL (hw/tests/unit_bench.py) and the DMA with every padding case, checked
entry by entry in the SRAMs against a numpy reference of spec section 5."""
import numpy as np
import pytest

from hw import build as hwbuild
from hw.backend import run_jobs
from programs import Layout, image_with, load
from hw.header import header_text
from vta_sim import Config, isa
from vta_sim.config import MEM_ACC, MEM_ACC_8BIT, MEM_INP, MEM_UOP, MEM_WGT
from vta_sim.errors import ConfigError


def test_fifo_token_queue_gemm_and_alu_cores(tmp_path):
    """On 8x8x8 only: the queues do not depend on the configuration, and its 8-row GEMM core
    and 64-lane ALU include the 1x8x8 shapes (which the top-level benches check bit-exactly)."""
    failures = hwbuild.run_bench("8x8x8", "hw.tests.unit_bench", tmp_path,
                                 {"VTA_UNIT_CONFIG": "8x8x8", "VTA_UNIT_SEED": "1"}, top="vta_units_tb")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("key, value, depth", [("GEMM_PIPELINE", 7, 8), ("ALU_PIPELINE", 6, 7),
                                               ("DMA_READ_LATENCY", 3, 4), ("DMA_WRITE_LATENCY", 3, 4)])
def test_pipeline_latency_below_the_rtl_depth_is_refused(key, value, depth):
    """The compute pipeline writes its last result 8 (GEMM) or 7 (ALU) cycles after the last issue,
    and a DRAM answers the RTL's DMAs no faster than in 4 cycles (tests/hw/test_rtl_native.py's
    TIGHT), so a shorter modelled latency could not be met cycle for cycle."""
    cfg = Config.from_dict({**Config.load("1x8x8").to_dict(), key: value}, name="short")
    with pytest.raises(ConfigError, match=f"{key}={value}.*use {key} >= {depth}"):
        header_text(cfg)
    header_text(Config.from_dict({**Config.load("1x8x8").to_dict(), key: depth}, name="ok"))


SRAM_OF = {MEM_INP: ("inp_mem", "inp"), MEM_WGT: ("wgt_mem", "wgt"), MEM_ACC: ("acc_mem", "acc"),
           MEM_ACC_8BIT: ("acc_mem", "acc"), MEM_UOP: ("uop_mem", "uop")}


def expected_entries(cfg, mem, dram: np.ndarray, base, y, x, stride, pads) -> list:
    """Spec section 5: row-major (y0+y+y1) x (x0+x+x1) entries, DRAM element or zero."""
    elem = cfg.dram_elem_bytes(mem)
    y0, y1, x0, x1 = pads
    out = []
    for r in range(y0 + y + y1):
        for c in range(x0 + x + x1):
            if y0 <= r < y0 + y and x0 <= c < x0 + x:
                at = (base + (r - y0) * stride + (c - x0)) * elem
                raw = dram[at:at + elem]
            else:
                raw = np.zeros(elem, np.uint8)
            if mem == MEM_ACC_8BIT:
                raw = raw.view(np.int8).astype("<i4").view(np.uint8)
            out.append(int.from_bytes(raw.tobytes(), "little"))
    return out


#: The quick tier's padding masks (bit i pads side i of y0, y1, x0, x1): per memory, none, all
#: four, the leading sides and the trailing ones (the slow tier's `all` runs all 16 masks).
SAMPLED_MASKS = (0b0000, 0b1111, 0b0101, 0b1010)


def dma_cases(cfg, masks=range(16)):
    rng = np.random.default_rng(21)
    lay = Layout()
    lay.put(rng.integers(0, 256, 96 * 1024, dtype=np.uint8).tobytes(), 256)
    cases = []
    for mem in (MEM_INP, MEM_WGT, MEM_ACC, MEM_ACC_8BIT):
        for mask in masks:
            pads = tuple((i % 2 + 1) if mask >> i & 1 else 0 for i in range(4))
            cases.append((f"{SRAM_OF[mem][1]}_{mem}_pads{''.join(map(str, pads))}", mem, 3, 7, 2, 3, 5, pads))
    elems_4k = 4096 // cfg.dram_elem_bytes(MEM_WGT)
    cases.append(("wgt_row_across_bursts", MEM_WGT, 0, 1, 1, elems_4k // 2 + 3, 0, (1, 0, 2, 1)))
    for base, n in [(0, 7), (1, 6), (3, 1), (5, 600)]:    # micro-ops: aligned, misaligned, many
        cases.append((f"uop_{base}_{n}", MEM_UOP, 2, base, 1, n, n, (0, 0, 0, 0)))
    progs = []
    for name, mem, sram, base, y, x, stride, pads in cases:
        ld = load(mem, sram, base, y, x, stride, pads)
        if mem in (MEM_INP, MEM_WGT):
            insns = [ld.replace(push_next=1), isa.FinishInsn(pop_prev=1)]
        else:
            insns = [ld, isa.FinishInsn()]
        image, addr, count = image_with(cfg, insns, bytes(lay.data))
        progs.append((name, mem, sram, base, y, x, stride, pads, image, addr, count))
    return progs


@pytest.mark.parametrize("masks", [SAMPLED_MASKS, range(16)], ids=["sampled", "all"])
def test_dma_writes_every_padding_case_entry_by_entry(cfg, masks):
    progs = dma_cases(cfg, masks)
    jobs = []
    for name, mem, sram, base, y, x, stride, pads, image, addr, count in progs:
        n = (pads[0] + y + pads[1]) * (pads[2] + x + pads[3])
        jobs.append(dict(name=name, image=image.tobytes(), insn_addr=addr, insn_count=count,
                         peek=[[SRAM_OF[mem][0], sram, n]]))
    results, _, failures = run_jobs(cfg, jobs, compare=True)
    assert not failures, "\n".join(failures)
    bad = []
    for res, (name, mem, sram, base, y, x, stride, pads, image, addr, count) in zip(results, progs):
        got = [int(v, 16) for v in res["peek"][SRAM_OF[mem][0]]]
        if got != expected_entries(cfg, mem, image, base, y, x, stride, pads):
            bad.append(name)
    assert not bad, f"SRAM contents differ from the spec for {bad}"
