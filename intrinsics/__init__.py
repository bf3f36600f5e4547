"""The TVM side of VTA-8: tensor intrinsics, the lowering to runtime calls, and their host side.

Importing the package registers the `tir_pipeline="vta"` of `tvm.compile` and the `vta.*`
packed functions a compiled program calls, so a module built here runs when called.
"""
from . import host, lower, tensor_intrin
from .build import CompiledKernel, attach_config, compile_vta
from .errors import CompileError

__all__ = ["CompiledKernel", "CompileError", "attach_config", "compile_vta", "host", "lower",
           "tensor_intrin"]
