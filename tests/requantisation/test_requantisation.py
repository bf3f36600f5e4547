"""requantisation/: the ALU stage list against exact rational rounding, and the Relax forms
emitted, matched and read back as one description (graph.qdq, graph.partition, graph.ops)."""
import dataclasses
import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np
import pytest
from tvm import relax
from tvm.relax.dpl import is_const, is_op, wildcard

from requantisation import MultiplyShift, PowerOfTwo, ScaledRequant, as_requant, reference
from requantisation import relax as rq_relax
from requantisation.add import (AddParams, ReqSumParams, RescaleParams, ScaledAddParams, add_ref, check_params,
                                choose_req_sum, choose_rescale, req_sum_ref, rescale_ref, scaled_add_ref)
from vta_sim.errors import CompileError
from requantisation.fixed_point import SPLIT, ChannelParams
from requantisation.stages import epilogue, tail

RNG = np.random.default_rng(16)

#: The ALU ops the stages use, in int32 as the spec defines them (SHR of a negative amount is SHL).
ALU = {"add": lambda x, y: x + y, "max": np.maximum, "min": np.minimum, "mul": lambda x, y: x * y,
       "shr": lambda x, y: x >> y, "shl": lambda x, y: x << y}


def _run_stages(stages, start: dict) -> np.ndarray:
    """The stage list after the blocks `start` {name: values}, on int64 values (no stage leaves
    int32 for these inputs), as the ALU runs it."""
    done = dict(start)
    for st in stages:
        if st.op == "copy":
            done[st.name] = done[st.y].copy()
            continue
        y = done[st.y] if isinstance(st.y, str) else st.y
        done[st.name] = ALU[st.op](done[st.x], y)
    return done[stages[-1].name]


def _exact(p: int, r: ScaledRequant) -> int:
    q = Fraction(p, 1 << r.s)
    down = q.numerator // q.denominator
    frac = q - down
    up = frac > Fraction(1, 2) or (frac == Fraction(1, 2) and (not r.ties_even or down % 2))
    return min(max(down + up + r.zero_point, r.lo), r.hi)


