"""The release figures every summary prints, each read by one function from a report.

A report states some figures twice: a generalization's search counts its
equivalence classes and suppressed records on the quasi-identifiers, and its
``risk`` section counts them again on the attacker's columns (the same
columns unless ``attacker_columns`` says otherwise, see
:func:`anonlab.risk.release.attacker_columns`); a perturbation measures
``risk`` with every released column known but judges its warnings on
``risk_of_unchanged``. The command line's summary, the HTML summary and the
HTML risk section read these figures through the functions below, so they
cannot disagree:

- :func:`judged_risk`: the risk section the warnings judge;
- :func:`release_classes` and :func:`release_suppressed`: the classes and
  the suppressed records of the release (a suppressed record has every
  quasi-identifier ``*``, ARX's ``internalIsOutlier``; it is in no class);
- :func:`single_value_records`: the records that lie in classes of one
  value of a sensitive attribute (distinct l = 1), the records whose value
  the attacker learns.

Only the report's keys are read: these functions run on any report, written
now or read from disk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "JUDGED_RISK_KEY",
    "judged_risk",
    "release_classes",
    "release_suppressed",
    "single_value_records",
]

#: the report key of the section a perturbation's warnings judge (docs/perturbation.md)
JUDGED_RISK_KEY = "risk_of_unchanged"


def _count(value: Any) -> int | None:
    """``value`` as a count, or ``None`` when it is none (a boolean is none)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def judged_risk(report: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """The key and the risk section whose figures the report's warnings judge.

    ``risk_of_unchanged`` in a report that has that key (a perturbation: the
    attacker's columns released unchanged; ``None`` there when there are none,
    and then nothing was judged), else ``risk``; ``None`` without a section.
    """
    key = JUDGED_RISK_KEY if JUDGED_RISK_KEY in report else "risk"
    section = report.get(key)
    return (key, section) if isinstance(section, Mapping) else None


def release_classes(report: Mapping[str, Any]) -> int | None:
    """Equivalence classes of the release: the search's count on the quasi-identifiers
    (``equivalence_classes``), else the ``risk`` section's ``classes.count``."""
    found = _count(report.get("equivalence_classes"))
    if found is not None:
        return found
    risk = report.get("risk")
    classes = risk.get("classes") if isinstance(risk, Mapping) else None
    return _count(classes.get("count")) if isinstance(classes, Mapping) else None


def release_suppressed(report: Mapping[str, Any]) -> int | None:
    """Suppressed records of the release: ``suppressed_records`` (records whose every
    quasi-identifier is ``*``), else the ``risk`` section's ``suppressed``."""
    found = _count(report.get("suppressed_records"))
    if found is not None:
        return found
    risk = report.get("risk")
    return _count(risk.get("suppressed")) if isinstance(risk, Mapping) else None


def single_value_records(section: Mapping[str, Any], column: str) -> int | None:
    """Records of ``section`` in classes where every record has one value of ``column``
    (distinct l = 1: the attacker learns it); ``None`` when the section does not say."""
    sensitive = section.get("sensitive")
    figures = sensitive.get(column) if isinstance(sensitive, Mapping) else None
    if not isinstance(figures, Mapping):
        return None
    return _count(figures.get("single_value_records"))
