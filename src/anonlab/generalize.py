"""Full-domain generalization to k-anonymity with an optimal lattice search.

``anonymize`` searches the lattice of a :class:`~anonlab.dataset.Dataset` for
the node of least information loss that satisfies k-anonymity within the
suppression limit, and builds the release. :class:`Generalizer` wraps it with
fit/transform so a found transformation can be applied to another table of
the same schema (re-checking the privacy model there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.dataset import Dataset, Role
from anonlab.errors import AnonlabError
from anonlab.hierarchy import SUPPRESSED, Hierarchy
from anonlab.io import PathLike
from anonlab.lattice import STRATEGIES
from anonlab.lattice.freqset import FrequencyEngine, group_tuples
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.metrics import METRICS, LossContext, NodeClasses, metric_by_name
from anonlab.lattice.search import ANONYMOUS, SearchContext, SearchResult
from anonlab.privacy import KAnonymity, check_k, max_suppressed
from anonlab.progress import ProgressFn

#: largest lattice searched: the strategies keep a few arrays with one entry per node
MAX_LATTICE_SIZE = 20_000_000


@dataclass
class GeneralizationResult:
    """A release and the facts a reader needs to trust it."""

    release: pd.DataFrame
    transformation: dict[str, int]
    k: int
    suppression_limit: float
    suppressed_records: int
    equivalence_classes: int
    information_loss: dict[str, float]
    search: SearchResult
    lattice_size: int
    metric: str
    class_sizes: dict[int, int] = field(default_factory=dict)
    lattice_levels: list[dict[str, int]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The method's report fields (see docs/generalization.md for each one)."""
        return {
            "search": self.search.strategy,
            "metric": self.metric,
            "k": self.k,
            "suppression_limit": self.suppression_limit,
            "lattice_size": self.lattice_size,
            "nodes_checked": self.search.nodes_checked,
            "k_minimal_nodes": len(self.search.k_minimal),
            "transformation": self.transformation,
            "optimum_loss": self.search.loss,
            "suppressed_records": self.suppressed_records,
            "records": int(self.release.shape[0]),
            "equivalence_classes": self.equivalence_classes,
            "class_sizes": {str(size): count for size, count in sorted(self.class_sizes.items())},
            "information_loss": self.information_loss,
            "lattice_levels": self.lattice_levels,
            "search_seconds": self.search.runtime_seconds,
            "search_cpu_seconds": self.search.cpu_seconds,
        }


def anonymize(
    dataset: Dataset,
    k: int,
    suppression: float = 0.0,
    search: str = "flash",
    metric: str = "precision",
    progress: ProgressFn | None = None,
    cache_size: int = 256,
) -> GeneralizationResult:
    """Find the optimal full-domain generalization and build the release.

    Every strategy returns the global optimum of ``metric`` among the nodes
    that are k-anonymous after suppressing at most ``floor(suppression * n)``
    records (those in classes smaller than ``k``). ``progress`` is called as
    ``progress("searching the lattice", nodes_checked, lattice_size)``.
    """
    check_k(k, dataset.n)
    limit = max_suppressed(suppression, dataset.n)
    if search not in STRATEGIES:
        raise AnonlabError(f"search '{search}' is unknown: choose one of {', '.join(STRATEGIES)}",
                           parameter="search")
    if metric not in METRICS:
        raise AnonlabError(f"metric '{metric}' is unknown: choose one of {', '.join(METRICS)}",
                           parameter="metric")
    criterion = KAnonymity(k)
    lattice = Lattice([q.height for q in dataset.qis])
    if lattice.size > MAX_LATTICE_SIZE:
        heights = ", ".join(f"{q.name} {q.height}" for q in dataset.qis)
        raise AnonlabError(
            f"the lattice has {lattice.size:,} nodes (hierarchy heights: {heights}), more than "
            f"the {MAX_LATTICE_SIZE:,} a full-domain search keeps in memory: use fewer "
            "quasi-identifiers or shorter hierarchies"
        )
    engine = FrequencyEngine(dataset)
    ctx_loss = LossContext(dataset, engine.base_tuples, engine.bottom.counts)
    chosen = metric_by_name(metric, ctx_loss)
    engine.keep_base_index = chosen.needs_base_index and limit > 0
    ctx = SearchContext(lattice, engine, criterion, limit, chosen, cache_size, progress)
    result = STRATEGIES[search](ctx)
    engine.keep_base_index = True
    final_fs = engine.roll_up(engine.bottom, result.levels)
    final = NodeClasses(final_fs, criterion.outliers(final_fs.counts))
    losses = {name: float(cls(ctx_loss).value(final)) for name, cls in METRICS.items()}
    assert final_fs.base_index is not None
    suppressed_rows = final.outliers[final_fs.base_index][engine.row_index]
    release, _ = build_release(dataset, result.levels, k, suppressed_rows)
    kept = final_fs.counts[~final.outliers]
    sizes, freq = np.unique(kept, return_counts=True)
    return GeneralizationResult(
        release=release,
        transformation={q.name: lv for q, lv in zip(dataset.qis, result.levels, strict=True)},
        k=k,
        suppression_limit=suppression,
        suppressed_records=final.suppressed,
        equivalence_classes=int(kept.shape[0]),
        information_loss=losses,
        search=result,
        lattice_size=lattice.size,
        metric=metric,
        class_sizes={int(s): int(c) for s, c in zip(sizes, freq, strict=True)},
        lattice_levels=lattice_summary(lattice, result),
    )


