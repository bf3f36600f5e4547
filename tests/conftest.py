import pytest

from vta_sim import Config

CONFIGS = ("1x8x8", "8x8x8")

#: The slow tier (`make test-all`, and CI): tests whose behaviour a quicker default test also
#: guards, by node id prefix and why it is slow. `make test` runs the rest in under 5 minutes.
SLOW = {
    # proofs for all time; in the default tier the same harnesses run against a planted bug
    # (test_each_groups_bug_fails_its_property_with_a_trace[alu_shift_cap], [bus_err_ignored])
    "hw/test_formal.py::test_the_alu_lanes_equal_the_spec_for_all_time": "alu_lanes proof, 85 s",
    "hw/test_formal.py::test_an_axi_error_response_sets_error_code_for_all_time": "dma_regs + error_code, 80 s",
    # second planted bug of a harness that keeps another one in the default tier (or a proof)
    "hw/test_formal.py::test_each_groups_bug_fails_its_property_with_a_trace[loop_end_lost]":
        "compute_live keeps uop_loop_stalled, 14 s",
    "hw/test_formal.py::test_each_groups_bug_fails_its_property_with_a_trace[read_burst_late]":
        "load_live is proven at a short depth in the default tier, 24 s",
    # the 8x8x8 twin of an RTL test whose 1x8x8 case stays in the default tier
    "hw/test_rtl_top.py::test_chains_and_double_buffered_gemm_are_bit_exact[8x8x8]": "20 s",
    "hw/test_rtl_units.py::test_dma_writes_every_padding_case_entry_by_entry[8x8x8]": "13 s",
    "hw/test_rtl_top.py::test_random_programs[8x8x8]": "5 s",
    "hw/test_rtl_top.py::test_single_instruction_programs_match_sim_exactly[8x8x8]": "5 s",
    "hw/test_rtl_top.py::test_random_programs_under_axi_backpressure[8x8x8]": "4 s",
    # two of the three concat models (halves stays): each builds and runs a model, 30-60 s
    "test_graph_concat.py::test_every_concat_runs_on_the_accelerator_bit_exact[inception]": "",
    "test_graph_concat.py::test_each_concat_alone_agrees_with_onnxruntime[inception]": "",
    "test_graph_concat.py::test_at_batch_2_the_host_places_the_slices_naming_why[inception]": "",
    "test_graph_concat.py::test_every_concat_runs_on_the_accelerator_bit_exact[dense_block]": "",
    "test_graph_concat.py::test_each_concat_alone_agrees_with_onnxruntime[dense_block]": "",
    "test_graph_concat.py::test_at_batch_2_the_host_places_the_slices_naming_why[dense_block]": "",
    "test_graph_concat.py::test_at_batch_1_every_slice_is_stored_by_a_program_and_the_host_copies_none[inception]": "",
    # the digits ViT on all 360 held-out images through the CLI; the default tier runs it on 24
    "test_digits_vit.py::test_the_cli_runs_it_and_reports_the_accuracies": "35 s",
    # training from scratch into a temporary cache; the default tier's accelerator test runs the
    # shared cache's model (trained there at first use) and checks its accuracy
    "test_digits_vit.py::test_training_reaches_95_percent_held_out_and_is_cached": "23 s",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        node = item.nodeid.split("tests/", 1)[-1]
        if node in SLOW:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(params=CONFIGS)
def cfg(request):
    return Config.load(request.param)
