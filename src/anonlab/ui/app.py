"""The Starlette application: the page modules' routes, static files, errors, the token guard."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from importlib.resources import files

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from anonlab.errors import AnonlabError
from anonlab.ui.jobs import JobStore
from anonlab.ui.security import TokenGuard
from anonlab.ui.templating import render
from anonlab.ui.workspace import Workspace

#: the page modules, each with ``ROUTES``; the order is the workflow's
PAGES: tuple[str, ...] = (
    "anonlab.ui.pages.load",
    "anonlab.ui.pages.roles",
    "anonlab.ui.pages.method",
    "anonlab.ui.pages.runs",
    "anonlab.ui.pages.explore",
    "anonlab.ui.pages.export",
    "anonlab.ui.pages.hierarchies",
    "anonlab.ui.pages.families",
)


def create_app(workspace: Workspace, *, token: str, hosts: Iterable[str]) -> Starlette:
    """The app over ``workspace``, answering only requests with ``token`` to one of ``hosts``."""
    routes: list[BaseRoute] = []
    for name in PAGES:
        routes.extend(importlib.import_module(name).ROUTES)
    static = StaticFiles(directory=str(files("anonlab.ui") / "static"))
    routes.append(Mount("/static", app=static, name="static"))
    app = Starlette(
        routes=routes,
        middleware=[Middleware(TokenGuard, token=token, hosts=list(hosts))],
        exception_handlers={AnonlabError: _user_error},
    )
    app.state.workspace = workspace
    app.state.jobs = JobStore()
    return app


async def _user_error(request: Request, exc: Exception) -> Response:
    """A user error: the page says what is wrong in one line (status 400), nothing else."""
    return render(request, "error.html", status_code=400, message=str(exc))
