"""hw/objcache.py, make's compiler wrapper: a Verilator runtime source is compiled once per
compiler, command line, source and Verilator version; every other source is compiled each time."""
import os
import stat

import pytest

from hw import objcache


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """A stand-in compiler that logs each call and writes the source (and a .d) as the object."""
    cc = tmp_path / "bin" / "fakecc"
    cc.parent.mkdir()
    log = tmp_path / "calls.log"
    cc.write_text("#!/bin/sh\n"
                  f'echo "$*" >> {log}\n'
                  'while [ "$1" != "-o" ]; do shift; done; out="$2"; eval src=\\${$#}\n'
                  'if grep -q FAIL "$src"; then exit 1; fi\n'
                  'cat "$src" > "$out"; echo "$out: $src" > "${out%.o}.d"\n')
    cc.chmod(cc.stat().st_mode | stat.S_IEXEC)
    root = tmp_path / "verilator" / "include"
    root.mkdir(parents=True)
    (root / "verilated_config.h").write_text('#define VERILATOR_VERSION "5.49"\n')
    (root / "verilated.cpp").write_text("runtime v1\n")
    build = tmp_path / "build"
    build.mkdir()
    (build / "Vtop.cpp").write_text("model\n")
    monkeypatch.chdir(build)
    monkeypatch.setenv("VTA_OBJCACHE", str(tmp_path / "store"))
    monkeypatch.setenv("VTA_OBJCACHE_ROOT", str(root))
    return str(cc), root, build, log


def calls(log):
    return log.read_text().count("\n") if log.is_file() else 0


def test_a_runtime_object_is_compiled_once_and_copied_after(setup):
    cc, root, build, log = setup
    args = [cc, "-O1", "-c", "-o", "verilated.o", str(root / "verilated.cpp")]
    assert objcache.main(args) == 0 and calls(log) == 1
    os.remove(build / "verilated.o")
    os.remove(build / "verilated.d")
    assert objcache.main(args) == 0 and calls(log) == 1          # from the store
    assert (build / "verilated.o").read_text() == "runtime v1\n"
    assert (build / "verilated.d").is_file()


@pytest.mark.parametrize("change", ["flags", "source", "version"])
def test_a_different_flag_source_or_version_compiles_again(setup, change):
    cc, root, build, log = setup
    args = [cc, "-O1", "-c", "-o", "verilated.o", str(root / "verilated.cpp")]
    objcache.main(args)
    if change == "flags":
        args[1] = "-O2"
    elif change == "source":
        (root / "verilated.cpp").write_text("runtime v2\n")
    else:
        (root / "verilated_config.h").write_text('#define VERILATOR_VERSION "5.50"\n')
    assert objcache.main(args) == 0 and calls(log) == 2
    assert (build / "verilated.o").read_text() == (root / "verilated.cpp").read_text()


def test_the_models_own_sources_always_compile(setup):
    cc, root, build, log = setup
    args = [cc, "-O1", "-c", "-o", "Vtop.o", "Vtop.cpp"]
    assert objcache.main(args) == 0 and objcache.main(args) == 0
    assert calls(log) == 2


def test_without_a_store_it_only_runs_the_compiler(setup, monkeypatch):
    cc, root, build, log = setup
    monkeypatch.delenv("VTA_OBJCACHE")
    args = [cc, "-O1", "-c", "-o", "verilated.o", str(root / "verilated.cpp")]
    assert objcache.main(args) == 0 and objcache.main(args) == 0
    assert calls(log) == 2


def test_a_failed_compile_stores_nothing(setup):
    cc, root, build, log = setup
    (root / "verilated.cpp").write_text("FAIL\n")
    args = [cc, "-O1", "-c", "-o", "verilated.o", str(root / "verilated.cpp")]
    assert objcache.main(args) == 1 and objcache.main(args) == 1
    assert calls(log) == 2


def test_an_unwritable_store_still_builds(setup, monkeypatch, tmp_path):
    cc, root, build, log = setup
    (tmp_path / "blocked").write_text("a file where the store's folder would be\n")
    monkeypatch.setenv("VTA_OBJCACHE", str(tmp_path / "blocked"))
    args = [cc, "-O1", "-c", "-o", "verilated.o", str(root / "verilated.cpp")]
    assert objcache.main(args) == 0 and (build / "verilated.o").read_text() == "runtime v1\n"
