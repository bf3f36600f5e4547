"""The host side of a compiled VTA program: the `vta.*` packed functions its code calls.

A compiled function calls `vta.begin(config, kinds, *tensors)` (copy its DRAM tensors into a
fresh `vta_sim.runtime.Runtime`), then one `vta.load_2d`/`store_2d`/`gemm`/`alu` per op, then
`vta.end(*tensors)` (issue the recorded ops with the dependency tokens intrinsics.deps derived
from their SRAM ranges, run on the chosen backend, copy outputs back). The backend and trace switch are
chosen with `options(...)`; the last run's RunResult is `last_result()`.
"""
from __future__ import annotations

import contextlib

import tvm

from vta_sim.errors import VTAError
from vta_sim.runtime import Runtime, UopKernel

from .deps import DependencyTracker
from .errors import CompileError
from .lower import config_from_text

_options = {"backend": "sim", "trace": False}
_state = {"session": None, "result": None, "program": None, "error": None}


@contextlib.contextmanager
def options(backend="sim", trace: bool = False):
    """Run compiled VTA programs inside this block on `backend` (a name or backend object)."""
    saved = dict(_options)
    _options.update(backend=backend, trace=trace)
    try:
        yield
    finally:
        _options.update(saved)


def last_result():
    """The RunResult (cycles, stats, trace) of the last compiled program that ran."""
    return _state["result"]


def last_program():
    """The vta_sim.runtime.Program (DRAM image, instructions) of the last compiled program run."""
    return _state["program"]


def take_error():
    """The VTAError a `vta.*` call raised last (TVM re-raises it as a RuntimeError), cleared."""
    error, _state["error"] = _state["error"], None
    return error


def _packed(name):
    """Register a `vta.*` callback, keeping the VTAError it raises for `take_error`."""
    def wrap(fn):
        def call(*args):
            try:
                return fn(*args)
            except VTAError as exc:
                _state["error"] = exc
                _state["session"] = None
                raise
        tvm.register_global_func(name, call, override=True)
        return fn
    return wrap


class _Session:
    """One call of a compiled function: its Runtime, DRAM buffers and the ops recorded so far."""

    def __init__(self, config_text: str, kinds: str, tensors):
        cfg = config_from_text(config_text)
        self.rt = Runtime(cfg, backend=_options["backend"])
        self.kinds = kinds.split(",")
        self.buffers = []
        for tensor, kind in zip(tensors, self.kinds):
            array = tensor.numpy()
            self.buffers.append(self.rt.empty(array.shape, "out") if kind == "out" else self.rt.array(array, kind))
        self.deps = DependencyTracker()
        self.ops = []
        self.kernels = {}

    def issue(self, module, reads, writes, emit):
        """Record an op; it reaches the runtime at vta.end, once all its tokens are known."""
        self.deps.add(module, reads, writes)
        self.ops.append((module, emit))


def _session() -> _Session:
    if _state["session"] is None:
        raise CompileError("a vta.* call outside vta.begin/vta.end: call the compiled function, "
                           "not its pieces")
    return _state["session"]


@_packed("vta.begin")
def _begin(config_text, kinds, *tensors):
    _state["session"] = _Session(str(config_text), str(kinds), tensors)


@_packed("vta.end")
def _end(*tensors):
    s = _session()
    _state["session"] = None
    s.deps.issue(s.rt, s.ops)
    result = s.rt.synchronize(trace=_options["trace"])
    for kind, buf, tensor in zip(s.kinds, s.buffers, tensors):
        if kind == "out":
            tensor.copyfrom(buf.numpy())
    _state["result"] = result
    _state["program"] = s.rt.last_program


@_packed("vta.load_2d")
def _load_2d(param, offset, x_size, y_size, x_stride, sram, y0, y1, x0, x1):
    s = _session()
    buf = s.buffers[param]
    module = "compute" if buf.kind in ("acc", "acc8") else "load"
    target = {"acc8": "acc"}.get(buf.kind, buf.kind)
    rows, cols = y0 + y_size + y1, x0 + x_size + x1
    writes = [(target, sram, sram + rows * cols)]
    s.issue(module, (), writes, lambda: s.rt.load_2d(buf, offset, x_size, y_size, x_stride, sram,
                                                      pad=(y0, y1, x0, x1)))


@_packed("vta.store_2d")
def _store_2d(param, offset, x_size, y_size, x_stride, sram):
    s = _session()
    reads = [("acc", sram, sram + x_size * y_size)]
    s.issue("store", reads, (), lambda: s.rt.store_2d(s.buffers[param], offset, x_size, y_size,
                                                      x_stride, sram))


def _span(base, rels, iters, factors):
    """[lo, hi) of the entries an operand touches over the kernel's loops."""
    lo = base + min(rels) + sum(min(0, f * (n - 1)) for n, f in zip(iters, factors))
    hi = base + max(rels) + sum(max(0, f * (n - 1)) for n, f in zip(iters, factors)) + 1
    return lo, hi


def _kernel(s: _Session, args):
    """(UopKernel, spans per operand) for gemm/alu arguments, built once per distinct call."""
    key = tuple(args)
    if key in s.kernels:
        return s.kernels[key]
    bases, iters, factors, n = args[0:3], args[3:5], args[5:11], args[11]
    uops = [args[12 + 3 * u: 15 + 3 * u] for u in range(n)]
    kernel = UopKernel()
    with kernel.loop(iters[0], dst=factors[0], src=factors[1], wgt=factors[2]):
        with kernel.loop(iters[1], dst=factors[3], src=factors[4], wgt=factors[5]):
            for d, x, w in uops:
                kernel.uop(dst=bases[0] + d, src=bases[1] + x, wgt=bases[2] + w)
    spans = [_span(bases[k], [u[k] for u in uops], iters, (factors[k], factors[3 + k]))
             for k in range(3)]
    s.kernels[key] = (kernel, spans)
    return s.kernels[key]


@_packed("vta.gemm")
def _gemm(op, use_imm, imm, *args):
    del use_imm, imm
    s = _session()
    kernel, (dst, src, wgt) = _kernel(s, args)
    if op == "reset":
        reads, writes = (), [("acc", *dst)]
    else:
        reads, writes = [("inp", *src), ("wgt", *wgt), ("acc", *dst)], [("acc", *dst)]
    s.issue("compute", reads, writes, lambda: s.rt.gemm(kernel, reset=op == "reset"))


@_packed("vta.alu")
def _alu(op, use_imm, imm, *args):
    s = _session()
    kernel, (dst, src, _) = _kernel(s, args)
    reads = [("acc", *dst)] + ([] if use_imm else [("acc", *src)])
    s.issue("compute", reads, [("acc", *dst)],
            lambda: s.rt.alu(kernel, str(op), imm=int(imm) if use_imm else None))