def lattice_summary(lattice: Lattice, result: SearchResult) -> list[dict[str, int]]:
    """Per lattice level: nodes, nodes checked, nodes known anonymous, k-minimal nodes."""
    minimal = np.zeros(lattice.size, dtype=bool)
    minimal[result.k_minimal] = True
    rows = []
    for level in range(lattice.max_level + 1):
        at = lattice.level_sums == level
        rows.append({
            "level": level,
            "nodes": int(at.sum()),
            "checked": int((result.checked & at).sum()),
            "anonymous": int(((result.tags == ANONYMOUS) & at).sum()),
            "k_minimal": int((minimal & at).sum()),
            "optimum": int(lattice.level_of(result.optimum) == level),
        })
    return rows


def build_release(
    dataset: Dataset, levels: Iterable[int], k: int, suppressed: NDArray[Any] | None = None
) -> tuple[pd.DataFrame, NDArray[Any]]:
    """Apply a generalization vector to every row and suppress classes smaller than k.

    Returns the release (identifying columns dropped, row order kept, suppressed
    rows '*' in every quasi-identifier) and the boolean mask of suppressed rows.
    ``suppressed`` may pass that mask when the caller knows it already (the
    search's frequency set of the node); otherwise the rows are grouped here.
    """
    levels = list(levels)
    cols = []
    for q, lv in zip(dataset.qis, levels, strict=True):
        cols.append(q.level_codes[lv][q.codes])
    if suppressed is None:
        matrix = np.column_stack(cols).astype(np.int64)
        cards = [q.cardinality(lv) for q, lv in zip(dataset.qis, levels, strict=True)]
        inverse, _ = group_tuples(matrix, cards)
        counts = np.bincount(inverse)
        suppressed = counts[inverse] < k
    release = dataset.frame.copy(deep=False)
    for q, lv, col in zip(dataset.qis, levels, cols, strict=True):
        release[q.name] = _labelled(col, list(q.level_labels[lv]), suppressed)
    dropped = dataset.columns_with(Role.IDENTIFYING)
    return release.drop(columns=dropped), suppressed


def _labelled(codes: NDArray[Any], labels: list[str], suppressed: NDArray[Any]) -> pd.Categorical:
    """Group codes as a categorical of labels, '*' where the row is suppressed."""
    if SUPPRESSED in labels:
        star = labels.index(SUPPRESSED)
    else:
        star = len(labels)
        labels = [*labels, SUPPRESSED]
    out = codes.astype(np.int32, copy=True)
    out[suppressed] = star
    return cast(pd.Categorical, pd.Categorical.from_codes(out, categories=pd.Index(labels)))


