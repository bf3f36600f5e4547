"""The graph level: whole models from ONNX through Relax onto VTA-8, the rest on the CPU.

import (graph.onnx_import) -> QDQ to integer ops (graph.qdq) -> partition with Relax BYOC
(graph.partition, codegen `relax.ext.vta` in graph.codegen) -> relax.VirtualMachine.
See docs/graph.md.
"""
