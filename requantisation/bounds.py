"""The value ranges every requantisation clamps to and checks against: int8 activations and
weights, int32 accumulators. Defined once in `vta_sim.config` (spec section 2, what the
accelerator holds); the layers above take them from here."""
from vta_sim.config import INT8_MAX, INT8_MIN, INT32_MAX, INT32_MIN

__all__ = ["INT8_MIN", "INT8_MAX", "INT32_MIN", "INT32_MAX"]
