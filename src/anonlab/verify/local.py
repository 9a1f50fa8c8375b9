"""An independent check of local-recoding releases (``generalize --recoding local``).

A local recoding gives each record the levels of the search that released it, so a
quasi-identifier column mixes levels and no single transformation describes the release. The
check, written apart from :mod:`anonlab.lattice` (it imports none of it), reads the original
table, the release and the hierarchies and checks:

- coverage, record by record (:func:`anonlab.verify.recoding.check_coverage`): every
  released quasi-identifier value is the original value, the label of one of its ancestors in
  the hierarchy, or ``*``; every other column is released as it is, the identifying ones
  dropped, no record missing or moved;
- the privacy models on the release's classes (:func:`anonlab.verify.criteria.check_criteria`):
  records with the same released quasi-identifiers form a class, whatever search released
  them; a record with ``*`` in every quasi-identifier counts as suppressed, and at most
  ``max_suppressed`` records may be.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from anonlab.hierarchy import Hierarchy
from anonlab.verify.criteria import check_criteria
from anonlab.verify.recoding import check_coverage

__all__ = ["check_local_recoding"]


def check_local_recoding(
    original: pd.DataFrame,
    release: pd.DataFrame,
    criteria: Sequence[Mapping[str, Any]],
    hierarchies: Mapping[str, Hierarchy],
    max_suppressed: int,
    dropped: Iterable[str] = (),
    aggregated: Mapping[str, str] | None = None,
) -> list[str]:
    """Every problem of a local-recoding release (empty list: it holds; module text).

    ``criteria`` are the models as the settings spell them, ``hierarchies`` those of the
    quasi-identifiers, ``dropped`` the identifying columns the release leaves out.
    ``aggregated`` (column -> function, ``generalize --aggregate-qi``): those columns hold
    their classes' aggregates, checked from the files alone
    (:func:`anonlab.verify.aggregation.check_within_classes`), the others as above, the
    models on the release's classes as written.
    """
    from anonlab.verify.aggregation import check_within_classes, with_originals

    aggregated = dict(aggregated or {})
    probe = with_originals(release, original, list(aggregated))
    problems = check_coverage(original, probe, hierarchies, (), dropped)
    if problems:
        return problems
    qi = [c for c in release.columns if c in hierarchies]
    if aggregated:
        problems = check_within_classes(original, release, qi, aggregated)
        if problems:
            return problems
    return check_criteria(original, release, criteria, qi, max_suppressed)
