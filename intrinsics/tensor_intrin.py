"""Tensor intrinsics of the VTA-8 GEMM core and ALU, declared from a hardware Config.

In the style of TVM's `tvm/s_tir/tensor_intrin/*.py`: one generator per intrinsic returns its
(description, implementation) pair for the entry shape (BATCH, BLOCK_IN, BLOCK_OUT) and its
immediates; the functions at the end register what a schedule asks for, once per process, under
a name that carries the shape. A description says what one micro-op computes on one SRAM entry
in the accelerator's buffer scopes; an implementation emits the `vta.uop_push` call(s)
(`intrinsics.calls.UopPush`) that `intrinsics.lower` folds into GEMM/ALU instructions.

A unit BATCH dimension is left out of a description's loops (`unit`): TensorIR drops unit loops
when it matches a block, so the description must iterate only over the dimensions of extent > 1.
"""
from __future__ import annotations

import concurrent.futures

from tvm import s_tir, tirx
from tvm.script import tirx as T

from vta_sim import isa
from vta_sim.config import Config
from vta_sim.errors import CompileError, EncodingError

from .calls import GEMM, RESET, UopPush

#: On-chip buffer scopes; the OUT SRAM mirrors ACC entries, so stores read the ACC scope.
SCOPES = {"inp": "local.inp_buffer", "wgt": "local.wgt_buffer", "acc": "local.acc_buffer"}
SCOPE_SRAM = {v: k for k, v in SCOPES.items()}
UOP_PUSH = UopPush.NAME
#: The TIR expression of each ALU op of `isa.ALU_OPS` and pseudo-op of `isa.ALU_PSEUDO_OPS`.
ALU_EXPRS = {
    "min": lambda x, y: T.min(x, y),
    "max": lambda x, y: T.max(x, y),
    "add": lambda x, y: x + y,
    "shr": lambda x, y: T.shift_right(x, y),
    "mul": lambda x, y: x * y,
    "shl": lambda x, y: T.shift_left(x, y),
}


def req_expr(x, y, shift: int, zero_point: int):
    """REQ's lane (docs/isa-extensions.md) as a TIR expression, x the value and y the multiplier:
    clamp(((x * y + 2^(shift-1)) >> shift) + zero_point, -128, 127) in int64, as int32. The
    compiler's shifts stay below 63 (requantisation.multiply_shift.MAX_SHIFT), so the rounding add
    cannot overflow here; the hardware's form needs no bit beyond the product's 64 at all."""
    p = x.astype("int64") * y.astype("int64")
    if shift:
        p = T.shift_right(p + tirx.const(1 << (shift - 1), "int64"), tirx.const(shift, "int64"))
    v = p + tirx.const(zero_point, "int64")
    return T.max(T.min(v, tirx.const(isa.REQ_OUT_MAX, "int64")), tirx.const(isa.REQ_OUT_MIN, "int64")).astype("int32")


# ----------------------------------------------------------------------------- building blocks
def _entry_buffers(B: int, BI: int, BO: int) -> tuple:
    """Factories of the buffer types of one INP, WGT and ACC entry (each parameter its own buffer)."""
    return (lambda: T.Buffer((B, BI), "int8", scope=SCOPES["inp"], offset_factor=1),
            lambda: T.Buffer((BO, BI), "int8", scope=SCOPES["wgt"], offset_factor=1),
            lambda: T.Buffer((B, BO), "int32", scope=SCOPES["acc"], offset_factor=1))


def _whole(reads=(), writes=()):
    """Declare the root block's reads and writes: every buffer whole."""
    T.reads(*[b[tuple(slice(0, n) for n in b.shape)] for b in reads])
    T.writes(*[b[tuple(slice(0, n) for n in b.shape)] for b in writes])


def _element(kinds: str, loops, unit: int, body, *buffers):
    """Bind one block's axes to `loops` and emit `body(*buffers, b, o[, k])`; with a unit batch
    (`unit` = 1) the batch loop is absent and b is 0."""
    loops = [loops] if isinstance(loops, tirx.Var) else list(loops)
    axes = T.axis.remap(kinds[unit:], loops)
    axes = [axes] if isinstance(axes, tirx.Var) else list(axes)
    body(*buffers, *([0] * unit), *axes)


def _push(op: str, imm, dst, x=0, y=0, use_imm: int | None = None):
    """Emit one micro-op push (the whole of an implementation); `use_imm` defaults to whether
    there is an immediate (REQ has one beside its tensor operand)."""
    call = UopPush(op, int(imm is not None) if use_imm is None else use_imm, int(imm or 0), dst, x, y)
    T.evaluate(T.call_extern("int32", call.NAME, *call.args()))


def _mac(C, A, W, b, o, k):
    T.buffer_store(C, C[b, o] + T.Cast("int32", A[b, k]) * T.Cast("int32", W[o, k]), [b, o])


