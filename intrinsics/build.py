"""Compile a scheduled VTA PrimFunc with `tvm.compile` and call it like a function on numpy data.

The artefact is an ordinary TVM module (`CompiledKernel.module`): calling its `main` with TVM
tensors runs the program on the backend chosen by `intrinsics.host.options`. `CompiledKernel`
adds the convenience of numpy in, numpy out plus the RunResult.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import tvm

from vta_sim.config import Config
from vta_sim.errors import CompileError

from . import host, lower


@dataclass
class CompiledKernel:
    module: object            # tvm.runtime.Executable from tvm.compile
    params: list              # (name, shape, dtype) per parameter, in call order
    outputs: list             # indices of the parameters the program writes
    compile_s: float

    def __call__(self, *inputs, backend="sim", trace=False, views=None):
        """Run on numpy inputs (every non-output parameter, in order); returns (outputs, RunResult).
        `views` {output parameter index: vta_sim.runtime.OutputView}: store those in place."""
        ins = [i for i in range(len(self.params)) if i not in self.outputs]
        if len(inputs) != len(ins):
            names = [self.params[i][0] for i in ins]
            raise CompileError(f"expected {len(ins)} inputs ({', '.join(names)}), got {len(inputs)}")
        tensors, it = [], iter(inputs)
        for i, (name, shape, dtype) in enumerate(self.params):
            if i in self.outputs:
                tensors.append(tvm.runtime.tensor(np.zeros(shape, dtype)))
                continue
            array = np.asarray(next(it))
            if array.shape != tuple(shape) or array.dtype != np.dtype(dtype):
                raise CompileError(f"input {name}: expected {dtype}{list(shape)}, got "
                                   f"{array.dtype}{list(array.shape)}")
            tensors.append(tvm.runtime.tensor(array))
        host.take_error()
        with host.options(backend=backend, trace=trace, views=views):
            try:
                self.module["main"](*tensors)
            except Exception:
                error = host.take_error()
                if error is not None:
                    raise error from None
                raise
        return [tensors[i].numpy() for i in self.outputs], host.last_result()


def attach_config(func, cfg: Config):
    """Mark a PrimFunc as a VTA program for `cfg` (what LowerVTA looks for)."""
    return func.with_attr(lower.CONFIG_ATTR, cfg.to_text())


def compile_vta(mod, cfg: Config, outputs=(-1,)) -> CompiledKernel:
    """`tvm.compile` with the VTA pipeline; `outputs` are the parameters the program writes."""
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
    return CompiledKernel(module, params, outs, time.perf_counter() - start)
