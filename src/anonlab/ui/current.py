"""What every page asks first: which loaded table it works on, and the settings values it gives.

A page names its table by the ``table`` query or form field (``t3``); without
one it works on the table loaded last. :func:`table_values` turns a loaded
table's read settings and roles into the settings values a TOML file for a
run over it starts from (``input``, ``delimiter``, ``qi``, ``identifying``,
``sensitive``, ``insensitive``), the names the settings models (and so the
CLI's ``--config``) use.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from anonlab.errors import AnonlabError
from anonlab.ui.workspace import LoadedTable, Workspace

#: the roles a column can have, as the settings name them, with what each does to the column
ROLES: dict[str, str] = {
    "qi": "quasi-identifier: an attacker may know it (age, sex, ZIP); the method "
    "generalizes or masks it",
    "sensitive": "sensitive attribute: released as it is; models such as l-diversity and "
    "t-closeness protect it",
    "insensitive": "insensitive: released as it is and not considered by the method",
    "identifying": "identifying: names a person directly (name, ID number); dropped from "
    "the release",
}


def workspace_of(request: Request) -> Workspace:
    """The session's workspace."""
    workspace: Workspace = request.app.state.workspace
    return workspace


def current_table(request: Request, table_id: str | None = None) -> LoadedTable:
    """The table ``table_id`` (else the request's ``table`` query field, else the one
    loaded last); an :class:`AnonlabError` when no table is loaded."""
    workspace = workspace_of(request)
    wanted = table_id or request.query_params.get("table")
    if wanted:
        return workspace.table(wanted)
    if not workspace.tables:
        raise AnonlabError("no table is loaded yet: load one on the Load page first")
    return list(workspace.tables.values())[-1]


def roles_set(table: LoadedTable) -> bool:
    """Whether every column of ``table`` has a role."""
    return bool(table.columns) and all(c["name"] in table.roles for c in table.columns)


def columns_with(table: LoadedTable, role: str) -> list[str]:
    """The columns of ``table`` with ``role``, in the table's order."""
    return [c["name"] for c in table.columns if table.roles.get(c["name"]) == role]


def table_values(table: LoadedTable, *, hierarchies: bool = True) -> dict[str, Any]:
    """The settings values of a run over ``table``: how it is read and the columns' roles.

    ``qi`` maps each quasi-identifier to its hierarchy file (``""`` without one, which
    only Mondrian accepts) when ``hierarchies``; otherwise ``qi`` is left out (the
    masking families name their quasi-identifiers in their own fields). Refused with
    one line until every column has a role.
    """
    if not roles_set(table):
        missing = [c["name"] for c in table.columns if c["name"] not in table.roles]
        raise AnonlabError(
            f"column '{missing[0] if missing else '?'}' of table '{table.name}' has no role: "
            "give every column a role on the Roles page first"
        )
    values: dict[str, Any] = dict(table.read)
    if hierarchies:
        values["qi"] = {c: table.hierarchies.get(c, "") for c in columns_with(table, "qi")}
    for role in ("identifying", "sensitive", "insensitive"):
        values[role] = columns_with(table, role)
    return values
