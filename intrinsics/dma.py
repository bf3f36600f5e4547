"""The DMA intrinsic: a copy loop nest between DRAM and an on-chip scope becomes `load_2d`/`store_2d`.

A copy is recognised by what it does, not by an annotation: a perfect loop nest around one
store whose one side is an on-chip buffer and whose other side is a DRAM parameter, optionally
guarded by `if_then_else(inside, x, 0)` (zero padding), narrowed by a cast to int8 (the OUT
SRAM holds the low byte of each accumulator) or widened from int8 DRAM to the int32 ACC scope
(a LOAD of memory type ACC_8BIT sign-extends). The innermost loops must cover whole SRAM entries
with the same layout on both sides; the rest are matched to the instruction's 2-D pattern
(x: contiguous elements, y: strided rows, pads from the guard's clip bounds) and any loops left
over stay as host loops around the call.
"""
from __future__ import annotations

from dataclasses import dataclass

from tvm import sym, tirx
from tvm.ir.expr import Call, TensorLoad
from tvm.sym import Analyzer

from vta_sim.errors import CompileError

from .calls import Load2D, Store2D
from .program import Loop, SramPtr, free_vars
from .tensor_intrin import SCOPE_SRAM


@dataclass
class _Dim:
    extent: int
    on: int            # on-chip coefficient, entries
    dram: int          # DRAM coefficient, entries
    var: object = None  # the loop variable, None once merged


def copy_parts(stmt):
    """(loops, store) if `stmt` is a perfect loop nest around a single BufferStore, else None."""
    loops = []
    while isinstance(stmt, tirx.For):
        loops.append(stmt)
        stmt = stmt.body
    return (loops, stmt) if isinstance(stmt, tirx.BufferStore) else None


def scope_of(buf) -> str:
    return buf.scope() if callable(getattr(buf, "scope", None)) else ""


