"""Tensor intrinsics of the VTA-8 GEMM core and ALU, declared from a hardware Config.

Each intrinsic is a `tvm.s_tir.TensorIntrin`: a description (what one micro-op computes on one
SRAM entry, in the accelerator's buffer scopes) and an implementation that emits a single
`vta.uop_push` call. `intrinsics.lower` later folds the loops around those pushes into GEMM/ALU
instructions. Shapes come from the Config (BATCH, BLOCK_IN, BLOCK_OUT), never from constants.

A unit BATCH dimension is left out of the description: TensorIR drops unit loops when it
matches a block, so the description must iterate only over the dimensions of extent > 1.
"""
from __future__ import annotations

from tvm import s_tir
from tvm.script import tirx as T

from vta_sim.config import Config

from .errors import CompileError

#: On-chip buffer scopes; the OUT SRAM mirrors ACC entries, so stores read the ACC scope.
SCOPES = {"inp": "local.inp_buffer", "wgt": "local.wgt_buffer", "acc": "local.acc_buffer"}
SCOPE_SRAM = {v: k for k, v in SCOPES.items()}
UOP_PUSH = "vta.uop_push"
#: ALU operations (spec section 5) and the TIR expression each computes.
ALU_EXPRS = {
    "add": lambda x, y: x + y,
    "mul": lambda x, y: x * y,
    "min": lambda x, y: T.min(x, y),
    "max": lambda x, y: T.max(x, y),
    "shr": lambda x, y: T.shift_right(x, y),
    "shl": lambda x, y: T.shift_left(x, y),     # the hardware's SHR by a negative amount
}


def _key(cfg: Config) -> str:
    return f"{cfg.BATCH}x{cfg.BLOCK_IN}x{cfg.BLOCK_OUT}"


def _register(name: str, desc, impl) -> str:
    """Register once per process (the same config asks again for every schedule)."""
    if s_tir.TensorIntrin.get(name, allow_missing=True) is None:
        s_tir.TensorIntrin.register(name, desc, impl)
    return name


