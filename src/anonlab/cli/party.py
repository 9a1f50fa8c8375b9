"""Sub-commands of this method family (registered by ``register``)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this family's sub-commands to ``app``."""
