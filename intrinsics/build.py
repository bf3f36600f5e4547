"""Compile a scheduled VTA PrimFunc with `tvm.compile` and call it like a function on numpy data.

`compile_vta` compiles the PrimFunc to an ordinary TVM module (`CompiledKernel.module`), runs it
once to record the calls it makes (`intrinsics.host.record`: every shape is static, so the calls
do not depend on the data) and builds the program from them once (`CompiledKernel.program`, an
`intrinsics.recorded.KernelProgram`). A call of the `CompiledKernel` checks its numpy inputs,
loads them into that program's DRAM image, runs the backend and returns the outputs with the
`RunResult`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import tvm

from vta_sim.config import Config
from vta_sim.errors import CompileError
from vta_sim.runtime import OutputView

from . import host, lower
from .recorded import KernelProgram


@dataclass
class CompiledKernel:
    module: object            # tvm.runtime.Executable from tvm.compile, run once to record `program`;
                              # None once read back from graph.cache, which keeps only the program
    params: list              # (name, shape, dtype) per parameter, in call order
    outputs: list             # indices of the parameters the program writes
    compile_s: float
    program: KernelProgram    # the program the calls run (outputs in buffers of their own)
    placed: dict = field(default_factory=dict, repr=False)  # view layout -> its KernelProgram

    def __call__(self, *inputs, backend="sim", trace=False, views=None):
        """Run on numpy inputs (every non-output parameter, in order); returns (outputs, RunResult).
        `views` {output parameter index: vta_sim.runtime.OutputView}: store those in place."""
        kinds = self.program.kinds
        ins = [i for i in range(len(self.params)) if i not in self.outputs and not host.internal(kinds[i])]
        if len(inputs) != len(ins):
            names = [self.params[i][0] for i in ins]
            raise CompileError(f"expected {len(ins)} inputs ({', '.join(names)}), got {len(inputs)}")
        arrays = []
        for i, array in zip(ins, inputs):
            name, shape, dtype = self.params[i]
            array = np.asarray(array)
            if array.shape != tuple(shape) or array.dtype != np.dtype(dtype):
                raise CompileError(f"input {name}: expected {dtype}{list(shape)}, got "
                                   f"{array.dtype}{list(array.shape)}")
            arrays.append(array)
        program = self.program_for(views) if views else self.program
        return program.run(arrays, backend=backend, trace=trace, views=views)

    def program_for(self, views: dict) -> KernelProgram:
        """The program that stores outputs into `views` {index: OutputView}: the same calls, laid
        out around each view's whole tensor; built at the first call with that layout."""
        key = tuple(sorted((i, v.tensor.shape, v.tensor.dtype.str, v.offset) for i, v in views.items()))
        if key not in self.placed:
            zeros = {i: OutputView(np.zeros_like(v.tensor), v.offset) for i, v in views.items()}
            self.placed[key] = KernelProgram.build(self.program.recording, self.params, self.outputs, zeros)
        return self.placed[key]


def attach_config(func, cfg: Config):
    """Mark a PrimFunc as a VTA program for `cfg` (what LowerVTA looks for)."""
    return func.with_attr(lower.CONFIG_ATTR, cfg.to_text())


def compile_vta(mod, cfg: Config, outputs=(-1,)) -> CompiledKernel:
    """`tvm.compile` with the VTA pipeline, then the program recorded; `outputs` are the
    parameters the program writes."""
    if isinstance(mod, tvm.IRModule):
        func = mod["main"]
    else:
        func = mod
    func = attach_config(func, cfg)
    params = []
    for buf in func.params:
        params.append((buf.name, tuple(int(s) for s in buf.shape), str(buf.dtype)))
    outs = sorted(o % len(params) for o in outputs)
    start = time.perf_counter()
    module = lower.Lowering().compile(tvm.IRModule({"main": func}))
    program = KernelProgram.build(host.record(module, params), params, outs)
    return CompiledKernel(module, params, outs, time.perf_counter() - start, program)
