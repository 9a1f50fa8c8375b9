"""The layers of the package: imports point down only, and nothing imports in a circle.

The contract (docs/architecture.md): each layer below may import the layers
under it, never one above; within a layer the units (top-level modules and
packages) import each other without cycles. Every import counts, those inside
functions and under ``TYPE_CHECKING`` too (grimp reads them all).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "anonlab"
FAMILIES = (
    "anonlab.microaggregation",
    "anonlab.fusion",
    "anonlab.perturbation",
    "anonlab.generalize",
    "anonlab.lattice",
    "anonlab.cli",
)


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
    return names


def test_only_the_cli_imports_typer_or_the_cli() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "cli" in path.relative_to(PACKAGE).parts or path.name == "__main__.py":
            continue  # the command line itself, and ``python -m anonlab`` which starts it
        for name in _imported_modules(path):
            if name == "typer" or name.startswith(("typer.", "anonlab.cli")):
                offenders.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offenders == []


def test_importing_metrics_loads_no_method_family() -> None:
    code = (
        "import sys, anonlab.metrics; "
        f"print([m for m in sys.modules if m.startswith({FAMILIES!r})])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


#: the layers, top first; a unit may import its own layer's units and those of lower layers
LAYERS: tuple[tuple[str, ...], ...] = (
    ("__main__",),
    ("cli",),
    ("ui",),  # the local web app: forms over the runs
    ("runs",),
    ("report", "htmlreport"),  # the report's header and page
    (
        "generalize",
        "generalize_aggregate",
        "fusion",
        "microaggregation",
        "perturbation",
        "mondrian",
        "suppression",
        "masking",
    ),  # method families
    ("lattice",),  # the lattice search of the generalization family
    ("privacy",),  # its privacy models
    ("checker", "verify", "metrics", "risk"),  # measures: they import no method family
    (
        "table",
        "dataset",
        "encoding",
        "settings",
        "hierarchy",
        "hierarchy_date",
        "hierarchy_taxonomy",
        "hierarchy_view",
    ),  # core: the table model and hierarchies
    ("engine",),  # the engine protocol, its backends, pieces, merging
    ("io", "outputs", "sinks", "sources", "database", "staging", "urls"),  # reading and writing
    (
        "tempfiles",
        "tabletext",
        "textnumbers",
        "grouping",
        "csvstream",
        "memory",
        "paths",
        "parameters",
        "frames",
        "threads",
        "progress",
        "userwarn",
        "errors",
    ),  # basics
)
FAMILIES_AND_ABOVE = {u for layer in LAYERS[:8] for u in layer}


def _unit(module: str) -> str:
    """``anonlab.lattice.flash`` -> ``lattice``; the package itself is ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


@cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("anonlab", cache_dir=None)


def _edges() -> list[tuple[str, str]]:
    graph = _graph()
    return [
        (m, w)
        for m in sorted(graph.modules)
        for w in sorted(graph.find_modules_directly_imported_by(m))
    ]


def _cycles(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            nxt = next(successors, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_unit_has_a_layer() -> None:
    placed = {u for layer in LAYERS for u in layer}
    assert sorted({_unit(m) for m in _graph().modules} - placed - {""}) == []


def test_imports_point_down_only() -> None:
    layer_of = {u: i for i, layer in enumerate(LAYERS) for u in layer}
    upward = [
        f"{m} imports {w}"
        for m, w in _edges()
        if _unit(w) and _unit(m) and layer_of[_unit(m)] > layer_of[_unit(w)]
    ]
    assert upward == []


def test_no_module_imports_in_a_circle() -> None:
    edges: dict[str, set[str]] = {}
    for m, w in _edges():
        edges.setdefault(m, set()).add(w)
    assert _cycles(set(_graph().modules), edges) == []


def test_no_package_imports_in_a_circle() -> None:
    edges: dict[str, set[str]] = {}
    for m, w in _edges():
        if _unit(m) != _unit(w) and _unit(m) and _unit(w):
            edges.setdefault(_unit(m), set()).add(_unit(w))
    assert _cycles(set(edges), edges) == []


def test_the_verifier_and_the_measures_import_no_method_family() -> None:
    measures = ("checker", "verify", "metrics", "risk")
    leaks = [
        f"{m} imports {w}"
        for m, w in _edges()
        if _unit(m) in measures and _unit(w) in FAMILIES_AND_ABOVE
    ]
    assert leaks == []


def test_the_cycle_finder_finds_cycles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles({"a", "b", "c", "d"}, edges) == [["a", "b", "c"]]
    assert _cycles({"a", "b"}, {"a": {"b"}}) == []
