"""The risk every release carries: its settings, its measurement, its warnings and its refusal.

A run that releases a table (``generalize``, ``apply``, ``microaggregate``,
and the other families after them) measures the table *as written* with
:func:`~anonlab.risk.measure.measure_risk` and puts three keys into its
report (see :func:`release_risk_report`):

- ``risk``: the section ``docs/risk.md`` defines;
- ``attacker_knowledge``: which columns the attacker is assumed to know and
  why: the run's quasi-identifiers, as sdcMicro's ``keyVars`` and ARX's
  quasi-identifiers are the attacker's knowledge (a run without named
  quasi-identifiers: every released column that is neither sensitive nor the
  sampling weights); ``attacker_columns`` replaces them;
- ``risk_warnings``: each of :func:`~anonlab.risk.measure.risk_warnings`,
  also issued as a :class:`~anonlab.errors.ReleaseRiskWarning`.

With ``fail_on_risk`` a warning becomes a
:class:`~anonlab.errors.ReleaseRiskError`, raised before anything is written.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator

from anonlab.errors import AnonlabError, ReleaseRiskError
from anonlab.risk.measure import (
    DEFAULT_MAX_RISK,
    DEFAULT_THRESHOLDS,
    measure_risk,
    warn_release_risk,
)
from anonlab.risk.suda import RELEASE_SUDA_BUDGET
from anonlab.settings import Settings, split_names

if TYPE_CHECKING:
    from anonlab.engine.base import Engine

KNOWLEDGE_DEFAULT = "every released column that is not sensitive and not the weights"
KNOWLEDGE_GIVEN = "the columns given as attacker_columns"
KNOWLEDGE_QI = "the quasi-identifiers"


def _fraction(value: float, example: str) -> float:
    """``value`` if it lies in (0, 1]; else a validation error with an ``example``."""
    if not math.isfinite(value) or not 0.0 < value <= 1.0:
        raise ValueError(f"must lie in (0, 1], e.g. {example}")
    return value


class RiskSettings(Settings):
    """How the risk of a table is measured (the report's ``risk`` section).

    ``attacker_columns`` (default: the run's quasi-identifiers; a run that
    names none: every released column that is neither sensitive nor
    ``weights``) are the columns an attacker is assumed to know;
    ``risk_threshold`` adds thresholds to records-at-risk (0.2, 0.1 and
    0.05 always); ``population_size`` or ``sampling_fraction`` make the
    journalist risk population-based and add population uniques; ``weights``
    names a column of sampling weights (sdcMicro's individual risk);
    ``sensitive_hierarchies`` maps a sensitive attribute to its hierarchy
    file, for t-closeness with hierarchical distance.
    """

    path_fields: ClassVar[tuple[str, ...]] = ("sensitive_hierarchies",)

    attacker_columns: list[str] | None = None
    risk_threshold: list[float] = Field(default_factory=list)
    population_size: float | None = None
    sampling_fraction: float | None = None
    weights: str | None = None
    sensitive_hierarchies: dict[str, str] = Field(default_factory=dict)

    @field_validator("attacker_columns", mode="before")
    @classmethod
    def _attacker(cls, value: Any) -> Any:
        """``"a,b"`` or ``["a", "b,c"]``; an empty list means "not given"."""
        if isinstance(value, str | list | tuple):
            return split_names(value) or None
        return value

    @field_validator("risk_threshold", mode="before")
    @classmethod
    def _thresholds(cls, value: Any) -> Any:
        """One number, ``"0.09,0.01"`` or a list of numbers, each in (0, 1]."""
        if value is None:
            return []
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = [value]
        if isinstance(value, str):
            value = split_names(value)
        if isinstance(value, list | tuple):
            try:
                numbers = [float(v) for v in value]
            except (TypeError, ValueError):
                raise ValueError("give numbers in (0, 1], e.g. 0.09") from None
            return [_fraction(v, "0.09") for v in numbers]
        return value

    @field_validator("population_size")
    @classmethod
    def _population(cls, value: float | None) -> float | None:
        if value is not None and (not math.isfinite(value) or value < 1):
            raise ValueError("must be a number of records of at least 1")
        return value

    @field_validator("sampling_fraction")
    @classmethod
    def _sampling(cls, value: float | None) -> float | None:
        return None if value is None else _fraction(value, "0.01 for a 1 % sample")


class ReleaseRiskSettings(RiskSettings):
    """:class:`RiskSettings`, and what a risky release leads to.

    A :class:`~anonlab.errors.ReleaseRiskWarning` is issued when the highest
    prosecutor risk is above ``max_risk`` (default 0.2), a record is unique
    on the attacker's columns, or a sensitive attribute has a class of one
    value; ``fail_on_risk`` refuses such a release instead (nothing written).
    """

    max_risk: float = DEFAULT_MAX_RISK
    fail_on_risk: bool = False

    @field_validator("max_risk")
    @classmethod
    def _max_risk(cls, value: float) -> float:
        return _fraction(value, "0.09 for clinical data")


def risk_last(parameters: dict[str, Any]) -> dict[str, Any]:
    """A report's parameters with the risk settings moved after the method's own ones."""
    risk = set(ReleaseRiskSettings.model_fields)
    return {
        **{k: v for k, v in parameters.items() if k not in risk},
        **{k: v for k, v in parameters.items() if k in risk},
    }


def attacker_columns(
    released: Sequence[str],
    sensitive: Sequence[str],
    settings: RiskSettings,
    qi: Sequence[str] | None = None,
) -> tuple[list[str], str]:
    """The attacker's columns and the rule that chose them (the report's ``attacker_knowledge``).

    Given ``attacker_columns`` must be columns of the release (identifying
    columns are not released, so an attacker cannot be said to read them there).
    Otherwise the quasi-identifiers ``qi`` are the attacker's knowledge (sdcMicro's
    ``keyVars``, ARX's quasi-identifiers), in the release's column order; a run without
    quasi-identifiers (``qi=None``) assumes every released column but the sensitive ones
    and the weights.
    """
    columns = [str(c) for c in released]
    given = settings.attacker_columns
    if given:
        absent = [c for c in given if c not in columns]
        if absent:
            raise AnonlabError(
                f"attacker_columns names columns the release does not have: "
                f"{', '.join(absent)} (it has {', '.join(columns)})",
                parameter="attacker_columns",
            )
        return list(given), KNOWLEDGE_GIVEN
    if qi:  # in the release's column order, whatever order the run listed them in
        known = {str(c) for c in qi}
        return [c for c in columns if c in known], KNOWLEDGE_QI
    chosen = [c for c in columns if c not in sensitive and c != settings.weights]
    if not chosen:
        raise AnonlabError(
            "the release has no column an attacker could know (all are "
            "sensitive): name attacker_columns",
            parameter="attacker_columns",
        )
    return chosen, KNOWLEDGE_DEFAULT


def check_risk_columns(
    released: Sequence[str],
    sensitive: Sequence[str],
    settings: RiskSettings,
    qi: Sequence[str] | None = None,
) -> None:
    """Refuse, before any work, risk settings that name columns the release will not have."""
    attacker_columns(released, sensitive, settings, qi)
    columns = [str(c) for c in released]
    if settings.weights is not None and settings.weights not in columns:
        raise AnonlabError(
            f"weights column '{settings.weights}' is not released (the release "
            f"has {', '.join(columns)}): name a released column",
            parameter="weights",
        )
    odd = [c for c in settings.sensitive_hierarchies if c not in sensitive]
    if odd:
        raise AnonlabError(
            f"sensitive_hierarchies names {', '.join(odd)}, not a sensitive "
            "column: give hierarchies of sensitive attributes only",
            parameter="sensitive_hierarchies",
        )


def measure_release(
    release: Any,
    sensitive: Sequence[str],
    settings: RiskSettings,
    *,
    engine: Engine | None = None,
    columns: Sequence[str] | None = None,
    qi: Sequence[str] | None = None,
) -> tuple[dict[str, Any], str]:
    """The ``risk`` section of ``release`` and the ``attacker_knowledge`` it assumed.

    ``release`` is a DataFrame, or with an ``engine`` a written release (a
    Parquet folder) whose released ``columns`` are given: then the engine's
    frequency set gives the same figures without reading the rows here
    (:func:`anonlab.risk.measure.measure_risk`). ``qi`` as in :func:`attacker_columns`.
    """
    names = [str(c) for c in (release.columns if columns is None else columns)]
    present = [c for c in sensitive if c in names]
    attacker, knowledge = attacker_columns(names, present, settings, qi)
    section = measure_risk(
        release,
        attacker,
        sensitive=present,
        weights=settings.weights,
        engine=engine,
        population_size=settings.population_size,
        sampling_fraction=settings.sampling_fraction,
        thresholds=[*DEFAULT_THRESHOLDS, *settings.risk_threshold],
        hierarchies=settings.sensitive_hierarchies or None,
        suda_budget=RELEASE_SUDA_BUDGET,
    )
    return section, knowledge


def judge_release(section: dict[str, Any], settings: ReleaseRiskSettings) -> list[str]:
    """Issue each risk warning; with ``fail_on_risk``, refuse the release instead.

    The refusal is a :class:`~anonlab.errors.ReleaseRiskError`, raised after
    the warnings were issued. Each warning names the caller's line (the
    first outside anonlab).
    """
    messages = warn_release_risk(section, settings.max_risk)
    if messages and settings.fail_on_risk:
        count = (
            f"{len(messages)} risk warnings, the first" if len(messages) > 1 else "a risk warning"
        )
        raise ReleaseRiskError(
            f"fail_on_risk is set and the release drew {count}: {messages[0]}; nothing was "
            "written: protect it further (e.g. a larger k) or declare fewer attacker columns",
            parameter="fail_on_risk",
        )
    return messages


def release_risk_report(
    release: Any,
    sensitive: Sequence[str],
    settings: ReleaseRiskSettings,
    *,
    engine: Engine | None = None,
    columns: Sequence[str] | None = None,
    qi: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The report keys ``risk``, ``attacker_knowledge`` and ``risk_warnings`` of a release.

    Measures ``release`` (the table as written) with the ``sensitive``
    attributes it holds, warns through :func:`warnings.warn`
    (:class:`~anonlab.errors.ReleaseRiskWarning`) and, with
    ``settings.fail_on_risk``, raises :class:`~anonlab.errors.ReleaseRiskError`
    instead of returning; each warning names the caller's line.
    ``engine``, ``columns`` and ``qi`` as in :func:`measure_release`.
    """
    section, knowledge = measure_release(
        release, sensitive, settings, engine=engine, columns=columns, qi=qi
    )
    messages = judge_release(section, settings)
    return {"risk": section, "attacker_knowledge": knowledge, "risk_warnings": messages}
