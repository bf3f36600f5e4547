"""The one definition of how Python and the compiled engine (engine.c) exchange a program:
the columns of an instruction row, the slots of the parameter and statistics vectors, and the
ISA numbers the C code switches on (the tables it decodes and checks words with travel in the
parameters, built by vta_sim.compiled from isa and config). Each becomes a -D macro of the build (and so part of the
library's hash); the values themselves (latencies, depths, ...) travel at run time."""
from __future__ import annotations

from .. import isa
from ..config import MEM_ACC, MEM_ACC_8BIT, MEM_INP, MEM_OUT, MEM_UOP, MEM_WGT

#: One int64 row per instruction: the fields engine.c decodes (FIELDS) and what it derives
#: from them (module, the token queues popped and pushed in flag order, the loops.c ALU op).
FIELDS = ("opcode", "pop_prev", "pop_next", "push_prev", "push_next", "unused",
          "memory_type", "sram_base", "dram_base", "y_size", "x_size", "x_stride",
          "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1",
          "reset", "uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
          "src_factor_out", "src_factor_in", "wgt_factor_out", "wgt_factor_in", "alu_opcode", "use_imm", "imm")
COLUMNS = FIELDS + ("module", "npop", "pop0", "pop1", "npush", "push0", "push1", "alu_op")
#: Instruction formats, in the order of the field tables in PARAMS.
FORMATS = ("mem", "gemm", "alu", "finish")
#: Parameter slots: name -> width (consecutive slots of one name are indexed from its first).
PARAMS = {"dma_read_latency": 1, "dma_write_latency": 1, "gemm_pipeline": 1, "alu_pipeline": 1,
          "fetch_decode": 1, "fetch_next": 1, "queue_delay": 1, "token_delay": 1, "issue_delay": 1, "begin_delay": 1, "request_delay": 1,
          "alu_imm_interval": 1,
          "req_read_interval": 1, "req_keep_interval": 1, "req_extra_latency": 1,  # REQ (timing.req_cycles)
          "alu_tensor_interval": 8,  # cycles per iteration of a tensor ALU by opcode (timing.alu_interval)
          "cmd_queue_depth": 1, "token_depth": 1, "bus_bytes": 1, "burst_boundary": 1,
          "insn_addr": 1, "dram_bytes": 1,
          "batch": 1, "block_in": 1, "block_out": 1, "acc_lanes": 1,
          "depth_uop": 1, "depth_inp": 1, "depth_wgt": 1, "depth_acc": 1,
          "elem_bytes": 8,          # DRAM bytes of an element, by memory type (0: not a memory type)
          "mem_depth": 8,           # entries of the SRAM a memory type loads or stores, by memory type
          "uop_lo": 3, "uop_mask": 3,  # micro-op fields dst, src, wgt
          "port_priority": 4,       # by agent: load, compute, store, fetch
          "format_of_opcode": 8,    # index in FORMATS, -1: illegal opcode
          "load_module": 8,         # module of a LOAD by memory type, -1: none takes it
          "flag_queue": 3 * 4,      # token queue of (module, flag in isa.FLAGS order), -1: illegal
          "alu_code": 8,            # loops.c op of an ALU opcode, -1: illegal
          "field_lo": len(FORMATS) * len(FIELDS),       # bit position of each field in each format
          "field_width": len(FORMATS) * len(FIELDS),    # 0: not a field of that format
          "field_signed": len(FORMATS) * len(FIELDS)}
#: Statistics slots the engine fills.
STATS = {"load_bytes": 6, "store_bytes": 1, "gemm_counter": 1, "alu_counter": 1,
         "module": 3 * 5, "fetch_stall_queue": 1, "fetch_stall_port": 1, "cycles": 1, "err_index": 1}
PER_MODULE = 5   # busy, stall_token, stall_port, stall_push, instruction count
#: What vta_run returns.
ERRORS = {"deadlock": 1, "execute": 2, "static": 3, "memory": 4}


def offsets(widths: dict[str, int]) -> dict[str, int]:
    out, k = {}, 0
    for name, width in widths.items():
        out[name] = k
        k += width
    return out


def size(widths: dict[str, int]) -> int:
    return sum(widths.values())


def defines() -> list[str]:
    """The -D options engine.c is built with."""
    macros = {f"VTA_COL_{c.upper()}": i for i, c in enumerate(COLUMNS)}
    macros["VTA_NCOLS"] = len(COLUMNS)
    macros["VTA_NFIELDS"] = len(FIELDS)
    macros.update({f"VTA_P_{k.upper()}": v for k, v in offsets(PARAMS).items()})
    macros.update({f"VTA_S_{k.upper()}": v for k, v in offsets(STATS).items()})
    macros["VTA_S_PER_MODULE"] = PER_MODULE
    macros.update({f"VTA_ERR_{k.upper()}": v for k, v in ERRORS.items()})
    macros.update({f"VTA_OP_{n}": getattr(isa, f"OP_{n}") for n in ("LOAD", "STORE", "GEMM", "ALU", "FINISH")})
    macros.update({"VTA_MEM_UOP": MEM_UOP, "VTA_MEM_WGT": MEM_WGT, "VTA_MEM_INP": MEM_INP, "VTA_MEM_ACC": MEM_ACC,
                   "VTA_MEM_ACC_8BIT": MEM_ACC_8BIT, "VTA_MEM_OUT": MEM_OUT})
    macros.update({f"VTA_{m.upper()}": i for i, m in enumerate(isa.MODULES)})
    macros["VTA_NQUEUES"] = len(isa.TOKEN_QUEUES)
    macros["VTA_INSN_BYTES"] = isa.INSN_BYTES
    macros.update({"VTA_ISA_ALU_REQ": isa.ALU_REQ, "VTA_REQ_SHIFT_BITS": isa.REQ_SHIFT_BITS,
                   "VTA_REQ_ZP_BITS": isa.REQ_ZP_BITS, "VTA_REQ_OUT_MIN": isa.REQ_OUT_MIN,
                   "VTA_REQ_OUT_MAX": isa.REQ_OUT_MAX})
    return [f"-D{k}={v}" for k, v in macros.items()]
