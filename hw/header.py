"""Generate the Verilog header `vta_cfg.vh` from a `vta_sim.Config` and `vta_sim.isa.layout`.

Every size, latency and bit position that a configuration or the instruction layout can change
is a macro of this header, written from the same Python objects the simulator and the compiler
read, and so is what every configuration shares: opcodes, ALU ops, the register map, the
error codes and the statistics counters' order (`vta_sim.registers`), the token queues'
flags (`vta_sim.isa.TOKEN_QUEUES`), the ALU's shift cap. Only the 8-bit data and 32-bit
accumulator lanes are written in the RTL directly.
"""
from __future__ import annotations

from vta_sim import isa, registers, timing
from vta_sim.config import MEM_NAMES, Config
from vta_sim.errors import ConfigError
# The register map and error codes, re-exported for the benches that drive the registers.
from vta_sim.registers import (COUNTERS, ERROR_CODES, REG_COUNTERS, REG_CTRL, REG_CYCLES,  # noqa: F401
                               REG_ERROR_CODE, REG_ERROR_INDEX, REG_INSN_ADDR, REG_INSN_COUNT,
                               counter_offset)

#: Depth of the read-data FIFO of the AXI master: read latencies up to about this many cycles stay
#: cycle-exact against DMA_READ_LATENCY (docs/hardware.md).
RFIFO_DEPTH = 32


#: Timing parameters the RTL's schedule cannot meet below a floor: (key, least, why).
RTL_LEAST = (
    ("GEMM_PIPELINE", 8, "the RTL's pipeline writes a GEMM's last result 8 cycles after its last issue"),
    ("ALU_PIPELINE", 7, "the RTL's pipeline writes an ALU's last result 7 cycles after its last issue"),
    # the AR a cycle after the grant, the slave's first beat, a cycle in the read FIFO (no bypass),
    # and every beat in a cycle before the burst's end (docs/hardware.md)
    ("DMA_READ_LATENCY", 4, "a read beat reaches the RTL's DMA no sooner: not even AxiRam, the "
                            "fastest DRAM the benches have, answers a burst in time below it"),
    # the OUT SRAM's two-cycle read (its block RAM's output register) before the first W beat
    ("DMA_WRITE_LATENCY", 4, "the RTL's store sends its W beats no sooner: not even AxiRam's "
                             "response comes in time below it"),
)


#: Cycles the RTL's REQ writes its result later than the other ALU ops (its extra front stage, the
#: multiplier queue's register, the 64-bit sum, the shift, the zero point and clamp: docs/hardware.md,
#: "REQ"); vta_sim.timing.REQ_EXTRA_LATENCY may be larger (the instruction then ends later), never less.
RTL_REQ_DEPTH = 4


def check_supported(cfg: Config) -> None:
    """Refuse configurations the RTL's DMA does not implement (an entry narrower than the bus)."""
    bus = cfg.bus_bytes
    for name, nbytes in (("INP", cfg.buffers["inp"].entry_bytes), ("WGT", cfg.buffers["wgt"].entry_bytes),
                         ("OUT", cfg.buffers["out"].entry_bytes), ("ACC_8BIT", cfg.BATCH * cfg.BLOCK_OUT)):
        if nbytes < bus:
            raise ConfigError(f"configuration {cfg.name!r}: the RTL needs {name} elements of at least one "
                              f"bus beat ({bus} B), got {nbytes} B; use LOG_BUS_WIDTH <= "
                              f"{(nbytes * 8).bit_length() - 1}")
    for key, depth, why in RTL_LEAST:
        if getattr(cfg, key) < depth:
            raise ConfigError(f"configuration {cfg.name!r}: {key}={getattr(cfg, key)}, but {why}; "
                              f"use {key} >= {depth}")
    if timing.REQ_EXTRA_LATENCY < RTL_REQ_DEPTH:
        raise ConfigError(f"vta_sim.timing.REQ_EXTRA_LATENCY={timing.REQ_EXTRA_LATENCY}, but the RTL's REQ "
                          f"pipeline writes its result {RTL_REQ_DEPTH} cycles after the other ALU ops' "
                          f"(docs/hardware.md, \"REQ\"); use REQ_EXTRA_LATENCY >= {RTL_REQ_DEPTH}")
    if (timing.REQ_READ_INTERVAL, timing.REQ_KEEP_INTERVAL) != (2, 1):
        raise ConfigError(f"vta_sim.timing: REQ_READ_INTERVAL={timing.REQ_READ_INTERVAL}, "
                          f"REQ_KEEP_INTERVAL={timing.REQ_KEEP_INTERVAL}, but the RTL's REQ reads ACC[s] "
                          f"and ACC[a] on one port: 2 and 1 cycles per iteration")
    if bus < 4:
        raise ConfigError(f"configuration {cfg.name!r}: the RTL needs a bus of at least 32 bits "
                          f"(LOG_BUS_WIDTH >= 5), got {bus * 8}")


