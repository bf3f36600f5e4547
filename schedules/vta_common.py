"""Schedule steps shared by the packed dense and conv2d schedules.

Both put the int32 accumulator and every epilogue stage in the ACC scope under one output tile
(`tile_loop`), tensorize the reduction's init (reset), its update (GEMM) and each epilogue stage
(ALU), and leave the final int8 cast as the store DMA.
"""
from __future__ import annotations

from vta_sim.errors import CompileError
from intrinsics.tensor_intrin import (SCOPES, alu_intrin, alu_update_intrin, gemm_intrin, req_intrin,
                                       reset_intrin, tensorize_loop)
from vta_sim.config import Config
from vta_sim.runtime import MAX_KERNEL_UOPS
from vta_sim.isa import ALU_OPS
from vta_sim.timing import (ALU_IMM_INTERVAL, REQ_EXTRA_LATENCY, REQ_KEEP_INTERVAL, REQUEST_DELAY, DmaCost,
                            alu_interval)

from requantisation.stages import epilogue, scratch_regions, vector_inputs


def read_index(sch, block, name: str) -> int:
    """Index of the buffer `name` among a block's reads (cache_read addresses reads by index)."""
    reads = [r.source.name for r in sch.get(block).reads]
    return reads.index(name)


def schedule_epilogue(sch, cfg: Config, tile_loop, requant, row_term: bool = False) -> None:
    """The per-channel (and per-row) inputs into ACC, each requantisation stage
    (`requantisation.stages.epilogue`) as one in-place ALU op (a scratch as a reset), the int8
    result as a store."""
    stages = epilogue(requant, row_term)
    for st in stages:
        block = sch.get_sblock(st.name)
        sch.set_scope(block, 0, SCOPES["acc"])
        sch.reverse_compute_at(block, tile_loop)
    sch.reverse_compute_at(sch.get_sblock("out"), tile_loop)
    _check_order(sch, tile_loop, stages)
    for st in stages:
        block = sch.get_sblock(st.name)
        if isinstance(st.y, str) and st.y not in {s.name for s in stages}:
            vector = sch.cache_read(block, read_index(sch, block, st.y), SCOPES["acc"])
            sch.compute_at(vector, tile_loop)
    for st in stages:
        block = sch.get_sblock(st.name)
        if st.op == "copy":
            _tensorize_copy(sch, cfg, block, tile_loop)
        elif st.op == "req":
            sch.tensorize(tensorize_loop(sch, block, cfg), req_intrin(cfg, *st.imm))
        else:
            sch.tensorize(tensorize_loop(sch, block, cfg),
                          alu_intrin(cfg, st.op, st.y if isinstance(st.y, int) else None))


def _tensorize_copy(sch, cfg: Config, block, tile_loop) -> None:
    """A copy stage (a sum over one term, whose unit loop reverse_compute_at drops): the init
    (reset) in a loop nest of its own, the update an in-place ALU ADD with a tensor operand."""
    loops = sch.get_loops(block)
    outer = [sch.get(lp) for lp in loops].index(sch.get(tile_loop)) + 1
    init = sch.decompose_reduction(block, sch.get_loops(block)[outer])
    sch.tensorize(tensorize_loop(sch, init, cfg), reset_intrin(cfg))
    sch.tensorize(tensorize_loop(sch, block, cfg), alu_update_intrin(cfg, "add"))


def _check_order(sch, tile_loop, stages) -> None:
    """An ALU writes in place, which TE cannot see: a stage that overwrites a value (mul_hi over
    the clamped value) must come after every other reader of it (the scratch copy)."""
    order = {sch.get(b).name_hint: i for i, b in enumerate(sch.get_child_blocks(tile_loop))}
    for st in stages:
        for reader in stages:
            if st.x is not None and reader.y == st.x and order[reader.name] > order[st.name]:
                raise CompileError(f"internal: epilogue stage {st.name} overwrites {st.x} in place "
                                   f"before {reader.name} reads it")


def tensorize_reduction(sch, cfg: Config, block, init_loop) -> None:
    """Split the reduction's init off at `init_loop` and map init/update onto reset/GEMM."""
    init = sch.decompose_reduction(block, init_loop)
    sch.tensorize(tensorize_loop(sch, init, cfg), reset_intrin(cfg))
    sch.tensorize(tensorize_loop(sch, block, cfg, reduce_dims=1), gemm_intrin(cfg))


