"""Mondrian on a :class:`~anonlab.dataset.Dataset`: the models it can judge, the frequency set,
the partitioning (:mod:`anonlab.mondrian.partition`), and the release with its figures.

The release replaces each quasi-identifier of a record by its partition's summary
(docs/mondrian.md, "Release"): an ordered column's ``[lo, hi]`` (the value itself when
``lo == hi``), a hierarchy column's lowest common ancestor's label (the value itself at
level 0). No record is suppressed: the whole table must satisfy the model or the run is
refused.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.dataset import Dataset, EncodedQI, Role
from anonlab.errors import AnonlabError
from anonlab.grouping import group_tuples
from anonlab.hierarchy import SUPPRESSED
from anonlab.mondrian.partition import (
    Column,
    FrequencyRows,
    Judge,
    OrderedColumn,
    Partition,
    Partitioning,
    hierarchy_column,
    ordered_column,
    partition,
    summarize,
)
from anonlab.privacy import Criterion
from anonlab.privacy.spec import bind_criteria

IntArray = NDArray[np.int64]


def refuse_unjudgeable(criteria: Sequence[Criterion]) -> None:
    """Refuse, in one line, a model Mondrian cannot judge on one partition at a time.

    A cut is decided on its two halves alone, so a model must judge each class by
    itself: the risk thresholds judge the release as a whole, the presence models and
    k-map on a population table need the population's records in every partition, the
    profitability models read the classes' generalized values.
    """
    for c in criteria:
        reason = None
        if c.sample_based:
            reason = "judges the release as a whole, not one partition at a time"
        elif c.needs_population:
            reason = "needs the population's records of every partition, not counted here"
        elif getattr(c, "needs_codes", False) or c.name.startswith("profitability"):
            reason = "weighs the classes' generalized values, which a cut does not know yet"
        if reason is not None:
            raise AnonlabError(
                f"criteria: model '{c.name}' {reason}: Mondrian cannot decide a cut by it; "
                "use recoding full-domain for this model",
                parameter="criteria",
            )


@dataclass
class MondrianResult:
    """A Mondrian release and its figures (:meth:`summary` is the report's part)."""

    release: pd.DataFrame
    partitioning: Partitioning
    columns: tuple[Column, ...]
    freq: FrequencyRows
    partition_of: IntArray  # (n,) partition of each record
    criteria: list[Criterion]
    seconds: float

    @property
    def partitions(self) -> list[Partition]:
        """The final partitions."""
        return self.partitioning.partitions

    def sizes(self) -> IntArray:
        """Records of each partition."""
        return np.array([p.n for p in self.partitions], dtype=np.int64)

    def loss(self) -> dict[str, Any]:
        """NCP per quasi-identifier, GCP, discernibility and the average class size
        (docs/mondrian.md, "Loss"): the penalties from the partitions, the class figures
        from the release's classes (partitions released with the same labels make one, as
        :mod:`anonlab.metrics.certainty` counts any release)."""
        found = summarize(self.partitions, self.freq, self.columns)
        n = int(found.sizes.sum())
        weighted = (found.ncp * found.sizes[:, None]).sum(axis=0)
        per_column = {
            c.name: float(weighted[j]) / n if n else 0.0 for j, c in enumerate(self.columns)
        }
        gcp = sum(per_column.values()) / len(per_column) if per_column else 0.0
        classes = self.class_sizes()
        return {
            "gcp": gcp,
            "ncp": per_column,
            "discernibility": int((classes * classes).sum()),
            "average_class_size": n / len(classes) if len(classes) else 0.0,
        }

    def class_sizes(self) -> IntArray:
        """Records of each equivalence class of the release."""
        qi = [c.name for c in self.columns]
        if not len(self.release):
            return np.zeros(0, dtype=np.int64)
        counts = self.release[qi].astype("string").value_counts(sort=False, dropna=False)
        return np.asarray(counts.to_numpy(), dtype=np.int64)

    def summary(self) -> dict[str, Any]:
        """The report's ``mondrian`` part: partitions, class sizes, loss and the search."""
        sizes = self.sizes()
        classes = self.release_classes()
        values, counts = np.unique(sizes, return_counts=True)
        return {
            "mondrian": {
                "relaxed": self.partitioning.relaxed,
                "relaxed_kept": self.partitioning.relaxed_kept,
                "partitions": len(sizes),
                "classes": classes,
                "cuts": self.partitioning.cuts,
                "checks": self.partitioning.checks,
                "smallest_class": int(sizes.min()) if sizes.size else 0,
                "largest_class": int(sizes.max()) if sizes.size else 0,
                "class_sizes": {str(int(v)): int(c) for v, c in zip(values, counts, strict=True)},
                "columns": {
                    c.name: (
                        "numeric"
                        if isinstance(c, OrderedColumn) and c.numeric
                        else "ordinal"
                        if isinstance(c, OrderedColumn)
                        else "hierarchy"
                    )
                    for c in self.columns
                },
                "partitioning_seconds": self.seconds,
            },
            "loss": self.loss(),
            "records": int(sizes.sum()),
            "suppressed": 0,
            "criteria": self.criteria_report(),
        }

    def criteria_report(self) -> list[dict[str, Any]]:
        """One entry per model, as a full-domain report gives it: ``{"model", "parameters"
        (the attribute included), "satisfied", "achieved"}`` on the final partitions."""
        from anonlab.privacy.spec import describe

        judge = Judge(self.criteria, self.freq, len(self.columns))
        stats = judge.stats(self.partitions)
        none = np.zeros(stats.classes, dtype=bool)
        entries = []
        for criterion in self.criteria:
            spec = describe(criterion)
            model = spec.pop("model")
            achieved = {
                k: (v.item() if isinstance(v, np.generic) else v)
                for k, v in criterion.achieved(stats, none).items()
            }
            entries.append(
                {
                    "model": model,
                    "parameters": spec,
                    "satisfied": bool(criterion.holds(stats, none)),
                    "achieved": achieved,
                }
            )
        return entries

    def release_classes(self) -> int:
        """Equivalence classes of the release (partitions with the same labels make one)."""
        return len(self.class_sizes())


def frequency_rows(dataset: Dataset) -> tuple[FrequencyRows, IntArray]:
    """The frequency set of ``dataset``'s quasi-identifier and sensitive codes, and the row of
    it each record falls in."""
    columns = [q.codes for q in dataset.qis] + [s.codes for s in dataset.sensitive]
    cards = [len(q.values) for q in dataset.qis] + [len(s.values) for s in dataset.sensitive]
    matrix = np.column_stack([np.asarray(c, dtype=np.int64) for c in columns])
    inverse, first = group_tuples(matrix, cards)
    counts = np.bincount(inverse, minlength=first.shape[0]).astype(np.int64)
    rows = matrix[first]
    m = len(dataset.qis)
    return (
        FrequencyRows(
            codes=rows[:, :m],
            counts=counts,
            sensitive=rows[:, m:],
            sensitive_names=tuple(s.name for s in dataset.sensitive),
            global_counts=tuple(np.asarray(s.frequencies, np.int64) for s in dataset.sensitive),
        ),
        inverse,
    )


def mondrian_columns(dataset: Dataset, ordered: Sequence[str]) -> tuple[Column, ...]:
    """Each quasi-identifier as the partitioning cuts it: ``ordered`` ones (no hierarchy, or
    named numeric) in their order, the others along their hierarchy."""
    out: list[Column] = []
    for q in dataset.qis:
        if q.name in ordered:
            out.append(ordered_column(q.name, q.values))
        else:
            out.append(hierarchy_column(q.name, q.level_codes))
    return tuple(out)


def mondrian(
    dataset: Dataset,
    criteria: Sequence[Criterion],
    *,
    ordered: Sequence[str] = (),
    relaxed: bool = False,
) -> MondrianResult:
    """Partition ``dataset`` by Mondrian under every criterion and build the release.

    ``ordered`` names the quasi-identifiers cut in the order of their values (the ones
    without a hierarchy, or named numeric); the others are cut along their hierarchy.
    Refuses a model it cannot judge per partition (:func:`refuse_unjudgeable`) and a table
    that does not satisfy the model as a whole (no record is suppressed).
    """
    if dataset.rowless:
        raise AnonlabError(
            "recoding mondrian runs on the rows in memory: the engines do not map "
            "Mondrian's partitions yet; use engine 'numpy' with a file output",
            parameter="engine",
        )
    refuse_unjudgeable(criteria)
    bind_criteria(criteria, dataset)
    freq, inverse = frequency_rows(dataset)
    columns = mondrian_columns(dataset, ordered)
    started = time.process_time()
    check_whole(dataset.n, freq, columns, criteria)
    found = partition(freq, columns, criteria, relaxed=relaxed)
    seconds = time.process_time() - started
    part_of = record_partitions(found.partitions, inverse)
    release = build_release(dataset, columns, freq, found.partitions, part_of)
    return MondrianResult(release, found, columns, freq, part_of, list(criteria), seconds)


def check_whole(
    n: int, freq: FrequencyRows, columns: Sequence[Column], criteria: Sequence[Criterion]
) -> None:
    """Refuse a table that does not satisfy the model as a whole: Mondrian suppresses no
    record, so no cut can mend it."""
    whole = Partition(
        np.arange(freq.counts.shape[0], dtype=np.int64), freq.counts.copy(), [None] * len(columns)
    )
    if n == 0 or not Judge(criteria, freq, len(columns)).allowed([whole]):
        names = ", ".join(c.name for c in criteria)
        raise AnonlabError(
            f"the whole table ({n} records) does not satisfy the privacy model "
            f"({names}): Mondrian suppresses no record, so no release can; relax the model",
            parameter="criteria",
        )


def record_partitions(parts: Sequence[Partition], inverse: IntArray) -> IntArray:
    """The partition of each record: the records of a frequency row split over partitions
    (relaxed cuts) go to them in table order, the partitions in their order."""
    rows = np.concatenate([p.rows for p in parts])
    counts = np.concatenate([p.counts for p in parts])
    owner = np.repeat(np.arange(len(parts), dtype=np.int64), [p.rows.shape[0] for p in parts])
    order = np.lexsort((owner, rows))
    entries = np.repeat(owner[order], counts[order])  # records grouped by row, rows ascending
    by_row = np.argsort(inverse, kind="stable")
    out = np.empty(inverse.shape[0], dtype=np.int64)
    out[by_row] = entries
    return out


def column_labels(
    q: EncodedQI, column: Column, low: IntArray, high: IntArray
) -> tuple[IntArray, list[str]]:
    """Each partition's released value in one column, as codes into a list of labels: an
    ordered column's ``[lo, hi]`` (the value itself when they are one), a hierarchy
    column's lowest common ancestor's label (``*`` for a root above its top level)."""
    pairs = np.stack([low, high], axis=1)
    distinct, codes = np.unique(pairs, axis=0, return_inverse=True)
    labels: list[str] = []
    if isinstance(column, OrderedColumn):
        value_of = np.empty(column.rank.shape[0], dtype=np.int64)
        value_of[column.rank] = np.arange(column.rank.shape[0], dtype=np.int64)
        for lo, hi in distinct:
            first, last = q.values[int(value_of[lo])], q.values[int(value_of[hi])]
            labels.append(first if lo == hi else f"[{first}, {last}]")
    else:
        for level, group in distinct:
            if level >= len(q.level_labels):
                labels.append(SUPPRESSED)
            else:
                labels.append(q.level_labels[int(level)][int(group)])
    return codes.reshape(-1).astype(np.int64), labels


def build_release(
    dataset: Dataset,
    columns: Sequence[Column],
    freq: FrequencyRows,
    parts: Sequence[Partition],
    part_of: IntArray,
) -> pd.DataFrame:
    """The table with each quasi-identifier replaced by its partition's label (categorical,
    categories in text order), the identifying columns dropped, row order kept."""
    found = summarize(parts, freq, columns)
    release = dataset.frame.copy(deep=False)
    for j, (q, column) in enumerate(zip(dataset.qis, columns, strict=True)):
        codes, labels = column_labels(q, column, found.low[:, j], found.high[:, j])
        # labels of different partitions may be one text (a value that is also a label)
        merged, back = np.unique(np.asarray(labels, dtype=object), return_inverse=True)
        per_part = back.reshape(-1)[codes]
        release[q.name] = pd.Categorical.from_codes(
            per_part.astype(np.int32)[part_of], categories=pd.Index(list(merged))
        )
    return release.drop(columns=dataset.columns_with(Role.IDENTIFYING))


def flat_hierarchies(
    frame: pd.DataFrame, qi: Mapping[str, Any], bare: Sequence[str]
) -> dict[str, Any]:
    """``qi``'s hierarchies with one of two levels (each value, then ``*``) for each column of
    ``bare`` (the quasi-identifiers without a hierarchy file), so that the table encodes as
    any other; Mondrian cuts these columns in their order and never reads the ``*``."""
    from anonlab.dataset import as_text
    from anonlab.hierarchy import Hierarchy

    out = dict(qi)
    for name in bare:
        if name not in frame.columns:
            raise AnonlabError(
                f"qi names column '{name}', which the table lacks: check the name",
                parameter="qi",
            )
        values = pd.unique(as_text(frame[name]).to_numpy())
        out[name] = Hierarchy.from_rows(
            [(str(v), "*") for v in values], source=f"<{name}: no hierarchy>"
        )
    return out
