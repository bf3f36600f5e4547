"""Every GEMM shape the simulator accepts is hardware too: the RTL lints clean for LOG_BATCH 0-1
and LOG_BLOCK_IN/LOG_BLOCK_OUT 3-5, and compiled layers on 2x8x8, 1x8x16 and 1x16x16 give the
simulator's DRAM and cycles on the native RTL testbench (the full ResNet-18 C8 per shape is
bench/bench_rtl_shapes.py)."""
import itertools
import subprocess

import numpy as np
import pytest

from hw import build as hwbuild
from hw.header import header_text
from schedules.measure import CASES
from vta_sim import Config


def shape_config(log_batch: int, log_in: int, log_out: int) -> Config:
    keys = {**Config.load("1x8x8").to_dict(), "LOG_BATCH": log_batch, "LOG_BLOCK_IN": log_in,
            "LOG_BLOCK_OUT": log_out}
    return Config.from_dict(keys, name=f"{1 << log_batch}x{1 << log_in}x{1 << log_out}")


#: The shapes linted in the quick tier: the smallest, the largest and the two most lopsided; the
#: other 14 are linted in the slow tier (a second each).
QUICK_SHAPES = {(0, 3, 3), (1, 5, 5), (0, 3, 5), (1, 5, 3)}


@pytest.mark.parametrize("shape", [pytest.param(s, marks=() if s in QUICK_SHAPES else pytest.mark.slow)
                                   for s in itertools.product((0, 1), (3, 4, 5), (3, 4, 5))],
                         ids=lambda s: "x".join(str(1 << v) for v in s))
def test_every_gemm_shape_lints_clean(shape, tmp_path):
    (tmp_path / "vta_cfg.vh").write_text(header_text(shape_config(*shape)))
    hwbuild.ensure_tools_on_path()
    proc = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{tmp_path}", f"-I{hwbuild.RTL_DIR}",
                           "--top-module", hwbuild.TOPLEVEL, *map(str, hwbuild.rtl_sources())],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "%Warning" not in proc.stderr, proc.stderr


#: A conv with two input- and output-channel blocks on every shape, and a GEMM with a batch of 4.
LAYERS = (("conv2d", {"h": 6, "w": 6, "ic": 32, "oc": 32, "k": 3, "pad": 1, "stride": 1}),
          ("gemm", {"m": 4, "k": 64, "n": 64}))


@pytest.mark.parametrize("shape", [(1, 3, 3), (0, 3, 4), (0, 4, 4)], ids=["2x8x8", "1x8x16", "1x16x16"])
@pytest.mark.parametrize("workload, dims", LAYERS, ids=[w for w, _ in LAYERS])
def test_compiled_layer_on_rtl_equals_the_simulator(shape, workload, dims):
    cfg = shape_config(*shape)
    case = CASES[workload](cfg, dims, 2, None, np.random.default_rng(0))
    out_sim, sim = case["op"](*case["inputs"], backend="sim")
    out_rtl, rtl = case["op"](*case["inputs"], backend="rtl")
    assert np.array_equal(out_sim, case["reference"]())
    assert rtl.cycles == sim.cycles, f"{cfg.name}: CYCLES rtl={rtl.cycles} sim={sim.cycles}"
    assert np.array_equal(rtl.dram, sim.dram), f"{cfg.name}: DRAM differs"
    assert np.array_equal(out_rtl, out_sim)
