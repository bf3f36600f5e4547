"""Hardware configuration: the spec's JSON keys, everything derived from them, and the timing model.

One source of truth: buffer sizes, entry shapes, depths, index widths and latencies are computed
here from the JSON and nothing else in the project hard-codes them.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from .encoding import SRAM_BASE_BITS, overfull_words
from .errors import ConfigError

#: The value ranges of what the accelerator holds: int8 inputs, weights and outputs, int32
#: accumulators (spec section 2). Every clamp, bound and zero-point check derives from these.
INT8_MIN, INT8_MAX = int(np.iinfo(np.int8).min), int(np.iinfo(np.int8).max)
INT32_MIN, INT32_MAX = int(np.iinfo(np.int32).min), int(np.iinfo(np.int32).max)

#: Keys every configuration file must carry (spec section 1).
SPEC_KEYS = (
    "LOG_INP_WIDTH", "LOG_WGT_WIDTH", "LOG_ACC_WIDTH",
    "LOG_BATCH", "LOG_BLOCK_IN", "LOG_BLOCK_OUT",
    "LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE", "LOG_ACC_BUFF_SIZE",
    "LOG_BUS_WIDTH", "TOKEN_DEPTH", "CMD_QUEUE_DEPTH",
)

#: Timing-model parameters (docs/timing.md) with their defaults; a config file may override them.
TIMING_DEFAULTS = {
    "DMA_READ_LATENCY": 8,   # cycles from read-burst grant to its first data beat
    "DMA_WRITE_LATENCY": 4,  # cycles from the last write beat of a burst to its response
    "GEMM_PIPELINE": 8,      # GEMM pipeline fill + drain, cycles per instruction (the RTL's depth)
    "ALU_PIPELINE": 7,       # ALU pipeline fill + drain, cycles per instruction (the RTL's depth)
    # the nominal clock of a configuration with no placed-and-routed clock in CLOSED_CLOCKS
    # (report_clock); a conservative figure below what the shipped RTL closes at
    "CLOCK_MHZ": 70,
}

NAMED = ("1x8x8", "8x8x8")

@dataclass(frozen=True)
class ClosedClock:
    """The clock a configuration's RTL closes timing at, placed and routed, and how it was found."""

    mhz: float            # the constraint every endpoint meets: the clock reports use
    fmax_mhz: float       # nextpnr's Fmax estimate for the same netlist
    device: str
    command: str
    date: str
    rtl: str              # the commit whose RTL was placed


#: Per shipped configuration, where one was placed and routed (docs/hardware.md).
CLOSED_CLOCKS = {
    # with REQ (ALU opcode 5): placer seed 2 meets 100 MHz at every one of 35,468 endpoints; seeds
    # 1 and 3 of the same netlist miss it (99.2 and 92.0 MHz: docs/hardware.md, "Today's figures")
    "1x8x8": ClosedClock(100.0, 102.1, "Lattice ECP5-85F",
                         "vta-sim hw synth --config 1x8x8 --target ecp5 --seed 2", "2026-12-07", "2eb0241"),
}


@dataclass(frozen=True)
class Clock:
    """The clock that turns cycles into seconds, and where it came from (printed beside every
    frame rate)."""

    mhz: float
    source: str

    def describe(self) -> str:
        return f"{self.mhz:g} MHz ({self.source})"


def report_clock(cfg: "Config") -> Clock:
    """The clock the configuration closes at where it was placed and routed (a shipped
    configuration, unchanged), else its nominal CLOCK_MHZ, saying so."""
    closed = CLOSED_CLOCKS.get(cfg.name)
    if closed is not None and cfg.keys == Config.load(cfg.name).keys:
        return Clock(closed.mhz, f"{cfg.name} placed and routed on the {closed.device}, every endpoint "
                                 f"meets it, Fmax {closed.fmax_mhz:g} MHz: `{closed.command}`, "
                                 f"{closed.date}, RTL {closed.rtl}")
    return Clock(float(cfg.timing["CLOCK_MHZ"]), f"nominal CLOCK_MHZ: no placed-and-routed clock is "
                                                 f"recorded for {cfg.name!r}")


#: Memory types (spec section 2).
MEM_UOP, MEM_WGT, MEM_INP, MEM_ACC, MEM_OUT, MEM_ACC_8BIT = range(6)
MEM_NAMES = {MEM_UOP: "UOP", MEM_WGT: "WGT", MEM_INP: "INP", MEM_ACC: "ACC", MEM_OUT: "OUT",
             MEM_ACC_8BIT: "ACC_8BIT"}


