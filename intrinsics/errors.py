"""CompileError's old home; it lives in vta_sim.errors beside the other refusals."""
from vta_sim.errors import CompileError as CompileError
