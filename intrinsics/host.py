"""The host side of a compiled VTA program: the `vta.*` packed functions its code calls.

A compiled function calls `vta.begin(config, kinds, *tensors)` (copy its DRAM tensors into a
fresh `vta_sim.runtime.Runtime`), then one `vta.load_2d`/`store_2d`/`gemm`/`alu` per op (the
calls of `intrinsics.calls`), then `vta.end(*tensors)` (issue the recorded ops with the
dependency tokens intrinsics.deps derived from their SRAM ranges, run on the chosen backend,
copy outputs back). The callbacks are TVM globals, so one `Host` serves them all: `HOST`. The
backend and trace switch are chosen with `options(...)`; the last run's RunResult is
`last_result()`.
"""
from __future__ import annotations

import contextlib

import tvm

from vta_sim.config import Config
from vta_sim.errors import VTAError
from vta_sim.runtime import Runtime, UopKernel

from .calls import Alu, Gemm, Load2D, LoopNest, Store2D
from .deps import DependencyTracker
from .errors import CompileError


class _Session:
    """One call of a compiled function: its Runtime, DRAM buffers and the ops recorded so far."""

    def __init__(self, config_text: str, kinds: str, tensors, backend, views: dict):
        cfg = Config.from_text(config_text)
        self.rt = Runtime(cfg, backend=backend)
        self.kinds = kinds.split(",")
        self.buffers = []
        self.placed = []              # (OutputView, DramBuffer of its whole tensor, of the view)
        for i, (tensor, kind) in enumerate(zip(tensors, self.kinds)):
            array = tensor.numpy()
            if i in views:
                if kind != "out":
                    raise CompileError(f"parameter {i} is a {kind!r} buffer: only an output is stored in a view")
                base = self.rt.array(views[i].tensor, "out")
                self.buffers.append(self.rt.view(base, views[i].offset, array.shape))
                self.placed.append((views[i], base, self.buffers[-1]))
            else:
                self.buffers.append(self.rt.empty(array.shape, "out") if kind == "out" else self.rt.array(array, kind))
        self.deps = DependencyTracker()
        self.ops = []
        self.kernels = {}

    def issue(self, module, reads, writes, emit):
        """Record an op; it reaches the runtime at vta.end, once all its tokens are known."""
        self.deps.add(module, reads, writes)
        self.ops.append((module, emit))

    def kernel(self, call: LoopNest):
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


def _span(base, rels, iters, factors):
    """[lo, hi) of the entries an operand touches over the kernel's loops."""
    lo = base + min(rels) + sum(min(0, f * (n - 1)) for n, f in zip(iters, factors))
    hi = base + max(rels) + sum(max(0, f * (n - 1)) for n, f in zip(iters, factors)) + 1
    return lo, hi


