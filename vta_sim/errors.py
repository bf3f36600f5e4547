"""Every refusal of the simulator, runtime and compiler is a VTAError subclass."""


class VTAError(Exception):
    """Base of all project errors. `index` and `disasm` name the offending instruction, if any."""

    def __init__(self, message: str, index: int | None = None, disasm: str | None = None):
        self.reason = message
        self.index = index
        self.disasm = disasm
        if index is not None:
            message = f"instruction {index}: {message}" + (f"\n  {disasm}" if disasm else "")
        super().__init__(message)


class MappingError(VTAError):
    """A shape or layout that cannot be mapped onto the accelerator's blocks and buffers."""


class ConfigError(VTAError):
    """A configuration that cannot be loaded or does not fit the encoding."""


class EncodingError(VTAError):
    """A word that is not legal VTA-8, or a field value that does not fit its bits."""


class MemoryAccessError(VTAError):
    """An SRAM index or DRAM address outside its memory."""


class ProgramError(VTAError):
    """A program that is malformed as a whole (no FINISH at the end, misaligned insn_addr...)."""


class DeadlockError(VTAError):
    """Every module waits and FINISH has not completed."""


class HazardError(VTAError):
    """A module read or overwrote on-chip data that no dependency token ordered (a race)."""


class RuntimeAPIError(VTAError):
    """Misuse of the host runtime (vta_sim.runtime): bad shapes, unbalanced tokens, ..."""


class CompileError(MappingError):
    """The compiler's refusal: a workload, schedule or shape that cannot be mapped onto VTA-8.
    Raised before anything runs; the message names the dimension or statement and what works."""
