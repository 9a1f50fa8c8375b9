"""The normalized and global certainty penalties of a release (NCP, GCP).

Xu, Wang, Pei, Wang, Shi and Fu ("Utility-based anonymization using local recoding",
KDD 2006) charge each released cell the share of its column's domain it leaves open;
Ghinita, Karras, Kalnis and Mamoulis ("Fast data anonymization with low information loss",
VLDB 2007) average it over the table as the global certainty penalty. Per cell of a
quasi-identifier:

* a value released as it is: 0;
* a label of the column's hierarchy: ``(leaves - 1) / (domain - 1)``, where ``leaves`` is
  the number of the column's values (those the table holds: its *domain*) the label
  covers (those whose hierarchy row has the label at the released level, or at any
  level when the level is not known);
* a range ``[lo, hi]`` of a column without a hierarchy: ``(hi - lo) / (max - min)`` of
  the column's numbers, or of their ranks in the column's order when they are texts;
* a suppressed cell (``*`` outside the hierarchy, or a blank): 1.

``GCP = sum of NCP over every quasi-identifier cell / (records x quasi-identifiers)``, in
[0, 1]; the report also gives each quasi-identifier's mean NCP. A cell's penalty depends
on its released value alone, so both are computed from each column's released values with
their counts, the same way for a whole table and for an engine's frequency set. Written
apart from every method (full-domain generalization, local recoding, Mondrian, cell
suppression), so that their releases are compared by one measure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.hierarchy import SUPPRESSED, Hierarchy

#: a released range ``[lo, hi]`` (Mondrian's numeric and ordinal cells)
RANGE = re.compile(r"^\[(?P<lo>.*), (?P<hi>.*)\]$")


@dataclass(frozen=True)
class CertaintyPenalty:
    """The GCP of a release and the mean NCP of each quasi-identifier (module text)."""

    gcp: float
    ncp: dict[str, float]

    def as_report(self) -> dict[str, object]:
        """The report's ``certainty_penalty`` section."""
        return {"gcp": self.gcp, "ncp": dict(self.ncp)}


def classes_loss(
    classes: Mapping[tuple[str, ...], int],
    columns: Sequence[str],
    domains: Mapping[str, Sequence[str]],
    hierarchies: Mapping[str, Hierarchy],
    levels: Mapping[str, int] | None = None,
) -> dict[str, object]:
    """The report's ``loss`` section from a release's classes (label tuple over ``columns``
    -> records): ``gcp`` and ``ncp`` (module text); ``discernibility``, the sum of each
    class's squared size plus, for each suppressed record (``*`` or blank in every
    quasi-identifier), the number of records (Bayardo and Agrawal 2005); and
    ``average_class_size``, the records not suppressed over their classes."""
    n = sum(classes.values())
    suppressed = sum(c for key, c in classes.items() if all(v in ("", SUPPRESSED) for v in key))
    kept = [c for key, c in classes.items() if c and not all(v in ("", SUPPRESSED) for v in key)]
    counts: dict[str, dict[str, int]] = {name: {} for name in columns}
    for key, c in classes.items():
        for name, label in zip(columns, key, strict=True):
            counts[name][label] = counts[name].get(label, 0) + c
    penalty = certainty_of_counts(counts, domains, hierarchies, levels)
    return {
        **penalty.as_report(),
        "discernibility": sum(c * c for c in kept) + suppressed * n,
        "average_class_size": (n - suppressed) / len(kept) if kept else 0.0,
    }


def frame_classes(release: pd.DataFrame, columns: Sequence[str]) -> dict[tuple[str, ...], int]:
    """The classes of a release held whole: its distinct ``columns`` tuples (as text, a
    missing value as a blank) with their records."""
    if not columns:
        return {(): len(release)}
    texts = pd.DataFrame({c: release[c].astype("string").fillna("") for c in columns})
    found = texts.value_counts(sort=False, dropna=False)
    return {
        tuple(str(v) for v in (key if isinstance(key, tuple) else (key,))): int(c)
        for key, c in found.items()
    }


