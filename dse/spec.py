"""A sweep specification (docs/dse.md): the grid of configs x workloads x vthreads, checked.

A spec is JSON:

    {"base": "1x8x8",                                   # named config or JSON file (default 1x8x8)
     "configs": {"LOG_INP_BUFF_SIZE": [13, 14, 15], "DMA_READ_LATENCY": [8, 32]},   # a grid, or
     # "configs": [{"LOG_BATCH": 1}, {"LOG_BLOCK_IN": 4, "LOG_BLOCK_OUT": 4}],     # a list of designs
     "workloads": ["resnet18.C5", "gemm:16x256x64", "conv2d:14x14x64x64x3x1x1", "model:digits"],
     "vthreads": [1, 2],                                # default [2]
     "seed": 0}                                         # random data of every point (default 0)

Every combination is one `Point`. Mistakes (unknown keys, malformed workloads, empty lists) are
refused here, before anything runs, with what is accepted; a config value that does not fit the
hardware is not a mistake but an infeasible point, found when the point runs.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

from schedules.measure import layer_shape
from schedules.layers import RESNET18
from vta_sim.config import SPEC_KEYS, TIMING_DEFAULTS, Config
from vta_sim.errors import VTAError

SPEC_FIELDS = ("base", "configs", "workloads", "vthreads", "seed")
CONFIG_KEYS = SPEC_KEYS + tuple(TIMING_DEFAULTS)
MODELS = ("digits", "resnet18")
WORKLOAD_FORMS = ("resnet18.C1 .. resnet18.C11", "gemm:MxKxN", "conv2d:HxWxICxOCxKxPADxSTRIDE",
                  "model:" + "|".join(MODELS))


class SpecError(VTAError):
    """A sweep spec that cannot be run; the message names the field and what is accepted."""


@dataclass(frozen=True)
class SweepWorkload:
    """What one point runs: `kind` is conv2d, gemm or model; `shape` run_vta's shape dict (or the model name)."""

    name: str
    kind: str
    shape: tuple   # sorted (key, value) pairs, hashable; dict(shape) for run_vta


def parse_workload(text: str) -> SweepWorkload:
    """`resnet18.C5`, `gemm:MxKxN`, `conv2d:HxWxICxOCxKxPADxSTRIDE` or `model:NAME`."""
    if not isinstance(text, str):
        raise SpecError(f"workload {text!r} is not a string; accepted: {', '.join(WORKLOAD_FORMS)}")
    kind, _, rest = text.partition(":")
    if text.lower().startswith("resnet18."):
        try:
            shape = layer_shape(text)
        except KeyError as exc:
            raise SpecError(exc.args[0]) from None
        return SweepWorkload(text, "conv2d", tuple(sorted(shape.items())))
    if kind == "model":
        if rest not in MODELS:
            raise SpecError(f"workload {text!r}: unknown model; accepted: {', '.join('model:' + m for m in MODELS)}")
        return SweepWorkload(text, "model", (("model", rest),))
    names = {"gemm": ("m", "k", "n"), "conv2d": ("h", "w", "ic", "oc", "k", "pad", "stride")}.get(kind)
    dims = rest.split("x")
    if names is None or len(dims) != len(names) or not all(d.isdigit() for d in dims):
        raise SpecError(f"workload {text!r} is not understood; accepted: {', '.join(WORKLOAD_FORMS)} "
                        f"(ResNet-18 layers: {', '.join(RESNET18)})")
    return SweepWorkload(text, kind, tuple(sorted(zip(names, map(int, dims)))))


@dataclass(frozen=True)
class Point:
    """One design point: the base config with `overrides`, one workload, a thread count."""

    base: str
    overrides: tuple   # (key, value) pairs in the spec's key order
    workload: SweepWorkload
    vthreads: int
    seed: int

    def ident(self) -> tuple:
        """What identifies the point in the results file (all as the CSV writes them)."""
        return (self.base, *(str(v) for _, v in self.overrides), self.workload.name, str(self.vthreads))


@dataclass(frozen=True)
class Spec:
    base: str
    configs: dict
    workloads: tuple
    vthreads: tuple
    seed: int

    @property
    def keys(self) -> tuple:
        """The swept config keys, in the spec's order (the CSV's config columns)."""
        return tuple(self.configs)

    def points(self) -> list:
        grid = (zip(*self.configs.values()) if isinstance(self.configs, _Designs)
                else itertools.product(*self.configs.values()))
        return [Point(self.base, tuple(zip(self.keys, values)), w, v, self.seed)
                for values in grid for w in self.workloads for v in self.vthreads]


def _list(spec: dict, field: str, default=None, label: str | None = None) -> list:
    value = spec.get(field, default)
    if not isinstance(value, list) or not value:
        raise SpecError(f"spec field {label or field!r} must be a non-empty list, got {value!r}")
    return value


def _ints(field: str, values: list) -> None:
    bad = [v for v in values if not isinstance(v, int) or isinstance(v, bool)]
    if bad:
        raise SpecError(f"spec field {field!r}: values must be integers, got {bad}")


def _designs(items: list, base: dict) -> dict:
    """A list of designs ({key: value}, the base's value where a key is missing) as the grid's
    {key: values}, marked so that `points` zips instead of crossing them."""
    if not items or not all(isinstance(d, dict) for d in items):
        raise SpecError(f"spec field 'configs' as a list must hold objects of config keys, got {items!r}")
    keys = list(dict.fromkeys(k for d in items for k in d))
    return _Designs({k: [d.get(k, base.get(k)) for d in items] for k in keys})


class _Designs(dict):
    """Config values listed design by design (the i-th value of every key is design i)."""


def from_dict(spec: dict) -> Spec:
    if not isinstance(spec, dict):
        raise SpecError(f"a sweep spec is a JSON object, got {type(spec).__name__}")
    unknown = sorted(set(spec) - set(SPEC_FIELDS))
    if unknown:
        raise SpecError(f"unknown spec field(s) {', '.join(unknown)}; accepted: {', '.join(SPEC_FIELDS)}")
    base = spec.get("base", "1x8x8")
    Config.load(base)      # a base that does not load is a mistake in the spec, not a design point
    configs = spec.get("configs", {})
    if isinstance(configs, list):
        configs = _designs(configs, Config.load(base).to_dict())
    if not isinstance(configs, dict):
        raise SpecError(f"spec field 'configs' must map config keys to lists of values (a grid) or be a list "
                        f"of objects of config keys (one design each), got {configs!r}")
    bad = sorted(set(configs) - set(CONFIG_KEYS))
    if bad:
        raise SpecError(f"unknown config key(s) {', '.join(bad)} in 'configs'; accepted: {', '.join(CONFIG_KEYS)}")
    for k in configs:
        _ints(f"configs.{k}", _list(configs, k, label=f"configs.{k}"))
    vthreads = _list(spec, "vthreads", [2])
    _ints("vthreads", vthreads)
    if set(vthreads) - {1, 2}:
        raise SpecError(f"spec field 'vthreads': {vthreads}; accepted values: 1, 2")
    seed = spec.get("seed", 0)
    _ints("seed", [seed])
    workloads = tuple(parse_workload(w) for w in _list(spec, "workloads"))
    return Spec(str(base), configs if isinstance(configs, _Designs) else dict(configs), workloads,
                tuple(vthreads), seed)


def load(path: str | Path) -> Spec:
    p = Path(path)
    try:
        data = json.loads(p.read_text())
    except OSError as exc:
        raise SpecError(f"cannot read sweep spec {p}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise SpecError(f"sweep spec {p}: not valid JSON ({exc})") from None
    return from_dict(data)
