"""The ``anonlab`` Typer application; each sub-command module registers itself here."""

from __future__ import annotations

import importlib

import typer

from anonlab import __version__

app = typer.Typer(
    name="anonlab",
    help="Privacy-preserving data publishing: anonymize a table, measure loss and risk.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Each module defines ``register(app)``; keep one module per method family.
COMMAND_MODULES = (
    "anonlab.cli.generalize",
    "anonlab.cli.microaggregate",
    "anonlab.cli.fusion",
    "anonlab.cli.party",
    "anonlab.cli.perturb",
    "anonlab.cli.report",
)


def _version_callback(value: bool) -> None:
    if value:
        print(f"anonlab {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Show the version."
    ),
) -> None:
    """anonlab: anonymize a table, measure what was lost and what risk remains."""


for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    """Console-script entry point."""
    app()