def _defines(cfg: Config) -> dict:
    """Every macro of the headers, by name without the `VTA_` prefix."""
    check_supported(cfg)
    b = cfg.buffers
    defines = {
        "BATCH": cfg.BATCH, "BLOCK_IN": cfg.BLOCK_IN, "BLOCK_OUT": cfg.BLOCK_OUT,
        "BUS_BYTES": cfg.bus_bytes, "LOG_BUS_BYTES": cfg.bus_bytes.bit_length() - 1,
        "BURST_BOUNDARY": cfg.burst_boundary,
        "LU": cfg.LU, "LI": cfg.LI, "LW": cfg.LW, "LA": cfg.LA,
        "UOP_DEPTH": b["uop"].depth, "INP_DEPTH": b["inp"].depth, "WGT_DEPTH": b["wgt"].depth,
        "ACC_DEPTH": b["acc"].depth,
        "UOP_BYTES": b["uop"].entry_bytes, "INP_BYTES": b["inp"].entry_bytes,
        "WGT_BYTES": b["wgt"].entry_bytes, "ACC_BYTES": b["acc"].entry_bytes,
        "OUT_BYTES": b["out"].entry_bytes, "ACC8_BYTES": cfg.BATCH * cfg.BLOCK_OUT,
        "TOKEN_DEPTH": cfg.TOKEN_DEPTH, "CMD_QUEUE_DEPTH": cfg.CMD_QUEUE_DEPTH,
        "DMA_READ_LATENCY": cfg.DMA_READ_LATENCY, "DMA_WRITE_LATENCY": cfg.DMA_WRITE_LATENCY,
        "GEMM_PIPELINE": cfg.GEMM_PIPELINE, "ALU_PIPELINE": cfg.ALU_PIPELINE,
        "INSN_BYTES": isa.INSN_BYTES, "RFIFO_DEPTH": RFIFO_DEPTH,
        "OP_LOAD": isa.OP_LOAD, "OP_STORE": isa.OP_STORE, "OP_GEMM": isa.OP_GEMM,
        "OP_FINISH": isa.OP_FINISH, "OP_ALU": isa.OP_ALU,
        "NUM_COUNTERS": len(COUNTERS), "REG_COUNTERS": REG_COUNTERS // 4,
        "NO_INDEX": f"32'h{registers.NO_INDEX:08X}", "ERROR_CODE_BITS": registers.ERROR_CODE_BITS,
        "ALU_SHIFT_CAP": isa.ALU_SHIFT_CAP,
        # cycles per iteration of a tensor ALU, by opcode (vta_sim.timing; the RTL's ALU: 2 or 3)
        "ALU_TENSOR_INTERVAL(op)": "(" + "".join(f"(op) == {code} ? {n} : " for code, n in
                                                  sorted(timing.ALU_TENSOR_INTERVAL.items())) + "0)",
        # REQ (docs/isa-extensions.md): its opcode, the immediate's fields, its timing (vta_sim)
        "ALU_REQ": isa.ALU_REQ, "ALU_OPCODE_MAX": max(max(isa.ALU_NAMES), isa.ALU_REQ),
        "REQ_SHIFT_LO": 0, "REQ_SHIFT_BITS": isa.REQ_SHIFT_BITS,
        "REQ_ZP_LO": isa.REQ_SHIFT_BITS, "REQ_ZP_BITS": isa.REQ_ZP_BITS,
        "REQ_RSV_LO": isa.REQ_SHIFT_BITS + isa.REQ_ZP_BITS,
        "REQ_RSV_BITS": 16 - isa.REQ_SHIFT_BITS - isa.REQ_ZP_BITS,
        "REQ_OUT_MIN": isa.REQ_OUT_MIN, "REQ_OUT_MAX": isa.REQ_OUT_MAX,
        "REQ_READ_INTERVAL": timing.REQ_READ_INTERVAL, "REQ_KEEP_INTERVAL": timing.REQ_KEEP_INTERVAL,
        "REQ_EXTRA_LATENCY": timing.REQ_EXTRA_LATENCY,
        "CTRL_START": registers.CTRL_START, "STATUS_RUNNING": registers.STATUS_RUNNING,
        "STATUS_DONE": registers.STATUS_DONE, "STATUS_ERROR": registers.STATUS_ERROR,
    }
    # Register indices (byte offset / 4): the RTL decodes address bits [7:2].
    defines.update({f"REG_{name}": i for i, name in enumerate(registers.REGISTERS)})
    # Each module's flag that pushes or pops a queue, by queue: `VTA_L2C_PUSH = push_next of load.
    for q in isa.TOKEN_QUEUES:
        defines[f"{q.name.upper()}_PUSH(w)"] = f"`VTA_MEM_{q.push_flag.upper()}(w)"
        defines[f"{q.name.upper()}_POP(w)"] = f"`VTA_MEM_{q.pop_flag.upper()}(w)"
    # Set when an instruction of the module carries a flag that names no queue there.
    for module, queues in isa.DEP_QUEUES.items():
        illegal = [f"`VTA_MEM_{flag.upper()}(w)" for flag, q in queues.items() if q is None]
        defines[f"{module.upper()}_FLAG_ILLEGAL(w)"] = f"({' || '.join(illegal)})" if illegal else "1'b0"
    defines.update({f"MEM_{name}": value for value, name in MEM_NAMES.items()})
    defines.update({f"ALU_{name}": value for value, name in isa.ALU_NAMES.items()})
    defines.update({f"ERR_{name}": value for name, value in ERROR_CODES.items()})
    defines.update({f"CNT_{name.upper()}": i for i, name in enumerate(COUNTERS)})
    for fmt, fields in isa.layout(cfg).items():
        for f in fields:
            defines[f"{fmt.upper()}_{f.name.upper()}_LO"] = f.lo
            defines[f"{fmt.upper()}_{f.name.upper()}_W"] = f.width
            defines[f"{fmt.upper()}_{f.name.upper()}(w)"] = f"w[{f.hi}:{f.lo}]"
    return defines


def header_text(cfg: Config) -> str:
    """`vta_cfg.vh`, included by every RTL file."""
    lines = [f"// Generated by hw/header.py from configuration {cfg.name!r}; do not edit.",
             "`ifndef VTA_CFG_VH", "`define VTA_CFG_VH"]
    lines += [f"`define VTA_{k} {v}" for k, v in _defines(cfg).items()]
    lines += ["`endif", ""]
    return "\n".join(lines)


def c_header_text(cfg: Config) -> str:
    """`vta_cfg.h` for C++ benches: the integer macros of `vta_cfg.vh`, same names, same units
    (registers are word indices, status bits are bit positions)."""
    lines = [f"// Generated by hw/header.py from configuration {cfg.name!r}; do not edit.",
             "#ifndef VTA_CFG_H", "#define VTA_CFG_H"]
    lines += [f"#define VTA_{k} {v}" for k, v in _defines(cfg).items()
              if isinstance(v, int) and not isinstance(v, bool)]
    lines += ["#endif", ""]
    return "\n".join(lines)
