"""Validated settings of the generalization commands (from TOML and flags).

A TOML file holds the same names as the long flags (``qi`` is a table of
column = hierarchy file); paths in it are relative to the TOML file's folder.
Flags given on the command line override the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from anonlab.errors import AnonlabError

SearchName = Literal["exhaustive", "ola", "degree", "flash"]
MetricName = Literal[
    "precision", "precision_with_suppression", "discernibility", "aecs", "entropy"
]


class GeneralizeSettings(BaseModel):
    """Everything ``anonlab generalize`` needs."""

    model_config = ConfigDict(extra="forbid")

    input: str
    delimiter: str | None = None
    qi: dict[str, str] = Field(min_length=1)
    identifying: list[str] = []
    sensitive: list[str] = []
    insensitive: list[str] = []
    k: int = 2
    suppression: float = 0.0
    search: SearchName = "flash"
    metric: MetricName = "precision"
    output: str | None = None
    report: str | None = None
    verify: bool = False
    quiet: bool = False


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(x) for x in err["loc"]) or "settings"
    if err["type"] == "missing":
        return f"setting '{where}' is missing: give it as a flag or in the TOML file"
    if err["type"] == "extra_forbidden":
        return f"unknown setting '{where}': check the spelling (see --help)"
    if err["type"] == "too_short" and where == "qi":
        return "no quasi-identifier given: name at least one with --qi COLUMN=FILE"
    return f"setting '{where}': {err['msg']} (got {err.get('input')!r})"


def resolve_paths(config: dict[str, Any], base: Path) -> dict[str, Any]:
    """Make a TOML file's relative paths relative to its folder."""
    out = dict(config)
    for key in ("input", "output", "report"):
        if isinstance(out.get(key), str):
            out[key] = str(base / out[key])
    if isinstance(out.get("qi"), dict):
        out["qi"] = {c: str(base / p) for c, p in out["qi"].items()}
    return out


def generalize_settings(values: dict[str, Any]) -> GeneralizeSettings:
    """Validate merged settings, turning the first problem into a one-line error."""
    try:
        return GeneralizeSettings.model_validate(values)
    except ValidationError as exc:
        raise AnonlabError(_first_error(exc)) from None


def parse_qi_flags(items: list[str]) -> dict[str, str]:
    """Parse repeated ``--qi COLUMN=HIERARCHY_FILE`` flags."""
    out: dict[str, str] = {}
    for item in items:
        col, sep, path = item.partition("=")
        if not sep or not col or not path:
            raise AnonlabError(
                f"--qi '{item}' is not COLUMN=FILE: e.g. --qi age=hierarchy_age.csv"
            )
        if col in out and out[col] != path:
            raise AnonlabError(
                f"--qi names column '{col}' twice ('{out[col]}' and '{path}'): give one "
                "hierarchy per column"
            )
        out[col] = path
    return out


def split_names(items: str | Sequence[str] | None) -> list[str]:
    """Column names from ``"a,b"`` or repeated flags (``["a", "b,c"]``); ``None`` gives []."""
    if items is None:
        return []
    parts = [items] if isinstance(items, str) else list(items)
    return [name.strip() for part in parts for name in str(part).split(",") if name.strip()]
