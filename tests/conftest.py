import os

# pytest -n 2 on a 2-core machine runs one test per core: TVM's thread pool and OpenMP's would
# each start a thread per core besides, and the oversubscribed workers spend about a fifth more
# CPU time on the same tests (`make test` from a fresh clone: 7 min 14 s with them, 6 min 7 s
# without). Set before vta_sim (and numpy) is imported; a value the caller set wins.
for _var in ("TVM_NUM_THREADS", "OMP_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# The suite builds about 170 small integer graphs once each and runs each on a few inputs: LLVM
# -O0 builds them in a third of -O1's time (graph.build.CPU_OPT_LEVEL), with the same results.
os.environ.setdefault("VTA_CPU_OPT_LEVEL", "0")

from pathlib import Path

import pytest

from vta_sim import Config

CONFIGS = ("1x8x8", "8x8x8")

#: The slow tier (`make test-all`, and CI): tests whose behaviour a quicker default test also
#: guards, by node id prefix and why it is slow. `make test` runs the rest (README gives the times).
SLOW = {
    # proofs for all time; in the default tier the same harnesses run against a planted bug
    # (test_each_groups_bug_fails_its_property_with_a_trace[alu_shift_cap], [bus_err_ignored])
    "hw/test_formal.py::test_the_alu_lanes_equal_the_spec_for_all_time": "alu_lanes proof, 85 s",
    "hw/test_formal.py::test_an_axi_error_response_sets_error_code_for_all_time": "dma_regs + error_code, 80 s",
    "hw/test_formal.py::test_queue_and_axi_lite_are_proven_for_all_time_and_every_cover_is_reached":
        "token_overflow, fifo_bypass_pops, lite_b_dropped and push_order stay, 30 s",
    "hw/test_formal.py::test_instructions_end_within_their_model_bound_at_a_short_depth[compute_live]":
        "uop_loop_stalled stays, 27 s",
    # second planted bug of a harness that keeps another one in the default tier (or a proof)
    "hw/test_formal.py::test_each_groups_bug_fails_its_property_with_a_trace[loop_end_lost]":
        "compute_live keeps uop_loop_stalled, 14 s",
    "hw/test_formal.py::test_each_groups_bug_fails_its_property_with_a_trace[read_burst_late]":
        "load_live is checked at a short depth in the default tier, 24 s",
    "hw/test_formal.py::test_each_groups_bug_fails_its_property_with_a_trace[aw_valid_dropped]":
        "axi_write is proven for all time in the default tier, 7 s",
    "hw/test_formal.py::test_each_groups_bug_fails_its_property_with_a_trace[column_compares_stale]":
        "dma_regs keeps q_offset_stale, 4 s",
    # the 8x8x8 twin of an RTL test whose 1x8x8 case stays in the default tier
    "hw/test_rtl_top.py::test_chains_and_double_buffered_gemm_are_bit_exact[8x8x8]": "20 s",
    "hw/test_rtl_units.py::test_dma_writes_every_padding_case_entry_by_entry[8x8x8-sampled]": "",
    "hw/test_rtl_units.py::test_dma_writes_every_padding_case_entry_by_entry[8x8x8-all]": "",
    # all 16 padding masks per memory; the default tier runs four of them (SAMPLED_MASKS)
    "hw/test_rtl_units.py::test_dma_writes_every_padding_case_entry_by_entry[1x8x8-all]": "45 s",
    "hw/test_rtl_top.py::test_axi_read_error_sets_error_code[8x8x8]": "building 8x8x8's bench, 24 s cold",
    "hw/test_rtl_native.py::test_native_matches_the_simulator[8x8x8]": "building 8x8x8's library, 15 s cold",
    # a native library of its own each (the ECP5 cells simulated, DRAM at its tightest latencies);
    # the default tier runs the plain RTL on 1x8x8 natively and under cocotb
    "hw/test_rtl_native.py::test_ecp5_cells_match_the_simulator": "30 s cold",
    "hw/test_rtl_native.py::test_native_is_cycle_exact_at_the_tightest_dram_latencies": "17 s cold",
    "hw/test_rtl_top.py::test_random_programs[8x8x8]": "5 s",
    "hw/test_rtl_top.py::test_single_instruction_programs_match_sim_exactly[8x8x8]": "5 s",
    "hw/test_rtl_top.py::test_random_programs_under_axi_backpressure[8x8x8]": "4 s",
    # two of the three concat models (halves stays): each builds and runs a model, 30-60 s
    "graph/test_graph_concat.py::test_every_concat_runs_on_the_accelerator_bit_exact[inception]": "",
    "graph/test_graph_concat.py::test_each_concat_alone_agrees_with_onnxruntime[inception]": "",
    "graph/test_graph_concat.py::test_at_batch_2_the_host_places_the_slices_naming_why[inception]": "",
    "graph/test_graph_concat.py::test_every_concat_runs_on_the_accelerator_bit_exact[dense_block]": "",
    "graph/test_graph_concat.py::test_each_concat_alone_agrees_with_onnxruntime[dense_block]": "",
    "graph/test_graph_concat.py::test_at_batch_2_the_host_places_the_slices_naming_why[dense_block]": "",
    "graph/test_graph_concat.py::test_at_batch_1_every_slice_is_stored_by_a_program_and_the_host_copies_none[inception]": "",
    # the digits ViT on all 360 held-out images through the CLI; the default tier runs it on 24
    "graph/test_digits_vit.py::test_the_cli_runs_it_and_reports_the_accuracies": "35 s",
    # training from scratch into a temporary cache, then the trained model's accuracy on VTA-8;
    # the default tier runs perturbed untrained weights through the same layers, bit-exact
    "graph/test_digits_vit.py::test_training_reaches_95_percent_held_out_and_is_cached": "23 s",
    "graph/test_digits_vit.py::test_on_the_accelerator_bit_exact_with_every_layer_offloaded": "20 s of training",
    # a whole encoder layer on the RTL (issue 34's goal); the default tier runs the RTL backend
    # on single ops (test_rtl_backend's others) and every REQ program on 1x8x8
    "hw/test_rtl_backend.py::test_a_whole_encoder_layer_on_rtl_equals_the_simulator": "20 s",
    "hw/test_rtl_top.py::test_req_programs_match_sim_exactly[8x8x8]": "5 s",
    "hw/test_rtl_top.py::test_illegal_programs_set_error_and_code_instead_of_hanging[8x8x8]": "building 8x8x8, 20 s cold",
    # the other GEMM shapes on the RTL, each building its library cold; the default tier lints
    # every shape (test_every_gemm_shape_lints_clean) and runs 1x8x8
    "hw/test_rtl_shapes.py::test_compiled_layer_on_rtl_equals_the_simulator[conv2d-2x8x8]": "22 s cold",
    "hw/test_rtl_shapes.py::test_compiled_layer_on_rtl_equals_the_simulator[gemm-2x8x8]": "",
    "hw/test_rtl_shapes.py::test_compiled_layer_on_rtl_equals_the_simulator[conv2d-1x8x16]": "17 s cold",
    "hw/test_rtl_shapes.py::test_compiled_layer_on_rtl_equals_the_simulator[conv2d-1x16x16]": "17 s cold",
    "hw/test_rtl_shapes.py::test_compiled_layer_on_rtl_equals_the_simulator[gemm-1x8x16]": "",
    "hw/test_rtl_shapes.py::test_compiled_layer_on_rtl_equals_the_simulator[gemm-1x16x16]": "",
    # average pools the accelerator refuses (their CPU build compiles a float pool); the
    # default tier keeps the pool that runs on VTA-8 and graph_zoo's refusals
    "graph/test_graph.py::test_average_pool_attributes_as_onnx_defines_them[<lambda>-cpu-count_include_pad]": "14 s",
    "graph/test_graph.py::test_average_pool_attributes_as_onnx_defines_them[<lambda>-cpu-ceil_mode]": "10 s",
    # Sigmoid beside convs in a CNN; the default tier runs Sigmoid and Tanh on VTA-8 in
    # requantisation/test_univariate.py's pooler
    "graph/test_graph.py::test_the_gates_sigmoids_run_on_the_accelerator_beside_the_convs": "11 s",
}


TESTS = Path(__file__).resolve().parent

#: Files whose collection ran: a module skipped at import (tests/hw without the hw extra) is absent.
_collected_files = set()


def pytest_collectreport(report):
    if report.passed and report.nodeid.endswith(".py"):
        _collected_files.add(report.nodeid.split("tests/", 1)[-1])


#: Packages in the order their tests run, the heaviest first (Verilator builds, proofs, then the
#: model compiles): pytest-xdist hands tests out in order, a few at a time (the Makefile's
#: --maxschedchunk), so both workers share the heavy ones and the run ends on short ones
#: (collected in file order instead, one worker ended 66 s after the other on a fresh clone).
HEAVY_FIRST = ("hw", "graph", "baselines", "requantisation", "dse", "schedules")


#: Before those, the first user of each Verilated model (the native bench, the cocotb bench, the
#: unit benches' 8x8x8), so that on a fresh clone one worker builds them while the other runs the
#: proofs: a test that reuses a build found it still building on the other worker and waited
#: (17 s of an idle core, once).
BUILDS_FIRST = ("hw/test_rtl_backend.py::test_runtime_blocked_gemm_on_rtl_matches_numpy",
                "hw/test_rtl_backend.py::test_hw_run_with_backpressure_compares_and_writes_dram",
                "hw/test_rtl_units.py::test_fifo_token_queue_gemm_and_alu_cores")


def _weight_rank(item) -> tuple[int, int]:
    node = item.nodeid.split("tests/", 1)[-1]
    if node in BUILDS_FIRST:
        return (0, BUILDS_FIRST.index(node))
    package = node.split("/", 1)[0]
    return (1, HEAVY_FIRST.index(package) if package in HEAVY_FIRST else len(HEAVY_FIRST))


def pytest_collection_modifyitems(config, items):
    nodes = set()
    for item in items:
        node = item.nodeid.split("tests/", 1)[-1]
        nodes.add(node)
        if node in SLOW:
            item.add_marker(pytest.mark.slow)
    _check_slow_keys(config, nodes)
    items.sort(key=_weight_rank)       # stable: file order within a package


def _check_slow_keys(config, nodes):
    """A SLOW key that names no test would silently put that test back in the default tier (a
    moved file, a renamed test or parameter): fail the collection, naming the keys. A key's file
    must exist; its test must be collected whenever its file was collected whole (not with --lf or
    a node id). Reported as a collection error, which pytest-xdist's workers pass on too."""
    whole = not config.getoption("lf", False) and not any("::" in arg for arg in config.args)
    stale = [key for key in SLOW
             if not (TESTS / key.split("::", 1)[0]).is_file()
             or (whole and key.split("::", 1)[0] in _collected_files and key not in nodes)]
    if stale:
        message = ("SLOW keys that name no collected test (paths are relative to tests/; update "
                   "them after moving or renaming a test):\n  " + "\n  ".join(stale))
        config.hook.pytest_collectreport(report=pytest.CollectReport(
            "tests/conftest.py::SLOW", "failed", message, []))


@pytest.fixture(params=CONFIGS)
def cfg(request):
    return Config.load(request.param)