@dataclass(frozen=True)
class Buffer:
    """One on-chip SRAM: its entry shape/dtype and depth (entries)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    depth: int

    # Cached (the simulator asks per instruction); cached_property stores in __dict__, which a
    # frozen dataclass allows, and fields, equality and hashing are unaffected.
    @cached_property
    def entry_bytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize

    @cached_property
    def index_bits(self) -> int:
        return int(math.log2(self.depth))


@dataclass(frozen=True, eq=False)
class Config:
    """A VTA-8 hardware configuration (spec section 1) plus the timing parameters."""

    keys: dict[str, int]
    name: str = "custom"
    timing: dict[str, int] = field(default_factory=dict)

    # ---------------------------------------------------------------- construction
    @classmethod
    def default(cls) -> "Config":
        return cls.load("1x8x8")

    @classmethod
    def load(cls, name_or_path: "str | Path | Config | None" = None) -> "Config":
        """A shipped configuration by name (`1x8x8`, `8x8x8`) or a JSON file path."""
        if isinstance(name_or_path, Config):
            return name_or_path
        if name_or_path is None:
            name_or_path = "1x8x8"
        text = str(name_or_path)
        if text in NAMED:
            data = json.loads(resources.files("vta_sim.configs").joinpath(f"{text}.json").read_text())
            return cls.from_dict(data, name=text)
        path = Path(text)
        if not path.is_file():
            raise ConfigError(f"unknown configuration {text!r}: give one of {', '.join(NAMED)} "
                              "or the path of a JSON file")
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not valid JSON ({exc})") from None
        return cls.from_dict(data, name=path.stem)

    @classmethod
    def from_dict(cls, data: object, name: str = "custom") -> "Config":
        if not isinstance(data, dict):
            raise ConfigError(f"configuration must be a JSON object, got {type(data).__name__}")
        missing = [k for k in SPEC_KEYS if k not in data]
        if missing:
            raise ConfigError(f"configuration {name!r} lacks key(s) {', '.join(missing)}")
        unknown = sorted(set(data) - set(SPEC_KEYS) - set(TIMING_DEFAULTS))
        if unknown:
            raise ConfigError(f"configuration {name!r} has unknown key(s) {', '.join(unknown)}; "
                              f"accepted: {', '.join(SPEC_KEYS + tuple(TIMING_DEFAULTS))}")
        for k, v in data.items():
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ConfigError(f"configuration {name!r}: {k} must be a non-negative integer, got {v!r}")
        keys = {k: data[k] for k in SPEC_KEYS}
        timing = {k: data.get(k, d) for k, d in TIMING_DEFAULTS.items()}
        cfg = cls(keys=keys, name=name, timing=timing)
        cfg.validate()
        return cfg

    def to_dict(self) -> dict[str, int]:
        return {**self.keys, **self.timing}

    def to_text(self) -> str:
        """The config as a compiled program carries it (name included, for reports)."""
        return json.dumps({"name": self.name, "keys": self.to_dict()})

    @classmethod
    def from_text(cls, text: str) -> "Config":
        """The inverse of `to_text`: what a compiled program's host side reads back."""
        try:
            data = json.loads(str(text))
            keys, name = data["keys"], data["name"]
        except (json.JSONDecodeError, TypeError, KeyError) as exc:
            raise ConfigError(f"not a configuration written by Config.to_text ({exc!r}): {str(text)[:80]!r}") from None
        return cls.from_dict(keys, name=name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.to_dict().items())))

    def __getattr__(self, item: str) -> int:
        # Spec keys and timing parameters read as attributes: cfg.LOG_BATCH, cfg.DMA_READ_LATENCY.
        for table in ("keys", "timing"):
            d: dict[str, int] = object.__getattribute__(self, table)
            if item in d:
                return d[item]
        raise AttributeError(item)

    # ---------------------------------------------------------------- derived values
    @property
    def BATCH(self) -> int:
        return 1 << self.LOG_BATCH

    @property
    def BLOCK_IN(self) -> int:
        return 1 << self.LOG_BLOCK_IN

    @property
    def BLOCK_OUT(self) -> int:
        return 1 << self.LOG_BLOCK_OUT

    @property
    def bus_bytes(self) -> int:
        return (1 << self.LOG_BUS_WIDTH) // 8

    @property
    def burst_boundary(self) -> int:
        """Bytes at whose multiples a DMA row splits into bursts: AXI4's 4 KiB page, or 256 beats
        when that is shorter (docs/timing.md, "Bursts")."""
        return min(4096, 256 * self.bus_bytes)

    @property
    def macs_per_cycle(self) -> int:
        return self.BATCH * self.BLOCK_IN * self.BLOCK_OUT

    def _width_dtype(self, log_width: int) -> np.dtype[Any]:
        return np.dtype({3: np.int8, 4: np.int16, 5: np.int32, 6: np.int64}[log_width])

    @cached_property
    def buffers(self) -> dict[str, Buffer]:
        """The five SRAMs by name: entry shape, element dtype, depth."""
        inp_t = self._width_dtype(self.LOG_INP_WIDTH)
        wgt_t = self._width_dtype(self.LOG_WGT_WIDTH)
        acc_t = self._width_dtype(self.LOG_ACC_WIDTH)
        b, bi, bo = self.BATCH, self.BLOCK_IN, self.BLOCK_OUT
        spec = {
            "uop": ((), np.dtype(np.uint32), self.LOG_UOP_BUFF_SIZE),
            "inp": ((b, bi), inp_t, self.LOG_INP_BUFF_SIZE),
            "wgt": ((bo, bi), wgt_t, self.LOG_WGT_BUFF_SIZE),
            "acc": ((b, bo), acc_t, self.LOG_ACC_BUFF_SIZE),
        }
        out = {}
        for name, (shape, dt, log_bytes) in spec.items():
            entry = int(np.prod(shape)) * dt.itemsize
            out[name] = Buffer(name, shape, dt, (1 << log_bytes) // entry)
        # OUT has ACC's depth and the input element width (spec section 1).
        out["out"] = Buffer("out", (b, bo), inp_t, out["acc"].depth)
        return out

    @property
    def LU(self) -> int:
        return self.buffers["uop"].index_bits

    @property
    def LI(self) -> int:
        return self.buffers["inp"].index_bits

    @property
    def LW(self) -> int:
        return self.buffers["wgt"].index_bits

    @property
    def LA(self) -> int:
        return self.buffers["acc"].index_bits

    def dram_elem_bytes(self, mem_type: int) -> int:
        """Bytes of one DRAM element of a memory type (ACC_8BIT: an ACC entry in int8)."""
        return self._elem_bytes[mem_type]

    @cached_property
    def _elem_bytes(self) -> dict[int, int]:
        bufs = self.buffers
        return {MEM_UOP: bufs["uop"].entry_bytes, MEM_WGT: bufs["wgt"].entry_bytes,
                MEM_INP: bufs["inp"].entry_bytes, MEM_ACC: bufs["acc"].entry_bytes,
                MEM_OUT: bufs["out"].entry_bytes,
                MEM_ACC_8BIT: self.BATCH * self.BLOCK_OUT}

    # ---------------------------------------------------------------- validation
    def validate(self) -> None:
        k = self.keys
        for key in ("LOG_INP_WIDTH", "LOG_WGT_WIDTH"):
            if k[key] != 3:
                raise ConfigError(f"{key}={k[key]}: VTA-8 inputs and weights are int8 (3)")
        if k["LOG_ACC_WIDTH"] != 5:
            raise ConfigError(f"LOG_ACC_WIDTH={k['LOG_ACC_WIDTH']}: the accumulator is int32 (5)")
        if not 3 <= k["LOG_BUS_WIDTH"] <= 10:
            raise ConfigError(f"LOG_BUS_WIDTH={k['LOG_BUS_WIDTH']}: the bus must be 8 to 1024 bits (3..10)")
        for key in ("TOKEN_DEPTH", "CMD_QUEUE_DEPTH"):
            if k[key] < 1:
                raise ConfigError(f"{key}={k[key]}: a queue needs room for at least one entry")
        for name, buf in self.buffers.items():
            if buf.depth < 1 or buf.depth & (buf.depth - 1):
                raise ConfigError(f"{name.upper()} buffer of {buf.depth} entries: its size must be a "
                                  f"power-of-two multiple of the {buf.entry_bytes}-byte entry")
        for key, value in self.timing.items():
            if key != "CLOCK_MHZ" and value > 1 << 16:
                raise ConfigError(f"{key}={value}: latencies above 65536 cycles are not supported")
        if self.timing["CLOCK_MHZ"] < 1:
            raise ConfigError("CLOCK_MHZ must be at least 1")
        for word, used, limit, fields in overfull_words(self.LU, self.LI, self.LW, self.LA):
            raise ConfigError(f"configuration {self.name!r} does not fit the encoding: the {word} "
                              f"({limit} bits) needs {used} bits ({fields}); shrink the buffers")
        for sram in ("inp", "wgt", "acc", "uop"):
            if self.buffers[sram].index_bits > SRAM_BASE_BITS:
                raise ConfigError(f"{sram.upper()} depth needs {self.buffers[sram].index_bits} bits, "
                                  f"more than the {SRAM_BASE_BITS}-bit sram_base field of LOAD/STORE")

    def describe(self) -> str:
        bufs = self.buffers
        parts = [f"{n.upper()} {b.depth}x{b.entry_bytes}B" for n, b in bufs.items()]
        return (f"{self.name}: GEMM {self.BATCH}x{self.BLOCK_IN}x{self.BLOCK_OUT}, "
                + ", ".join(parts) + f", bus {self.bus_bytes} B/cycle")
