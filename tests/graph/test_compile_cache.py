"""The on-disk compile cache (graph.cache): a kernel or VM build read back from disk computes what
a fresh compile computes, a changed key misses, `off` writes nothing, and `fill` builds entries
in worker processes and raises a worker's error in the caller."""
import numpy as np
import pytest
import tvm
from tvm.script import relax as R

from graph import build, cache, kernels
from graph.errors import GraphError
from graph.ops.max_pool import PoolSpec
from schedules.vta_pool import PoolShape
from vta_sim.config import Config

SPEC = PoolSpec(PoolShape(1, 8, 4, 4, 2, 2, 0))


@pytest.fixture
def disk(tmp_path, monkeypatch):
    monkeypatch.setenv("VTA_KERNEL_CACHE", str(tmp_path))
    return tmp_path


def _forbid_compiles(monkeypatch):
    def refuse(*args):
        raise AssertionError("compiled although the kernel is cached")
    monkeypatch.setattr(PoolSpec, "kernel", refuse)


def test_cached_kernel_computes_what_a_fresh_compile_computes(disk, monkeypatch):
    cfg = Config.load("1x8x8")
    x = np.random.default_rng(0).integers(-128, 128, (1, 8, 4, 4), dtype=np.int8)
    fresh_out, fresh = kernels.KernelCache().get(cfg, SPEC, 1)(x)
    assert [p.suffix for p in disk.iterdir()] == [".pkl"]      # the program, not the TVM module
    _forbid_compiles(monkeypatch)
    kernel = kernels.KernelCache().get(cfg, SPEC, 1)
    assert kernel.kernel.module is None
    out, result = kernel(x)
    assert np.array_equal(out, SPEC.reference(x))
    assert np.array_equal(out, fresh_out) and result.cycles == fresh.cycles
    with pytest.raises(AssertionError, match="compiled although"):   # another key misses
        kernels.KernelCache().get(cfg, SPEC, 2)


def test_off_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("VTA_KERNEL_CACHE", "off")
    monkeypatch.chdir(tmp_path)
    kernels.KernelCache().get(Config.load("1x8x8"), SPEC, 1)
    assert cache.cache_dir() is None and not list(tmp_path.iterdir())


def _module(value: int):
    @tvm.script.ir_module
    class Module:
        @R.function
        def main(x: R.Tensor((4,), "int32")):
            return R.add(x, R.const(np.full(4, value, np.int32)))
    return Module


def test_vm_build_is_keyed_by_the_module_constants_included(disk):
    x, target = np.arange(4, dtype=np.int32), build.cpu_target()
    assert cache.missing_vm(_module(3), target)
    assert build.CpuModel(_module(3)).run(x).tolist() == [3, 4, 5, 6]
    assert not cache.missing_vm(_module(3), target) and cache.missing_vm(_module(4), target)
    assert build.CpuModel(_module(3)).run(x).tolist() == [3, 4, 5, 6]   # from disk
    assert build.CpuModel(_module(4)).run(x).tolist() == [4, 5, 6, 7]


def test_vm_build_is_keyed_by_its_optimisation_level_and_a_bad_level_is_refused(disk, monkeypatch):
    x = np.arange(4, dtype=np.int32)
    monkeypatch.setenv("VTA_CPU_OPT_LEVEL", "0")
    assert build.cpu_target()["opt-level"] == 0
    assert build.CpuModel(_module(6)).run(x).tolist() == [6, 7, 8, 9]
    assert not cache.missing_vm(_module(6), build.cpu_target())
    monkeypatch.setenv("VTA_CPU_OPT_LEVEL", "1")
    assert cache.missing_vm(_module(6), build.cpu_target())    # an -O0 build is not reused at -O1
    assert build.CpuModel(_module(6)).run(x).tolist() == [6, 7, 8, 9]
    monkeypatch.delenv("VTA_CPU_OPT_LEVEL")
    assert build.cpu_target()["opt-level"] == build.CPU_OPT_LEVEL
    monkeypatch.setenv("VTA_CPU_OPT_LEVEL", "O2")
    with pytest.raises(GraphError, match="VTA_CPU_OPT_LEVEL='O2': accepted 0, 1, 2 or 3"):
        build.CpuModel(_module(6))


def test_fill_builds_in_workers_and_raises_their_errors(disk, monkeypatch):
    cfg = Config.load("1x8x8")
    jobs = kernels.KernelCache().cold_jobs(cfg, [SPEC, SPEC], 1) + build.CpuModel.cold_jobs(_module(5))
    assert len(jobs) == 2                       # one per distinct kernel, plus the VM build
    monkeypatch.setattr(cache.os, "sched_getaffinity", lambda pid: {0, 1})   # fork even on one core
    cache.fill(jobs)
    assert not cache.missing_kernel(cfg.to_text(), SPEC, 1) and not cache.missing_vm(_module(5), build.cpu_target())
    assert kernels.KernelCache().cold_jobs(cfg, [SPEC], 1) == []

    class BuildFailure(Exception):
        pass

    def broken():
        raise BuildFailure("no such op")
    with pytest.raises(BuildFailure, match="no such op"):
        cache.fill([broken, lambda: None])


def test_fill_forks_nothing_in_a_daemonic_process(disk, monkeypatch):
    """A Dask worker is daemonic and may not have children: its builds happen where needed."""
    jobs = [(disk / "a").touch, (disk / "b").touch]
    monkeypatch.setattr(cache.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(cache.multiprocessing, "current_process", lambda: type("P", (), {"daemon": True})())
    cache.fill(jobs)
    assert not list(disk.iterdir())
    monkeypatch.undo()
    monkeypatch.setattr(cache.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setenv("VTA_KERNEL_CACHE", str(disk))
    cache.fill(jobs)                            # not daemonic: the workers run them
    assert sorted(p.name for p in disk.iterdir()) == ["a", "b"]
