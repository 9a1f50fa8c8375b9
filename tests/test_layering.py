"""The core does not lean on the command line, and metrics lean on no method family."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "anonlab"
FAMILIES = ("anonlab.microaggregation", "anonlab.fusion", "anonlab.perturbation",
            "anonlab.generalize", "anonlab.lattice", "anonlab.cli")


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
    code = ("import sys, anonlab.metrics; "
            f"print([m for m in sys.modules if m.startswith({FAMILIES!r})])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
