"""What every releasing command shares on the command line: risk settings and risk warnings.

- :func:`risk_overrides`: the risk flags (defined once in
  :mod:`anonlab.cli.common`) as the settings they give;
- :func:`risk_guard`: each :class:`~anonlab.errors.AnonlabWarning` the run
  issues (a :class:`~anonlab.errors.ReleaseRiskWarning`, a release that can
  never be inverted) becomes one ``Warning: ...`` line on standard error, and a
  :class:`~anonlab.errors.ReleaseRiskError` (``--fail-on-risk``) becomes
  ``Error: ...`` and exit code 3, after its warnings;
- :func:`warning_lines`: the same lines for a command that releases nothing
  (the hierarchy builders' :class:`~anonlab.runs.hierarchy.HierarchyWarning`).
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import typer

from anonlab.cli.common import key_value
from anonlab.errors import AnonlabError, AnonlabWarning, ReleaseRiskError

__all__ = ["EXIT_RELEASE_RISK", "RISK_FLAGS", "hierarchy_pairs", "risk_guard", "risk_overrides"]

EXIT_RELEASE_RISK = 3

#: library parameters of the risk settings whose flag is not "--" + the name with dashes
RISK_FLAGS = {
    "population_size": "--population",
    "sensitive_hierarchies": "--sensitive-hierarchy",
    "hierarchies": "--sensitive-hierarchy",
    "risk_threshold": "--risk-threshold",
}


def hierarchy_pairs(items: list[str] | None) -> dict[str, str] | None:
    """``COLUMN=FILE`` items of ``--sensitive-hierarchy`` as a mapping (``None``: none given)."""
    if not items:
        return None
    out: dict[str, str] = {}
    for item in items:
        pair = key_value(item)
        if pair is None:
            raise AnonlabError(
                f"sensitive_hierarchies takes COLUMN=FILE (got '{item}'), e.g. "
                "salary-class=hierarchy_salary.csv",
                parameter="sensitive_hierarchies",
            )
        out[pair[0]] = pair[1]
    return out


def risk_overrides(flags: Mapping[str, Any]) -> dict[str, Any]:
    """The risk settings the risk flags give (``None``: not given, the config's value is kept).

    ``flags`` holds the command's parameters (its ``locals()``): ``attacker_columns``,
    ``max_risk``, ``fail_on_risk``, ``risk_threshold``, ``population``,
    ``sampling_fraction``, ``weights`` and ``sensitive_hierarchy``; one the command does
    not take counts as not given.
    """
    return {
        "attacker_columns": flags.get("attacker_columns"),
        "max_risk": flags.get("max_risk"),
        "fail_on_risk": flags.get("fail_on_risk"),
        "risk_threshold": flags.get("risk_threshold") or None,
        "population_size": flags.get("population"),
        "sampling_fraction": flags.get("sampling_fraction"),
        "weights": flags.get("weights"),
        "sensitive_hierarchies": hierarchy_pairs(flags.get("sensitive_hierarchy")),
    }


def _print_warnings(
    caught: list[warnings.WarningMessage], flags: dict[str, str] | None = None
) -> None:
    """One ``Warning: ...`` line per anonlab warning (a risk warning, a release that can never
    be inverted...); any other warning is shown as usual."""
    for item in caught:
        if isinstance(item.message, AnonlabWarning):
            print(f"Warning: {item.message.for_flags(flags)}", file=sys.stderr)
        else:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)


@contextlib.contextmanager
def warning_lines(flags: dict[str, str] | None = None) -> Iterator[None]:
    """Each anonlab warning of a run that succeeded as one ``Warning: ...`` line on standard
    error (a run that failed wrote nothing and shows only its error)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AnonlabWarning)
        yield
    _print_warnings(caught, flags)


@contextlib.contextmanager
def risk_guard(flags: dict[str, str] | None = None) -> Iterator[None]:
    """Show the run's risk warnings on standard error; ``--fail-on-risk`` exits with code 3.

    Warnings are printed when the run succeeded or was refused for its risk;
    a run that failed otherwise wrote nothing and shows only its error.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AnonlabWarning)
        try:
            yield
        except ReleaseRiskError as exc:
            _print_warnings(caught, flags)
            print(f"Error: {exc.for_flags({**RISK_FLAGS, **(flags or {})})}", file=sys.stderr)
            raise typer.Exit(EXIT_RELEASE_RISK) from None
    _print_warnings(caught, flags)