def gemm_intrin(cfg: Config) -> str:
    """ACC[b, o] += sum_k INP[b, k] * WGT[o, k] on one entry; returns the registered name."""
    B, BI, BO = cfg.BATCH, cfg.BLOCK_IN, cfg.BLOCK_OUT
    inp, wgt, acc = SCOPES["inp"], SCOPES["wgt"], SCOPES["acc"]

    @T.prim_func(s_tir=True)
    def desc(a: T.handle, w: T.handle, c: T.handle):
        A = T.match_buffer(a, (B, BI), "int8", scope=inp, offset_factor=1)
        W = T.match_buffer(w, (BO, BI), "int8", scope=wgt, offset_factor=1)
        C = T.match_buffer(c, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads(C[0:B, 0:BO], A[0:B, 0:BI], W[0:BO, 0:BI])
            T.writes(C[0:B, 0:BO])
            if B > 1:
                for i, j, k in T.grid(B, BO, BI):
                    with T.sblock("update"):
                        vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                        C[vi, vj] = C[vi, vj] + T.Cast("int32", A[vi, vk]) * T.Cast("int32", W[vj, vk])
            else:
                for j, k in T.grid(BO, BI):
                    with T.sblock("update"):
                        vj, vk = T.axis.remap("SR", [j, k])
                        C[0, vj] = C[0, vj] + T.Cast("int32", A[0, vk]) * T.Cast("int32", W[vj, vk])

    @T.prim_func(s_tir=True)
    def impl(a: T.handle, w: T.handle, c: T.handle):
        A = T.match_buffer(a, (B, BI), "int8", scope=inp, offset_factor=1)
        W = T.match_buffer(w, (BO, BI), "int8", scope=wgt, offset_factor=1)
        C = T.match_buffer(c, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads(C[0:B, 0:BO], A[0:B, 0:BI], W[0:BO, 0:BI])
            T.writes(C[0:B, 0:BO])
            T.evaluate(T.call_extern("int32", UOP_PUSH, "gemm", 0, C.access_ptr("rw"),
                                     A.access_ptr("r"), W.access_ptr("r")))

    return _register(f"vta.{_key(cfg)}.gemm", desc, impl)


def reset_intrin(cfg: Config) -> str:
    """ACC[b, o] = 0 on one entry (the reduction's init, a GEMM with the reset bit)."""
    B, BO = cfg.BATCH, cfg.BLOCK_OUT
    acc = SCOPES["acc"]

    @T.prim_func(s_tir=True)
    def desc(c: T.handle):
        C = T.match_buffer(c, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads()
            T.writes(C[0:B, 0:BO])
            if B > 1:
                for i, j in T.grid(B, BO):
                    with T.sblock("init"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = 0
            else:
                for j in T.serial(BO):
                    with T.sblock("init"):
                        vj = T.axis.remap("S", [j])
                        C[0, vj] = 0

    @T.prim_func(s_tir=True)
    def impl(c: T.handle):
        C = T.match_buffer(c, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads()
            T.writes(C[0:B, 0:BO])
            T.evaluate(T.call_extern("int32", UOP_PUSH, "reset", 0, C.access_ptr("w"), 0, 0))

    return _register(f"vta.{_key(cfg)}.reset", desc, impl)


def alu_intrin(cfg: Config, op: str, imm: int | None = None) -> str:
    """D[b, o] = op(X[b, o], imm or Y[b, o]) on one ACC entry, executed in place (D shares X's SRAM).

    `op` is add/mul/min/max/shr, or shl (executed as SHR by -imm, spec section 5). With an
    immediate the description carries it as a constant, so each immediate is its own intrinsic.
    """
    if op not in ALU_EXPRS:
        raise CompileError(f"unknown ALU op {op!r}; accepted: {', '.join(ALU_EXPRS)}")
    if op == "shl" and imm is None:
        raise CompileError("shl needs an immediate amount (a tensor shift amount uses shr with "
                           "negative values)")
    hw_op, hw_imm = ("shr", -int(imm)) if op == "shl" else (op, imm)
    if imm is not None and not -(1 << 15) <= int(hw_imm) < (1 << 15):
        raise CompileError(f"ALU immediate {hw_imm} does not fit the signed 16-bit field "
                           "[-32768, 32767]")
    B, BO = cfg.BATCH, cfg.BLOCK_OUT
    acc = SCOPES["acc"]
    fn = ALU_EXPRS[op]
    if imm is None:
        return _alu_tensor(cfg, op, fn, B, BO, acc)
    imm = int(imm)

    @T.prim_func(s_tir=True)
    def desc(x: T.handle, d: T.handle):
        X = T.match_buffer(x, (B, BO), "int32", scope=acc, offset_factor=1)
        D = T.match_buffer(d, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads(X[0:B, 0:BO])
            T.writes(D[0:B, 0:BO])
            if B > 1:
                for i, j in T.grid(B, BO):
                    with T.sblock("alu"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        D[vi, vj] = fn(X[vi, vj], T.int32(imm))
            else:
                for j in T.serial(BO):
                    with T.sblock("alu"):
                        vj = T.axis.remap("S", [j])
                        D[0, vj] = fn(X[0, vj], T.int32(imm))

    @T.prim_func(s_tir=True)
    def impl(x: T.handle, d: T.handle):
        X = T.match_buffer(x, (B, BO), "int32", scope=acc, offset_factor=1)
        D = T.match_buffer(d, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads(X[0:B, 0:BO])
            T.writes(D[0:B, 0:BO])
            T.evaluate(T.call_extern("int32", UOP_PUSH, f"alu.{hw_op}.imm", hw_imm,
                                     D.access_ptr("w"), X.access_ptr("r"), 0))

    return _register(f"vta.{_key(cfg)}.alu_{op}_imm{imm}", desc, impl)


def _alu_tensor(cfg, op, fn, B, BO, acc) -> str:
    @T.prim_func(s_tir=True)
    def desc(x: T.handle, y: T.handle, d: T.handle):
        X = T.match_buffer(x, (B, BO), "int32", scope=acc, offset_factor=1)
        Y = T.match_buffer(y, (B, BO), "int32", scope=acc, offset_factor=1)
        D = T.match_buffer(d, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads(X[0:B, 0:BO], Y[0:B, 0:BO])
            T.writes(D[0:B, 0:BO])
            if B > 1:
                for i, j in T.grid(B, BO):
                    with T.sblock("alu"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        D[vi, vj] = fn(X[vi, vj], Y[vi, vj])
            else:
                for j in T.serial(BO):
                    with T.sblock("alu"):
                        vj = T.axis.remap("S", [j])
                        D[0, vj] = fn(X[0, vj], Y[0, vj])

    @T.prim_func(s_tir=True)
    def impl(x: T.handle, y: T.handle, d: T.handle):
        X = T.match_buffer(x, (B, BO), "int32", scope=acc, offset_factor=1)
        Y = T.match_buffer(y, (B, BO), "int32", scope=acc, offset_factor=1)
        D = T.match_buffer(d, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads(X[0:B, 0:BO], Y[0:B, 0:BO])
            T.writes(D[0:B, 0:BO])
            T.evaluate(T.call_extern("int32", UOP_PUSH, f"alu.{op}.tensor", 0, D.access_ptr("w"),
                                     X.access_ptr("r"), Y.access_ptr("r")))

    return _register(f"vta.{_key(cfg)}.alu_{op}_tensor", desc, impl)


def tensorize_loop(sch, block, cfg: Config, reduce_dims: int = 0):
    """The loop at which an entry intrinsic matches `block`: the first of its entry loops
    (BATCH, BLOCK_OUT, then `reduce_dims` more), skipping the batch loop when BATCH is 1 because
    TensorIR drops unit dimensions (see the module docstring)."""
    n = 2 + reduce_dims - (cfg.BATCH == 1)
    return sch.get_loops(block)[-n]


def alu_update_intrin(cfg: Config, op: str) -> str:
    """D[b, o] = op(D[b, o], Y[b, o]) on one ACC entry: a reduction's update in place.

    What a max-pool's window walk is (spec section 5: the ALU's destination is its first
    operand), so the reduction over the window folds into one ALU instruction's micro-ops."""
    if op not in ALU_EXPRS or op == "shl":
        raise CompileError(f"ALU op {op!r} cannot update in place with a tensor operand; accepted: "
                           f"{', '.join(o for o in ALU_EXPRS if o != 'shl')}")
    B, BO = cfg.BATCH, cfg.BLOCK_OUT
    acc = SCOPES["acc"]
    fn = ALU_EXPRS[op]

    @T.prim_func(s_tir=True)
    def desc(y: T.handle, d: T.handle):
        Y = T.match_buffer(y, (B, BO), "int32", scope=acc, offset_factor=1)
        D = T.match_buffer(d, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads(D[0:B, 0:BO], Y[0:B, 0:BO])
            T.writes(D[0:B, 0:BO])
            if B > 1:
                for i, j in T.grid(B, BO):
                    with T.sblock("alu"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        D[vi, vj] = fn(D[vi, vj], Y[vi, vj])
            else:
                for j in T.serial(BO):
                    with T.sblock("alu"):
                        vj = T.axis.remap("S", [j])
                        D[0, vj] = fn(D[0, vj], Y[0, vj])

    @T.prim_func(s_tir=True)
    def impl(y: T.handle, d: T.handle):
        Y = T.match_buffer(y, (B, BO), "int32", scope=acc, offset_factor=1)
        D = T.match_buffer(d, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads(D[0:B, 0:BO], Y[0:B, 0:BO])
            T.writes(D[0:B, 0:BO])
            T.evaluate(T.call_extern("int32", UOP_PUSH, f"alu.{op}.tensor", 0, D.access_ptr("rw"),
                                     D.access_ptr("r"), Y.access_ptr("r")))

    return _register(f"vta.{_key(cfg)}.alu_{op}_update", desc, impl)


def fill_intrin(cfg: Config, value: int) -> str:
    """C[b, o] = value on one ACC entry: reset, then ADD imm (two instructions over the same loops).

    A reduction whose identity is not 0 (max over int8 values starts at -128) needs it as init."""
    value = int(value)
    if not -(1 << 15) <= value < (1 << 15):
        raise CompileError(f"fill value {value} does not fit the ALU's signed 16-bit immediate")
    B, BO = cfg.BATCH, cfg.BLOCK_OUT
    acc = SCOPES["acc"]

    @T.prim_func(s_tir=True)
    def desc(c: T.handle):
        C = T.match_buffer(c, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads()
            T.writes(C[0:B, 0:BO])
            if B > 1:
                for i, j in T.grid(B, BO):
                    with T.sblock("init"):
                        vi, vj = T.axis.remap("SS", [i, j])
                        C[vi, vj] = T.int32(value)
            else:
                for j in T.serial(BO):
                    with T.sblock("init"):
                        vj = T.axis.remap("S", [j])
                        C[0, vj] = T.int32(value)

    @T.prim_func(s_tir=True)
    def impl(c: T.handle):
        C = T.match_buffer(c, (B, BO), "int32", scope=acc, offset_factor=1)
        with T.sblock("root"):
            T.reads()
            T.writes(C[0:B, 0:BO])
            T.evaluate(T.call_extern("int32", UOP_PUSH, "reset", 0, C.access_ptr("w"), 0, 0))
            T.evaluate(T.call_extern("int32", UOP_PUSH, "alu.add.imm", value, C.access_ptr("rw"),
                                     C.access_ptr("r"), 0))

    return _register(f"vta.{_key(cfg)}.fill{value}", desc, impl)
