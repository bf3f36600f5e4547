"""The compiler's refusal: a workload, schedule or shape that cannot be mapped onto VTA-8."""
from vta_sim.errors import MappingError


class CompileError(MappingError):
    """Raised before anything runs; the message names the dimension or statement and what works."""
