"""VTA-8: a bit-exact functional and timing simulator of a VTA-style 8x8 GEMM accelerator."""
from .config import Config
from .errors import (ConfigError, DeadlockError, EncodingError, HazardError, MemoryAccessError,
                     ProgramError, RuntimeAPIError, VTAError)
from .result import RunResult
from .simulator import Simulator

__all__ = ["Config", "Simulator", "RunResult", "VTAError", "ConfigError", "DeadlockError", "EncodingError",
           "HazardError", "MemoryAccessError", "ProgramError", "RuntimeAPIError"]
