"""The integer requantisation block in Relax: emitted by the QDQ pass, matched by the BYOC
pattern, read back into a typed requantisation, all three from one description per form.

A form is a chain of `Node`s, each one Relax call whose arguments are earlier nodes, the
form's inputs, or constants named by a role (`Imm`: an int32 scalar, `Vec`: a per-channel int32
vector, `Bound`: a clip bound). `values_of(...)` gives the roles' values of a typed
requantisation, `emit` builds the calls from them, `pattern` matches any constants in their
place, and `read` walks a matched block back and checks that the typed requantisation it
rebuilds gives the same values again, so emitter, pattern and reader cannot drift apart.

Forms (the numpy rule is fixed_point.round_shift; the ALU's is stages.tail):

    power of two:  astype(clip((acc + bias) >> shift, lo, hi))
    multiply-shift: v = ((int64(acc + bias) * m) + rnd) >> shift; astype(clip(v + zp, lo, hi))   (REQ's)
    fixed point:   a = min(max(acc + bias, a_min), a_max); p = a m_hi + ((a m_lo) >> k); tail(p)
                   [with a step: tail(p) adds min(max(acc + bias + s_bias, s_min), s_max) after its shift]
    add, pow2:     astype(clip(((a << ka) + (b << kb) + rnd) >> shift, lo, hi))
    add, scaled:   tail((a - za) m_a + (b - zb) m_b)
    add, REQ:      req((a - za) c_a + (b - zb) c_b)
    rescale:       tail((a - za) m_a)            (a Concat input moved into the output's scale)
    rescale, REQ:  req(a - za)
    req(x):        astype(clip(((int64(x) * m + rnd) >> shift) + zp, lo, hi))     (m a vector or a scalar)
    tail(p):       u = p >> t [u += parity, ties to even]; astype(clip(((u + rnd) >> (s-t)) + zp, lo, hi))

The tail always has its pre-shift and zero point (0 or not), so each form has one pattern.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np
import tvm
from tvm import relax
from tvm.ir.expr import Constant
from tvm.relax.dpl import is_const, is_op, wildcard

from vta_sim.errors import CompileError

from .add import AddParams, ReqSumParams, RescaleParams, ScaledAddParams
from .fixed_point import SPLIT, ChannelParams, ScaledRequant
from .multiply_shift import MultiplyShift
from .rule import PowerOfTwo, Requant, rounding_constant
from .stages import VECTORS


class Imm(NamedTuple):
    role: str
    dtype: str = "int32"


class Vec(NamedTuple):
    role: str
    dtype: str = "int32"


class Bound(NamedTuple):
    role: str


class Node(NamedTuple):
    """name = op(args...): `op` a Relax operator name without "relax."; an astype's target is
    `dtype` (default: int8 for the form's last node, else int32)."""
    name: str
    op: str
    args: tuple
    dtype: str = ""


def _tail(p: str, ties_even: bool, step: bool = False) -> tuple:
    nodes = [Node("u", "right_shift", (p, Imm("t")))]
    if ties_even:      # u + q - ((q >> 1) << 1), q = u >> (s - t): the ALU's parity
        nodes += [Node("q", "right_shift", ("u", Imm("s_t"))), Node("q1", "right_shift", ("q", Imm("one"))),
                  Node("half", "left_shift", ("q1", Imm("one"))), Node("neg", "multiply", ("half", Imm("minus_one"))),
                  Node("parity", "add", ("q", "neg")), Node("tie", "add", ("u", "parity"))]
    shifted = (Node("shr", "right_shift", ("round", Imm("s_t"))),
               *((Node("step_sum", "add", ("shr", "step_hi")),) if step else ()))
    return tuple(nodes) + (Node("round", "add", (nodes[-1].name, Imm("rounding"))), *shifted,
                           Node("zp", "add", (shifted[-1].name, Imm("zero_point"))), *_stored("zp"))


def _stored(x: str) -> tuple:
    return (Node("clip", "clip", (x, Bound("lo"), Bound("hi"))), Node("out", "astype", ("clip",)))


POW2 = (Node("bias_add", "add", ("acc", Vec("bias"))), Node("shr", "right_shift", ("bias_add", Imm("shift"))),
        *_stored("shr"))


def _req_tail(x: str, m: Imm | Vec) -> tuple:
    """REQ after value x: round(int64(x) * m / 2^shift) + zp, clipped, as int8."""
    return (Node("wide", "astype", (x,), "int64"), Node("product", "multiply", ("wide", m)),
            Node("round", "add", ("product", Imm("rounding", "int64"))),
            Node("shr", "right_shift", ("round", Imm("shift", "int64"))),
            Node("zp", "add", ("shr", Imm("zero_point", "int64"))), *_stored("zp"))


MULTIPLY_SHIFT = (Node("bias_add", "add", ("acc", Vec("bias"))), *_req_tail("bias_add", Vec("m", "int64")))


def _scaled(ties_even: bool, step: bool = False) -> tuple:
    steps = (Node("step_add", "add", ("bias_add", Vec("s_bias"))), Node("step_lo", "maximum", ("step_add", Vec("s_min"))),
             Node("step_hi", "minimum", ("step_lo", Vec("s_max"))))
    return (Node("bias_add", "add", ("acc", Vec("bias"))), *(steps if step else ()),
            Node("clamp_lo", "maximum", ("bias_add", Vec("a_min"))),
            Node("clamp_hi", "minimum", ("clamp_lo", Vec("a_max"))),
            Node("mul_lo", "multiply", ("clamp_hi", Vec("m_lo"))), Node("shr_lo", "right_shift", ("mul_lo", Imm("k"))),
            Node("mul_hi", "multiply", ("clamp_hi", Vec("m_hi"))), Node("sum", "add", ("mul_hi", "shr_lo")),
            *_tail("sum", ties_even, step))


def _widened(x: str) -> tuple:
    return (Node(f"w{x}", "astype", (x,)),)


ADD_POW2 = (*_widened("a"), Node("sa", "left_shift", ("wa", Imm("shift_a"))),
            *_widened("b"), Node("sb", "left_shift", ("wb", Imm("shift_b"))),
            Node("sum", "add", ("sa", "sb")), Node("round", "add", ("sum", Imm("rounding"))),
            Node("shr", "right_shift", ("round", Imm("shift"))), *_stored("shr"))
ADD_SCALED = (*_widened("a"), Node("za", "add", ("wa", Imm("minus_zero_a"))), Node("ma", "multiply", ("za", Imm("m_a"))),
              *_widened("b"), Node("zb", "add", ("wb", Imm("minus_zero_b"))), Node("mb", "multiply", ("zb", Imm("m_b"))),
              Node("sum", "add", ("ma", "mb")), *_tail("sum", False))

ADD_REQ = (*_widened("a"), Node("za", "add", ("wa", Imm("minus_zero_a"))), Node("ma", "multiply", ("za", Imm("c_a"))),
           *_widened("b"), Node("zb", "add", ("wb", Imm("minus_zero_b"))), Node("mb", "multiply", ("zb", Imm("c_b"))),
           Node("sum", "add", ("ma", "mb")), *_req_tail("sum", Imm("m", "int64")))
RESCALE_REQ = (*_widened("a"), Node("za", "add", ("wa", Imm("minus_zero_a"))), *_req_tail("za", Imm("m", "int64")))

RESCALE = (*_widened("a"), Node("za", "add", ("wa", Imm("minus_zero_a"))), Node("ma", "multiply", ("za", Imm("m_a"))),
           *_tail("ma", False))

#: The forms after a conv2d/matmul accumulator and of the residual add, as the pattern tries them.
LINEAR_FORMS = (POW2, MULTIPLY_SHIFT, _scaled(False), _scaled(True), _scaled(False, True), _scaled(True, True))
ADD_FORMS = (ADD_POW2, ADD_REQ, ADD_SCALED)
RESCALE_FORMS = (RESCALE_REQ, RESCALE)


# ------------------------------------------------------------------ values of a typed form
def _tail_values(r: ScaledRequant) -> dict:
    return {"t": r.t, "s_t": r.s - r.t, "rounding": r.rounding - r.ties_even, "zero_point": r.zero_point,
            "lo": r.lo, "hi": r.hi, "one": 1, "minus_one": -1}


def linear_values(requant: Requant, vectors: tuple) -> tuple:
    """(form, values) of a conv2d/matmul requantisation; `vectors` = (bias,) or (bias, a_min,
    a_max, m_hi, m_lo) as numpy arrays."""
    if isinstance(requant, PowerOfTwo):
        (bias,) = vectors
        return POW2, {"bias": bias, "shift": requant.shift, "lo": requant.lo, "hi": requant.hi}
    if isinstance(requant, MultiplyShift):
        bias, m = vectors
        return MULTIPLY_SHIFT, {"bias": bias, "m": m, **_req_values(requant)}
    assert isinstance(requant, ScaledRequant)
    bias, *channel = vectors
    c = ChannelParams(*channel)
    step = {} if c.s_bias is None else {"s_bias": c.s_bias, "s_min": c.s_min, "s_max": c.s_max}
    return _scaled(requant.ties_even, requant.step), {
        "bias": bias, "a_min": c.a_min, "a_max": c.a_max, "m_hi": c.m_hi, "m_lo": c.m_lo, **step,
        "k": requant.k, **_tail_values(requant)}


def _req_values(r: MultiplyShift) -> dict:
    return {"rounding": r.rounding, "shift": r.shift, "zero_point": r.zero_point, "lo": r.lo, "hi": r.hi}


def add_values(p: AddParams | ScaledAddParams | ReqSumParams) -> tuple:
    """(form, values) of the residual add."""
    if isinstance(p, ReqSumParams):
        (za, zb), (ca, cb) = p.zeros, p.factors
        return ADD_REQ, {"minus_zero_a": -za, "minus_zero_b": -zb, "c_a": ca, "c_b": cb, "m": p.m,
                         **_req_values(p.requant)}
    if isinstance(p, ScaledAddParams):
        return ADD_SCALED, {"minus_zero_a": -p.zero_a, "minus_zero_b": -p.zero_b, "m_a": p.m_a, "m_b": p.m_b,
                            **_tail_values(p.requant)}
    return ADD_POW2, {"shift_a": p.shift_a, "shift_b": p.shift_b, "shift": p.shift,
                      "rounding": rounding_constant(p.shift), "lo": p.lo, "hi": p.hi}


def rescale_values(p: RescaleParams | ReqSumParams) -> tuple:
    """(form, values) of a Concat input moved into the output's scale."""
    if isinstance(p, ReqSumParams):
        return RESCALE_REQ, {"minus_zero_a": -p.zeros[0], "m": p.m, **_req_values(p.requant)}
    return RESCALE, {"minus_zero_a": -p.zero, "m_a": p.m, **_tail_values(p.requant)}


# ------------------------------------------------------------------ emit
def emit(form: tuple, inputs: dict, values: dict, emit_call: Callable, vector_shape: tuple = (-1,)):
    """The form's calls on `inputs` {name: expr}, every one but the last through `emit_call`
    (a BlockBuilder's emit); returns the last (the int8 astype), for the caller to bind."""
    done = dict(inputs)

    def arg(a):
        if isinstance(a, Imm):
            return relax.const(int(values[a.role]), a.dtype)
        if isinstance(a, Vec):
            return relax.const(np.asarray(values[a.role], a.dtype).reshape(vector_shape), a.dtype)
        if isinstance(a, Bound):
            return relax.prim_value(int(values[a.role]))
        return done[a]
    for i, node in enumerate(form):
        if node.op == "astype":
            call = relax.op.astype(done[node.args[0]], node.dtype or ("int8" if node.name == "out" else "int32"))
        else:
            call = getattr(relax.op, node.op)(*(arg(a) for a in node.args))
        done[node.name] = call if i == len(form) - 1 else emit_call(call)
    return done[form[-1].name]


# ------------------------------------------------------------------ pattern
def pattern(form: tuple, inputs: dict):
    """A dataflow pattern of the form, any constants in the roles' places."""
    done = dict(inputs)

    def arg(a):
        if isinstance(a, (Imm, Vec)):
            return is_const()
        if isinstance(a, Bound):
            return wildcard()
        return done[a]
    for node in form:
        done[node.name] = is_op(f"relax.{node.op}")(*(arg(a) for a in node.args))
    return done[form[-1].name]


def linear_pattern(acc: Any) -> Any:
    """Any requantisation form after the accumulator pattern `acc`."""
    out = None
    for form in LINEAR_FORMS:
        p = pattern(form, {"acc": acc})
        out = p if out is None else out | p
    return out


def rescale_pattern() -> Any:
    """Any rescale form on any operand."""
    out = None
    for form in RESCALE_FORMS:
        p = pattern(form, {"a": wildcard()})
        out = p if out is None else out | p
    return out


def add_pattern() -> Any:
    """Any residual-add form, on any two operands."""
    out = None
    for form in ADD_FORMS:
        p = pattern(form, {"a": wildcard(), "b": wildcard()})
        out = p if out is None else out | p
    return out


# ------------------------------------------------------------------ read back
class FormMismatch(CompileError):
    """The expression is not this form, or its constants are no requantisation's."""


def _op_name(e) -> str | None:
    return e.op.name if isinstance(e, relax.Call) and isinstance(e.op, tvm.ir.Op) else None


def _constant(e):
    if not isinstance(e, Constant):
        raise FormMismatch(f"expected a constant, got {type(e).__name__}")
    return e.value.numpy()


def _prim(e) -> int:
    return int(e.value) if hasattr(e, "value") else int(e)


def read(form: tuple, root, value_of) -> tuple:
    """(inputs {name: expr}, values {role: value}, calls {node name: call}) of `root` read as
    `form`; FormMismatch if it is not. `value_of` maps a var to its bound value."""
    nodes = {n.name: n for n in form}
    inputs, values, calls = {}, {}, {}

    def put(role, value):
        if role in values and not np.array_equal(values[role], value):
            raise FormMismatch(f"{role} is {values[role]} and {value}")
        values[role] = value

    def walk(name, e):
        node = nodes[name]
        e = value_of(e)
        if _op_name(e) != f"relax.{node.op}" or len(e.args) < len(node.args):
            raise FormMismatch(f"{name}: expected relax.{node.op}, got {_op_name(e)}")
        calls[name] = e
        for a, sub in zip(node.args, e.args):
            if isinstance(a, Imm):
                put(a.role, int(_constant(sub)))
            elif isinstance(a, Vec):
                put(a.role, _constant(sub).reshape(-1).astype(np.int32))
            elif isinstance(a, Bound):
                put(a.role, _prim(sub))
            elif a in nodes:
                walk(a, sub)
            elif a in inputs and not inputs[a].same_as(sub):
                raise FormMismatch(f"input {a} is two different expressions")
            else:
                inputs[a] = sub
    walk(form[-1].name, root)
    return inputs, values, calls


def _first_form(forms, root, value_of, what: str) -> tuple:
    """(form, inputs, values, calls) of the first of `forms` that `root` reads as."""
    for form in forms:
        try:
            return (form, *read(form, root, value_of))
        except FormMismatch:
            continue
    raise FormMismatch(f"no {what} form matches")


def _check(values: dict, typed_values: dict) -> None:
    """The typed requantisation rebuilt from `values` must give them back, role for role."""
    for role, value in values.items():
        if not np.array_equal(value, typed_values[role]):
            raise FormMismatch(f"{role} = {value}, where the requantisation it encodes has "
                               f"{typed_values[role]}")


def _scaled_requant(v: dict, k: int, ties_even: bool, step: bool = False) -> ScaledRequant:
    return ScaledRequant(k, v["t"], v["t"] + v["s_t"], v["zero_point"], v["lo"], v["hi"], ties_even, step)


def read_linear(root, value_of) -> tuple:
    """(accumulator call, per-channel vectors, Requant) of a conv2d/matmul's requantisation.
    FormMismatch (a CompileError) where no form matches or the constants are no Requant's."""
    form, inputs, v, _ = _first_form(LINEAR_FORMS, root, value_of, "requantisation")
    requant: Requant
    if form is POW2:
        requant, vectors = PowerOfTwo(v["shift"], v["lo"], v["hi"]), (v["bias"],)
    elif form is MULTIPLY_SHIFT:
        requant, vectors = MultiplyShift(v["shift"], v["zero_point"], v["lo"], v["hi"]), (v["bias"], v["m"])
    else:
        names = {n.name for n in form}
        requant = _scaled_requant(v, v["k"], "tie" in names, "step_sum" in names)
        vectors = tuple(v[r] for r in VECTORS if r in v)
    _check(v, linear_values(requant, vectors)[1])
    return value_of(inputs["acc"]), vectors, requant


def read_add(root, value_of) -> tuple:
    """((a, b) operand exprs, AddParams or ScaledAddParams, the sum's call) of a residual add;
    FormMismatch (a CompileError) where neither form matches."""
    form, inputs, v, calls = _first_form(ADD_FORMS, root, value_of, "residual-add")
    params: AddParams | ScaledAddParams | ReqSumParams
    if form is ADD_POW2:
        params = AddParams(v["shift_a"], v["shift_b"], v["shift"], v["lo"], v["hi"])
    elif form is ADD_REQ:
        params = ReqSumParams((-v["minus_zero_a"], -v["minus_zero_b"]), (v["c_a"], v["c_b"]), v["m"],
                              MultiplyShift(v["shift"], v["zero_point"], v["lo"], v["hi"]))
    else:
        params = ScaledAddParams(-v["minus_zero_a"], -v["minus_zero_b"], v["m_a"], v["m_b"],
                                 _scaled_requant(v, SPLIT, False))
    _check(v, add_values(params)[1])
    return (inputs["a"], inputs["b"]), params, calls["sum"]


def read_rescale(root, value_of) -> tuple:
    """(operand expr, ReqSumParams or RescaleParams) of a rescale block; FormMismatch where it is
    not one."""
    form, inputs, v, _ = _first_form(RESCALE_FORMS, root, value_of, "rescale")
    params: ReqSumParams | RescaleParams
    if form is RESCALE_REQ:
        params = ReqSumParams((-v["minus_zero_a"],), (1,), v["m"],
                              MultiplyShift(v["shift"], v["zero_point"], v["lo"], v["hi"]))
    else:
        params = RescaleParams(-v["minus_zero_a"], v["m_a"], _scaled_requant(v, SPLIT, False))
    _check(v, rescale_values(params)[1])
    return inputs["a"], params
