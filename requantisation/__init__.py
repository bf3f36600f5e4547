"""Requantisation: how every accelerator op turns int32 accumulators into int8, in one package.

| fact | where |
|---|---|
| the int8/int32 bounds | `bounds` (defined in `vta_sim.config`) |
| the three forms, as one typed union `Requant` | `rule`: `PowerOfTwo`, `fixed_point.ScaledRequant`, `multiply_shift.MultiplyShift` (one REQ instruction) |
| the fixed-point rule: multiplier, split, rounding, clamp bounds, zero point | `fixed_point` (`choose`, `choose_sum`, `round_shift`) |
| the ALU stage list of every op | `stages` (`epilogue`, `tail`), `add` (the residual add's) |
| the integer block in Relax: emitted, matched by the BYOC pattern, read back | `relax` |
| REQ's multiplier and shift | `multiply_shift` (`choose`, `requantize_ref`) |
| the numpy references | `rule.reference`, `fixed_point.requantize_ref`, `multiply_shift.requantize_ref`, `add.add_ref` |
"""
from .bounds import INT8_MAX, INT8_MIN, INT32_MAX, INT32_MIN
from .fixed_point import ChannelParams, ScaledRequant, choose, choose_sum, round_shift
from .multiply_shift import MultiplyShift
from .rule import PowerOfTwo, Requant, as_requant, reference

__all__ = ["INT8_MIN", "INT8_MAX", "INT32_MIN", "INT32_MAX", "ChannelParams", "ScaledRequant", "MultiplyShift",
           "choose", "choose_sum", "round_shift", "PowerOfTwo", "Requant", "as_requant", "reference"]
