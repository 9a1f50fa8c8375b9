"""The risk module's one pass over the rows, on an engine: classes from the base frequency set.

Every figure of ``anonlab risk`` is a function of the equivalence classes on
the attacker's columns (their code tuples, in order of first appearance, and
their sizes), for each sensitive attribute of the records per (class, value)
pair and, with sampling weights, of each class's sum of them (sdcMicro's
``Fk``) and the sum over all records (:mod:`anonlab.risk.measure`). That is
exactly what an engine's base frequency set holds
(:meth:`anonlab.engine.base.Engine.frequency_set` on the attacker's columns
with the sensitive ones as histograms and the weights summed), so a table
too large for memory is measured from it alone:

* the one tuple whose attacker columns all hold ``*`` is the suppressed
  records (ARX's rule, :mod:`anonlab.risk.classes`): it is counted and left
  out, and the other classes keep their order;
* the dictionaries are each column's values over the whole table in order of
  first appearance, the codes :func:`anonlab.risk.classes.encode_columns`
  gives the same table, so SUDA2's hash of the values sees the same numbers;
* the sensitive histograms become (class, value) pairs
  (:func:`anonlab.risk.sensitive.pairs_of_counts`);
* the weight sums of the kept tuples are the classes' ``Fk``, and the total
  of all the tuples' sums (the suppressed one too, ``math.fsum``) is the
  weight the in-memory path sums over the records (both then round it to a
  whole population size).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from anonlab.engine.base import BaseFrequencySet, Engine, SensitiveCounts
from anonlab.engine.table import TableLike
from anonlab.progress import ProgressFn
from anonlab.risk.classes import SUPPRESSED, Classes, frequency_classes
from anonlab.risk.sensitive import ClassValues, pairs_of_counts


@dataclass(frozen=True)
class RiskFrequencies:
    """What the risk figures need of a table: its classes, (class, value) pairs, rows.

    ``rows`` counts every record, suppressed ones too (the sample size of a
    population given by its sampling fraction). With sampling weights,
    ``class_weights[c]`` is class ``c``'s sum of them and ``total_weight``
    the sum over every record, suppressed ones too; both ``None`` without.
    """

    classes: Classes
    sensitive: dict[str, ClassValues]
    rows: int
    class_weights: NDArray[np.float64] | None = None
    total_weight: float | None = None


def suppressed_tuples(base: BaseFrequencySet) -> NDArray[np.bool_]:
    """Which base tuples hold ``*`` in every attacker column (at most one does)."""
    stars = [d.index(SUPPRESSED) if SUPPRESSED in d else -1 for d in base.dictionaries]
    if min(stars, default=-1) < 0:
        return np.zeros(base.tuples.shape[0], dtype=bool)
    return np.asarray((base.tuples == np.asarray(stars, dtype=base.tuples.dtype)).all(axis=1))


def _pairs(
    counts: SensitiveCounts, renumber: NDArray[np.int64], sizes: NDArray[np.int64]
) -> ClassValues:
    """One sensitive attribute's pairs over the classes kept (``renumber[t]``: class of base
    tuple ``t``, ``-1`` when suppressed)."""
    classes = renumber[counts.classes]
    kept = classes >= 0
    values = np.asarray(list(counts.dictionary), dtype=object)
    return pairs_of_counts(classes[kept], counts.values[kept], counts.counts[kept], values, sizes)


def risk_frequencies_of(base: BaseFrequencySet) -> RiskFrequencies:
    """The classes and pairs of a base frequency set (see the module text)."""
    suppressed = suppressed_tuples(base)
    kept = ~suppressed
    renumber = np.where(kept, np.cumsum(kept) - 1, -1).astype(np.int64)
    sizes = base.counts[kept].astype(np.int64)
    classes = frequency_classes(
        base.columns,
        base.dictionaries,
        base.tuples[kept],
        sizes,
        int(base.counts[suppressed].sum()),
    )
    pairs = {name: _pairs(counts, renumber, sizes) for name, counts in base.sensitive.items()}
    if base.weights is None:
        return RiskFrequencies(classes, pairs, int(base.rows))
    return RiskFrequencies(
        classes,
        pairs,
        int(base.rows),
        np.asarray(base.weights[kept], dtype=np.float64),
        math.fsum(base.weights.tolist()),
    )


def risk_frequencies(
    engine: Engine,
    table: TableLike,
    attacker: Sequence[str],
    sensitive: Sequence[str] = (),
    *,
    weights: str | None = None,
    progress: ProgressFn | None = None,
) -> RiskFrequencies:
    """One pass of ``engine`` over ``table``: the base frequency set on the ``attacker``
    columns with histograms of the ``sensitive`` ones and, with ``weights`` (a column of
    sampling weights), each tuple's sum of it, made into classes and pairs."""
    base = engine.frequency_set(
        table, list(attacker), list(sensitive), progress=progress, weights=weights
    )
    return risk_frequencies_of(base)
