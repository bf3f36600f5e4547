"""The tile cost model's DMA row read (schedules.vta_common.row_read_cycles) against the timing
simulator: what `choose_tiles` ranks tilings by must grow with a row as the LOAD it stands for does."""
import pytest

from programs import image_with, load
from schedules.vta_common import row_read_cycles
from vta_sim import Config, Simulator, isa
from vta_sim.config import MEM_INP, MEM_WGT


def _load_cycles(cfg, mem: int, entries: int) -> int:
    """Cycles from the begin to the end of one aligned, unpadded LOAD of one row of `entries`."""
    insns = [load(mem, 0, 0, 1, entries).replace(push_next=1), isa.FinishInsn(pop_prev=1)]
    image, addr, count = image_with(cfg, insns, bytes(64 * 1024))
    run = Simulator(cfg).run(image, insn_addr=addr, insn_count=count, trace=True)
    (event,) = [e for e in run.trace.events if e.module == "load"]
    return event.done - event.start


@pytest.mark.parametrize("mem", [MEM_INP, MEM_WGT], ids=["inp", "wgt"])
def test_a_row_read_costs_what_the_simulator_charges_per_burst(mem):
    """Rows of one to three bursts (the 4 KiB boundary splits them): each extra burst costs its
    latency, its beats and the request register's cycle, as the simulator charges them; a row
    of one entry is the baseline, so the LOAD's fixed costs cancel."""
    cfg = Config.load("1x8x8")
    elem = cfg.dram_elem_bytes(mem)
    one = 4096 // elem
    sizes = [1, 2, one, one + 1, 2 * one + 1]
    base_sim, base_model = _load_cycles(cfg, mem, 1), row_read_cycles(cfg, elem)
    for entries in sizes[1:]:
        assert _load_cycles(cfg, mem, entries) - base_sim == row_read_cycles(cfg, entries * elem) - base_model, entries