@pytest.mark.parametrize("ties_even", [False, True])
@pytest.mark.parametrize("s,t,zp,lo", [(12, 0, 0, -128), (20, 5, -7, -128), (1, 0, 3, 0), (30, 16, 100, -20)])
def test_the_alu_tail_rounds_exactly_as_rational_arithmetic(s, t, zp, lo, ties_even):
    r = ScaledRequant(k=0, t=t, s=s, zero_point=zp, lo=lo, ties_even=ties_even)
    step = 1 << s
    # around every multiple of 2^s / 2 (the ties) and at random, within int32 after the shifts
    ties = (np.arange(-40, 40) * (step // 2 or 1))[:, None] + np.array([-1, 0, 1])
    p = np.concatenate([ties.reshape(-1), RNG.integers(-2**30, 2**30, 400)]).astype(np.int64)
    if t:      # the tie is judged after the pre-shift: exact ties have those bits zero
        p = (p >> t) << t
    got = _run_stages(tail(r, "p"), {"p": p})
    assert [int(v) for v in got] == [_exact(int(v), r) for v in p]


def test_the_pow2_add_tail_is_the_shared_tail():
    _, stages = AddParams(1, 0, 3, -5, 90).program()
    assert [st.name for st in stages] == ["a_shl", "sum", "round", "shr", "clip_lo", "clip_hi"]
    assert [st.y for st in stages[2:]] == [4, 3, -5, 90]
    _, unshifted = AddParams(0, 0, 0, -128, 127).program()
    assert [st.op for st in unshifted] == ["add", "max", "min"]


def test_epilogue_refuses_what_is_not_a_requantisation():
    with pytest.raises(TypeError, match="expected a requantisation.Requant"):
        epilogue(7)
    with pytest.raises(Exception, match="expected a shift"):
        as_requant(0.5)


# ------------------------------------------------------------------ Relax forms
def _scaled(ties_even: bool, zp: int = -3, t: int = 4, s: int = 19) -> ScaledRequant:
    return ScaledRequant(k=11, t=t, s=s, zero_point=zp, lo=-100, hi=120, ties_even=ties_even)


def _channel(c: int) -> ChannelParams:
    return ChannelParams(*(RNG.integers(lo, hi, c).astype(np.int32) for lo, hi in
                           ((-9000, -1), (1, 9000), (0, 4000), (0, 2048))))


def _quarter(c: int) -> ChannelParams:
    """M = 1/4 at k = 11, s = 14 (m_hi 2^12): a quarter of the accumulators land on exact ties."""
    return ChannelParams(*(np.full(c, v, np.int32) for v in (-9000, 9000, 1 << 12, 0)))


def _stepped(c: int) -> ChannelParams:
    """_channel's vectors with an output step on every other channel (graph.qdq._few_valued)."""
    on = np.arange(c) % 2
    return ChannelParams(*_channel(c).arrays(), s_bias=(-300 * on).astype(np.int32),
                         s_min=np.zeros(c, np.int32), s_max=on.astype(np.int32))


class _Multipliers(NamedTuple):
    """REQ's per-channel vector, with ChannelParams' `arrays`."""
    m: np.ndarray

    def arrays(self) -> tuple:
        return (self.m,)


def _multipliers(c: int) -> _Multipliers:
    """Multipliers of 2^29..2^31 (M = 1/128..1/32 at shift 36), every fourth exactly 2^30 (M =
    1/64: accumulators 32 apart from a multiple of 64 are ties)."""
    m = RNG.integers(1 << 29, (1 << 31) - 1, c)
    m[::4] = 1 << 30
    return _Multipliers(m.astype(np.int32))


LINEAR = [(PowerOfTwo(9, 0, 127), None), (_scaled(False), _channel(16)), (_scaled(True, 0, 0, 14), _quarter(16)),
          (dataclasses.replace(_scaled(False), step=True), _stepped(16)),
          (MultiplyShift(36, -3), _multipliers(16)), (MultiplyShift(35, 5, -20, 100), _multipliers(16)),
          (MultiplyShift(0, 0), _Multipliers(np.full(16, 1, np.int32)))]
LINEAR_IDS = ["pow2", "fixed", "fixed-ties-even", "fixed-step", "req", "req-clipped", "req-unshifted"]
ADDS = [AddParams(2, 0, 3, -128, 127), AddParams(0, 0, 0, 0, 127),
        ScaledAddParams(-128, 5, 40000, 9000, ScaledRequant(SPLIT, 2, 17, 4, -128, 127)),
        choose_req_sum([0.73, 0.41], (-3, 17), -128), choose_req_sum([1.9, 0.05], (0, -128), 5, -20, 100)]
ADD_IDS = ["pow2", "pow2-unshifted", "scaled", "req", "req-clipped"]


def _emitted(inputs: dict, emit_body):
    """(function, var -> value lookup, root call) of a dataflow block built by `emit_body`."""
    bb = relax.BlockBuilder()
    params = [relax.Var(n, relax.TensorType(shape, dtype)) for n, (shape, dtype) in inputs.items()]
    with bb.function("main", params):
        with bb.dataflow():
            root = emit_body(bb, *params)
            out = bb.emit_output(bb.emit(root))
        bb.emit_func_output(out)
    func = bb.get()["main"]
    var2val = relax.analysis.get_var2val(func)
    return func, (lambda e: var2val.get(e, e) if isinstance(e, relax.Var) else e), var2val[out]


@pytest.mark.parametrize("requant,channel", LINEAR, ids=LINEAR_IDS)
def test_a_linear_form_reads_back_as_the_requantisation_it_was_emitted_from(requant, channel):
    bias = RNG.integers(-500, 500, 16).astype(np.int32)
    vectors = (bias,) + (() if channel is None else channel.arrays())
    form, values = rq_relax.linear_values(requant, vectors)

    def body(bb, acc):
        return rq_relax.emit(form, {"acc": acc}, values, bb.emit, (1, -1, 1, 1))
    _, value_of, root = _emitted({"acc": ((1, 16, 4, 4), "int32")}, body)
    acc, got_vectors, got = rq_relax.read_linear(root, value_of)
    assert got == requant
    assert all(np.array_equal(a, b) for a, b in zip(got_vectors, vectors)) and len(got_vectors) == len(vectors)


@pytest.mark.parametrize("params", ADDS, ids=ADD_IDS)
def test_an_add_form_reads_back_and_its_pattern_matches(params):
    form, values = rq_relax.add_values(params)
    func, value_of, root = _emitted({"a": ((1, 8, 2, 2), "int8"), "b": ((1, 8, 2, 2), "int8")},
                                    lambda bb, a, b: rq_relax.emit(form, {"a": a, "b": b}, values, bb.emit))
    var2val = relax.analysis.get_var2val(func)
    assert rq_relax.add_pattern().match(root, var2val)
    assert not rq_relax.linear_pattern(is_op("relax.nn.conv2d")(wildcard(), is_const())).match(root, var2val)
    (a, b), got, _ = rq_relax.read_add(root, value_of)
    assert got == params
    assert a.same_as(func.params[0]) and b.same_as(func.params[1])


def test_a_block_whose_constants_no_requantisation_gives_is_refused_naming_the_role():
    r = _scaled(False)
    form, values = rq_relax.linear_values(r, (np.zeros(16, np.int32),) + _channel(16).arrays())
    values = {**values, "rounding": values["rounding"] + 1}       # not 2^(s-t-1)
    _, value_of, root = _emitted({"acc": ((1, 16, 4, 4), "int32")},
                                 lambda bb, acc: rq_relax.emit(form, {"acc": acc}, values, bb.emit, (1, -1, 1, 1)))
    with pytest.raises(rq_relax.FormMismatch, match="rounding"):
        rq_relax.read_linear(root, value_of)


@pytest.mark.parametrize("requant,channel", LINEAR, ids=LINEAR_IDS)
def test_the_linear_pattern_matches_every_emitted_form(requant, channel):
    vectors = (np.zeros(16, np.int32),) + (() if channel is None else channel.arrays())
    form, values = rq_relax.linear_values(requant, vectors)
    func, _, root = _emitted({"acc": ((1, 16, 4, 4), "int32")},
                             lambda bb, acc: rq_relax.emit(form, {"acc": acc}, values, bb.emit, (1, -1, 1, 1)))
    assert rq_relax.linear_pattern(wildcard()).match(root, relax.analysis.get_var2val(func))


#: The Relax operators of the forms, in numpy int64 (no value leaves int32 for these inputs).
NUMPY = {"add": np.add, "right_shift": np.right_shift, "left_shift": np.left_shift, "multiply": np.multiply,
         "maximum": np.maximum, "minimum": np.minimum}


def _evaluate(form, inputs: dict, values: dict) -> np.ndarray:
    """A form's value computed from its description in numpy, the way the CPU build runs it."""
    done = {k: v.astype(np.int64) for k, v in inputs.items()}

    def arg(a):
        if isinstance(a, rq_relax.Vec):
            return np.asarray(values[a.role], np.int64).reshape(1, -1, 1, 1)
        if isinstance(a, rq_relax.Imm):
            return np.int64(values[a.role])
        if isinstance(a, (rq_relax.Imm, rq_relax.Bound)):
            return values[a.role]
        return done[a]
    for node in form:
        args = [arg(a) for a in node.args]
        done[node.name] = (np.clip(*args) if node.op == "clip" else args[0] if node.op == "astype"
                           else NUMPY[node.op](*args))
    return done[form[-1].name]


@pytest.mark.parametrize("requant,channel", LINEAR, ids=LINEAR_IDS)
def test_a_linear_form_computes_the_rule(requant, channel):
    bias = RNG.integers(-500, 500, 16).astype(np.int32)
    vectors = (bias,) + (() if channel is None else channel.arrays())
    form, values = rq_relax.linear_values(requant, vectors)
    acc = RNG.integers(-900, 900, (2, 16, 3, 3))      # mostly inside the clip: the rounding shows
    want = reference(acc + bias.reshape(1, -1, 1, 1), requant, () if channel is None else channel.arrays())
    np.testing.assert_array_equal(_evaluate(form, {"acc": acc}, values), want)


@pytest.mark.parametrize("params", ADDS, ids=ADD_IDS)
def test_an_add_form_computes_the_rule(params):
    form, values = rq_relax.add_values(params)
    a, b = (RNG.integers(-128, 128, (1, 8, 4, 4)) for _ in range(2))
    want = (scaled_add_ref(a, b, params) if isinstance(params, ScaledAddParams)
            else req_sum_ref((a, b), params) if isinstance(params, ReqSumParams)
            else add_ref(a, b, params.shift_a, params.shift_b, params.shift, params.lo, params.hi))
    np.testing.assert_array_equal(_evaluate(form, {"a": a, "b": b}, values), want)


# ------------------------------------------------------------------ the Concat input's rescale
RESCALES = [RescaleParams(-128, 40000, ScaledRequant(SPLIT, 2, 17, -128, -128, 127)),   # both parts
            RescaleParams(5, 3 << SPLIT, ScaledRequant(SPLIT, 0, 15, 0, 0, 127))]      # high part only, ReLU
REQ_RESCALES = [choose_req_sum([0.7316], (-128,), -128), choose_req_sum([37.5], (5,), 0, 0, 127)]


def _exact_rescale(a: int, p: RescaleParams) -> int:
    """round((a - zero) m / 2^s) + zp clipped, ties up, in rational arithmetic."""
    return _exact((a - p.zero) * p.m, p.requant)


@pytest.mark.parametrize("params", RESCALES, ids=["two-parts", "high-part-relu"])
def test_the_rescale_program_and_rule_are_exact_on_every_int8(params):
    a = np.arange(-128, 128, dtype=np.int64)
    loads, stages = params.program()
    assert [src for _, src in loads] == ["a"] * len(loads)
    want = [_exact_rescale(int(v), params) for v in a]
    assert _run_stages(stages, {block: a for block, _ in loads}).tolist() == want
    assert rescale_ref(a, params).tolist() == want


@pytest.mark.parametrize("params", RESCALES + REQ_RESCALES, ids=["two-parts", "high-part-relu", "req", "req-relu"])
def test_a_rescale_form_reads_back_computes_the_rule_and_only_its_pattern_matches(params):
    form, values = rq_relax.rescale_values(params)
    func, value_of, root = _emitted({"a": ((1, 8, 2, 2), "int8")},
                                    lambda bb, a: rq_relax.emit(form, {"a": a}, values, bb.emit))
    var2val = relax.analysis.get_var2val(func)
    assert rq_relax.rescale_pattern().match(root, var2val) and not rq_relax.add_pattern().match(root, var2val)
    a, got = rq_relax.read_rescale(root, value_of)
    assert got == params and a.same_as(func.params[0])
    x = RNG.integers(-128, 128, (1, 8, 4, 4))
    want = req_sum_ref((x,), params) if isinstance(params, ReqSumParams) else rescale_ref(x, params)
    np.testing.assert_array_equal(_evaluate(form, {"a": x}, values), want)


@pytest.mark.parametrize("zero, mult, zp, lo", [(-128, 0.7316, -128, -128), (-128, 1.0, -128, -128),
                                                (3, 0.01234, -7, -128), (-20, 0.99999, 5, 5),
                                                (0, 0.5, 0, -128), (-128, 37.5, -128, -128)])
def test_a_chosen_rescale_gives_the_real_multiplier_on_every_int8(zero, mult, zp, lo):
    """Against Fraction arithmetic on all 256 operands; a multiplier below 1 takes one part
    (m < 2^15: one load, one MUL), a larger one may take the two-part encoding."""
    p = choose_rescale(zero, mult, zp, lo)
    want = [min(max(math.floor((a - zero) * Fraction(mult) + Fraction(1, 2)) + zp, lo), 127)
            for a in range(-128, 128)]
    assert rescale_ref(np.arange(-128, 128), p).tolist() == want
    if mult < 1:
        assert p.m < 1 << SPLIT and len(p.program()[0]) == 1


@pytest.mark.parametrize("zero, mult, zp, lo", [(-128, 0.7316, -128, -128), (-128, 1.0, -128, -128),
                                                (3, 0.01234, -7, -128), (-20, 0.99999, 5, 5),
                                                (0, 0.5, 0, -128), (-128, 37.5, -128, -128)])
def test_a_req_rescale_gives_the_real_multiplier_on_every_int8(zero, mult, zp, lo):
    """One operand: the whole multiplier in REQ's 31 bits, against Fraction arithmetic on all 256
    operands, and the program is a load, the zero point's ADD and one REQ."""
    p = choose_req_sum([mult], (zero,), zp, lo)
    want = [min(max(math.floor((a - zero) * Fraction(mult) + Fraction(1, 2)) + zp, lo), 127)
            for a in range(-128, 128)]
    assert req_sum_ref((np.arange(-128, 128),), p).tolist() == want
    loads, stages = p.program()
    assert len(loads) == 1 and [st.op for st in stages if st.op != "max" and st.op != "min"] == \
        (["add"] if zero else []) + ["req"]


@pytest.mark.parametrize("ma, mb, za, zb, zy", [(0.7316, 0.4121, -3, 17, -128), (1.9137, 0.0513, -128, -128, 5),
                                                (2.7131e-3, 3.1047, 100, -100, -20), (0.6029, 1.13e-5, 0, 0, -128)])
def test_a_req_add_is_within_one_lsb_of_the_real_sum_and_rarely_off(ma, mb, za, zb, zy):
    """Two operands: their ratio in 15-bit factors, so outputs near a tie may differ by 1 from
    the real multipliers' (Fraction arithmetic over every pair of int8 values; multipliers of
    no short decimal, whose exact ties a float's last bit would decide)."""
    p = choose_req_sum([ma, mb], (za, zb), zy)
    a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128))
    got = req_sum_ref((a, b), p).astype(np.int64)
    fa, fb = Fraction(ma), Fraction(mb)
    real = np.array([[min(max(math.floor((x - za) * fa + (y - zb) * fb + Fraction(1, 2)) + zy, -128), 127)
                      for x in range(-128, 128)] for y in range(-128, 128)])
    assert np.abs(got - real).max() <= 1 and (got != real).mean() < 1e-3


@pytest.mark.parametrize("change, match", [({"zeros": (200, 0)}, "int8 zero point"),
                                           ({"factors": (1 << 15, 1)}, "factor"),
                                           ({"m": 1 << 31}, "REQ multiplier"),
                                           ({"zeros": (0, 0, 0), "factors": (1, 1, 1)}, "one or two operands")])
def test_a_req_sum_refuses_what_req_and_the_alu_cannot_compute(change, match):
    p = dataclasses.replace(choose_req_sum([0.5, 0.5], (0, 0), 0), **change)
    with pytest.raises(CompileError, match=match):
        check_params(p)


def test_a_req_add_whose_operand_vanishes_loads_only_the_other():
    """A factor that rounds to 0 (an attention mask of -3.4e38 next to scores) is not loaded:
    graph.ops.add then keeps such an add on the CPU, naming the operand."""
    p = choose_req_sum([1.0, 1e-9], (0, 0), 0)
    loads, stages = p.program()
    assert p.factors[1] == 0 and [src for _, src in loads] == ["a"] and "sum" not in [st.name for st in stages]