class Host:
    """The host side of every compiled VTA program in this process: the options runs take, the
    session of the call in progress, the last run's result and program, and the VTAError a
    callback raised (TVM re-raises it as a RuntimeError)."""

    def __init__(self):
        self.backend = "sim"
        self.trace = False
        self.views: dict = {}           # parameter index -> vta_sim.runtime.OutputView
        self.placed: list = []          # the last run's views: (OutputView, tensor's DramBuffer, view's)
        self.session: _Session | None = None
        self.result = None
        self.program = None
        self.error: VTAError | None = None

    def register(self) -> None:
        """Make this Host the `vta.*` packed functions a compiled program calls."""
        for name, fn in (("vta.begin", self.begin), ("vta.end", self.end), ("vta.load_2d", self.load_2d),
                         ("vta.store_2d", self.store_2d), ("vta.gemm", self.gemm), ("vta.alu", self.alu)):
            tvm.register_global_func(name, self._keeping_error(fn), override=True)

    def _keeping_error(self, fn):
        def call(*args):
            try:
                return fn(*args)
            except VTAError as exc:
                self.error = exc
                self.session = None
                raise
        return call

    def _session(self) -> _Session:
        if self.session is None:
            raise CompileError("a vta.* call outside vta.begin/vta.end: call the compiled function, "
                               "not its pieces")
        return self.session

    def begin(self, config_text, kinds, *tensors):
        self.session = _Session(str(config_text), str(kinds), tensors, self.backend, self.views)

    def end(self, *tensors):
        s = self._session()
        self.session = None
        s.deps.issue(s.rt, s.ops)
        result = s.rt.synchronize(trace=self.trace)
        for kind, buf, tensor in zip(s.kinds, s.buffers, tensors):
            if kind == "out":
                tensor.copyfrom(buf.numpy())
        for view, base, _ in s.placed:          # the whole tensor leaves the image, as DRAM keeps it
            view.tensor[...] = base.numpy()
        self.placed = s.placed
        self.result = result
        self.program = s.rt.last_program

    def load_2d(self, *args):
        c, s = Load2D.from_args(args), self._session()
        buf = s.buffers[c.param]
        module = "compute" if buf.kind in ("acc", "acc8") else "load"
        target = {"acc8": "acc"}.get(buf.kind, buf.kind)
        rows, cols = c.y_pad_0 + c.y_size + c.y_pad_1, c.x_pad_0 + c.x_size + c.x_pad_1
        writes = [(target, c.sram, c.sram + rows * cols)]
        s.issue(module, (), writes, lambda: s.rt.load_2d(buf, c.offset, c.x_size, c.y_size, c.x_stride, c.sram,
                                                          pad=(c.y_pad_0, c.y_pad_1, c.x_pad_0, c.x_pad_1)))

    def store_2d(self, *args):
        c, s = Store2D.from_args(args), self._session()
        reads = [("acc", c.sram, c.sram + c.x_size * c.y_size)]
        s.issue("store", reads, (), lambda: s.rt.store_2d(s.buffers[c.param], c.offset, c.x_size, c.y_size,
                                                          c.x_stride, c.sram))

    def gemm(self, *args):
        c, s = Gemm.from_args(args), self._session()
        kernel, (dst, src, wgt) = s.kernel(c)
        if c.reset:
            reads, writes = (), [("acc", *dst)]
        else:
            reads, writes = [("inp", *src), ("wgt", *wgt), ("acc", *dst)], [("acc", *dst)]
        s.issue("compute", reads, writes, lambda: s.rt.gemm(kernel, reset=bool(c.reset)))

    def alu(self, *args):
        c, s = Alu.from_args(args), self._session()
        kernel, (dst, src, _) = s.kernel(c)
        reads = [("acc", *dst)] + ([] if c.use_imm else [("acc", *src)])
        s.issue("compute", reads, [("acc", *dst)],
                lambda: s.rt.alu(kernel, c.op, imm=c.imm if c.use_imm else None))


#: The Host behind the `vta.*` packed functions of this process.
HOST = Host()
HOST.register()


@contextlib.contextmanager
def options(backend="sim", trace: bool = False, views: dict | None = None):
    """Run compiled VTA programs inside this block on `backend` (a name or backend object);
    `views` {parameter index: vta_sim.runtime.OutputView} stores those outputs into slices of
    tensors that outlive the program."""
    saved = HOST.backend, HOST.trace, HOST.views
    HOST.backend, HOST.trace, HOST.views = backend, trace, dict(views or {})
    try:
        yield
    finally:
        HOST.backend, HOST.trace, HOST.views = saved


def last_result():
    """The RunResult (cycles, stats, trace) of the last compiled program that ran."""
    return HOST.result


def last_program():
    """The vta_sim.runtime.Program (DRAM image, instructions) of the last compiled program run."""
    return HOST.program


def last_views() -> list:
    """The last run's output views: (OutputView, DramBuffer of its whole tensor, DramBuffer of
    the slice its STOREs addressed), in that run's DRAM image."""
    return HOST.placed


def take_error():
    """The VTAError a `vta.*` call raised last (TVM re-raises it as a RuntimeError), cleared."""
    error, HOST.error = HOST.error, None
    return error
