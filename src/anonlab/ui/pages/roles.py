"""Step 2, Roles: every column of the table gets a role before anything runs, as in the CLI.

The roles are the settings' (``qi``, ``sensitive``, ``insensitive``,
``identifying``; :data:`anonlab.ui.current.ROLES` says what each does). A
quasi-identifier may name its hierarchy file (ARX CSV) here; the Hierarchies
page builds one and sets it too. ``numeric`` marks a quasi-identifier that
Mondrian cuts and releases as a numeric range.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from anonlab.errors import AnonlabError
from anonlab.ui.current import ROLES, current_table
from anonlab.ui.forms import text
from anonlab.ui.templating import render


def has_route(request: Request, path: str) -> bool:
    """Whether the app serves ``path`` (a page another module may add)."""
    return any(getattr(route, "path", None) == path for route in request.app.routes)


async def page(request: Request) -> Response:
    table = current_table(request)
    return render(request, "roles.html", table=table, roles=ROLES)


async def save(request: Request) -> Response:
    """Set every column's role (all are needed), the QIs' hierarchy files and ``numeric``."""
    form = await request.form()
    table = current_table(request, text(form, "table"))
    roles: dict[str, str] = {}
    hierarchies: dict[str, str] = {}
    numeric: list[str] = []
    for i, column in enumerate(c["name"] for c in table.columns):
        role = text(form, f"role_{i}")
        if role is None:
            raise AnonlabError(f"column '{column}' has no role: choose one for every column")
        if role not in ROLES:
            raise AnonlabError(
                f"column '{column}': role '{role}' is unknown: choose one of {', '.join(ROLES)}"
            )
        roles[column] = role
        path = text(form, f"hierarchy_{i}")
        if role == "qi" and path is not None:
            file = Path(path).expanduser()
            if not file.is_file():
                raise AnonlabError(
                    f"hierarchy file '{path}' of column '{column}' does not exist: check the path"
                )
            hierarchies[column] = str(file.resolve())
        if role == "qi" and text(form, f"numeric_{i}") is not None:
            numeric.append(column)
    table.roles, table.hierarchies, table.numeric = roles, hierarchies, numeric
    bare = [c for c, r in roles.items() if r == "qi" and c not in hierarchies]
    step = "/hierarchies" if bare and has_route(request, "/hierarchies") else "/method"
    return RedirectResponse(f"{step}?table={table.id}", status_code=303)


ROUTES: list[BaseRoute] = [
    Route("/roles", page, methods=["GET"]),
    Route("/roles", save, methods=["POST"]),
]
