"""Integer LayerNormalization over the last axis of int8 tokens, in the ALU's arithmetic
(docs/ops.md, "LayerNorm on the ALU").

`quantize(layer_norm(s_x (q - z_x), gamma, beta, eps), s_y, z_y)` of a row q of D int8 values,
with 32-bit integer adds, multiplies and shifts, one integer square root and one exact division
per row, so that VTA-8's ALU runs it (schedules.vta_layer_norm) and this module's numpy form is
its reference, bit for bit:

1. c = (D q - sum(q)) >> a: D times the distance from the mean, exact before the shift (the
   input zero point cancels); a keeps |c| below 2^15.
2. V = sum(c^2 >> b) + E, at least 1: b keeps the sum below 2^29 for any row (the sum of squares
   of D values in -128..127 about their mean is at most D (255/2)^2); E = eps D^3 / (s_x^2 4^a 2^b)
   is the epsilon in these units. Then (x - mean) / sqrt(var + eps) = c sqrt(D / 2^b) / sqrt(V).
3. r = (2^k // isqrt(V 4^j)) 2^j: V is first moved up by 4^j (j <= NORM_STEPS, while below
   2^NORM_TOP) so that its square root keeps 13 or more bits on rows of nearly equal values; k
   as large as keeps c r below 2^30 for every V the row can have.
4. y = clamp(round_half_up((c r + B_i) G_i / 2^h) + z_y, -128, 127): REQ with the per-element
   multiplier G_i = round(2^h sqrt(D / 2^b) gamma_i / (s_y 2^k)) (31 bits, h as large as keeps
   it so) and B_i = round(2^h beta_i / (s_y G_i)), beta in c r's units. REQ's 64-bit product
   keeps all of c r: a 32-bit MUL by G_i needed c r shifted to 15 bits first, which made 0.6 %
   of the outputs differ from float at D = 128 (0.05 % with REQ).

The only roundings besides the output's are the floor shifts of steps 1, 2 and 4, the integer
square root and the quotient; docs/ops.md measures what they cost against onnxruntime.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vta_sim.errors import CompileError

from .bounds import INT8_MAX, INT8_MIN
from .multiply_shift import req_lanes

#: |c| < 2^C_BITS after the pre-shift, so c^2 < 2^30.
C_BITS = 15
#: V < 2^V_BITS: its square root has at most V_BITS / 2 bits (the ALU's isqrt takes 15).
V_BITS = 30
#: c r < 2^N_BITS, and with B_i below 2^31.
N_BITS = 30
#: G_i < 2^G_BITS (REQ's int32 multiplier).
G_BITS = 31
MAX_SHIFT = 62
#: V is multiplied by 4 up to NORM_STEPS times while below 2^NORM_TOP, before its square root.
NORM_STEPS, NORM_TOP = 7, 27
#: Scalar fields of the parameters, in the order they are packed into one int64 constant.
SCALARS = ("length", "pre_shift", "sq_shift", "eps_term", "k", "shift", "zero_point")


@dataclass(frozen=True)
class LayerNormParams:
    length: int                 # D
    pre_shift: int              # a
    sq_shift: int               # b
    eps_term: int               # E
    k: int                      # r = 2^k // isqrt(V)
    shift: int                  # h: REQ's shift
    zero_point: int             # z_y
    gamma: tuple[int, ...]      # G_i: REQ's multipliers
    beta: tuple[int, ...]       # B_i: added to c r

    def __post_init__(self) -> None:
        if len(self.gamma) != self.length or len(self.beta) != self.length:
            raise CompileError(f"layer norm over {self.length}: {len(self.gamma)} gammas and {len(self.beta)} betas")
        if not (1 <= self.shift <= MAX_SHIFT and 0 <= self.eps_term < 1 << (V_BITS - 1) and 1 <= self.k <= 30
                and INT8_MIN <= self.zero_point <= INT8_MAX
                and max(map(abs, self.gamma)) < 1 << G_BITS and max(map(abs, self.beta)) < 1 << N_BITS):
            raise CompileError(f"layer norm constants out of range: {self.describe()}")

    def describe(self) -> str:
        return (f"c>>{self.pre_shift}, sum c^2>>{self.sq_shift} + {self.eps_term}, 2^{self.k}//isqrt, "
                f"(c r + B) G >> {self.shift} {self.zero_point:+d}")

    def packed(self) -> np.ndarray:
        """The parameters as one int64 vector (the integer graph's constant)."""
        return np.array([*(getattr(self, f) for f in SCALARS), *self.gamma, *self.beta], np.int64)

    @classmethod
    def unpacked(cls, values: np.ndarray) -> LayerNormParams:
        v = [int(x) for x in np.asarray(values).reshape(-1)]
        n, d = len(SCALARS), v[0]
        if len(v) != n + 2 * d:
            raise CompileError(f"layer norm constant of {len(v)} values; {n} + 2 x {d} expected")
        return cls(*v[:n], tuple(v[n:n + d]), tuple(v[n + d:]))


def _ratio_bound(length: int, sq_shift: int, eps_term: int) -> float:
    """The largest |c| / isqrt(V) a row can give: |c| <= sqrt(2^b (V + D)) (each square loses
    less than 1 to its shift), largest where isqrt(V) is smallest for its V."""
    s = max(math.isqrt(max(eps_term, 1)), 1)
    return math.sqrt((1 << sq_shift) * ((s + 1) ** 2 - 1 + length)) / s


def choose(scale_x: float, gamma: np.ndarray, beta: np.ndarray, eps: float, scale_y: float,
           zero_y: int) -> LayerNormParams:
    """The integer LayerNorm for input scale `scale_x`, per-element gamma and beta (real),
    `eps`, output scale and zero point; CompileError naming what does not fit."""
    gamma, beta = np.asarray(gamma, np.float64).reshape(-1), np.asarray(beta, np.float64).reshape(-1)
    length = gamma.size
    for name, v in (("input scale", scale_x), ("output scale", scale_y)):
        if not (v > 0 and math.isfinite(v)):
            raise CompileError(f"layer norm {name} {v}: a positive finite scale is needed")
    if length < 2 or beta.size != length:
        raise CompileError(f"layer norm over {length} elements with {beta.size} betas: 2 or more, one beta each")
    if not (np.isfinite(gamma).all() and np.isfinite(beta).all() and eps >= 0 and math.isfinite(eps)):
        raise CompileError("layer norm gamma, beta and epsilon must be finite (epsilon >= 0)")
    if not INT8_MIN <= zero_y <= INT8_MAX:
        raise CompileError(f"layer norm output zero point {zero_y}: accepted {INT8_MIN}..{INT8_MAX}")
    pre = max(0, (length * 255).bit_length() - C_BITS)
    # sum(c^2) = D^2 sum((q - mean)^2) <= D^3 (255/2)^2 before the pre-shift: below 2^(V_BITS-1) after b
    sq = max(0, math.ceil(math.log2(length ** 3 * 127.5 ** 2 / 4 ** pre)) - (V_BITS - 1))
    eps_term = round(eps * length ** 3 / (scale_x ** 2 * 4 ** pre * 2 ** sq))
    if eps_term >= 1 << (V_BITS - 1):
        raise CompileError(f"layer norm epsilon {eps:g} is {eps_term:,} in the integer variance's units (input "
                           f"scale {scale_x:.4g}): more than 2^{V_BITS - 1}; a larger input scale would fit")
    k = N_BITS - math.ceil(math.log2(_ratio_bound(length, sq, eps_term)))
    if k < 8:
        raise CompileError(f"layer norm over {length} elements: the quotient keeps only {k} bits")
    unit = math.sqrt(length / 2 ** sq) * 2.0 ** -k / scale_y      # G_i / (gamma_i 2^h)
    if not np.all(gamma != 0):
        raise CompileError("layer norm with a gamma of 0: its output there is beta alone, which REQ's product "
                           "cannot give")
    shift = min(MAX_SHIFT, math.floor(math.log2(((1 << G_BITS) - 1) / (float(np.abs(gamma).max()) * unit))))
    g = np.rint(gamma * unit * 2.0 ** shift)
    if shift < 8 or not np.all(g != 0):
        raise CompileError(f"layer norm gamma from {np.abs(gamma).min():.4g} to {np.abs(gamma).max():.4g}: the "
                           "integer multipliers keep under 8 bits")
    b = np.rint(beta / scale_y * 2.0 ** shift / g)
    if np.abs(b).max() >= 1 << N_BITS:
        raise CompileError(f"layer norm beta up to {np.abs(beta).max():.4g} against gamma down to "
                           f"{np.abs(gamma).min():.4g}: beta in the normalised value's units does not fit 30 bits")
    return LayerNormParams(length, pre, sq, eps_term, k, shift, int(zero_y), tuple(int(v) for v in g),
                           tuple(int(v) for v in b))


def isqrt(v: np.ndarray) -> np.ndarray:
    """floor(sqrt(v)) of non-negative int64 below 2^53, elementwise."""
    r = np.floor(np.sqrt(v.astype(np.float64))).astype(np.int64)
    r += (r + 1) * (r + 1) <= v
    r -= r * r > v
    return r


def reference(q: np.ndarray, p: LayerNormParams) -> np.ndarray:
    """The integer LayerNorm of int8 rows q (..., D) over the last axis: int8, the ALU's bits."""
    q = np.asarray(q)
    if q.shape[-1] != p.length:
        raise CompileError(f"layer norm rows of {q.shape[-1]} elements, its parameters are for {p.length}")
    x = q.astype(np.int64)
    c = (p.length * x - x.sum(axis=-1, keepdims=True)) >> p.pre_shift
    v = np.maximum(((c * c) >> p.sq_shift).sum(axis=-1, keepdims=True) + p.eps_term, 1)
    j = np.zeros_like(v)
    for _ in range(NORM_STEPS):
        up = (v >> NORM_TOP) == 0
        v, j = v << (2 * up), j + up
    r = ((1 << p.k) // isqrt(v)) << j
    return req_lanes(c * r + np.array(p.beta, np.int64), np.array(p.gamma, np.int64), p.shift,
                     p.zero_point).astype(np.int8)


def float_reference(q: np.ndarray, scale_x: float, zero_x: int, gamma: np.ndarray, beta: np.ndarray, eps: float,
                    scale_y: float, zero_y: int) -> np.ndarray:
    """What onnxruntime's QDQ LayerNormalization computes: dequantise, float LayerNorm,
    quantise (ties to even), int8."""
    x = (q.astype(np.float64) - zero_x) * scale_x
    mean = x.mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps) * gamma + beta
    return np.clip(np.rint(y / scale_y) + zero_y, INT8_MIN, INT8_MAX).astype(np.int8)
