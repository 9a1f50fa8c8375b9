"""The settings every report shows: command, version, time, input files, parameters, roles."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from anonlab.htmlreport.blocks import Block, Cell, KeyValues, Section, Table, cell, num, show
from anonlab.htmlreport.sections.context import RenderContext
from anonlab.htmlreport.sections.generic import is_secret

# top-level report keys this section shows (besides the common header)
SETTINGS_KEYS = {"roles", "runtime_seconds", "seed"}

PATH_SUFFIXES = (".csv", ".parquet", ".json", ".toml", ".txt", ".tsv", ".html", ".png", ".key")


def looks_like_path(value: Any) -> bool:
    """A parameter value that names a file (shown by its name only externally)."""
    return isinstance(value, str) and (
        "/" in value or "\\" in value or value.lower().endswith(PATH_SUFFIXES)
    )


def flatten(params: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested parameters as (dotted name, value) pairs."""
    out: list[tuple[str, Any]] = []
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.extend(flatten(value, name + "."))
        else:
            out.append((name, value))
    return out


def parameter_cell(name: str, value: Any, internal: bool) -> Cell:
    """A parameter's cell: secrets hidden, paths shortened to the file name externally."""
    if is_secret(name.rsplit(".", 1)[-1]):
        return Cell("(hidden)")
    if looks_like_path(value) and not internal:
        return Cell(PurePath(str(value).replace("\\", "/")).name)
    if isinstance(value, list) and not internal and any(looks_like_path(v) for v in value):
        return Cell(
            ", ".join(PurePath(str(v)).name if looks_like_path(v) else show(v) for v in value)
        )
    return cell(value, f"parameters.{name}")


def _seed_cell(report: Mapping[str, Any], params: Mapping[str, Any]) -> Cell:
    """The random seed, or what the report says about it."""
    seed = params.get("seed", report.get("seed"))
    if seed is not None:
        return cell(seed, "parameters.seed")
    if params.get("seed_given") is True:  # a secret seed: the report keeps it out
        return Cell("given, and kept out of the report (it is as secret as the key)")
    if params.get("seed_given") is False:
        return Cell("fresh from the operating system, not recorded")
    return Cell("none (the method is deterministic or no seed was given)")


def _run_rows(ctx: RenderContext) -> list[tuple[str, Cell]]:
    """What ran and when: command, versions, time, seed, run time."""
    report = ctx.report
    head: list[tuple[str, Cell]] = [
        ("command", Cell(f"anonlab {ctx.command}")),
        ("anonlab version", Cell(show(report.get("anonlab_version")))),
    ]
    if report.get("created"):
        head.append(("created (UTC)", Cell(show(report["created"]).replace("+00:00", ""))))
    if report.get("python"):
        head.append(("Python", Cell(show(report["python"]))))
    head.append(("random seed", _seed_cell(report, ctx.parameters)))
    if isinstance(report.get("runtime_seconds"), int | float):
        head.append(
            (
                "run time",
                num(
                    report["runtime_seconds"],
                    "runtime_seconds",
                    text=f"{report['runtime_seconds']:.2f} s",
                ),
            )
        )
    return head


def _input_rows(report: Mapping[str, Any]) -> list[list[Cell]]:
    """One row per input file: its role, name, size and SHA-256 (or 'in memory')."""
    rows = []
    for role, desc in (report.get("inputs") or {}).items():
        if isinstance(desc, Mapping):
            rows.append(
                [
                    Cell(str(role)),
                    Cell(show(desc.get("name"))),
                    cell(desc.get("bytes"), f"inputs.{role}.bytes"),
                    Cell(show(desc.get("sha256")), style="hash"),
                ]
            )
        else:
            rows.append([Cell(str(role)), Cell("in memory"), Cell("—"), Cell("—")])
    return rows


def _roles_table(report: Mapping[str, Any]) -> Table | None:
    """The columns grouped by role (None without roles)."""
    roles = report.get("roles")
    if not isinstance(roles, Mapping) or not roles:
        return None
    by_role: dict[str, list[str]] = {}
    for col, role in roles.items():
        by_role.setdefault(str(role), []).append(str(col))
    return Table(
        ["role", "columns"],
        [[Cell(r), Cell(", ".join(cols))] for r, cols in by_role.items()],
        caption="Column roles",
    )


def settings_section(ctx: RenderContext) -> Section:
    """What ran, when, on which files, with which settings."""
    blocks: list[Block] = [KeyValues(_run_rows(ctx))]
    rows = _input_rows(ctx.report)
    if rows:
        blocks.append(
            Table(
                ["input", "file", "bytes", "SHA-256"],
                rows,
                caption="Input files (the hash identifies the exact file used)",
            )
        )
    prow = [
        [Cell(name), parameter_cell(name, value, ctx.internal)]
        for name, value in flatten(ctx.parameters)
    ]
    if prow:
        blocks.append(Table(["parameter", "value"], prow, caption="Parameters"))
    roles = _roles_table(ctx.report)
    if roles is not None:
        blocks.append(roles)
    return Section("Settings", "settings", blocks)
