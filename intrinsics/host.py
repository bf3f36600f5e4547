"""The host side of a compiled VTA program: its `vta.*` calls, recorded once, built into a program.

A compiled function calls `vta.begin(config, kinds, *tensors)`, then one
`vta.load_2d`/`store_2d`/`gemm`/`alu` per op (the typed calls of `intrinsics.calls`), then
`vta.end(*tensors)`. Every shape is static and no call depends on the tensors' values, so the
function runs once, when it is compiled, under `record`: the calls are collected in order
(`Recording`). `ProgramBuilder` turns them into a program: the DRAM buffers of the parameters,
the micro-op kernels, the instruction stream, and the dependency tokens `intrinsics.deps`
derives from the SRAM ranges each op reads and writes. `intrinsics.recorded.KernelProgram`
keeps what it built; a call of the kernel runs that and never calls back into TVM.

The `vta.*` packed functions are TVM globals, registered at import; they hold no state of their
own: each appends to the recorder that the innermost `record` of the current context bound (a
context variable, as `intrinsics.lower` finds its pipeline), and refuses outside one.
"""
from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import tvm

from vta_sim import isa
from vta_sim.config import Config
from vta_sim.runtime import DramBuffer, OutputView, Program, Runtime, UopKernel

from .calls import Alu, Call, Gemm, Load2D, LoopNest, Store2D
from .deps import DependencyTracker
from vta_sim.errors import CompileError


#: The kind of a DRAM tensor a program stores and loads back itself (neither input nor output):
#: stored as OUT entries; `"<kind>@<i>"` is a parameter of another kind over parameter i's bytes
#: (an alias: a WGT or ACC_8BIT view of a scratch tensor), loaded from where the program stored.
SCRATCH = "scratch"


def internal(kind: str) -> bool:
    """Is a parameter of this kind the program's own (a scratch tensor or an alias), not data
    a caller passes in or reads out?"""
    return kind == SCRATCH or "@" in kind


@dataclass(frozen=True)
class Recording:
    """What one run of a compiled function called: its configuration, the runtime memory kind
    of each parameter (`vta.begin`) and the ops in program order."""

    config_text: str
    kinds: tuple
    calls: tuple              # Load2D | Store2D | Gemm | Alu


class _Recorder:
    """The calls of the function run in progress under `record`."""

    def __init__(self):
        self.begin: tuple | None = None     # (config_text, kinds)
        self.calls: list = []
        self.ended = False
        self.error: Exception | None = None  # raised by a callback (TVM re-raises a RuntimeError)


_RECORDER: ContextVar = ContextVar("vta_recorder")


@contextlib.contextmanager
def callback_scope(var: ContextVar, value: Any, raised: Callable[[], BaseException | None]) -> Iterator[Any]:
    """`value` as `var`'s value while TVM calls back into Python (the `vta.*` calls of a
    recording, the `relax.ext.vta` codegen). TVM's FFI turns what a callback raises into a
    RuntimeError; the original, which the callback keeps (`raised()`), leaves instead, so a
    caller can tell a refusal (a CompileError naming what does not fit) from a bug."""
    token = var.set(value)
    try:
        yield value
    except Exception:
        error = raised()
        if error is not None:
            raise error from None
        raise
    finally:
        var.reset(token)


def _callback(name: str, fn):
    def call(*args):
        recorder = _RECORDER.get(None)
        if recorder is None:
            raise CompileError(f"{name} outside a recording: a compiled VTA function runs once, when "
                               "it is compiled (intrinsics.host.record); call the CompiledKernel")
        try:
            return fn(recorder, *args)
        except Exception as exc:
            recorder.error = recorder.error or exc
            raise
    return call


def _begin(recorder, config_text, kinds, *_tensors):
    recorder.begin = (str(config_text), tuple(str(kinds).split(",")))


def _end(recorder, *_tensors):
    recorder.ended = True


def _op(cls):
    def add(recorder, *args):
        if recorder.begin is None or recorder.ended:
            raise CompileError(f"{cls.NAME} outside vta.begin/vta.end")
        recorder.calls.append(cls.from_args(args))
    return add


