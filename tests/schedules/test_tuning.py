"""The tuning database (schedules.tuning_db) and the compiler's use of it; no cluster needed."""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from vta_sim.errors import CompileError
from schedules import tuning_db
from schedules import vta_conv2d as vc
from requantisation import PowerOfTwo
from schedules import vta_ops as vo
from vta_sim.config import Config

SHAPE = vc.ConvShape(1, 8, 8, 16, 16, 3, 1, 1)
DIMS = tuple(getattr(SHAPE, f) for f in ("n", "h", "w", "ic", "oc", "k", "pad", "stride"))   # as conv2d_kernel takes it


def _other_tiles(cfg):
    """A usable two-thread tiling that choose_tiles' model does not pick."""
    default = vc.CONV2D.choose_tiles(cfg, SHAPE, 2)
    return next(t for t in vc.candidates(cfg, SHAPE, 2) if t != default and vc.usable(cfg, SHAPE, t) is None)


def test_store_keeps_the_fastest_record_per_config_and_shape(tmp_path):
    cfg, db = Config.load("1x8x8"), tmp_path / "tiles.json"
    tiles = asdict(_other_tiles(cfg))
    assert tuning_db.lookup(cfg, "conv2d", SHAPE, 2, db) is None
    assert tuning_db.store(cfg, "conv2d", SHAPE, 2, {"tiles": tiles, "cycles": 100}, db)
    assert not tuning_db.store(cfg, "conv2d", SHAPE, 2, {"tiles": tiles, "cycles": 120}, db)
    assert tuning_db.lookup(cfg, "conv2d", SHAPE, 2, db)["cycles"] == 100
    assert tuning_db.store(cfg, "conv2d", SHAPE, 2, {"tiles": tiles, "cycles": 90}, db)
    assert tuning_db.lookup(cfg, "conv2d", SHAPE, 2, db)["cycles"] == 90
    slower_dram = Config.from_dict({**cfg.to_dict(), "DMA_READ_LATENCY": 64})
    assert tuning_db.lookup(slower_dram, "conv2d", SHAPE, 2, db) is None      # the key is the whole config
    assert tuning_db.lookup(cfg, "conv2d", SHAPE, 1, db) is None              # and the threads asked for


def test_compiler_takes_tuned_tiles_and_refuses_stale_ones(tmp_path, monkeypatch):
    cfg, db = Config.load("1x8x8"), tmp_path / "tiles.json"
    monkeypatch.setenv("VTA_TUNING_DB", str(db))
    other = _other_tiles(cfg)
    untuned = vo.conv2d_kernel(cfg, *DIMS, PowerOfTwo(8), vthreads=2)
    assert untuned.tile_source.describe() == f"cycle model (no record in {db})"
    tuning_db.store(cfg, "conv2d", SHAPE, 2, {"tiles": asdict(other), "cycles": 1})
    kernel = vo.conv2d_kernel(cfg, *DIMS, PowerOfTwo(8), vthreads=2)
    assert kernel.tiles == other and kernel.tile_source.describe() == f"tuned record of {db}"
    stale = {**asdict(other), "ic_blocks": 64}
    tuning_db.store(cfg, "conv2d", SHAPE, 2, {"tiles": stale, "cycles": 0})
    with pytest.raises(CompileError, match="tuning database .*tiles.json: tiles .* unusable"):
        vo.conv2d_kernel(cfg, *DIMS, PowerOfTwo(8), vthreads=2)


def test_corrupt_database_is_named(tmp_path):
    db = tmp_path / "tiles.json"
    db.write_text("{not json")
    with pytest.raises(CompileError, match="tiles.json: not valid JSON"):
        tuning_db.read(db)


def test_schedules_never_imports_dse():
    """Layering: the search (dse) sits above the compiler; schedules reaches it only through the
    plugin registry."""
    root = Path(__file__).resolve().parents[2] / "schedules"
    offenders = [p.name for p in root.glob("*.py")
                 if any(line.lstrip().startswith(("import dse", "from dse")) for line in p.read_text().splitlines())]
    assert offenders == []


def test_tune_flag_reaches_the_dse_plugin_and_excludes_tiles(capsys):
    import dse.cli
    from schedules import cli as schedules_cli
    from vta_sim.cli import main

    assert schedules_cli._tuner() is dse.cli.tune
    argv = ["conv2d", "--h", "8", "--ic", "16", "--oc", "16", "--k", "3", "--tune", "3", "--tiles", "1", "1", "1"]
    assert main(argv) == 2
    assert "give --tune or --tiles, not both" in capsys.readouterr().err


def test_database_path_does_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("VTA_TUNING_DB", raising=False)
    monkeypatch.delenv("VTA_CACHE", raising=False)
    here = tuning_db.db_path()
    monkeypatch.chdir(tmp_path)
    assert tuning_db.db_path() == here and here.is_absolute()
    monkeypatch.setenv("VTA_CACHE", str(tmp_path / "cache"))
    assert tuning_db.db_path() == tmp_path / "cache" / "tuning" / "tiles.json"
