"""vta_sim.paths: every cached build made once per key by one process (keyed_build), and every
cache root read when it is used, so that moving $VTA_CACHE after import moves what is built."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from vta_sim import Config, native
from vta_sim.paths import KEY_DIGITS, build_key, keyed_build

KEY_A, KEY_B = "a" * KEY_DIGITS, "b" * KEY_DIGITS

RACER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from vta_sim.paths import keyed_build

    root, me = Path(sys.argv[1]), sys.argv[2]
    (root / f"ready-{me}").touch()
    while len(list(root.glob("ready-*"))) < 2:   # both racers start building together
        time.sleep(0.01)

    def make(scratch):
        with open(root / "builds.log", "a") as log:
            log.write(f"{me} start {time.time()}\\n")
        time.sleep(1.5)                             # long enough for the other to arrive
        (scratch / "lib.so").write_text(me)
        with open(root / "builds.log", "a") as log:
            log.write(f"{me} end {time.time()}\\n")

    entered = time.time()
    out = keyed_build(root / "cache" / "lib-%s", make)
    print(entered, out, (out / "lib.so").read_text())
""" % KEY_A)


def test_two_processes_racing_build_once(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(tmp_path), str(i)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    log = (tmp_path / "builds.log").read_text().split("\n")[:-1]
    assert len(log) == 2, log                               # one build: its start and its end
    builder, _, _ = log[0].split()
    ended = float(log[1].split()[2])
    results = [out.split() for out, _ in outs]
    assert all(float(entered) < ended for entered, _, _ in results)   # both asked while it built
    assert {(path, made) for _, path, made in results} == {(str(tmp_path / "cache" / f"lib-{KEY_A}"), builder)}
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [f"lib-{KEY_A}", f"lib-{KEY_A}.lock"]


def _maker(calls):
    def make(scratch):
        calls.append(scratch)
        (scratch / "out").write_text(str(len(calls)))
    return make


def test_a_changed_key_rebuilds_and_removes_the_stale_build(tmp_path):
    calls = []
    first = keyed_build(tmp_path / f"lib-{KEY_A}", _maker(calls))
    assert keyed_build(tmp_path / f"lib-{KEY_A}", _maker(calls)) == first and len(calls) == 1
    other = keyed_build(tmp_path / f"lib-cov-{KEY_A}", _maker(calls))   # another stem: kept
    second = keyed_build(tmp_path / f"lib-{KEY_B}", _maker(calls))
    assert len(calls) == 3 and (second / "out").read_text() == "3"
    assert not first.exists() and not (tmp_path / f"lib-{KEY_A}.lock").exists() and other.is_dir()
    kept = keyed_build(tmp_path / f"lib-{KEY_A}", _maker(calls), prune=False)
    assert second.is_dir() and kept.is_dir() and len(calls) == 4


def test_a_failed_build_leaves_nothing_and_the_next_call_builds(tmp_path):
    def broken(scratch):
        (scratch / "half").write_text("half a library")
        raise RuntimeError("compiler died")

    with pytest.raises(RuntimeError, match="compiler died"):
        keyed_build(tmp_path / f"lib-{KEY_A}", broken)
    assert [p.name for p in tmp_path.iterdir()] == [f"lib-{KEY_A}.lock"]
    calls = []
    assert (keyed_build(tmp_path / f"lib-{KEY_A}", _maker(calls)) / "out").read_text() == "1"
    with pytest.raises(ValueError, match="<stem>-<12 hex digits>"):
        keyed_build(tmp_path / "lib-latest", _maker(calls))


def test_the_key_hashes_contents_and_boundaries(tmp_path):
    src = tmp_path / "loops.c"
    src.write_text("int x;")
    key = build_key(src, "-O3")
    assert len(key) == KEY_DIGITS and build_key(src, "-O3") == key
    assert build_key(src, "-O2") != key and build_key("ab", "c") != build_key("a", "bc")
    src.write_text("int y;")
    assert build_key(src, "-O3") != key


def test_vta_cache_set_after_import_moves_every_root(tmp_path, monkeypatch):
    from baselines import cpu_autotune
    from hw import build as hwbuild
    from hw import native as hwnative
    from hw import prove, synth
    from schedules import tuning_db

    for var in ("VTA_SIM_BUILD", "VTA_HW_BUILD", "VTA_SYNTH_BUILD", "VTA_PROVE_BUILD", "VTA_TUNING_DB"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("VTA_CACHE", str(tmp_path))
    cfg = Config.load("1x8x8")
    assert native.library_path().parent.parent == tmp_path / "sim"
    assert hwbuild.build_dir_for(cfg).parent == tmp_path / "hw"
    assert hwnative.build_dir_for(cfg).parent == tmp_path / "hw"
    assert synth.run_dir(cfg, "ecp5", True).parent == tmp_path / "synth"
    assert prove.prove_root() == tmp_path / "prove"
    assert tuning_db.db_path().parent == tmp_path / "tuning"
    assert cpu_autotune.work_root("") == tmp_path / "compare"   # the comparisons' tuning databases
    monkeypatch.setenv("VTA_PROVE_BUILD", str(tmp_path / "elsewhere"))   # a root's own variable wins
    assert prove.prove_root() == tmp_path / "elsewhere"


def test_the_simulators_library_builds_under_a_moved_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("VTA_SIM_BUILD", raising=False)
    monkeypatch.setenv("VTA_CACHE", str(tmp_path))
    path = native.build()
    assert path.is_file() and path.is_relative_to(tmp_path / "sim")
    assert sorted(p.name for p in (tmp_path / "sim").iterdir()) == [path.parent.name, path.parent.name + ".lock"]


def test_the_models_cache_follows_vta_cache_set_after_import(tmp_path, monkeypatch):
    """graph.models' cache was resolved when its module was imported; it is read at the call."""
    from graph.models import digits, models_dir

    monkeypatch.setenv("VTA_CACHE", str(tmp_path))
    assert models_dir() == tmp_path / "models"
    assert digits.models_dir() == tmp_path / "models"
