"""The app's pages as Jinja2 templates (autoescaped), from ``anonlab/ui/templates``."""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse

#: the workflow's steps, in order: (path, label); the navigation bar shows them all
STEPS: tuple[tuple[str, str], ...] = (
    ("/", "Load"),
    ("/roles", "Roles"),
    ("/hierarchies", "Hierarchies"),
    ("/method", "Method"),
    ("/runs", "Runs"),
)


@cache
def environment() -> Environment:
    return Environment(
        loader=PackageLoader("anonlab.ui", "templates"),
        autoescape=select_autoescape(["html"], default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """The page ``template`` with ``context``, the workflow's steps and the current path."""
    page = (
        environment()
        .get_template(template)
        .render(
            steps=STEPS, path=request.url.path, workspace=request.app.state.workspace, **context
        )
    )
    return HTMLResponse(page, status_code=status_code)


def render_text(template: str, **context: Any) -> str:
    """A template's text outside a request (a fragment, a file the app writes)."""
    return environment().get_template(template).render(**context)