# ----------------------------------------------------------------------------- generators
def get_gemm_intrin(B: int, BI: int, BO: int) -> tuple:
    """ACC[b, o] += sum_k INP[b, k] * WGT[o, k] on one entry."""
    Inp, Wgt, Acc = _entry_buffers(B, BI, BO)
    unit = int(B == 1)
    dims = (B, BO, BI)[unit:]

    @T.prim_func(s_tir=True)
    def desc(A: Inp(), W: Wgt(), C: Acc()):
        with T.sblock("root"):
            _whole(reads=(C, A, W), writes=(C,))
            for loops in T.grid(*dims):
                with T.sblock("update"):
                    _element("SSR", loops, unit, _mac, C, A, W)

    @T.prim_func(s_tir=True)
    def impl(A: Inp(), W: Wgt(), C: Acc()):
        with T.sblock("root"):
            _whole(reads=(C, A, W), writes=(C,))
            _push(GEMM, None, C.access_ptr("rw"), A.access_ptr("r"), W.access_ptr("r"))

    return desc, impl


def get_fill_intrin(B: int, BO: int, value: int) -> tuple:
    """ACC[b, o] = value on one entry: a reset, then for value != 0 ADD imm over the same loops."""
    _, _, Acc = _entry_buffers(B, 1, BO)
    unit = int(B == 1)
    dims = (B, BO)[unit:]

    def fill(C, b, o):
        T.buffer_store(C, T.int32(value), [b, o])

    @T.prim_func(s_tir=True)
    def desc(C: Acc()):
        with T.sblock("root"):
            _whole(writes=(C,))
            for loops in T.grid(*dims):
                with T.sblock("init"):
                    _element("SS", loops, unit, fill, C)

    @T.prim_func(s_tir=True)
    def impl(C: Acc()):
        with T.sblock("root"):
            _whole(writes=(C,))
            _push(RESET, None, C.access_ptr("w"))
            if value != 0:
                _push("add", value, C.access_ptr("rw"), C.access_ptr("r"))

    return desc, impl


def get_alu_imm_intrin(B: int, BO: int, op: str, imm: int) -> tuple:
    """D[b, o] = op(X[b, o], imm) on one ACC entry, in place (D shares X's SRAM)."""
    _, _, Acc = _entry_buffers(B, 1, BO)
    unit = int(B == 1)
    dims = (B, BO)[unit:]
    fn = ALU_EXPRS[op]
    hw_op, hw_imm = isa.resolve_alu(op, imm)

    def apply(X, D, b, o):
        T.buffer_store(D, fn(X[b, o], T.int32(imm)), [b, o])

    @T.prim_func(s_tir=True)
    def desc(X: Acc(), D: Acc()):
        with T.sblock("root"):
            _whole(reads=(X,), writes=(D,))
            for loops in T.grid(*dims):
                with T.sblock("alu"):
                    _element("SS", loops, unit, apply, X, D)

    @T.prim_func(s_tir=True)
    def impl(X: Acc(), D: Acc()):
        with T.sblock("root"):
            _whole(reads=(X,), writes=(D,))
            _push(hw_op, hw_imm, D.access_ptr("w"), X.access_ptr("r"))

    return desc, impl


def _alu_binary_intrin(B: int, BO: int, expr, op: str, imm: int | None = None, use_imm: int | None = None) -> tuple:
    """D[b, o] = expr(X[b, o], Y[b, o]) on one ACC entry, in place (D shares X's SRAM), pushed as
    ALU op `op` with a tensor operand (and REQ's immediate field where given)."""
    _, _, Acc = _entry_buffers(B, 1, BO)
    unit = int(B == 1)
    dims = (B, BO)[unit:]

    def apply(X, Y, D, b, o):
        T.buffer_store(D, expr(X[b, o], Y[b, o]), [b, o])

    @T.prim_func(s_tir=True)
    def desc(X: Acc(), Y: Acc(), D: Acc()):
        with T.sblock("root"):
            _whole(reads=(X, Y), writes=(D,))
            for loops in T.grid(*dims):
                with T.sblock("alu"):
                    _element("SS", loops, unit, apply, X, Y, D)

    @T.prim_func(s_tir=True)
    def impl(X: Acc(), Y: Acc(), D: Acc()):
        with T.sblock("root"):
            _whole(reads=(X, Y), writes=(D,))
            _push(op, imm, D.access_ptr("w"), X.access_ptr("r"), Y.access_ptr("r"), use_imm=use_imm)

    return desc, impl


def get_alu_tensor_intrin(B: int, BO: int, op: str) -> tuple:
    """D[b, o] = op(X[b, o], Y[b, o]) on one ACC entry, in place (D shares X's SRAM)."""
    return _alu_binary_intrin(B, BO, ALU_EXPRS[op], op)


def get_alu_req_intrin(B: int, BO: int, shift: int, zero_point: int) -> tuple:
    """D[b, o] = REQ(X[b, o], Y[b, o]) on one ACC entry, in place: the multipliers Y, the shift and
    zero point in REQ's immediate field (use_imm 0)."""
    return _alu_binary_intrin(B, BO, lambda x, y: req_expr(x, y, shift, zero_point), "req",
                              isa.req_imm(shift, zero_point), use_imm=0)


