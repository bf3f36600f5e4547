"""Area of a hardware config for `vta-sim sweep --area`: Yosys' counts, or a model fitted on them.

Synthesis (`synthesise`, one Dask task per hardware config) is `hw.synth.synth_config`, cached by
its key, so `vta-sim hw synth` and every sweep share runs. The model is for sweeps too large to
synthesise. Block RAM is counted, not fitted: every SRAM is one memory of depth x entry bits
(UOP in bus-beat banks), mapped onto the target's block-RAM aspect ratios the way Yosys does.
LUT, FF and DSP are least-squares fits on the config's structure (GEMM multipliers and
accumulator lanes; buffers, bus and queues move them little); DSP is rounded. Its data are
`dse/data/area_TARGET.json`, written by `bench/bench_area.py` from synthesis runs
(`FIT_CONFIGS` are fitted on, `HELDOUT_CONFIGS` only checked: docs/dse.md, tests/dse/test_dse_area.py).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from hw.build import rtl_digest
from hw.header import check_supported
from hw.synth import run_dir, synth_config
from vta_sim.config import Config
from vta_sim.errors import VTAError

DATA_DIR = Path(__file__).parent / "data"
#: `--area` names -> hw.synth targets.
SYNTH_TARGETS = {"ecp5": "ecp5", "xc7": "xilinx"}
AREA_CHOICES = ("ecp5", "xc7", "model", "model:ecp5", "model:xc7")
RESOURCES = ("lut", "ff", "dsp", "bram")
#: The LFE5UM-85F's resources: a design over any of them is not placed.
ECP5_85F = {"lut": 83640, "ff": 83640, "dsp": 156, "bram": 208}
#: Block-RAM aspect ratios (depth, width) per target, in the units `bram` counts: on xc7 a
#: RAMB18E1, half a RAMB36E1 (Yosys infers them and pairs them into RAMB36E1s), the one of
#: fewest blocks per memory; on ECP5 a DP16KD, instantiated by hw/rtl/ecp5/vta_ecp5_bram.v at the
#: memory's own depth (at least 1,024: its x36 mode is not used), side by side across the word.
BRAM_SHAPES = {"ecp5": ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18)),
               "xilinx": ((16384, 1), (8192, 2), (4096, 4), (2048, 9), (1024, 18), (512, 36))}
BRAM_UNIT = {"ecp5": 1, "xilinx": 0.5}
#: The features each fitted resource is linear in (plus a constant).
FIT_FEATURES = {"lut": ("macs", "acc_lanes"), "ff": ("macs", "acc_lanes"),
                "dsp": ("macs", "acc_lanes")}
#: Configs the model is fitted on and checked on: overrides of 1x8x8. The fitted shapes span both
#: features (1x8x8 and 2x8x8 alone are collinear); 1x16x16 is checked outside the fitted range.
FIT_CONFIGS = (
    {}, {"LOG_BATCH": 1}, {"LOG_BLOCK_IN": 4},
    {"LOG_INP_BUFF_SIZE": 13, "LOG_WGT_BUFF_SIZE": 15, "LOG_ACC_BUFF_SIZE": 14},
)
HELDOUT_CONFIGS = (
    {"LOG_BLOCK_OUT": 4}, {"LOG_BLOCK_IN": 4, "LOG_BLOCK_OUT": 4},
    {"LOG_BATCH": 1, "LOG_ACC_BUFF_SIZE": 15, "LOG_WGT_BUFF_SIZE": 15},
    {"LOG_BLOCK_OUT": 4, "LOG_INP_BUFF_SIZE": 13, "TOKEN_DEPTH": 16},
)


def role(overrides: dict) -> str:
    """`fit` or `heldout`: what the model may learn from a synthesised config (one list says)."""
    if overrides in FIT_CONFIGS:
        return "fit"
    if overrides in HELDOUT_CONFIGS:
        return "heldout"
    raise AreaError(f"config {overrides} is neither in dse.area.FIT_CONFIGS nor in HELDOUT_CONFIGS")


class AreaError(VTAError):
    """An `--area` choice or model data that cannot be used; the message says what is accepted."""


@dataclass(frozen=True)
class Area:
    """What `--area` asked for: synthesis on `target` (hw.synth's name) or the model of it."""

    target: str
    model: bool
    pnr: bool

    @property
    def source(self) -> str:
        return f"model {self.target}" if self.model else f"yosys {self.target}"


def parse_area(text: str, pnr: bool = False) -> Area:
    """`ecp5`, `xc7`, `model` (of ECP5), `model:ecp5` or `model:xc7`; `pnr` only with `ecp5`."""
    if text not in AREA_CHOICES:
        raise AreaError(f"--area {text!r} is not known; accepted: {', '.join(AREA_CHOICES)}")
    model = text.startswith("model")
    target = SYNTH_TARGETS[text.partition(":")[2] or "ecp5"] if model else SYNTH_TARGETS[text]
    if pnr and (model or target != "ecp5"):
        raise AreaError(f"--place-and-route needs --area ecp5 (nextpnr places ECP5 only), got --area {text}")
    return Area(target, model, pnr)


def config_of(overrides: dict, base: str = "1x8x8") -> Config:
    """`base` with `overrides`, named like a sweep point's config."""
    b = Config.load(base)
    name = "+".join([b.name] + [f"{k}={v}" for k, v in overrides.items()])
    return Config.from_dict({**b.to_dict(), **overrides}, name=name)


def features(cfg: Config) -> dict:
    """What the model sees of a config: its structure, not its name."""
    return {"macs": cfg.BATCH * cfg.BLOCK_IN * cfg.BLOCK_OUT, "acc_lanes": cfg.BATCH * cfg.BLOCK_OUT,
            "bus_bits": cfg.bus_bytes * 8, "cmd_queue": cfg.CMD_QUEUE_DEPTH, "tokens": cfg.TOKEN_DEPTH,
            "sram_bits": sum(b.depth * b.entry_bytes * 8 for b in cfg.buffers.values())}


def memories(cfg: Config, target: str = "ecp5") -> list:
    """(depth, bits) of every block-RAM memory of vta_top (hw/rtl/vta_top.v) on `target`: UOP in
    one bank per micro-op of a bus beat (hw/rtl/vta_sram_banked.v), then INP, WGT, ACC and OUT
    (OUT addressed as ACC is). On ECP5 a UOP bank is as wide as the micro-op's used index bits
    (dst + src + wgt): a DP16KD of the wrapper whose outputs nothing reads is removed; Yosys'
    xc7 inference maps the whole entry."""
    b = cfg.buffers
    banks = max(cfg.bus_bytes // b["uop"].entry_bytes, 1)
    uop_bits = b["uop"].entry_bytes * 8
    if target == "ecp5":
        uop_bits = min(cfg.LA + max(cfg.LA, cfg.LI) + cfg.LW, uop_bits)
    return ([(b["uop"].depth // banks, uop_bits)] * banks
            + [(b[n].depth, b[n].entry_bytes * 8) for n in ("inp", "wgt", "acc")]
            + [(b["acc"].depth, b["out"].entry_bytes * 8)])


def _blocks(depth: int, bits: int, target: str) -> int:
    shapes = BRAM_SHAPES[target]
    if target == "ecp5":        # the wrapper's shape: the shallowest at least as deep as the memory
        d, w = min((s for s in shapes if s[0] >= depth), default=shapes[0])
        return math.ceil(depth / d) * math.ceil(bits / w)
    return min(math.ceil(depth / d) * math.ceil(bits / w) for d, w in shapes)


def bram_blocks(cfg: Config, target: str) -> float:
    """Block RAMs of the config's SRAMs, each memory mapped as the target's flow maps it."""
    return sum(_blocks(depth, bits, target) for depth, bits in memories(cfg, target)) * BRAM_UNIT[target]


def synthesise(cfg: Config, area: Area) -> dict:
    """The Dask task of one hardware config: Yosys' counts; with `pnr`, nextpnr's Fmax where the
    design fits the LFE5UM-85F, else the resources it exceeds in `fmax_reason`."""
    res = synth_config(cfg, area.target, pnr=False)
    out = {k: res[k] for k in RESOURCES}
    if area.pnr:
        over = [f"{k.upper()} {out[k]:g} > {cap:,}" for k, cap in ECP5_85F.items() if out[k] > cap]
        if over:
            out["fmax_reason"] = "does not fit the LFE5UM-85F: " + ", ".join(over)
        else:
            out["fmax_mhz"] = synth_config(cfg, "ecp5", pnr=True)["fmax_mhz"]
    return out


def key(cfg: Config, area: Area) -> str:
    """The hardware identity points share their area by: hw.synth's cache key."""
    return run_dir(cfg, area.target, area.pnr).name


def _data(target: str) -> dict:
    path = DATA_DIR / f"area_{target}.json"
    if not path.is_file():
        raise AreaError(f"no area-model data for {target} ({path}); write it with "
                        f"`python bench/bench_area.py --target {target}`")
    return json.loads(path.read_text())


def load_data(target: str) -> list:
    return _data(target)["rows"]


def stale(target: str) -> str | None:
    """Why the model's data for `target` no longer describe today's RTL, or None: the data record
    the hash of the RTL's logic they were synthesised from (hw.build.rtl_digest)."""
    fitted, today = _data(target).get("rtl_hash"), rtl_digest()
    if fitted == today:
        return None
    return (f"the area model for {target} was fitted on RTL {fitted or '(unrecorded)'}, and the RTL has "
            f"changed since (today {today}): its figures describe the old hardware; refit it with "
            f"`python bench/bench_area.py --target {target}`")


@lru_cache(maxsize=None)
def fit(target: str) -> dict:
    """{resource: (feature names, coefficients, constant last)} fitted on the `fit` rows."""
    rows = [r for r in load_data(target) if role(r["overrides"]) == "fit"]
    model = {}
    for res, names in FIT_FEATURES.items():
        x = np.array([[r["features"][n] for n in names] + [1.0] for r in rows], dtype=float)
        y = np.array([r[res] for r in rows], dtype=float)
        if len(rows) < x.shape[1]:
            raise AreaError(f"area model {target}: {len(rows)} fit rows for {x.shape[1]} coefficients of {res}")
        coef, *_ = np.linalg.lstsq(x, y, rcond=None)
        model[res] = (names, tuple(float(c) for c in coef))
    return model


def predict(cfg: Config, target: str) -> dict:
    """The model's lut/ff/dsp/bram for `cfg` on `target` (ConfigError where the RTL cannot serve it)."""
    check_supported(cfg)
    f = features(cfg)
    out = {}
    for res, (names, coef) in fit(target).items():
        value = sum(c * f[n] for n, c in zip(names, coef)) + coef[-1]
        out[res] = int(round(value))
    out["bram"] = bram_blocks(cfg, target)
    return out
