"""Lowering of a scheduled, tensorized PrimFunc to a host program that drives `vta_sim.runtime`.

`Lowering().compile(mod)` (`tvm.compile` with the pipeline `"vta"`) runs TVM's own block
lowering (to flat loops over flattened buffers), then `LowerVTA`:

1. translate: DMA copy nests -> `load_2d`/`store_2d` (intrinsics.dma); the loop nests around
   `vta.uop_push` calls -> one GEMM/ALU op whose two outer loops become `iter_out`/`iter_in`
   (when affine) and whose inner iterations are enumerated into the micro-op kernel;
2. virtual threads (`vthread.*` bindings) -> interleaved per-thread ops on private SRAM slices;
3. SRAM placement, then TIR loops around `T.call_packed("vta.*", ...)` bracketed by
   `vta.begin` (the DRAM tensors) and `vta.end` (run, copy results back).

The ops carry SRAM indices only; which module waits for which is decided where the program
is built (intrinsics.host), from the SRAM ranges each op reads and writes.
"""
from __future__ import annotations

import json
from contextvars import ContextVar

import tvm
from tvm import s_tir, tirx
from tvm.ir import StringImm
from tvm.ir.expr import Call
from tvm.sym import Analyzer
from tvm.tirx import compilation_pipeline

from vta_sim.config import Config
from vta_sim.errors import CompileError

from . import dma
from .calls import RESET, Alu, Gemm, UopPush
from .program import (Alloc, Loop, SramPtr, VThread, buffer_elems, emit, inject_vthreads, plan_sram,
                      substitute)
from .tensor_intrin import SCOPE_SRAM

CONFIG_ATTR = "vta.config"
PIPELINE = "vta"
#: The host code of a kernel runs once, to record its intrinsic calls (intrinsics.build), so LLVM
#: does not optimise it: code generation takes about 0.08 s less a kernel.
HOST_TARGET = {"kind": "llvm", "opt-level": 0}


