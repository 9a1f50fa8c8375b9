"""docs/api.md lists exactly the package's public names, each where it is defined."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import anonlab

API_PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.md"
ROW = re.compile(r"^\| `(?P<name>[A-Za-z_]+)` \| `(?P<module>[a-z_.]+)` \|", re.MULTILINE)


def _documented() -> dict[str, str]:
    return {m["name"]: m["module"] for m in ROW.finditer(API_PAGE.read_text(encoding="utf-8"))}


def test_the_api_page_lists_every_public_name_once() -> None:
    rows = ROW.findall(API_PAGE.read_text(encoding="utf-8"))
    assert len(rows) == len(_documented())  # no name twice
    assert sorted(_documented()) == sorted(set(anonlab.__all__) - {"__version__"})


def test_every_public_name_imports_from_the_module_the_page_names() -> None:
    for name, module in _documented().items():
        attribute = anonlab._EXPORTS[name].partition(":")[2] or name  # exported under its name
        assert getattr(importlib.import_module(module), attribute) is getattr(anonlab, name), name
