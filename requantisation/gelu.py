"""GELU as torch exports it and onnxruntime quantises it, in the ALU's arithmetic (docs/ops.md,
"GELU on the ALU").

`nn.GELU` exports as x * (1 + erf(x / sqrt 2)) * 1/2, and `quantize_static` quantises after each
node, so the int8 function of the int8 input is the chain

    e = Q(erf(DQ(x) / sqrt2))     a = Q(DQ(e) + 1)     m = Q(DQ(x) DQ(a))     y = Q(DQ(m) 1/2)

(`GeluChain`, each Q rounding to int8 with ties to even). torch's dynamo exporter halves first,
x * ((1 + erf(x / sqrt 2)) * 1/2): h = Q(DQ(a) 1/2), y = Q(DQ(x) DQ(h)) (`half_first`; steps 3
and 4 below trade places). The integer form keeps the chain's four roundings:

1. v = clamp(x - z_x, -V, V), V past which erf is +-1 at e's scale; e' = round(v P(v^2 / V^2))
   clamped, P the even polynomial of erf(s_x v / sqrt2) / (s_e v) fitted on [0, V], in fixed
   point (Horner, a floor shift by 14 after each multiply); e' = e - z_e.
2. a' = REQ(e' 2^j + C_2, M_2) - z_a: (e - z_e) s_e + 1 at a's scale, the 1 as C_2 = 2^j / s_e.
3. m' = REQ((x - z_x) a', M_3) - z_m.
4. y = REQ(m', M_4).

Every step but the first is a multiply-shift that matches the float step except at exact ties;
the first depends on P's error, so `choose` tries degrees until the integer e equals the float
chain's on every one of the 256 inputs (or takes the degree with the fewest differences) and
says how many of the 256 outputs differ from the float chain's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vta_sim.errors import CompileError

from .bounds import INT8_MAX, INT8_MIN
from .multiply_shift import req_lanes

#: The fraction bits of v^2 / V^2 and the floor shift after each Horner multiply.
Z_BITS = 14
#: The Horner accumulator stays below 2^ACC_BITS, so its products with z stay below 2^30.
ACC_BITS = 15
DEGREES = range(3, 9)
#: e' is moved up by 2^J_BITS before the 1 (in e's steps) is added: e' 2^16 + 2^16 / s_e < 2^31.
J_BITS = 16
MAX_SHIFT = 62
#: Scalar fields, in the order they are packed into one int64 constant (the coefficients follow).
SCALARS = ("zero_x", "clip", "z_mult", "z_shift", "frac", "e_lo", "e_hi", "j", "c2", "m2", "n2", "zero_a",
           "m3", "n3", "zero_m", "m4", "n4", "zero_y", "half_first", "mismatches")


def _quant(v: np.ndarray, scale: float, zero: int) -> np.ndarray:
    """QuantizeLinear to int8 in float32: divide, round half to even, add the zero point, clamp."""
    return np.clip(np.rint(v / np.float32(scale)) + zero, INT8_MIN, INT8_MAX).astype(np.int64)


@dataclass(frozen=True)
class GeluChain:
    """The float chain's constants, as the QDQ graph holds them."""
    scale_x: float
    zero_x: int
    divisor: float          # sqrt 2, as a float32 constant
    scale_e: float
    zero_e: int
    one: float              # the 1 added (its dequantised constant)
    scale_a: float
    zero_a: int
    scale_m: float
    zero_m: int
    half: float             # the 1/2 multiplied (its dequantised constant)
    scale_y: float
    zero_y: int
    half_first: bool = False    # h = Q(a 1/2) then y = Q(x h) (scale_m, zero_m are h's), not m = Q(x a), y = Q(m 1/2)

    def steps_from_e(self, e: np.ndarray) -> np.ndarray:
        """a of the chain for erf's int8 e (float32, ties to even)."""
        f32 = np.float32
        return _quant((e.astype(f32) - f32(self.zero_e)) * f32(self.scale_e) + f32(self.one), self.scale_a, self.zero_a)

    def steps(self, q: np.ndarray) -> tuple[np.ndarray, ...]:
        """(e, a, m, y) as onnxruntime computes them: float32 arithmetic, each quantised with ties
        to even."""
        f32, quant = np.float32, _quant
        x = (q.astype(f32) - f32(self.zero_x)) * f32(self.scale_x)
        e = quant(np.vectorize(math.erf, otypes=[np.float64])((x / f32(self.divisor)).astype(np.float64)).astype(f32),
                  self.scale_e, self.zero_e)
        a = self.steps_from_e(e)
        a_f = (a.astype(f32) - f32(self.zero_a)) * f32(self.scale_a)
        if self.half_first:
            m = quant(a_f * f32(self.half), self.scale_m, self.zero_m)
            y = quant(x * ((m.astype(f32) - f32(self.zero_m)) * f32(self.scale_m)), self.scale_y, self.zero_y)
        else:
            m = quant(x * a_f, self.scale_m, self.zero_m)
            y = quant((m.astype(f32) - f32(self.zero_m)) * f32(self.scale_m) * f32(self.half), self.scale_y, self.zero_y)
        return e, a, m, y


