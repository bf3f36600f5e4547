"""The RTL lints clean and builds from a header generated from the configuration."""
import subprocess

import pytest

from hw import build as hwbuild
from hw.header import header_text
from vta_sim import Config
from vta_sim.errors import ConfigError


def test_verilator_lint_wall_is_clean(cfg, tmp_path):
    (tmp_path / "vta_cfg.vh").write_text(header_text(cfg))
    hwbuild.ensure_tools_on_path()
    proc = subprocess.run(["verilator", "--lint-only", "-Wall", f"-I{tmp_path}", f"-I{hwbuild.RTL_DIR}",
                           "--top-module", hwbuild.TOPLEVEL, *map(str, hwbuild.rtl_sources())],
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "%Warning" not in proc.stderr, proc.stderr


def test_header_carries_the_isa_layout(cfg):
    """Field macros come from vta_sim.isa.layout: a changed layout changes the header."""
    from vta_sim import isa
    text = header_text(cfg)
    for fmt, fields in isa.layout(cfg).items():
        for f in fields:
            assert f"`define VTA_{fmt.upper()}_{f.name.upper()}(w) w[{f.hi}:{f.lo}]" in text


def test_configuration_the_dma_cannot_serve_is_refused():
    keys = {**Config.load("1x8x8").to_dict(), "LOG_BUS_WIDTH": 7}   # 16-byte beats, 8-byte INP entries
    with pytest.raises(ConfigError, match="INP elements of at least one bus beat"):
        header_text(Config.from_dict(keys, name="wide-bus"))


def test_build_cache_key_follows_config_and_options():
    a, b = Config.load("1x8x8"), Config.load("8x8x8")
    assert hwbuild.build_dir_for(a) != hwbuild.build_dir_for(b)
    assert hwbuild.build_dir_for(a) != hwbuild.build_dir_for(a, coverage=True)
    assert hwbuild.build_dir_for(a) == hwbuild.build_dir_for(Config.load("1x8x8"))