def tile_sizes(n: int) -> list:
    """The candidate tile sizes of a dimension of n: for each tile count, the smallest tile.

    Remainder tiles are allowed, so any size works; a larger tile with the same count only adds
    padding. Contains every divisor, and about 2 sqrt(n) sizes in all."""
    return sorted({-(-n // g) for g in range(1, n + 1)})


def padded_extent(total: int, tile: int, threads: int = 1) -> int:
    """`total` rounded up to whole tiles of `tile` per thread times `threads` threads."""
    step = tile * threads
    return -(-total // step) * step


def tile_waste(name: str, tile: int, total: int, unit: str, threads: int = 1) -> str | None:
    """None when `tile` (per thread, `threads` threads) is usable on a dimension of `total`, else why.

    The dimension is padded to whole tiles (remainder tiles compute padding, cropped later);
    refused are non-positive tiles, tiles larger than a thread's share of the dimension, and
    tiles with which a thread would compute padding only."""
    if tile < 1:
        return f"tile {name} = {tile}: must be at least 1"
    most = min(-(-total // threads), total - 1 if threads > 1 else total)
    if tile <= most:
        return None
    if most < 1:
        return f"{threads} threads cannot share the {total} {unit}: one would compute padding only"
    return (f"tile {name} = {tile} with {threads} thread(s) exceeds the {total} {unit} "
            f"(a thread would compute padding only); use 1 to {most}")


def best_tiles(candidates, why_not, estimate, what: str):
    """The candidate with the lowest estimate among those `why_not` accepts (returns None).

    Raises CompileError naming the first reason a candidate was refused when none fits."""
    best, reason = None, None
    for t in candidates:
        why = why_not(t)
        if why:
            reason = reason or why
            continue
        cost = estimate(t)
        if best is None or cost < best[0]:
            best = (cost, t)
    if best is None:
        raise CompileError(f"{what} cannot be tiled: {reason or 'no candidate tiling'}")
    return best[1]


def fits_buffers(cfg: Config, need: dict, vthreads: int) -> str | None:
    """None when a footprint {inp, wgt, acc: entries per thread, uop: the GEMM kernel's
    micro-ops} fits the SRAMs shared by `vthreads` threads and the runtime's kernel limit."""
    for sram in ("inp", "wgt", "acc"):
        have = cfg.buffers[sram].depth // vthreads
        if need[sram] > have:
            return f"{sram.upper()} needs {need[sram]} entries per thread, {have} available"
    if need["uop"] > MAX_KERNEL_UOPS:
        return f"the GEMM kernel needs {need['uop']} micro-ops, at most {MAX_KERNEL_UOPS} allowed"
    return None


# ---------------------------------------------------------------- tile cost estimates
def row_read_cycles(cfg: Config, nbytes: float) -> float:
    """An aligned DMA row read without contention: per burst, the request register's cycle, the
    read latency and the beats (timing.md, "Bursts"; vta_sim.timing charges REQUEST_DELAY before
    each burst's port request)."""
    bursts = DmaCost(cfg).read_bursts(0, int(nbytes))
    return sum(bursts) + REQUEST_DELAY * len(bursts)


def _stage_interval(stage) -> int:
    """Cycles per entry of one epilogue stage's ALU instruction (a copy is an ADD of a tensor)."""
    if isinstance(stage.y, int):
        return ALU_IMM_INTERVAL
    if stage.op == "req":     # its multipliers stay in their register along a channel block
        return REQ_KEEP_INTERVAL
    return alu_interval(0, ALU_OPS["add" if stage.op == "copy" else stage.op])


def epilogue_cycles(cfg: Config, entries: float, requant=None, row_term: bool = False) -> float:
    """The accumulator's reset plus the requantisation stages over `entries` ACC entries
    (timing.alu_interval per entry each, a reset 1/entry); `requant`, `row_term` as in
    requantisation.stages.epilogue."""
    stages = epilogue(requant, row_term)
    per_entry = 1 + sum(_stage_interval(st) for st in stages) + scratch_regions(stages)
    instructions = 1 + len(stages) + scratch_regions(stages)      # a copy is a reset and an ADD
    deeper = REQ_EXTRA_LATENCY * sum(st.op == "req" for st in stages)
    return per_entry * entries + instructions * cfg.ALU_PIPELINE + deeper


def epilogue_acc(requant, tile_entries: int, channel_blocks: int, row_blocks: int = 0) -> int:
    """ACC entries one output tile needs: the accumulator, the epilogue's scratch regions, one
    entry per channel block for each per-channel input (the bias, fixed point's vectors), and
    `row_blocks` entries of the per-row input where there is one (dense's row term)."""
    stages = epilogue(requant)
    return tile_entries * (1 + scratch_regions(stages)) + channel_blocks * len(vector_inputs(stages)) + row_blocks


def pipelined_cycles(vthreads: int, tiles: int, chunks: int, gemm: float, load: float, epilogue: float,
                     store: float) -> float:
    """Estimated cycles of `tiles` output tiles of `chunks` (load, GEMM) steps each.

    One thread serialises everything; two overlap one thread's loads with the other's GEMM, and
    at each tile boundary about one chunk stays exposed (reset waits for the store, the first
    GEMM for its loads)."""
    if vthreads == 1:
        return tiles * (chunks * (gemm + load) + epilogue + store)
    compute = tiles * (chunks * gemm + epilogue)
    exposed = tiles / vthreads * (gemm + load + store)
    return max(compute, tiles * (chunks * load + store)) + exposed