class Generalizer:
    """Full-domain k-anonymity, scikit-learn style.

    >>> g = Generalizer(k=5, suppression=0.01, search="flash", metric="precision")
    >>> release = g.fit_transform(frame, {"age": "hierarchy_age.csv", ...})  # doctest: +SKIP
    >>> other = g.transform(new_frame)  # same levels; k-anonymity re-checked  # doctest: +SKIP
    """

    def __init__(
        self,
        k: int = 2,
        suppression: float = 0.0,
        search: str = "flash",
        metric: str = "precision",
    ) -> None:
        self.k = k
        self.suppression = suppression
        self.search = search
        self.metric = metric

    def fit(
        self,
        frame: pd.DataFrame,
        hierarchies: Mapping[str, Hierarchy | PathLike],
        *,
        identifying: Iterable[str] = (),
        sensitive: Iterable[str] = (),
        insensitive: Iterable[str] = (),
        other: str | None = None,
    ) -> Generalizer:
        """Search the optimal transformation for ``frame``.

        Every column needs a role (a hierarchy, ``identifying``, ``sensitive``
        or ``insensitive``), or ``other="insensitive"`` releases the rest as
        they are (:func:`anonlab.dataset.assign_roles`).
        """
        hiers = {c: h if isinstance(h, Hierarchy) else Hierarchy.from_csv(h)
                 for c, h in hierarchies.items()}
        self.identifying_ = list(identifying)
        self.sensitive_ = list(sensitive)
        self.insensitive_ = list(insensitive)
        self.other_ = other
        self.hierarchies_ = hiers
        dataset = Dataset.from_frame(frame, hiers, identifying=self.identifying_,
                                     sensitive=self.sensitive_, insensitive=self.insensitive_,
                                     other=other)
        self.result_ = anonymize(dataset, self.k, self.suppression, self.search, self.metric)
        self.transformation_ = dict(self.result_.transformation)
        return self

    def fit_transform(
        self,
        frame: pd.DataFrame,
        hierarchies: Mapping[str, Hierarchy | PathLike],
        *,
        identifying: Iterable[str] = (),
        sensitive: Iterable[str] = (),
        insensitive: Iterable[str] = (),
        other: str | None = None,
    ) -> pd.DataFrame:
        """Fit and return the release (with ``frame``'s index)."""
        self.fit(frame, hierarchies, identifying=identifying, sensitive=sensitive,
                 insensitive=insensitive, other=other)
        return self.result_.release.set_axis(frame.index, axis=0)

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Apply the fitted transformation to another table with the same schema.

        The release keeps ``frame``'s index.
        """
        if not hasattr(self, "transformation_"):
            raise AnonlabError("the Generalizer is not fitted: call fit() first")
        release = apply_transformation(
            frame, self.hierarchies_, self.transformation_, self.k, self.suppression,
            identifying=self.identifying_, sensitive=self.sensitive_,
            insensitive=self.insensitive_, other=self.other_,
        )[0]
        return release.set_axis(frame.index, axis=0)


def apply_transformation(
    frame: pd.DataFrame,
    hierarchies: Mapping[str, Hierarchy | PathLike],
    transformation: Mapping[str, int],
    k: int,
    suppression: float,
    *,
    identifying: Iterable[str] = (),
    sensitive: Iterable[str] = (),
    insensitive: Iterable[str] = (),
    other: str | None = None,
) -> tuple[pd.DataFrame, int]:
    """Apply known levels to a table and re-check k-anonymity with the suppression limit.

    Every column needs a role, as in :meth:`Generalizer.fit`. Returns the
    release and the number of suppressed records. Fails if the table needs
    more suppression than the limit allows at these levels.
    """
    missing = [c for c in transformation if c not in hierarchies]
    if missing:
        raise AnonlabError(f"no hierarchy for quasi-identifier '{missing[0]}': give one")
    dataset = Dataset.from_frame(
        frame, {c: hierarchies[c] for c in transformation},
        identifying=identifying, sensitive=sensitive, insensitive=insensitive, other=other,
    )
    check_k(k, dataset.n)
    limit = max_suppressed(suppression, dataset.n)
    levels = []
    for q in dataset.qis:
        lv = int(transformation[q.name])
        if not 0 <= lv <= q.height:
            raise AnonlabError(
                f"level {lv} of '{q.name}' is outside its hierarchy (height {q.height}): "
                "use the hierarchy the transformation was found with"
            )
        levels.append(lv)
    release, suppressed = build_release(dataset, levels, k)
    count = int(suppressed.sum())
    if count > limit:
        raise AnonlabError(
            f"the table is not {k}-anonymous at this transformation: {count} records would be "
            f"suppressed but the limit allows {limit}: generalize this table to find its own "
            "transformation"
        )
    return release, count

