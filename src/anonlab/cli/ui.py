"""Sub-command ``ui``: start the local web app (:mod:`anonlab.ui.server`) and print its URL."""

from __future__ import annotations

import typer

from anonlab.cli.common import user_errors

UI_HELP = """Start the local web app: load a table, set roles, build hierarchies, run any
method, explore the result and export it, in a browser on this machine.

The app listens on --host (default 127.0.0.1, this machine only) and prints a URL with
a token; every request without the token is refused. Needs the 'ui' extra:
pip install "anonlab[ui]". Example:

  anonlab ui --port 8765
"""


@user_errors
def ui_command(
    port: int = typer.Option(8765, "--port", help="Port to listen on (0: a free one)."),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="Address to listen on (default: this machine only)."
    ),
    open_browser: bool = typer.Option(
        False, "--open/--no-open", help="Open the URL in this machine's browser (default: no)."
    ),
) -> None:
    """Start the local web app (see --help)."""
    from anonlab.ui.server import serve

    serve(host, port, open_browser=open_browser)


def register(app: typer.Typer) -> None:
    app.command("ui", help=UI_HELP)(ui_command)
