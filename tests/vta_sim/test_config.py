import json

import pytest

from vta_sim import Config, ConfigError
from vta_sim.config import TIMING_DEFAULTS


def test_default_is_1x8x8_with_the_spec_depths():
    cfg = Config.default()
    assert cfg.name == "1x8x8"
    depths = {n: (b.depth, b.entry_bytes) for n, b in cfg.buffers.items()}
    assert depths == {"uop": (8192, 4), "inp": (2048, 8), "wgt": (1024, 64), "acc": (2048, 32), "out": (2048, 8)}
    assert (cfg.LU, cfg.LI, cfg.LW, cfg.LA) == (13, 11, 10, 11)
    assert cfg.macs_per_cycle == 64 and cfg.bus_bytes == 8


def test_8x8x8_shares_the_bit_layout():
    cfg = Config.load("8x8x8")
    assert (cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT) == (8, 8, 8)
    assert (cfg.LU, cfg.LI, cfg.LW, cfg.LA) == (13, 11, 10, 11)
    assert cfg.buffers["acc"].entry_bytes == 256 and cfg.buffers["out"].depth == cfg.buffers["acc"].depth


def test_load_from_path_with_timing_override(tmp_path):
    data = {**Config.default().keys, "DMA_READ_LATENCY": 20}
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(data))
    cfg = Config.load(str(path))
    assert cfg.name == "slow" and cfg.DMA_READ_LATENCY == 20
    assert cfg.GEMM_PIPELINE == TIMING_DEFAULTS["GEMM_PIPELINE"]


@pytest.mark.parametrize("change, word", [
    ({"LOG_ACC_BUFF_SIZE": 22}, "micro-op"),          # LA = 17: 17 + 17 + 10 > 32
    ({"LOG_UOP_BUFF_SIZE": 18}, "word 0"),            # LU = 16: 7 + 16 + 17 + 28 > 64
    # LA = 12, LI = 11, LW = 8: the micro-op (32) and GEMM word 1 (62) fit, ALU word 1 does not (68)
    ({"LOG_ACC_BUFF_SIZE": 17, "LOG_WGT_BUFF_SIZE": 14}, r"ALU word 1 \(64 bits\) needs 68 bits"),
])
def test_config_that_does_not_fit_names_the_word(change, word):
    with pytest.raises(ConfigError, match=word):
        Config.from_dict({**Config.default().keys, **change})


def test_bad_configs_are_refused_clearly(tmp_path):
    keys = dict(Config.default().keys)
    with pytest.raises(ConfigError, match="lacks key.*TOKEN_DEPTH"):
        Config.from_dict({k: v for k, v in keys.items() if k != "TOKEN_DEPTH"})
    with pytest.raises(ConfigError, match="unknown key.*LOG_FOO"):
        Config.from_dict({**keys, "LOG_FOO": 1})
    with pytest.raises(ConfigError, match="int8"):
        Config.from_dict({**keys, "LOG_INP_WIDTH": 4})
    with pytest.raises(ConfigError, match="unknown configuration 'nope'.*1x8x8"):
        Config.load("nope")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ConfigError, match="not valid JSON"):
        Config.load(str(bad))


def test_config_text_round_trips_and_refuses_other_text():
    cfg = Config.load("8x8x8")
    assert Config.from_text(cfg.to_text()) == cfg and Config.from_text(cfg.to_text()).name == "8x8x8"
    with pytest.raises(ConfigError, match="Config.to_text"):
        Config.from_text('{"name": "x"}')
    with pytest.raises(ConfigError, match="Config.to_text"):
        Config.from_text("not json")
