"""Every refusal of spec section 7: the error type, the instruction it names, inputs untouched."""
import numpy as np
import pytest

from programs import image_with, load, store
from vta_sim import (ConfigError, Config, DeadlockError, EncodingError, HazardError, MemoryAccessError,
                     ProgramError, Simulator, VTAError, isa)
from vta_sim.config import MEM_INP, MEM_OUT, MEM_UOP, MEM_WGT

FIN = isa.FinishInsn()


def refuse(cfg, insns, error, index, match=None, size=4096, raw=None):
    image, addr, count = image_with(cfg, insns, b"", size)
    if raw is not None:  # patch raw words that the encoder would not produce
        for i, word in raw.items():
            image[addr + 16 * i:addr + 16 * (i + 1)] = np.frombuffer(word.to_bytes(16, "little"), np.uint8)
    before = image.copy()
    with pytest.raises(error, match=match) as info:
        Simulator(cfg).run(image, insn_addr=addr, insn_count=count)
    assert np.array_equal(image, before)
    assert info.value.index == index
    assert f"instruction {index}:" in str(info.value)
    return info.value


def test_illegal_opcode(cfg):
    err = refuse(cfg, [FIN, FIN], EncodingError, 0, "illegal opcode 5", raw={0: 5})
    assert "opcode 5" in str(err)


def test_illegal_alu_opcode(cfg):
    refuse(cfg, [isa.AluInsn(alu_opcode=6), FIN], EncodingError, 0, "illegal ALU opcode 6")


@pytest.mark.parametrize("insn, match", [
    (load(MEM_OUT), "LOAD of memory type OUT"),
    (store().replace(memory_type=MEM_INP), "STORE of memory type INP"),
    (load(7), "illegal memory type 7"),
])
def test_memory_type_not_taken_by_the_module(cfg, insn, match):
    refuse(cfg, [insn, FIN], EncodingError, 0, match)


@pytest.mark.parametrize("insn, flag", [
    (load(MEM_INP, pop_prev=1), "pop_prev is illegal in the load module"),
    (load(MEM_WGT, push_prev=1), "push_prev is illegal in the load module"),
    (store(pop_next=1), "pop_next is illegal in the store module"),
    (store(push_next=1), "push_next is illegal in the store module"),
])
def test_illegal_dependency_flag(cfg, insn, flag):
    refuse(cfg, [isa.GemmInsn(), insn, FIN], EncodingError, 1, flag)


def test_sram_index_outside_buffer_static_and_dynamic(cfg):
    depth = cfg.buffers["inp"].depth
    refuse(cfg, [load(MEM_INP, depth - 1, 0, 1, 2), FIN], MemoryAccessError, 0, "outside the buffer")
    refuse(cfg, [store(cfg.buffers["out"].depth, 0, 1, 1), FIN], MemoryAccessError, 0, "OUT SRAM")
    acc = cfg.buffers["acc"].depth
    err = refuse(cfg, [isa.GemmInsn(uop_end=1), isa.GemmInsn(uop_end=1, iter_out=3, dst_factor_out=acc // 2), FIN],
                 MemoryAccessError, 1, "dst index reaches")
    assert f"depth {acc}" in str(err) and "GEMM" in str(err)
    refuse(cfg, [isa.GemmInsn(uop_end=cfg.buffers["uop"].depth + 1), FIN], MemoryAccessError, 0, "uop_end")


def test_dram_access_outside_the_image(cfg):
    refuse(cfg, [load(MEM_WGT, 0, 1000, 1, 4), FIN], MemoryAccessError, 0, "outside the 4096-byte image")
    refuse(cfg, [store(0, 0, 2, 1, 10**4), FIN], MemoryAccessError, 0, "outside")


def test_misaligned_insn_addr(cfg):
    image, addr, count = image_with(cfg, [FIN], b"", 256)
    with pytest.raises(ProgramError, match="not 16-byte aligned"):
        Simulator(cfg).run(image, insn_addr=addr + 4, insn_count=count)


@pytest.mark.parametrize("insn, match", [
    (load(MEM_UOP, 0, 0, 2, 1), "malformed UOP"),
    (load(MEM_UOP, 0, 0, 1, 1, pads=(0, 0, 1, 0)), "malformed UOP"),
    (isa.MemInsn(opcode=isa.OP_STORE, memory_type=MEM_OUT, y_size=1,
     x_size=1, x_stride=1, x_pad_1=2), "malformed STORE"),
])
def test_malformed_uop_and_store(cfg, insn, match):
    refuse(cfg, [insn, FIN], ProgramError, 0, match)


def test_program_must_end_with_finish(cfg):
    refuse(cfg, [isa.GemmInsn(), isa.GemmInsn()], ProgramError, 1, "does not end with FINISH")
    refuse(cfg, [FIN, isa.GemmInsn(), FIN], ProgramError, 0, "FINISH before the end")


def test_deadlock_lists_each_module_and_the_token_counts(cfg):
    insns = [load(MEM_INP, 0, 0, 1, 1, pop_next=1), isa.GemmInsn(pop_prev=1), FIN]
    err = refuse(cfg, insns, DeadlockError, 0, "deadlock")
    text = str(err)
    assert "load: instruction 0 waits for token(s) c2l" in text
    assert "compute: instruction 1 waits for token(s) l2c" in text
    assert "l2c=0" in text and "c2s=0" in text


def test_full_token_queue_deadlocks(cfg):
    pushes = [isa.GemmInsn(push_next=1)] * (cfg.TOKEN_DEPTH + 1)
    refuse(cfg, pushes + [FIN], DeadlockError, cfg.TOKEN_DEPTH, "waits to push c2s")


def test_missing_token_is_a_hazard_not_a_silent_race(cfg):
    """Compute reads INP that load wrote, with no token between them."""
    insns = [load(MEM_INP, 0, 0, 1, 1), isa.GemmInsn(uop_end=1), FIN]
    refuse(cfg, insns, HazardError, 1, "no dependency token orders them")


def test_config_that_does_not_fit_the_encoding():
    with pytest.raises(ConfigError, match="micro-op"):
        Config.from_dict({**Config.default().keys, "LOG_ACC_BUFF_SIZE": 22})
    assert issubclass(ConfigError, VTAError)


def test_image_must_be_bytes_or_uint8(cfg):
    with pytest.raises(ProgramError, match="1-D uint8"):
        Simulator(cfg).run(np.zeros(64, dtype=np.int32), insn_addr=0, insn_count=1)
