"""The TVM side of VTA-8: tensor intrinsics, the lowering to runtime calls, and their host side.

Importing the package registers the `vta.*` packed functions a compiled program calls
(`host.HOST`), so a module built here runs when called; `compile_vta` compiles with a fresh
`lower.Lowering`.
"""
from vta_sim.errors import CompileError

from . import host, lower, tensor_intrin
from .build import CompiledKernel, attach_config, compile_vta

__all__ = ["CompiledKernel", "CompileError", "attach_config", "compile_vta", "host", "lower",
           "tensor_intrin"]
