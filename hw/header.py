"""Generate the Verilog header `vta_cfg.vh` from a `vta_sim.Config` and `vta_sim.isa.layout`.

Every size, latency and bit position that a configuration or the instruction layout can change
is a macro of this header, written from the same Python objects the simulator and the compiler
read. What the ISA fixes for all configurations is written in the RTL directly: the 8-bit data
and 32-bit accumulator lanes, the shift clamp of 31, the register map (`hw/rtl/vta_regs.v`).
"""
from __future__ import annotations

from vta_sim import isa
from vta_sim.config import MEM_NAMES, Config
from vta_sim.errors import ConfigError

#: ERROR_CODE values of the status register (docs/hardware.md lists them).
ERROR_CODES = {
    "NONE": 0,
    "OPCODE": 1,        # illegal opcode (5-7)
    "MEM_TYPE": 2,      # memory type the instruction's module does not take
    "DEP_FLAG": 3,      # dependency flag that is illegal in the module
    "ALU_OPCODE": 4,    # illegal ALU opcode (5-7)
    "MALFORMED": 5,     # UOP load not 1 row/unpadded, padded STORE, unused bits set, uop_bgn > uop_end
    "SRAM_RANGE": 6,    # LOAD/STORE/uop range outside its SRAM
    "FINISH": 7,        # FINISH not last, or the last instruction is not FINISH
    "INSN_ADDR": 8,     # insn_addr not 16-byte aligned, or insn_count = 0
    "INDEX": 9,         # GEMM/ALU index (dst/src/wgt) outside its SRAM
    "DEADLOCK": 10,     # every module waits and FINISH has not completed
}

#: 32-bit counters that follow ERROR_CODE in the register map, from 0x18 on (0x14 = ERROR_INDEX).
COUNTERS = (
    "inp_load_nbytes", "wgt_load_nbytes", "acc_load_nbytes", "uop_load_nbytes", "out_store_nbytes",
    "gemm_counter", "alu_counter",
    "load_busy_cycles", "load_stall_token_cycles", "load_stall_port_cycles",
    "load_stall_push_cycles", "load_insn_count",
    "compute_busy_cycles", "compute_stall_token_cycles", "compute_stall_port_cycles",
    "compute_stall_push_cycles", "compute_insn_count",
    "store_busy_cycles", "store_stall_token_cycles", "store_stall_port_cycles",
    "store_stall_push_cycles", "store_insn_count",
    "fetch_stall_queue_cycles", "fetch_stall_port_cycles",
)
REG_CTRL, REG_CYCLES, REG_INSN_COUNT, REG_INSN_ADDR, REG_ERROR_CODE, REG_ERROR_INDEX = \
    0x00, 0x04, 0x08, 0x0C, 0x10, 0x14
REG_COUNTERS = 0x18
#: Depth of the read-data FIFO of the AXI master: read latencies up to about this many cycles stay
#: cycle-exact against DMA_READ_LATENCY (docs/hardware.md).
RFIFO_DEPTH = 32


def counter_offset(name: str) -> int:
    return REG_COUNTERS + 4 * COUNTERS.index(name)


def check_supported(cfg: Config) -> None:
    """Refuse configurations the RTL's DMA does not implement (an entry narrower than the bus)."""
    bus = cfg.bus_bytes
    for name, nbytes in (("INP", cfg.buffers["inp"].entry_bytes), ("WGT", cfg.buffers["wgt"].entry_bytes),
                         ("OUT", cfg.buffers["out"].entry_bytes), ("ACC_8BIT", cfg.BATCH * cfg.BLOCK_OUT)):
        if nbytes < bus:
            raise ConfigError(f"configuration {cfg.name!r}: the RTL needs {name} elements of at least one "
                              f"bus beat ({bus} B), got {nbytes} B; use LOG_BUS_WIDTH <= "
                              f"{(nbytes * 8).bit_length() - 1}")
    if bus < 4:
        raise ConfigError(f"configuration {cfg.name!r}: the RTL needs a bus of at least 32 bits "
                          f"(LOG_BUS_WIDTH >= 5), got {bus * 8}")


def header_text(cfg: Config) -> str:
    check_supported(cfg)
    b = cfg.buffers
    defines = {
        "BATCH": cfg.BATCH, "BLOCK_IN": cfg.BLOCK_IN, "BLOCK_OUT": cfg.BLOCK_OUT,
        "BUS_BYTES": cfg.bus_bytes, "LOG_BUS_BYTES": cfg.bus_bytes.bit_length() - 1,
        "BURST_BOUNDARY": min(4096, 256 * cfg.bus_bytes),
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
        "NUM_COUNTERS": len(COUNTERS),
    }
    defines.update({f"MEM_{name}": value for value, name in MEM_NAMES.items()})
    defines.update({f"ALU_{name}": value for value, name in isa.ALU_NAMES.items()})
    defines.update({f"ERR_{name}": value for name, value in ERROR_CODES.items()})
    defines.update({f"CNT_{name.upper()}": i for i, name in enumerate(COUNTERS)})
    for fmt, fields in isa.layout(cfg).items():
        for f in fields:
            defines[f"{fmt.upper()}_{f.name.upper()}_LO"] = f.lo
            defines[f"{fmt.upper()}_{f.name.upper()}_W"] = f.width
            defines[f"{fmt.upper()}_{f.name.upper()}(w)"] = f"w[{f.hi}:{f.lo}]"
    lines = [f"// Generated by hw/header.py from configuration {cfg.name!r}; do not edit.",
             "`ifndef VTA_CFG_VH", "`define VTA_CFG_VH"]
    lines += [f"`define VTA_{k} {v}" for k, v in defines.items()]
    lines += ["`endif", ""]
    return "\n".join(lines)
