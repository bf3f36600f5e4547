"""The TVM side of VTA-8: tensor intrinsics, the lowering to runtime calls, and their host side.

Importing the package registers the `vta.*` packed functions a compiled program calls
(`intrinsics.host`); `compile_vta` compiles with a fresh `lower.Lowering`, runs the module once
to record its calls and keeps the program built from them (`intrinsics.recorded`), which every
call of the `CompiledKernel` runs.
"""
from vta_sim.errors import CompileError

from . import host, lower, recorded, tensor_intrin
from .build import CompiledKernel, attach_config, compile_vta

__all__ = ["CompileError", "CompiledKernel", "attach_config", "compile_vta", "host", "lower",
           "recorded", "tensor_intrin"]