@dataclass(frozen=True)
class GeluParams:
    zero_x: int
    clip: int               # V
    z_mult: int             # z = (v^2 z_mult) >> z_shift = v^2 2^14 / V^2
    z_shift: int
    frac: int               # the Horner accumulator's fraction bits
    e_lo: int               # e' bounds: INT8 - z_e
    e_hi: int
    j: int                  # a = REQ(e' 2^j + c2, m2, n2)
    c2: int
    m2: int
    n2: int
    zero_a: int
    m3: int
    n3: int
    zero_m: int
    m4: int
    n4: int
    zero_y: int
    half_first: int         # 1: h = REQ(a', M_3) - z_h, y = REQ((x - z_x) h', M_4) (dynamo's order)
    mismatches: int         # of the 256 inputs, how many give another y than the float chain
    coefs: tuple[int, ...]  # P's, highest power first, at 2^frac

    def packed(self) -> np.ndarray:
        return np.array([*(getattr(self, f) for f in SCALARS), *self.coefs], np.int64)

    @classmethod
    def unpacked(cls, values: np.ndarray) -> GeluParams:
        v = [int(x) for x in np.asarray(values).reshape(-1)]
        n = len(SCALARS)
        if len(v) <= n:
            raise CompileError(f"GELU constant of {len(v)} values: more than {n} expected")
        return cls(*v[:n], tuple(v[n:]))

    def describe(self) -> str:
        return f"erf deg {2 * (len(self.coefs) - 1) + 1} on |v|<={self.clip}, {self.mismatches}/256 off the float chain"


def _req(x: np.ndarray, m: int, n: int, zero: int) -> np.ndarray:
    """REQ (docs/isa-extensions.md) by a scalar multiplier."""
    return req_lanes(x, m, n, zero)


def erf_part(q: np.ndarray, p: GeluParams) -> np.ndarray:
    """e' = e - z_e of step 1, int64."""
    v = np.clip(q.astype(np.int64) - p.zero_x, -p.clip, p.clip)
    z = (v * v * p.z_mult) >> p.z_shift
    acc = np.full_like(v, p.coefs[0])
    for c in p.coefs[1:]:
        acc = ((acc * z) >> Z_BITS) + c
    g = acc * v
    return np.clip((g + (1 << (p.frac - 1))) >> p.frac, p.e_lo, p.e_hi)


def reference(q: np.ndarray, p: GeluParams) -> np.ndarray:
    """The integer GELU chain of int8 q, elementwise: int8, the ALU's bits."""
    q = np.asarray(q)
    e = erf_part(q, p)
    a = _req((e << p.j) + p.c2, p.m2, p.n2, p.zero_a) - p.zero_a
    x = q.astype(np.int64) - p.zero_x
    if p.half_first:
        h = _req(a, p.m3, p.n3, p.zero_m) - p.zero_m
        return _req(x * h, p.m4, p.n4, p.zero_y).astype(np.int8)
    m = _req(x * a, p.m3, p.n3, p.zero_m) - p.zero_m
    return _req(m, p.m4, p.n4, p.zero_y).astype(np.int8)


def _multiplier(real: float, bound: int, what: str) -> tuple[int, int]:
    """(m, n) with m / 2^n ~ real, |m| < 2^31, |x m| < 2^62 for |x| <= bound: 31 bits of real."""
    if not (math.isfinite(real) and real > 0):
        raise CompileError(f"GELU {what} {real}: a positive finite scale ratio is needed")
    n = min(MAX_SHIFT - bound.bit_length() - 1, 30 - math.floor(math.log2(real)))
    if n < 1:
        raise CompileError(f"GELU {what} {real:.4g} does not fit a multiply-shift")
    return round(real * 2 ** n), n


