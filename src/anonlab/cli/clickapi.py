"""The click exceptions that the installed Typer raises.

From release 0.26 on, Typer carries its own reduced copy of click
(``typer._click``) and no longer depends on the click package: a usage error
or a missing argument is raised as that copy's exception, and an interrupt as
``typer.Abort``. The CLI catches them through these names only.
"""

from __future__ import annotations

from typer import Abort
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

__all__ = ["Abort", "ClickException", "NoArgsIsHelpError", "UsageError"]