def get_alu_update_intrin(B: int, BO: int, op: str) -> tuple:
    """D[b, o] = op(D[b, o], Y[b, o]) on one ACC entry: a reduction's update in place."""
    _, _, Acc = _entry_buffers(B, 1, BO)
    unit = int(B == 1)
    dims = (B, BO)[unit:]
    fn = ALU_EXPRS[op]

    def apply(Y, D, b, o):
        T.buffer_store(D, fn(D[b, o], Y[b, o]), [b, o])

    @T.prim_func(s_tir=True)
    def desc(Y: Acc(), D: Acc()):
        with T.sblock("root"):
            _whole(reads=(D, Y), writes=(D,))
            for loops in T.grid(*dims):
                with T.sblock("alu"):
                    _element("SS", loops, unit, apply, Y, D)

    @T.prim_func(s_tir=True)
    def impl(Y: Acc(), D: Acc()):
        with T.sblock("root"):
            _whole(reads=(D, Y), writes=(D,))
            _push(op, None, D.access_ptr("rw"), D.access_ptr("r"), Y.access_ptr("r"))

    return desc, impl


# ----------------------------------------------------------------------------- registration
#: Generator of each intrinsic family; a name is `vta.<B>x<BI>x<BO>.<family><suffix>`.
INTRINSICS = {
    "gemm": get_gemm_intrin,
    "fill": get_fill_intrin,
    "alu_imm": get_alu_imm_intrin,
    "alu_tensor": get_alu_tensor_intrin,
    "alu_update": get_alu_update_intrin,
    "alu_req": get_alu_req_intrin,
}


def _on_a_short_stack(make):
    """`make()`, run in a thread of its own. TVMScript's `T.prim_func` takes `inspect.stack()`,
    which reads the source of every frame of the caller's stack; under pytest or the CLI that
    costs more than the parse itself, and a new thread's stack is a few frames deep."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(make).result()


def _register(cfg: Config, family: str, suffix: str, *params) -> str:
    """Register `family` for `cfg`'s entry shape once per process; returns the intrinsic's name."""
    name = f"vta.{cfg.BATCH}x{cfg.BLOCK_IN}x{cfg.BLOCK_OUT}.{family}{suffix}"
    if s_tir.TensorIntrin.get(name, allow_missing=True) is None:
        shape = (cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT) if family == "gemm" else (cfg.BATCH, cfg.BLOCK_OUT)
        s_tir.TensorIntrin.register(name, *_on_a_short_stack(lambda: INTRINSICS[family](*shape, *params)))
    return name


def gemm_intrin(cfg: Config) -> str:
    return _register(cfg, "gemm", "")


def reset_intrin(cfg: Config) -> str:
    """ACC = 0 on one entry (the reduction's init, a GEMM with the reset bit)."""
    return _register(cfg, "fill", "0", 0)


def alu_intrin(cfg: Config, op: str, imm: int | None = None) -> str:
    """D = op(X, imm or Y) on one ACC entry, in place. `op` is an `isa.ALU_OPS` name or a pseudo-op
    (shl: SHR by -imm, spec section 5); each immediate is its own intrinsic."""
    try:
        isa.resolve_alu(op, imm)
    except EncodingError as exc:
        raise CompileError(str(exc)) from None
    if imm is None:
        return _register(cfg, "alu_tensor", f"_{op}", op)
    return _register(cfg, "alu_imm", f"_{op}_{int(imm)}", op, int(imm))


def req_intrin(cfg: Config, shift: int, zero_point: int) -> str:
    """D = REQ(X, Y) on one ACC entry, in place (docs/isa-extensions.md); each (shift, zero
    point) is its own intrinsic."""
    try:
        isa.req_imm(shift, zero_point)
    except EncodingError as exc:
        raise CompileError(str(exc)) from None
    return _register(cfg, "alu_req", f"_{int(shift)}_{int(zero_point)}", int(shift), int(zero_point))


def alu_update_intrin(cfg: Config, op: str) -> str:
    """D = op(D, Y) on one ACC entry: a max-pool's window walk folds into one ALU instruction."""
    if op not in isa.ALU_OPS:
        raise CompileError(f"ALU op {op!r} cannot update in place with a tensor operand; accepted: "
                           f"{', '.join(isa.ALU_OPS)}")
    return _register(cfg, "alu_update", f"_{op}", op)


def tensorize_loop(sch, block, cfg: Config, reduce_dims: int = 0):
    """The loop at which an entry intrinsic matches `block`: the first of its entry loops
    (BATCH, BLOCK_OUT, then `reduce_dims` more), skipping the batch loop when BATCH is 1 because
    TensorIR drops unit dimensions (see the module docstring)."""
    n = 2 + reduce_dims - (cfg.BATCH == 1)
    return sch.get_loops(block)[-n]