def entry_elems(cfg: Config) -> dict:
    """Elements per SRAM entry, by SRAM name."""
    return {name: int(buf.entry_bytes // buf.dtype.itemsize) for name, buf in cfg.buffers.items()
            if name != "uop"}


class _Translator:
    def __init__(self, cfg: Config, func):
        self.entry = entry_elems(cfg)
        self.params = {p: i for i, p in enumerate(func.params)}
        self.param_bufs = list(func.params)
        self.kinds = [None] * len(func.params)
        self.sram_of = {}
        self.aliases = {}

    # ------------------------------------------------------------------ statements
    def stmts(self, s) -> list:
        if isinstance(s, tirx.SeqStmt):
            return [n for c in s.seq for n in self.stmts(c)]
        if isinstance(s, tirx.DeclBuffer):
            self._declare_view(s)
            return []
        if isinstance(s, tirx.AllocBuffer):
            sram = SCOPE_SRAM.get(dma.scope_of(s.buffer))
            if sram is None:
                raise CompileError(f"buffer {s.buffer.name} lives in scope "
                                   f"{dma.scope_of(s.buffer) or 'global'}; on VTA-8 every "
                                   f"intermediate must be in one of {', '.join(SCOPE_SRAM)}")
            self.sram_of[s.buffer] = sram
            return [Alloc(s.buffer, sram)]
        if isinstance(s, tirx.AttrStmt):
            body = self.stmts(s.body)
            tag = getattr(s.node, "thread_tag", "") if s.node is not None else ""
            if str(tag).startswith("vthread"):
                return [VThread(s.node.var, int(s.value), body)]
            return body
        if isinstance(s, tirx.For):
            return self._for(s)
        if isinstance(s, tirx.Evaluate) and _push_of(s) is not None:
            return self._fold([], s)
        if isinstance(s, tirx.Evaluate) and isinstance(s.value, tirx.IntImm):
            return []
        if isinstance(s, tirx.BufferStore):
            return self._copy([], s)
        raise CompileError(f"cannot map {type(s).__name__} onto VTA-8:\n{s}\nevery statement must "
                           "be a DMA copy or a tensorized GEMM/ALU block")

    def _declare_view(self, decl):
        """Flattened views of the parameters (FlattenBuffer's DeclBuffer) stand for them."""
        root = decl.data.args[0] if isinstance(decl.data, Call) and decl.data.args else None
        for param, index in list(self.params.items()):
            if root is not None and root.same_as(param):
                self.params[decl.buffer] = index
                return

    def _for(self, loop):
        parts = dma.copy_parts(loop)
        if parts is not None:
            return self._copy(*parts)
        if _only_pushes(loop):
            return self._fold_loops(loop)
        return [Loop(loop.loop_var, loop.extent, self.stmts(loop.body))]

    def _copy(self, loops, store):
        nodes, (_, dram, kind) = dma.lower_copy(
            loops, store, self.params, self.entry, lambda: f"copy into {store.buffer.name}")
        index = self.params[dram]
        if self.kinds[index] not in (None, kind):
            raise CompileError(f"parameter {self.param_bufs[index].name} is used both as "
                               f"{self.kinds[index]} and {kind}; give each DRAM tensor one role")
        self.kinds[index] = kind
        return nodes

    # ------------------------------------------------------------------ micro-op kernels
    def _fold_loops(self, loop):
        loops, body = [], loop
        while isinstance(body, tirx.For) and len(loops) < 2:
            loops.append(body)
            body = body.body
        return self._fold(loops, body)

    def _fold(self, loops, body) -> list:
        """GEMM/ALU ops: `loops` fold into iter_out/iter_in, `body` is enumerated into uops.

        One op per loop nest, except an intrinsic implemented as a sequence of different
        operations (`get_fill_intrin` of a non-zero value: reset, then ADD imm): each becomes its own op over the
        same loops, which is only equivalent when the operations touch nothing but their own,
        distinct destination entries (`_split_kinds`)."""
        for lp in loops:
            if not isinstance(lp.extent, tirx.IntImm):
                raise CompileError(f"loop {lp.loop_var} around a tensorized block has a "
                                   "non-constant extent; micro-op loops need constant trip counts")
        pushes = [(_push_of(ev), bind) for ev, bind in _enumerate(body, {})]
        groups = {}
        for push, bind in pushes:
            groups.setdefault((push.op, push.use_imm, push.imm), []).append((push, bind))
        if len(groups) == 1:
            return [self._fold_one(loops, pushes)]
        return _split_kinds([self._fold_one(loops, group) for group in groups.values()])

    def _fold_one(self, loops, pushes) -> Gemm | Alu:
        """One Gemm/Alu call for micro-op pushes of one kind, `pushes` = (UopPush, bindings)."""
        first = pushes[0][0]
        kind = first.op + (" imm" if first.use_imm else "")
        lvars = [lp.loop_var for lp in loops]
        operands = []                       # per operand: (buffer, base expr, factors, rel list)
        for slot in ("dst", "x", "y"):
            ptrs = [(_ptr(getattr(push, slot)), bind) for push, bind in pushes]
            if ptrs[0][0] is None:
                operands.append(None)
                continue
            operands.append(self._operand(ptrs, lvars, kind))
        dst, x, y = operands                # GEMM: acc, inp, wgt; ALU: result, operand, tensor
        if first.is_alu:
            self._alias(dst, x, kind)
        src, wgt = (y, None) if first.is_alu else (x, y)
        iters = [lp.extent.value for lp in loops] + [1] * (2 - len(loops))
        factors = {}
        for level, suffix in enumerate(("out", "in")):
            for name, operand in (("dst", dst), ("src", src), ("wgt", wgt)):
                factors[f"{name}_factor_{suffix}"] = operand[2][level] if operand and level < len(loops) else 0
        uops = tuple(tuple(operand[3][u] if operand else 0 for operand in (dst, src, wgt))
                     for u in range(len(pushes)))
        nest = dict(dst_base=_base(dst), src_base=_base(src), wgt_base=_base(wgt), iter_out=iters[0],
                    iter_in=iters[1], **factors, uops=uops)
        if first.is_alu:
            return Alu(**nest, op=first.op, use_imm=first.use_imm, imm=first.imm)
        return Gemm(**nest, reset=int(first.op == RESET))

    def _operand(self, ptrs, lvars, kind):
        buf = ptrs[0][0][0]
        sram = self.sram_of.get(buf)
        if sram is None:
            raise CompileError(f"{kind} operand {buf.name} is not an on-chip buffer")
        entry = self.entry[sram]
        base = None
        factors, rels = None, []
        ana = Analyzer()
        for (b, offset), bind in ptrs:
            if not b.same_as(buf):
                raise CompileError(f"one micro-op kernel reads both {buf.name} and {b.name} as "
                                   f"the same {kind} operand; split the loop nest")
            co = tvm.sym.detect_linear_equation(substitute(offset, bind), lvars)
            if len(co) != len(lvars) + 1 or not all(isinstance(c, tirx.IntImm) for c in co[:-1]):
                raise CompileError(f"{kind} operand {buf.name}[{offset}] is not affine in the "
                                   f"loops {', '.join(map(str, lvars))} that fold into the instruction")
            f = [c.value for c in co[:-1]]
            if factors is None:
                factors, base = f, co[-1]
            elif f != factors:
                raise CompileError(f"{kind} operand {buf.name}: micro-ops step differently")
            rel = ana.simplify(co[-1] - base)
            if not isinstance(rel, tirx.IntImm):
                raise CompileError(f"{kind} operand {buf.name}: micro-op offset {rel} is not constant "
                                   "within the kernel")
            rels.append(rel.value)
        for v in factors + rels:
            if v % entry:
                raise CompileError(f"{kind} operand {buf.name} moves by {v} elements, not whole "
                                   f"{entry}-element entries")
        return (buf, base, [v // entry for v in factors], [v // entry for v in rels])

    def _alias(self, dst, x, kind):
        """An ALU writes in place: its result buffer takes the first operand's storage."""
        if dst[0].same_as(x[0]):
            return
        same = (Analyzer().can_prove_equal(dst[1], x[1]) and dst[2] == x[2] and dst[3] == x[3])
        if not same or buffer_elems(dst[0]) > buffer_elems(x[0]):
            raise CompileError(f"{kind}: result {dst[0].name} must be laid out like its operand "
                               f"{x[0].name} (the ALU writes in place)")
        self.aliases[dst[0]] = x[0]


def _base(operand):
    """The SRAM pointer of an operand's base, 0 for an operand the op does not have."""
    return SramPtr(operand[0], operand[1]) if operand else 0


def _split_kinds(ops: list) -> list:
    """Ops of one loop nest issued one after the other instead of interleaved per entry: valid
    when each is a reset or an ALU op with an immediate (it reads only its destination) and
    no two of its iterations write the same entry."""
    labels = [op.label for op in ops]
    for op in ops:
        if not (op.reset if isinstance(op, Gemm) else op.use_imm):
            raise CompileError(f"one micro-op kernel mixes operations {labels}; a kernel may only "
                               "combine resets and ALU ops with an immediate; give each tensorized "
                               "block its own loop nest")
        entries = [d + i * op.dst_factor_out + j * op.dst_factor_in
                   for i in range(op.iter_out) for j in range(op.iter_in) for d, _, _ in op.uops]
        if len(set(entries)) != len(entries):
            raise CompileError(f"a kernel combining {labels} writes some ACC entries twice; it "
                               "cannot be split into one instruction per operation")
    return ops


def _push_of(stmt) -> UopPush | None:
    """The UopPush of a `vta.uop_push` Evaluate, else None."""
    call = stmt.value if isinstance(stmt, tirx.Evaluate) else None
    if call is None or not isinstance(call, Call) or call.op.name != "tirx.call_extern":
        return None
    if str(call.args[0].value) != UopPush.NAME:
        return None
    return UopPush.from_args([a.value if isinstance(a, (StringImm, tirx.IntImm)) else a
                              for a in call.args[1:]])


def _ptr(arg):
    """(buffer, element offset) of a tvm_access_ptr argument, None for a 0 placeholder."""
    if isinstance(arg, int):
        return None
    data, offset = arg.args[1], arg.args[2]
    return (data.args[0], offset)


def _only_pushes(stmt) -> bool:
    if isinstance(stmt, tirx.For):
        return _only_pushes(stmt.body)
    if isinstance(stmt, tirx.SeqStmt):
        return all(_only_pushes(c) for c in stmt.seq)
    return isinstance(stmt, tirx.Evaluate) and _push_of(stmt) is not None


def _enumerate(stmt, bind):
    """(push statement, loop bindings) for every iteration of the loops inside a kernel."""
    if isinstance(stmt, tirx.For):
        if not isinstance(stmt.extent, tirx.IntImm):
            raise CompileError(f"loop {stmt.loop_var} inside a micro-op kernel needs a constant extent")
        for i in range(stmt.extent.value):
            yield from _enumerate(stmt.body, {**bind, stmt.loop_var: i})
    elif isinstance(stmt, tirx.SeqStmt):
        for c in stmt.seq:
            yield from _enumerate(c, bind)
    else:
        yield stmt, bind


# ----------------------------------------------------------------------------- the pass
def _lower(func):
    cfg = Config.from_text(func.attrs[CONFIG_ATTR])
    tr = _Translator(cfg, func)
    nodes = tr.stmts(func.body)
    missing = [tr.param_bufs[i].name for i, k in enumerate(tr.kinds) if k is None]
    if missing:
        raise CompileError(f"parameter(s) {', '.join(missing)} are never loaded or stored by a DMA")
    slices = {}
    nodes = inject_vthreads(nodes, slices)
    depth = {s: cfg.buffers[s].depth for s in ("inp", "wgt", "acc")}
    plan = plan_sram(nodes, depth, tr.entry, slices, tr.aliases)
    body = emit(nodes, plan, tr.sram_of, tr.entry)
    begin = tirx.call_packed("vta.begin", cfg.to_text(), ",".join(tr.kinds),
                             *tr.param_bufs)
    end = tirx.call_packed("vta.end", *tr.param_bufs)
    new_body = tirx.SeqStmt([tirx.Evaluate(begin), body, tirx.Evaluate(end)])
    return func.with_body(new_body).with_attr("vta.sram_peak", json.dumps(plan.peak))


class Lowering:
    """One compilation's VTA pipeline: TVM's block lowering, then LowerVTA on the functions that
    carry `vta.config`. TVM re-raises an error inside a pass as a RuntimeError; `run` re-raises
    the CompileError the pass raised instead, so callers can catch CompileError."""

    def __init__(self):
        self.failure: CompileError | None = None
        self.lower_vta = tirx.transform.prim_func_pass(self._lower_func, opt_level=0, name="LowerVTA")

    def _lower_func(self, func, _mod, _ctx):
        if func.attrs is None or CONFIG_ATTR not in func.attrs:
            return func
        try:
            return _lower(func)
        except CompileError as exc:
            self.failure = exc
            raise

    def passes(self) -> list:
        """TVM's block lowering to flat loops, then LowerVTA."""
        return [
            s_tir.transform.CanonicalizeLoop(),
            s_tir.transform.LowerInitBlock(),
            s_tir.transform.PlanAndUpdateBufferAllocationLocation(),
            s_tir.transform.ConvertBlocksToOpaque(),
            s_tir.transform.CompactBufferAllocation(),
            s_tir.transform.LowerMatchBuffer(),
            s_tir.transform.StmtSimplify(),
            s_tir.transform.LowerOpaqueBlock(),
            tirx.transform.FlattenBuffer(),
            tirx.transform.StmtSimplify(),
            self.lower_vta,
            tirx.transform.ConvertSSA(),          # per-thread copies of a loop reuse its variable
            tirx.transform.StmtSimplify(),
        ]

    def pipeline(self):
        """A `tir_pipeline` of tvm.compile: lowering, then the passes of a host function."""
        @tvm.transform.module_pass(opt_level=0)
        def _pipeline(mod, _ctx):
            passes = self.passes() + [
                tirx.transform.RemoveNoOp(),
                tirx.transform.AnnotateEntryFunc(),
                tirx.transform.SplitHostDevice(),
                tirx.transform.MakePackedAPI(),
            ]
            return tvm.ir.transform.Sequential(passes)(mod)

        def finalize_host():
            return tvm.ir.transform.Sequential([tirx.transform.LowerTVMBuiltin(),
                                                tirx.transform.LowerIntrin()])

        def finalize_device():
            return tvm.ir.transform.Sequential([])

        return _pipeline, finalize_host, finalize_device

    def run(self, fn, *args, **kwargs):
        """`fn(*args, **kwargs)`, re-raising a CompileError of LowerVTA as itself."""
        self.failure = None
        try:
            return fn(*args, **kwargs)
        except Exception:
            if self.failure is not None:
                raise self.failure from None
            raise

    def lower(self, mod):
        """The scheduled module (or PrimFunc) after LowerVTA, before host code generation."""
        if not isinstance(mod, tvm.IRModule):
            mod = tvm.IRModule({"main": mod})
        return self.run(tvm.ir.transform.Sequential(self.passes()), mod)

    def compile(self, mod):
        """`tvm.compile` of `mod` (an IRModule) with this lowering as the pipeline `"vta"`."""
        token = _ACTIVE.set(self)
        try:
            return self.run(tvm.compile, mod, target=HOST_TARGET, tir_pipeline=PIPELINE)
        finally:
            _ACTIVE.reset(token)


def _active_pipeline():
    """The factory registered as `"vta"`: tvm.compile names a pipeline and passes no state, so
    the Lowering whose `compile` is running is found in a context variable."""
    lowering = _ACTIVE.get(None)
    if lowering is None:
        raise CompileError(f"the {PIPELINE!r} TIR pipeline runs only inside Lowering.compile "
                           "(it needs the lowering's configuration)")
    return lowering.pipeline()


_ACTIVE: ContextVar = ContextVar("vta_lowering")
compilation_pipeline.register_tir_pipeline(PIPELINE, _active_pipeline)


def lower(mod):
    """The scheduled module (or PrimFunc) after LowerVTA, before host code generation."""
    return Lowering().lower(mod)
