"""The host program between TIR and the runtime calls: loops, on-chip allocations and VTA ops.

`intrinsics.lower` translates a scheduled PrimFunc into this small tree, then
- `inject_vthreads` gives every virtual thread its own slice of each on-chip buffer allocated
  inside the thread scope and interleaves the threads run by run inside each loop (TVM's
  InjectVirtualThread only separates buffers the thread variable touches, and sharing a
  buffer would serialise the threads),
- `plan_sram` places every allocation in its SRAM (stack discipline per scope, ALU results in
  place over their operand) and refuses what does not fit,
- `emit` turns the tree back into TIR loops around `T.call_packed("vta.*", ...)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from tvm import tirx
from tvm.ir.expr import Expr
from tvm.sym import Analyzer

from .calls import Call
from vta_sim.errors import CompileError


@dataclass
class SramPtr:
    """An element offset into an on-chip buffer (the buffer's SRAM base is planned later)."""

    buffer: tirx.Buffer
    offset: object            # PrimExpr, elements


@dataclass
class Loop:
    """A serial host loop."""

    var: tirx.Var
    extent: object
    body: list


@dataclass
class Alloc:
    """An on-chip buffer, live until the end of the node list that holds it."""

    buffer: tirx.Buffer
    sram: str


@dataclass
class VThread:
    """The scope of a `vthread.*` binding: `count` threads run `body`."""

    var: tirx.Var
    count: int
    body: list


@dataclass
class Plan:
    """SRAM placement: the entry base of each on-chip buffer and the peak entries per SRAM."""

    base: dict = field(default_factory=dict)
    peak: dict = field(default_factory=dict)


def substitute(expr, bindings: dict):
    """`expr` with variables replaced by values (an Analyzer binding, then simplification)."""
    if not bindings or not isinstance(expr, Expr):
        return expr
    ana = Analyzer()
    for var, value in bindings.items():
        ana.bind(var, value)
    return ana.simplify(expr)


# ----------------------------------------------------------------------------- virtual threads
def inject_vthreads(nodes: list, slices: dict) -> list:
    """Replace every VThread node by its threads, interleaved run by run inside each loop.

    `slices` receives, for each buffer allocated inside a thread scope, the thread count; the
    buffer's offsets of thread t move by t times the buffer size.
    """
    out = []
    for node in nodes:
        if isinstance(node, VThread):
            body = inject_vthreads(node.body, slices)
            out.extend(_interleave(body, node.var, node.count, slices, set()))
        elif isinstance(node, Loop):
            out.append(replace(node, body=inject_vthreads(node.body, slices)))
        else:
            out.append(node)
    return out


def _interleave(nodes, var, count, slices, local):
    """Each run of consecutive ops is issued thread after thread (t0's run, then t1's), so a
    module's queue holds one thread's work together: a thread's loads are not stuck behind
    the other thread's loads that still wait for their buffer to be released."""
    out, run = [], []

    def flush():
        out.extend(_thread_copy(op, var, t, local) for t in range(count) for op in run)
        run.clear()

    for node in nodes:
        if isinstance(node, Alloc):
            slices[node.buffer] = slices.get(node.buffer, 1) * count
            local.add(node.buffer)
            out.append(node)
        elif isinstance(node, Loop) and not _holds_allocs(node):
            run.append(node)                 # e.g. a DMA's host loop: one thread's piece of work
        elif isinstance(node, Loop):
            flush()
            if _uses(node.extent, var):
                raise CompileError(f"loop {node.var} has an extent that depends on the virtual "
                                   "thread; give every thread the same loop bounds")
            out.append(replace(node, body=_interleave(node.body, var, count, slices, local)))
        else:
            run.append(node)
    flush()
    return out


def _holds_allocs(loop: Loop) -> bool:
    return any(isinstance(n, Alloc) or (isinstance(n, Loop) and _holds_allocs(n)) for n in loop.body)


def _thread_copy(node, var, t: int, local: set):
    """Thread t's copy of an op or a loop of ops: its variable bound, its slices offset."""
    if isinstance(node, Loop):
        if _uses(node.extent, var):
            raise CompileError(f"loop {node.var} has an extent that depends on the virtual "
                               "thread; give every thread the same loop bounds")
        return replace(node, body=[_thread_copy(n, var, t, local) for n in node.body])

    def one(arg):
        if isinstance(arg, SramPtr):
            offset = substitute(arg.offset, {var: t})
            if arg.buffer in local:
                offset = offset + t * buffer_elems(arg.buffer)
            return SramPtr(arg.buffer, offset)
        return substitute(arg, {var: t})
    return node.map(one)


def buffer_elems(buf) -> int:
    """Elements of a (flattened) buffer."""
    n = 1
    for s in buf.shape:
        n *= int(s)
    return n


def _uses(expr, var) -> bool:
    return any(var.same_as(v) for v in free_vars(expr))


def free_vars(expr) -> list:
    """Variables an expression reads (a small walker: the Python API has no expression visitor)."""
    found = []

    def walk(e):
        if isinstance(e, tirx.Var):
            if not any(e.same_as(v) for v in found):
                found.append(e)
            return
        for name in ("a", "b", "value", "condition", "true_value", "false_value"):
            child = getattr(e, name, None)
            if isinstance(child, Expr):
                walk(child)
        for child in list(getattr(e, "args", None) or []) + list(getattr(e, "indices", None) or []):
            if isinstance(child, Expr):
                walk(child)

    if isinstance(expr, Expr):
        walk(expr)
    return found


# ----------------------------------------------------------------------------- SRAM placement
def plan_sram(nodes: list, depth: dict, entry_elems: dict, slices: dict, aliases: dict) -> Plan:
    """Place allocations scope by scope (a scope's buffers are freed when it ends); an ALU
    result takes its operand's place. Raises CompileError naming the SRAM that overflows."""
    plan = Plan(peak={s: 0 for s in depth})
    _place(nodes, {s: 0 for s in depth}, plan, depth, entry_elems, slices, aliases)
    return plan


def _place(nodes, top, plan, depth, entry_elems, slices, aliases):
    top = dict(top)
    for node in nodes:
        if isinstance(node, Alloc):
            data = node.buffer
            if data in aliases:
                continue
            elems = buffer_elems(node.buffer)
            entry = entry_elems[node.sram]
            if elems % entry:
                raise CompileError(f"on-chip buffer {node.buffer.name} of {elems} elements is not a "
                                   f"whole number of {node.sram.upper()} entries ({entry} elements)")
            size = elems // entry * slices.get(data, 1)
            plan.base[data] = top[node.sram]
            top[node.sram] += size
            plan.peak[node.sram] = max(plan.peak[node.sram], top[node.sram])
            if top[node.sram] > depth[node.sram]:
                raise CompileError(
                    f"the tiles need {top[node.sram]} {node.sram.upper()} entries at once "
                    f"(buffer {node.buffer.name} adds {size}) but the {node.sram.upper()} SRAM holds "
                    f"{depth[node.sram]}; choose smaller tiles or fewer virtual threads")
        elif isinstance(node, Loop):
            _place(node.body, top, plan, depth, entry_elems, slices, aliases)
    for data, root in aliases.items():
        while root in aliases:
            root = aliases[root]
        if root in plan.base:
            plan.base[data] = plan.base[root]


# ----------------------------------------------------------------------------- emission
def emit(nodes: list, plan: Plan, sram_of: dict, entry_elems: dict) -> tirx.Stmt:
    """TIR statements for the tree: serial loops around `call_packed("vta.<op>", ...)`."""
    stmts = []
    for node in nodes:
        if isinstance(node, Loop):
            body = emit(node.body, plan, sram_of, entry_elems)
            stmts.append(tirx.For(node.var, 0, node.extent, tirx.ForKind.SERIAL, body))
        elif isinstance(node, Call):
            call = node.map(lambda a: _sram_index(a, plan, sram_of, entry_elems) if isinstance(a, SramPtr) else a)
            stmts.append(tirx.Evaluate(tirx.call_packed(call.NAME, *call.args())))
    if not stmts:
        return tirx.Evaluate(0)
    return stmts[0] if len(stmts) == 1 else tirx.SeqStmt(stmts)


def _sram_index(ptr: SramPtr, plan: Plan, sram_of: dict, entry_elems: dict):
    entry = entry_elems[sram_of[ptr.buffer]]
    ana = Analyzer()
    offset = ana.simplify(ptr.offset)
    if isinstance(offset, tirx.IntImm) and offset.value % entry:
        raise CompileError(f"access to {ptr.buffer.name} at element {offset.value} is not aligned "
                           f"to its {entry}-element entries")
    return ana.simplify(plan.base[ptr.buffer] + tirx.floordiv(offset, entry))
