"""vta_sim's modules import one another without a cycle: every module can be read (and imported)
after the modules it names, so a constant has one home and no import waits on a half-built module.

The imports are read from the source with ast, those inside functions included (a deferred
import is still a cycle, only hidden)."""
import ast
from pathlib import Path

import vta_sim

PACKAGE = Path(vta_sim.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path = PACKAGE) -> dict:
    """module -> the set of modules of the package it imports (`from pkg import sub` counts as
    an import of pkg.sub when sub is a module, else of pkg)."""
    files = {_module_name(p): p for p in package.rglob("*.py")}
    graph: dict = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        edges = graph.setdefault(name, set())
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")
                    base = base[:len(base) - node.level + (1 if is_package else 0)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in files else module
                           for alias in node.names]
            else:
                continue
            edges.update(t for t in targets if t in files and t != name)
    return graph


def find_cycle(graph: dict) -> list | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict = {}

    def visit(node: str, stack: list) -> list | None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, stack)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


def test_the_graph_reads_relative_and_deferred_imports():
    graph = import_graph()
    assert "vta_sim.isa" in graph["vta_sim.native"]            # from .. import isa
    assert "vta_sim.native.layout" in graph["vta_sim.native"]  # from . import layout
    assert "vta_sim.encoding" in graph["vta_sim.config"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_vta_sim_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_encoding_facts_are_a_leaf():
    """config and isa both build on vta_sim.encoding, which imports nothing of theirs."""
    graph = import_graph()
    assert "vta_sim.encoding" in graph["vta_sim.isa"]
    assert graph["vta_sim.encoding"] <= {"vta_sim.errors"}
