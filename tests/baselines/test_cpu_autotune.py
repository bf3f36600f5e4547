"""meta_schedule: a tiny tuning run verifies, lands on disk and is reused without re-tuning."""
import importlib.util

import numpy as np
import pytest
import tvm

from baselines import cpu_autotune, cpu_schedules, workloads

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("cloudpickle", "psutil")),
    reason="meta_schedule needs cloudpickle and psutil")


def test_tune_verify_and_reuse(tmp_path):
    wl = workloads.gemm(16, 16, 16, "int8")
    target = cpu_schedules.cpu_target()
    mod, fresh = cpu_autotune.tuned_module(wl, target, 2, tmp_path)
    assert fresh and (cpu_autotune.database_dir(wl, tmp_path) / "database_tuning_record.json").exists()
    inputs = wl.random_inputs()
    out = tvm.runtime.tensor(np.zeros(wl.output_shape, wl.out_dtype))
    tvm.compile(mod, target=target)(*[tvm.runtime.tensor(a) for a in inputs], out)
    np.testing.assert_array_equal(out.numpy(), wl.reference(inputs))
    again, fresh = cpu_autotune.tuned_module(wl, target, 2, tmp_path)
    assert not fresh and again.script() == mod.script()


def test_zero_budget_is_refused(tmp_path):
    with pytest.raises(cpu_autotune.TuningFailed, match=">= 1"):
        cpu_autotune.tuned_module(workloads.gemm(4, 4, 4), cpu_schedules.cpu_target(), 0, tmp_path)
