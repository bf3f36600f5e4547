"""Re-exports vta_sim.errors.CompileError for the modules that still import it from here
(intrinsics.host, .program, .calls, schedules.op_kernel and the graph level); new code imports it
from vta_sim.errors."""
from vta_sim.errors import CompileError as CompileError
