"""Integer softmax over the last axis of int8 scores, in the ALU's arithmetic (docs/ops.md,
"Softmax on the ALU").

The quantised softmax `quantize(softmax(s_in * (q - z_in)), s_out, z_out)` of a row q of int8
scores, computed with 32-bit integer adds, multiplies and shifts and one exact division per
row, so that VTA-8's ALU runs it (schedules.vta_softmax) and this module's numpy form is its
reference, bit for bit:

1. u = max(q) - q (0..255; the input zero point cancels).
2. t = u * c, c = round(s_in * log2(e) * 2^F) (an ALU immediate, F <= 15 bits of fraction):
   t / 2^F is u's exponent in base 1/2.
3. z = (t + 2^(F-1)) >> F and f = t - z * 2^F in [-2^(F-1), 2^(F-1)): the nearest integer
   part and a centred fraction (on the ALU: the low F bits of t, sign-extended by a left and an
   arithmetic right shift).
4. e = P(f * 2^(15-F)) >> z: P(x) ~ 2^14 * 2^(-x / 2^15), a cubic in Horner form with a floor
   shift by 15 after each multiply (max relative error 1.1e-4 on the centred interval; the
   shifts add at most a unit), then the exact power of two. e(max) = P(0) = 2^14 exactly, so
   the row's sum lies in [2^14, T * 2^14].
5. r = D // sum, D = round(2^n / s_out): the exact quotient (the ALU's restoring division, one
   quotient bit per step).
6. y = clamp(round_half_up(e * r / 2^n) + z_out, -128, 127): REQ with r as its per-lane
   multiplier (docs/isa-extensions.md).

n is chosen so that r keeps at least 12 significant bits at the largest sum (a quotient error
of 1/4096 of the output's range at most), and D stays below 2^46 so that the quotient fits 31
bits.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from vta_sim.errors import CompileError

from .bounds import INT8_MAX, INT8_MIN
from .multiply_shift import req_lanes

#: Fraction bits of f after step 4's alignment, and of the polynomial's shifts.
POLY_FRAC = 15
#: e(0) = 2^E_BITS: the value of the row's largest entry.
E_BITS = 14
#: P's coefficients (Q14, highest power first): a least-squares fit of 2^-x on Chebyshev nodes
#: of [-1/2, 1/2], the constant term 2^14 exactly.
POLY = (-916, 3975, -11356, 1 << E_BITS)
#: The ALU's signed 16-bit immediate bounds c and every coefficient.
IMM_MAX = (1 << 15) - 1
#: The quotient keeps at least this many bits at the largest row sum.
QUOTIENT_BITS = 12
#: The REQ shift's bound (6-bit field; the compiler's limit as for the other REQ users).
MAX_SHIFT = 62


@dataclass(frozen=True)
class SoftmaxParams:
    """The constants of one integer softmax over rows of `length` int8 scores."""
    length: int          # T: entries per row (the axis reduced)
    c: int               # exponent multiplier, round(s_in * log2(e) * 2^frac), 1..IMM_MAX
    frac: int            # F, 1..15
    dividend: int        # D = round(2^shift / s_out)
    shift: int           # n: REQ's right shift
    zero_point: int      # z_out
    lo: int = INT8_MIN
    hi: int = INT8_MAX

    def __post_init__(self) -> None:
        """Refuse constants no `choose` gives (a graph's constant read back wrong, say)."""
        if not (1 <= self.c <= IMM_MAX and 1 <= self.frac <= POLY_FRAC and 1 <= self.dividend < 1 << 46
                and 0 <= self.shift <= MAX_SHIFT and self.length >= 1 and INT8_MIN <= self.zero_point <= INT8_MAX):
            raise CompileError(f"softmax constants {self}: c in 1..{IMM_MAX}, frac in 1..{POLY_FRAC}, a dividend "
                               f"in 1..2^46, shift in 0..{MAX_SHIFT} and an int8 zero point are accepted")

    @property
    def steps(self) -> int:
        """Quotient bits the restoring division computes; the dividend's top bits before them
        are the first remainder (below 2^E_BITS, the smallest row sum)."""
        return max(self.dividend.bit_length() - E_BITS, 0)

    @property
    def first_remainder(self) -> int:
        return self.dividend >> self.steps

    def describe(self) -> str:
        return f"exp2(-u*{self.c}/2^{self.frac}), {self.dividend}//sum >> {self.shift} {self.zero_point:+d}"

    def packed(self) -> np.ndarray:
        """The parameters as one int64 vector (the integer graph's constant)."""
        return np.array([getattr(self, f.name) for f in dataclasses.fields(self)], np.int64)

    @classmethod
    def unpacked(cls, values: np.ndarray) -> SoftmaxParams:
        return cls(*(int(v) for v in np.asarray(values).reshape(-1)))


def choose(scale_in: float, scale_out: float, zero_out: int, length: int,
           lo: int = INT8_MIN, hi: int = INT8_MAX) -> SoftmaxParams:
    """The integer softmax for input scale `scale_in`, output scale and zero point, rows of
    `length`; CompileError naming what does not fit."""
    if not (scale_in > 0 and math.isfinite(scale_in)):
        raise CompileError(f"softmax input scale {scale_in}: a positive finite scale is needed")
    if not (scale_out > 0 and math.isfinite(scale_out)):
        raise CompileError(f"softmax output scale {scale_out}: a positive finite scale is needed")
    if length < 1:
        raise CompileError(f"softmax over {length} entries: at least 1 is needed")
    if not INT8_MIN <= zero_out <= INT8_MAX:
        raise CompileError(f"softmax output zero point {zero_out}: accepted {INT8_MIN}..{INT8_MAX}")
    rate = scale_in * math.log2(math.e)
    frac = min(POLY_FRAC, math.floor(math.log2(IMM_MAX / rate)))
    if frac < 1:
        raise CompileError(f"softmax input scale {scale_in:.4g}: a step of the scores halves the "
                           f"probability {rate:.3g} times; the exponent multiplier cannot be encoded (scale <= "
                           f"{IMM_MAX / 2 / math.log2(math.e):.4g} accepted)")
    c = round(rate * (1 << frac))
    need = length * (1 << E_BITS) * (1 << QUOTIENT_BITS) * scale_out    # 2^n >= this
    shift = max(math.ceil(math.log2(need)), 0)
    dividend = round((1 << shift) / scale_out)
    if shift > MAX_SHIFT or dividend >= 1 << 46 or dividend < 1:
        raise CompileError(f"softmax over {length} entries at output scale {scale_out:.4g}: the division's "
                           f"dividend 2^{shift}/{scale_out:.4g} does not fit (rows up to "
                           f"{int(2 ** 46 / (scale_out * 2 ** (E_BITS + QUOTIENT_BITS)) * scale_out):,} entries)")
    return SoftmaxParams(length, c, frac, dividend, shift, int(zero_out), lo, hi)


def exponent_parts(t: np.ndarray, frac: int) -> tuple[np.ndarray, np.ndarray]:
    """(z, f) of step 3: t = z * 2^frac + f, f centred."""
    z = (t + (1 << (frac - 1))) >> frac
    return z, t - (z << frac)


def poly(fr: np.ndarray) -> np.ndarray:
    """P of step 4 on fr (int64, Q15 fraction), Horner with a floor shift after each multiply."""
    e = np.full_like(fr, POLY[0])
    for coef in POLY[1:]:
        e = ((e * fr) >> POLY_FRAC) + coef
    return e


def exp_values(q: np.ndarray, p: SoftmaxParams) -> np.ndarray:
    """e of step 4 for each entry of int8 rows q (..., T), int64."""
    x = q.astype(np.int64)
    u = x.max(axis=-1, keepdims=True) - x
    z, f = exponent_parts(u * p.c, p.frac)
    return poly(f << (POLY_FRAC - p.frac)) >> np.minimum(z, 31)


def reference(q: np.ndarray, p: SoftmaxParams) -> np.ndarray:
    """The integer softmax of int8 rows q (..., T) over the last axis: int8, the ALU's bits."""
    q = np.asarray(q)
    if q.shape[-1] != p.length:
        raise CompileError(f"softmax rows of {q.shape[-1]} entries, its parameters are for {p.length}")
    e = exp_values(q, p)
    r = p.dividend // e.sum(axis=-1, keepdims=True)
    return req_lanes(e, r, p.shift, p.zero_point, max(p.lo, INT8_MIN), min(p.hi, INT8_MAX)).astype(np.int8)


def float_reference(q: np.ndarray, scale_in: float, zero_in: int, scale_out: float, zero_out: int) -> np.ndarray:
    """What onnxruntime's QDQ softmax computes: dequantise, float softmax, quantise (ties to
    even), int8."""
    x = (q.astype(np.float64) - zero_in) * scale_in
    x = np.exp(x - x.max(axis=-1, keepdims=True))
    y = np.rint(x / x.sum(axis=-1, keepdims=True) / scale_out) + zero_out
    return np.clip(y, INT8_MIN, INT8_MAX).astype(np.int8)
