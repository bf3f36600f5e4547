"""docs/architecture.md names a module and function for every hop of a model's path, and the
layering its packages keep; both are checked against the code here, so the page cannot drift."""
import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
#: Package -> layer; a module may import its own layer or any below it (docs/architecture.md).
LAYERS = {"vta_sim": 1, "intrinsics": 2, "hw": 2, "requantisation": 3, "schedules": 3, "graph": 4, "dse": 4, "baselines": 4}


def hop_table() -> list:
    """(hop, dotted name, what) rows of the page's hop table."""
    text = PAGE.read_text().split("<!-- hops:")[1]
    return re.findall(r"^\| ([^|]+?) \| `([\w.]+)` \| (.+?) \|$", text.split("\n\n")[0], re.M)


def resolve(dotted: str):
    """The object a dotted name denotes: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_the_hop_table_is_read_whole():
    assert len(hop_table()) >= 15


@pytest.mark.parametrize("hop, dotted", [(h, d) for h, d, _ in hop_table()])
def test_every_hop_names_code_that_exists(hop, dotted):
    resolve(dotted)


@pytest.mark.parametrize("name", [n for _, _, w in hop_table() for n in re.findall(r"`([a-z_]+\.[\w.]+)`", w)
                                  if n.split(".")[0] in LAYERS])
def test_every_name_in_the_hop_descriptions_exists(name):
    resolve(name)


def _imports(path: Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]
        elif isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_imports_go_downward_only(package):
    upward = sorted({f"{p.relative_to(ROOT)} imports {top}" for p in (ROOT / package).rglob("*.py")
                     for top in _imports(p) if LAYERS.get(top, 0) > LAYERS[package]})
    assert upward == []


def ops_table() -> list:
    """The modules the page's op registry table names."""
    text = PAGE.read_text().split("<!-- ops:")[1]
    return re.findall(r"^\| `([\w.]+)` \|", text.split("\n\n")[0], re.M)


def test_every_module_of_the_op_registry_is_on_the_page():
    modules = {f"graph.ops.{p.stem}" for p in (ROOT / "graph" / "ops").glob("*.py") if p.stem != "__init__"}
    assert sorted(modules - set(ops_table())) == []
    for name in ops_table():
        resolve(name)


def test_no_module_outside_the_registry_names_an_op_of_it():
    """The graph level walks the graph and asks graph.ops; only graph/ops/ names the Relax ops
    of its rules."""
    from graph import ops
    names = {op for rule in ops.RULES for op in rule.float_ops}
    offenders = sorted(f"{p.relative_to(ROOT)}: {node.value}" for p in (ROOT / "graph").glob("*.py")
                       for node in ast.walk(ast.parse(p.read_text()))
                       if isinstance(node, ast.Constant) and node.value in names)
    assert offenders == []