for _name, _fn in (("vta.begin", _begin), ("vta.end", _end), *((c.NAME, _op(c)) for c in (Load2D, Store2D, Gemm, Alu))):
    tvm.register_global_func(_name, _callback(_name, _fn), override=True)


def record(module, params) -> Recording:
    """Run `module`'s `main` once on zero tensors of `params` ((name, shape, dtype) each) and
    return what it called. The calls do not depend on the tensors' values."""
    tensors = [tvm.runtime.tensor(np.zeros(shape, dtype)) for _, shape, dtype in params]
    recorder = _Recorder()
    with callback_scope(_RECORDER, recorder, lambda: recorder.error):
        module["main"](*tensors)
    if recorder.begin is None or not recorder.ended:
        raise CompileError("the compiled function did not call vta.begin and vta.end")
    config_text, kinds = recorder.begin
    return Recording(config_text, kinds, tuple(recorder.calls))


class ProgramBuilder:
    """One program built from recorded calls: its Runtime, the DRAM buffers of the parameters
    (`data[i]` in parameter i, zeros where None; an output in `views[i]` is a slice of that
    view's whole tensor), and the ops with their tokens."""

    def __init__(self, cfg: Config, params, kinds, views: dict | None = None, data=None):
        views = views or {}
        self.rt = Runtime(cfg)
        self.kinds = tuple(kinds)
        self.buffers: list[DramBuffer] = []
        self.placed: list = []       # (parameter index, DramBuffer of the whole view tensor)
        for i, ((_, shape, dtype), kind) in enumerate(zip(params, self.kinds)):
            if i in views:
                if kind != "out":
                    raise CompileError(f"parameter {i} is a {kind!r} buffer: only an output is stored in a view")
                view: OutputView = views[i]
                base = self.rt.array(view.tensor, "out")
                self.buffers.append(self.rt.view(base, view.offset, shape))
                self.placed.append((i, base))
            elif kind in ("out", SCRATCH):
                self.buffers.append(self.rt.empty(shape, "out"))
            elif "@" in kind:
                view_kind, root = kind.split("@")
                base = self.buffers[int(root)]
                buf = DramBuffer(self.rt, view_kind, shape, base.byte_addr)
                if buf.nbytes > base.nbytes:
                    raise CompileError(f"parameter {i}, a {view_kind} view of parameter {root}, takes {buf.nbytes} "
                                       f"bytes of its {base.nbytes}")
                self.buffers.append(buf)
            else:
                array = data[i] if data is not None and data[i] is not None else np.zeros(shape, dtype)
                self.buffers.append(self.rt.array(array, kind))
        self.deps = DependencyTracker()
        self.ops: list = []
        self.kernels: dict = {}

    def add(self, call: Call) -> None:
        """Record the op of one call; it reaches the runtime at `build`, once its tokens are known."""
        if isinstance(call, Load2D):
            self._load_2d(call)
        elif isinstance(call, Store2D):
            self._store_2d(call)
        elif isinstance(call, Gemm):
            self._gemm(call)
        elif isinstance(call, Alu):
            self._alu(call)
        else:
            raise CompileError(f"{type(call).__name__} is not an op of a VTA program")

    def build(self) -> Program:
        """Issue the ops with their tokens and lay out the image (FINISH last)."""
        self.deps.issue(self.rt, self.ops)
        return self.rt.build()

    @property
    def tokens(self) -> tuple:
        """Per op, in program order: the (producer, consumer) queues it pops before it runs and
        those it pushes when it completes."""
        seq: dict = {}
        out = []
        for (module, _), pops in zip(self.ops, self.deps.pops):
            seq[module] = seq.get(module, 0) + 1
            out.append((tuple(pops), tuple(self.deps.pushes.get((module, seq[module]), ()))))
        return tuple(out)

    # ------------------------------------------------------------------ the ops
    def _issue(self, module, reads, writes, emit):
        self.deps.add(module, reads, writes)
        self.ops.append((module, emit))

    def _kernel(self, call: LoopNest):
        """(UopKernel, [lo, hi) spans of dst, src, wgt) of a call's loop nest, built once per nest."""
        if call.nest not in self.kernels:
            kernel = UopKernel()
            with kernel.loop(call.iter_out, dst=call.dst_factor_out, src=call.src_factor_out,
                             wgt=call.wgt_factor_out):
                with kernel.loop(call.iter_in, dst=call.dst_factor_in, src=call.src_factor_in,
                                 wgt=call.wgt_factor_in):
                    for d, x, w in call.uops:
                        kernel.uop(dst=call.dst_base + d, src=call.src_base + x, wgt=call.wgt_base + w)
            spans = [_span(base, [u[k] for u in call.uops], (call.iter_out, call.iter_in), factors)
                     for k, (base, factors) in enumerate((
                         (call.dst_base, (call.dst_factor_out, call.dst_factor_in)),
                         (call.src_base, (call.src_factor_out, call.src_factor_in)),
                         (call.wgt_base, (call.wgt_factor_out, call.wgt_factor_in))))]
            self.kernels[call.nest] = (kernel, spans)
        return self.kernels[call.nest]

    def _dram(self, c) -> list:
        """The DRAM bytes a load or store of a scratch tensor (or an alias of one) touches, as a
        range the tracker orders the program's own stores and loads by; [] for other tensors."""
        if not internal(self.kinds[c.param]) or not (c.x_size and c.y_size):
            return []
        buf = self.buffers[c.param]
        first, last = c.offset, c.offset + (c.y_size - 1) * c.x_stride + c.x_size
        return [("dram", buf.byte_addr + first * buf.elem_bytes, buf.byte_addr + last * buf.elem_bytes)]

    def _load_2d(self, c: Load2D):
        rt, buf = self.rt, self.buffers[c.param]
        module = "compute" if buf.kind in ("acc", "acc8") else "load"
        target = {"acc8": "acc"}.get(buf.kind, buf.kind)
        rows, cols = c.y_pad_0 + c.y_size + c.y_pad_1, c.x_pad_0 + c.x_size + c.x_pad_1
        writes = [(target, c.sram, c.sram + rows * cols)]
        self._issue(module, self._dram(c), writes, lambda: rt.load_2d(buf, c.offset, c.x_size, c.y_size, c.x_stride, c.sram,
                                                           pad=(c.y_pad_0, c.y_pad_1, c.x_pad_0, c.x_pad_1)))

    def _store_2d(self, c: Store2D):
        rt, buf = self.rt, self.buffers[c.param]
        reads = [("acc", c.sram, c.sram + c.x_size * c.y_size)]
        self._issue("store", reads, self._dram(c), lambda: rt.store_2d(buf, c.offset, c.x_size, c.y_size, c.x_stride, c.sram))

    def _gemm(self, c: Gemm):
        kernel, (dst, src, wgt) = self._kernel(c)
        if c.reset:
            reads, writes = (), [("acc", *dst)]
        else:
            reads, writes = [("inp", *src), ("wgt", *wgt), ("acc", *dst)], [("acc", *dst)]
        self._issue("compute", reads, writes, lambda: self.rt.gemm(kernel, reset=bool(c.reset)))

    def _alu(self, c: Alu):
        kernel, (dst, src, _) = self._kernel(c)
        reads = [("acc", *dst)] + ([] if c.use_imm else [("acc", *src)])
        if c.op == "req":       # its immediate field holds the shift and zero point (use_imm 0)
            shift, zero_point, _ = isa.req_fields(c.imm)
            self._issue("compute", reads, [("acc", *dst)],
                        lambda: self.rt.alu(kernel, "req", shift=shift, zero_point=zero_point))
            return
        self._issue("compute", reads, [("acc", *dst)],
                    lambda: self.rt.alu(kernel, c.op, imm=c.imm if c.use_imm else None))


def _span(base, rels, iters, factors):
    """[lo, hi) of the entries an operand touches over the kernel's loops."""
    lo = base + min(rels) + sum(min(0, f * (n - 1)) for n, f in zip(iters, factors))
    hi = base + max(rels) + sum(max(0, f * (n - 1)) for n, f in zip(iters, factors)) + 1
    return lo, hi