def lower_copy(loops, store, params, entry_elems, describe):
    """([node], (direction, DRAM buffer, DRAM kind)) for a copy nest: host loops, if any,
    around one `load_2d`/`store_2d` op. The kind is the runtime's memory kind of the DRAM
    tensor: the SRAM name for a load ("acc8" for int8 widened into ACC), "out" for a store.
    `describe()` names the copy in error messages."""
    value, cond = _strip_cast(store.value), None
    if isinstance(value, Call) and value.op.name == "prim.if_then_else":
        cond, value, zero = value.args
        if not (isinstance(zero, (tirx.IntImm, tirx.FloatImm)) and zero.value == 0):
            raise CompileError(f"{describe()}: a padded copy must fill with zero, got {zero}")
    value = _strip_cast(value)
    if not isinstance(value, TensorLoad):
        raise CompileError(f"{describe()}: neither a DMA copy nor a tensorized operation "
                           f"(stores {type(value).__name__}); tensorize it or make it a plain copy")
    dst, src = store.buffer, value.source
    if SCOPE_SRAM.get(scope_of(dst)) and src in params:
        direction, onchip, dram, on_idx, dram_idx = "load", dst, src, store.indices[0], value.indices[0]
    elif SCOPE_SRAM.get(scope_of(src)) and dst in params:
        direction, onchip, dram, on_idx, dram_idx = "store", src, dst, value.indices[0], store.indices[0]
        if cond is not None:
            raise CompileError(f"{describe()}: a store cannot pad; STORE writes only real elements")
    else:
        raise CompileError(f"{describe()}: copies between {scope_of(src) or 'global'} and "
                           f"{scope_of(dst) or 'global'} have no DMA; one side must be an "
                           "on-chip scope and the other a function parameter")
    sram = SCOPE_SRAM[scope_of(onchip)]
    kind = "out" if direction == "store" else sram
    if direction == "load" and str(dram.dtype) != str(onchip.dtype):
        if (sram, str(dram.dtype), str(onchip.dtype)) != ("acc", "int8", "int32"):
            raise CompileError(f"{describe()}: loads cannot convert {dram.dtype} to {onchip.dtype} "
                               f"in {sram.upper()}; the only widening load is int8 DRAM into the "
                               "int32 ACC scope (ACC_8BIT)")
        kind = "acc8"
    entry = entry_elems[sram]
    lvars = [lp.loop_var for lp in loops]
    extents = []
    for lp in loops:
        if not isinstance(lp.extent, tirx.IntImm):
            raise CompileError(f"{describe()}: copy loop {lp.loop_var} has a non-constant extent")
        extents.append(lp.extent.value)
    on_co = _linear(on_idx, lvars, describe)
    dr_co = _linear(dram_idx, lvars, describe)
    elems, dims = [], []
    for var, n, c_on, c_dr in zip(lvars, extents, on_co[:-1], dr_co[:-1]):
        if n == 1:
            continue
        if 0 < c_on < entry:
            elems.append((c_on, n, c_dr, var))
        elif c_on % entry == 0 and c_dr % entry == 0 and c_on > 0:
            dims.append(_Dim(n, c_on // entry, c_dr // entry, var))
        else:
            raise CompileError(f"{describe()}: loop {var} steps {c_on} on-chip and {c_dr} in DRAM "
                               f"elements; a DMA moves whole {entry}-element entries")
    _check_entry_layout(elems, entry, describe)
    cond_vars = free_vars(cond) if cond is not None else []
    elem_vars = [e[3] for e in elems]
    if any(any(v.same_as(c) for c in cond_vars) for v in elem_vars):
        raise CompileError(f"{describe()}: padding must cover whole entries")
    dims.sort(key=lambda d: -d.on)
    dims = _merge(dims, cond_vars)
    x = dims.pop() if dims and dims[-1].on == 1 and dims[-1].dram == 1 else None
    width = x.extent if x else 1
    y = dims.pop() if dims and dims[-1].on == width else None
    host = dims                                   # outer loops left to the host
    ana = Analyzer()
    padded = [d for d in (y, x) if d is not None and d.var is not None
              and any(d.var.same_as(c) for c in cond_vars)]
    loop_cond_vars = [c for c in cond_vars if any(c.same_as(v) for v in lvars)]
    if len(loop_cond_vars) != len(padded):
        raise CompileError(f"{describe()}: padding is only possible on the two innermost copy "
                           "dimensions (rows and columns of one DMA)")
    pads = {"y": (0, 0), "x": (0, 0)}
    if padded:
        bounds = sym.detect_clip_bound(cond, [d.var for d in padded])
        if len(bounds) != 2 * len(padded):
            raise CompileError(f"{describe()}: cannot read the padding bounds from {cond}")
        for i, d in enumerate(padded):
            lo, hi, n = bounds[2 * i], bounds[2 * i + 1], d.extent   # None: no bound that side
            pads["y" if d is y else "x"] = (
                0 if lo is None else ana.simplify(tirx.Max(0, tirx.Min(n, lo))),
                0 if hi is None else ana.simplify(tirx.Max(0, tirx.Min(n, n - 1 - hi))))
    # Bases: every copy loop at 0, the x/y loops at their first real element.
    host_nodes_vars = []
    on_base = on_co[-1]
    dram_base = dr_co[-1]
    for d in host:
        hv = tirx.Var(f"dma_{direction}", "int32")
        host_nodes_vars.append((hv, d.extent))
        on_base = on_base + hv * (d.on * entry)
        dram_base = dram_base + hv * (d.dram * entry)
    first = dram_base
    if y is not None:
        first = first + pads["y"][0] * (y.dram * entry)
    if x is not None:
        first = first + pads["x"][0] * entry
    dram_elem = ana.simplify(first)
    misaligned = ana.simplify(tirx.floormod(dram_elem, entry))
    if isinstance(misaligned, tirx.IntImm) and misaligned.value:
        raise CompileError(f"{describe()}: the DRAM side starts {misaligned.value} elements into an "
                           f"entry of {dram.name}")
    y_n = y.extent if y else 1
    x_n = width
    (yp0, yp1), (xp0, xp1) = pads["y"], pads["x"]
    x_size = ana.simplify(x_n - xp0 - xp1)
    y_size = ana.simplify(y_n - yp0 - yp1)
    x_stride = y.dram if y else x_n
    param = params[dram]
    sram_ptr = SramPtr(onchip, ana.simplify(on_base))
    dram_off = ana.simplify(tirx.floordiv(dram_elem, entry))
    if direction == "load":
        op = Load2D(param, dram_off, x_size, y_size, x_stride, sram_ptr, yp0, yp1, xp0, xp1)
    else:
        op = Store2D(param, dram_off, x_size, y_size, x_stride, sram_ptr)
    node = op
    for hv, n in reversed(host_nodes_vars):
        node = Loop(hv, n, [node])
    return [node], (direction, dram, kind)


def _strip_cast(value):
    """The value under a cast: int8 out of ACC is what OUT holds, int8 into ACC is ACC_8BIT
    (lower_copy checks which conversions a DMA can make)."""
    return value.value if isinstance(value, tirx.Cast) else value


def _linear(index, lvars, describe):
    co = sym.detect_linear_equation(index, lvars)
    if len(co) != len(lvars) + 1 or not all(isinstance(c, tirx.IntImm) for c in co[:-1]):
        raise CompileError(f"{describe()}: copy index {index} is not affine in its loops")
    return [c.value for c in co[:-1]] + [co[-1]]


def _check_entry_layout(elems, entry, describe):
    """The loops inside an entry must enumerate it densely with one layout on both sides."""
    elems.sort()
    expect = 1
    for c_on, n, c_dr, var in elems:
        if c_on != expect or c_dr != c_on:
            raise CompileError(f"{describe()}: loop {var} walks the inside of an entry differently "
                               "on-chip and in DRAM; pack the tensor so entries are contiguous")
        expect *= n
    if expect != entry and elems:
        raise CompileError(f"{describe()}: the copy moves {expect}-element pieces of "
                           f"{entry}-element entries")
    if not elems and entry != 1:
        raise CompileError(f"{describe()}: the copy does not cover whole entries")


def _merge(dims, cond_vars):
    """Fuse adjacent loops that are contiguous on both sides (and not padded)."""
    def padded(d):
        return d.var is not None and any(d.var.same_as(c) for c in cond_vars)
    out = []
    for d in reversed(dims):                # innermost first
        if out and not padded(d) and not padded(out[-1]):
            inner = out[-1]
            if d.on == inner.on * inner.extent and d.dram == inner.dram * inner.extent:
                out[-1] = _Dim(inner.extent * d.extent, inner.on, inner.dram, None)
                continue
        out.append(d)
    return list(reversed(out))