def _erf_coefs(chain: GeluChain, clip: int, degree: int) -> tuple[int, tuple[int, ...]]:
    """(frac, coefficients): P's least-squares fit on Chebyshev nodes of [0, V], in fixed point."""
    k = chain.scale_x / chain.divisor
    t = (np.cos(np.pi * (np.arange(400) + 0.5) / 400) + 1) * clip / 2
    g = np.array([math.erf(k * v) for v in t]) / chain.scale_e
    ratio = np.where(t > 0, g / np.where(t > 0, t, 1), 2 * k / math.sqrt(math.pi) / chain.scale_e)
    real = np.polyfit((t / clip) ** 2, ratio, degree - 1)          # in z = v^2 / V^2
    # the Horner partial sums stay below the largest |coefficient sum| over z in [0, 1]
    zs = np.linspace(0, 1, 257)
    partial = max(np.abs(np.polyval(real[:i + 1], zs)).max() for i in range(len(real)))
    frac = ACC_BITS - 1 - math.ceil(math.log2(max(partial, 1e-9)))
    return frac, tuple(int(c) for c in np.rint(real * 2.0 ** frac))


def choose(chain: GeluChain) -> GeluParams:
    """The integer chain for `chain`'s constants, its erf polynomial of the lowest degree whose e
    equals the float chain's on all 256 inputs (else the fewest differences)."""
    for name in ("scale_x", "scale_e", "scale_a", "scale_m", "scale_y", "divisor"):
        v = getattr(chain, name)
        if not (math.isfinite(v) and v > 0):
            raise CompileError(f"GELU {name} {v}: a positive finite value is needed")
    q = np.arange(INT8_MIN, INT8_MAX + 1)
    e_want, _, _, y_want = chain.steps(q)
    # past V, erf(s_x V / sqrt2) / s_e is within 1/4 of its limit: e saturates
    k = chain.scale_x / chain.divisor
    clip = next((v for v in range(1, 256) if (1 - math.erf(k * v)) / chain.scale_e < 0.25), 255)
    z_shift = 2 * clip.bit_length() - 2                   # z_mult in [2^12, 2^14]: an ALU immediate
    z_mult = round(2 ** (z_shift + Z_BITS) / clip ** 2)
    if z_mult >= 1 << 15:
        raise CompileError(f"GELU input scale {chain.scale_x:.4g}: erf saturates after {clip} steps, too few")
    e_lo, e_hi = INT8_MIN - chain.zero_e, INT8_MAX - chain.zero_e
    # a = (e' s_e + 1) / s_a = (e' 2^j + 2^j / s_e) (s_e / (s_a 2^j)): an add of a constant entry,
    # then REQ; j = 16 keeps the 1 to 2^-16 of a step of e (an immediate's 2^-8 flipped near-ties)
    ones, j = chain.one / chain.scale_e, J_BITS
    c2 = round(ones * 2 ** j)
    if abs(c2) >= 1 << 30:
        raise CompileError(f"GELU: the 1 added is {ones:.4g} steps of erf's scale: too many")
    m2, n2 = _multiplier(chain.scale_e / chain.scale_a / 2 ** j, 256 << j, "erf's scale over (1 + erf)'s")
    # the float32 chain rounds near-ties either way (s_e / s_a is near 1/2, 1 / s_a near k + 1/2):
    # move c2 within 1/256 of a step of e to the value that gives its a for the most e
    e_all = np.arange(INT8_MIN, INT8_MAX + 1, dtype=np.int64)
    a_want = chain.steps_from_e(e_all)
    c2 = min(range(c2 - 256, c2 + 257), key=lambda c: (
        int((_req((e_all - chain.zero_e << j) + c, m2, n2, chain.zero_a) != a_want).sum()), abs(c - c2)))
    if chain.half_first:
        m3, n3 = _multiplier(chain.scale_a * chain.half / chain.scale_m, 256, "halving scale")
        m4, n4 = _multiplier(chain.scale_x * chain.scale_m / chain.scale_y, 256 * 256, "product scale")
    else:
        m3, n3 = _multiplier(chain.scale_x * chain.scale_a / chain.scale_m, 256 * 256, "product scale")
        m4, n4 = _multiplier(chain.scale_m * chain.half / chain.scale_y, 256, "output scale")
    best = None
    for degree in DEGREES:
        frac, coefs = _erf_coefs(chain, clip, degree)
        if not all(abs(c) < 1 << 15 for c in coefs) or frac < 1:
            continue
        p = GeluParams(chain.zero_x, clip, z_mult, z_shift, frac, e_lo, e_hi, j, c2, m2, n2, chain.zero_a, m3, n3,
                       chain.zero_m, m4, n4, chain.zero_y, int(chain.half_first), 0, coefs)
        e_off = int((erf_part(q, p) != e_want - chain.zero_e).sum())
        off = int((reference(q, p) != y_want).sum())
        p = GeluParams(*(getattr(p, f) for f in SCALARS[:-1]), off, coefs)
        if best is None or (e_off, degree) < best[0]:
            best = ((e_off, degree), p)
        if e_off == 0:
            break
    if best is None:
        raise CompileError(f"GELU: no erf polynomial fits the ALU's immediates at input scale {chain.scale_x:.4g}")
    return best[1]