def certainty_of_counts(
    counts: Mapping[str, Mapping[str, int]],
    domains: Mapping[str, Sequence[str]],
    hierarchies: Mapping[str, Hierarchy],
    levels: Mapping[str, int] | None = None,
) -> CertaintyPenalty:
    """The penalties from each quasi-identifier's released values and their records."""
    if not counts:
        return CertaintyPenalty(0.0, {})
    ncp: dict[str, float] = {}
    records = 0
    for name, found in counts.items():
        labels = list(found)
        weights = np.fromiter(found.values(), dtype=np.float64, count=len(found))
        records = int(weights.sum())
        level = None if levels is None else levels.get(name)
        cells = cell_penalties(labels, domains[name], hierarchies.get(name), level, name)
        ncp[name] = float(np.dot(cells, weights)) / records if records else 0.0
    gcp = sum(ncp.values()) / len(ncp) if records else 0.0
    return CertaintyPenalty(gcp, ncp)


def cell_penalties(
    labels: Sequence[str],
    domain: Sequence[str],
    hierarchy: Hierarchy | None,
    level: int | None,
    column: str,
) -> NDArray[np.float64]:
    """The NCP of each released value of one column (module text)."""
    values = sorted(set(domain))
    if len(values) <= 1:
        return np.zeros(len(labels), dtype=np.float64)
    covers = _hierarchy_covers(values, hierarchy, level) if hierarchy is not None else {}
    ordered = _Order(values)
    known = set(values)
    out = np.empty(len(labels), dtype=np.float64)
    for i, label in enumerate(labels):
        if label in covers:
            out[i] = (covers[label] - 1) / (len(values) - 1)
        elif label in known:
            out[i] = 0.0
        elif label in ("", SUPPRESSED):
            out[i] = 1.0
        else:
            out[i] = ordered.range_penalty(label, column)
    return out


def _hierarchy_covers(
    values: Sequence[str], hierarchy: Hierarchy, level: int | None
) -> dict[str, int]:
    """For each label of the hierarchy over ``values``: how many of them it covers."""
    covered: dict[str, set[str]] = {}
    for value in values:
        if value not in hierarchy:
            continue
        steps = range(hierarchy.height + 1) if level is None else (level,)
        for at in steps:
            covered.setdefault(hierarchy.label(value, at), set()).add(value)
    return {label: len(members) for label, members in covered.items()}


class _Order:
    """A column's values in order: numbers by value when every value is one, else their
    ranks (numbers first, by value, then texts in character order)."""

    def __init__(self, values: Sequence[str]) -> None:
        numbers = [_number(v) for v in values]
        self.numeric = all(x is not None for x in numbers)
        if self.numeric:
            finite = [x for x in numbers if x is not None]
            self.position = dict(zip(values, finite, strict=True))
        else:
            key = sorted(values, key=lambda v: (_number(v) is None, _number(v) or 0.0, v))
            self.position = {v: float(r) for r, v in enumerate(key)}
        self.span = max(self.position.values()) - min(self.position.values())

    def range_penalty(self, label: str, column: str) -> float:
        """``(hi - lo) / span`` of a released range, or an error for a value that is none."""
        match = RANGE.match(label)
        lo = hi = None
        if match is not None:
            lo, hi = self._place(match["lo"]), self._place(match["hi"])
        if lo is None or hi is None or hi < lo:
            raise AnonlabError(
                f"column '{column}': the released value '{label}' is no original value, "
                "hierarchy label, range of the column's values or suppressed cell"
            )
        return 0.0 if self.span == 0 else (hi - lo) / self.span

    def _place(self, text: str) -> float | None:
        if text in self.position:
            return self.position[text]
        if self.numeric:
            return _number(text)
        return None


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
