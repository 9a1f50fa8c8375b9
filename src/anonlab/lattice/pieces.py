"""The lattice search's inputs from an engine's base frequency set, without the rows.

A full-domain search needs only the table's frequency set at the bottom of
the lattice (docs/design.md, "The one hot primitive"). :func:`rowless_dataset`
turns an engine's :class:`~anonlab.engine.base.BaseFrequencySet` into a
:class:`~anonlab.dataset.Dataset` that holds no rows (its ``frame`` has the
table's columns and no records; ``records`` and ``base`` say the rest);
:func:`search_engine` and :class:`BaseLossContext` give the search its
frequency engine and the metrics their data-level quantities from that base.
The engine writes the release afterwards from a
:class:`~anonlab.engine.base.ReleasePlan` (:func:`release_plan`): the
transformation and the suppressed classes by their group codes.

Because the engine numbers tuples and values in order of first appearance,
as :func:`anonlab.dataset.encode_qi` and
:class:`~anonlab.lattice.freqset.FrequencyEngine` do, every frequency set of
the search, and so the optimum, the classes and the suppressed records, is
the one the in-memory path finds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.engine import kernels
from anonlab.engine.base import BaseFrequencySet, ReleasePlan
from anonlab.errors import AnonlabError
from anonlab.lattice.bridge import encoded_qis, encoded_sensitive, plan_at
from anonlab.lattice.freqset import FrequencyEngine, FrequencySet
from anonlab.lattice.metrics.base import LossContext
from anonlab.privacy.base import SensitiveHistograms

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.dataset import Dataset, Role, Roles
    from anonlab.engine.base import Engine
    from anonlab.engine.table import TableLike
    from anonlab.hierarchy import Hierarchy
    from anonlab.paths import PathLike
    from anonlab.progress import ProgressFn


def rowless_dataset(
    base: BaseFrequencySet,
    hierarchies: Mapping[str, Hierarchy],
    roles: Mapping[str, Role],
    *,
    source: str | None = None,
) -> Dataset:
    """A dataset of the table ``base`` counts: roles, quasi-identifiers and sensitive
    attributes encoded as :meth:`anonlab.dataset.Dataset.from_frame` encodes them, no rows.

    ``roles`` gives every column of the table its role, in table order;
    ``base`` must count every quasi-identifier (in table order) and carry the
    histograms of every sensitive column.
    """
    import pandas as pd

    from anonlab.dataset import Dataset, Role

    qi_order = [c for c, r in roles.items() if r == Role.QUASI]
    if list(base.columns) != qi_order:
        raise ValueError(
            f"the frequency set counts {list(base.columns)}, not the "
            f"quasi-identifiers {qi_order} in table order"
        )
    frame = pd.DataFrame({c: pd.Series([], dtype=object) for c in roles})
    return Dataset(
        frame=frame,
        roles=dict(roles),
        qis=encoded_qis(base, hierarchies),
        source=source,
        sensitive=encoded_sensitive(base),
        records=base.rows,
        base=base,
    )


def search_engine(dataset: Dataset, sensitive: Sequence[str] = ()) -> FrequencyEngine:
    """The search's frequency engine from a rowless dataset's base frequency set, carrying
    the histograms of the ``sensitive`` attributes (those the criteria read)."""
    base = _base(dataset)
    histograms = {}
    for name in dict.fromkeys(sensitive):
        if name not in base.sensitive:
            dataset.sensitive_attribute(name)  # the one error naming the attribute
            raise ValueError(f"the frequency set carries no histograms of '{name}'")
        counts = base.sensitive[name]
        histograms[name] = SensitiveHistograms(
            classes=np.asarray(counts.classes, dtype=np.int64),
            values=np.asarray(counts.values, dtype=np.int64),
            counts=np.asarray(counts.counts, dtype=np.int64),
            global_counts=np.asarray(counts.frequencies, dtype=np.int64),
        )
    return FrequencyEngine.from_base(
        dataset.qis, base.rows, base.tuples, base.counts, base.first_rows, histograms
    )


def _base(dataset: Dataset) -> BaseFrequencySet:
    base = dataset.base
    if not isinstance(base, BaseFrequencySet):
        raise TypeError("the dataset holds its rows: build FrequencyEngine(dataset) instead")
    return base


class BaseLossContext(LossContext):
    """:class:`LossContext` of a rowless dataset.

    The one quantity read per record, :meth:`row_tuples` (the KL divergence
    sums one term per record), is given in tuple order instead of row order:
    tuple ``t`` repeated ``counts[t]`` times, tuples in order of first
    appearance. The sum is the same sum of the same terms, added in another
    order, so it may differ from the in-memory one in the last bits
    (relative rounding about ``n * 2**-53``); it costs 4 bytes a record while
    it is computed.
    """

    def row_tuples(self) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
        """``(row_tuple, tuple_codes, tuple_counts)`` with records grouped by tuple."""
        if self._rows is None:
            base = _base(self.dataset)
            counts = np.asarray(base.counts, dtype=np.int64)
            order = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
            self._rows = (order, np.asarray(base.tuples), counts)
        return self._rows


def suppressed_classes(fs: FrequencySet, outliers: NDArray[Any]) -> NDArray[np.int32]:
    """The class tuples (group codes at ``fs``'s node) of the classes ``outliers`` marks."""
    m = len(fs.levels)
    if fs.classes == 0:
        return np.zeros((0, m), dtype=np.int32)
    codes = np.column_stack([fs.group_codes(j) for j in range(m)]).astype(np.int32)
    return np.asarray(codes[np.asarray(outliers, dtype=bool)], dtype=np.int32)


def release_plan(
    dataset: Dataset, levels: Sequence[int], fs: FrequencySet, outliers: NDArray[Any]
) -> ReleasePlan:
    """What the engine applies to every row: ``levels`` and the classes of ``fs`` that
    ``outliers`` suppresses; identifying columns dropped."""
    from anonlab.dataset import Role

    return plan_at(
        dataset.qis,
        levels,
        suppressed_classes(fs, outliers),
        drop=dataset.columns_with(Role.IDENTIFYING),
    )


def released_classes(base: BaseFrequencySet, plan: ReleasePlan) -> dict[tuple[str, ...], int]:
    """The release's classes as ``plan`` writes them: label tuple -> records (suppressed
    records under the tuple of ``*``), from the base frequency set alone."""
    cards = [max(len(labels), 1) for labels in plan.labels]
    tuples, counts = base.classes_at(plan.groups, cards)
    hidden = plan.suppressed_rows(tuples)
    out: dict[tuple[str, ...], int] = {}
    for row, count, star in zip(tuples.tolist(), counts.tolist(), hidden.tolist(), strict=True):
        key = (
            tuple(kernels.SUPPRESSED for _ in row)
            if star
            else tuple(plan.labels[j][g] for j, g in enumerate(row))
        )
        out[key] = out.get(key, 0) + int(count)
    return out


def released_distinct(
    classes: Mapping[tuple[str, ...], int], columns: Sequence[str]
) -> dict[str, int]:
    """Per quasi-identifier, its distinct labels over the release's classes not ``*`` in
    every quasi-identifier (all classes when every one is), as
    :func:`anonlab.runs.generalize_steps.distinct_values` counts a release's records."""
    star = tuple(kernels.SUPPRESSED for _ in columns)
    kept = [key for key, n in classes.items() if n > 0 and key != star] or list(classes)
    return {name: len({key[j] for key in kept}) for j, name in enumerate(columns)}


def release_problems(
    expected: Mapping[tuple[str, ...], int], written: BaseFrequencySet, k: int | None, limit: int
) -> list[str]:
    """What is wrong with a written release, judged by its own frequency set (``written``,
    counted over the release's quasi-identifiers): its classes and their sizes must be
    ``expected`` (those of the search), every class but the suppressed one must have at least
    ``k`` records, and at most ``limit`` records may be suppressed."""
    found: dict[tuple[str, ...], int] = {}
    for row, count in zip(written.tuples.tolist(), written.counts.tolist(), strict=True):
        key = tuple(written.dictionaries[j][c] for j, c in enumerate(row))
        found[key] = found.get(key, 0) + int(count)
    problems = []
    star = tuple(kernels.SUPPRESSED for _ in written.columns)
    if found != {key: n for key, n in expected.items() if n > 0}:
        extra = sorted(set(found) ^ set(expected))
        what = f"class {extra[0]}" if extra else "a class size"
        problems.append(f"the release's classes differ from the search's ({what})")
    if k is not None:
        small = [key for key, n in found.items() if key != star and n < k]
        if small:
            problems.append(f"class {small[0]} has {found[small[0]]} records, fewer than k = {k}")
    if found.get(star, 0) > limit:
        problems.append(f"{found[star]} records are suppressed, more than the limit {limit}")
    return problems


def release_partition(frame: pd.DataFrame, plan: ReleasePlan) -> pd.DataFrame:
    """One partition of a table with ``plan`` applied (a Dask ``map_partitions`` function):
    quasi-identifiers as categoricals of their labels, ``*`` in suppressed classes, dropped
    columns left out, every other column as it is."""
    import pandas as pd

    from anonlab.tabletext import column_from_pandas

    out = frame.drop(columns=[c for c in plan.drop if c in frame.columns])
    if not plan.columns:
        return out
    groups = np.column_stack(
        [
            plan.groups_of(
                j,
                *kernels.encode_text(column_from_pandas(frame[name])),
                where="a partition of the DataFrame",
            )
            for j, name in enumerate(plan.columns)
        ]
    ).astype(np.int32)
    hidden = plan.suppressed_rows(groups)
    for j, name in enumerate(plan.columns):
        labels = plan.label_array(j, groups[:, j], hidden)
        out[name] = pd.Categorical.from_codes(
            np.asarray(labels.indices.to_numpy(zero_copy_only=False)),
            categories=pd.Index(labels.dictionary.to_pylist()),
        )
    return out


def check_engine_model(criteria: Sequence[Any]) -> None:
    """Refuse a privacy model the engines cannot search yet: one that needs a population
    table (delta-presence, k-map on a population table)."""
    for c in criteria:
        if c.needs_population:
            raise AnonlabError(
                f"criteria: model '{c.name}' needs the population's records, "
                "which the engines do not count yet: use engine 'numpy' with "
                "a file output",
                parameter="engine",
            )


def engine_dataset(
    engine: Engine,
    table: TableLike,
    hierarchies: Mapping[str, Hierarchy | PathLike],
    *,
    roles: Roles,
    source: str | None = None,
    progress: ProgressFn | None = None,
) -> Dataset:
    """The rowless dataset of ``table`` (a path, a pandas or Dask DataFrame) on ``engine``.

    ``roles`` give the other columns theirs (:meth:`anonlab.dataset.Roles.assign`, the
    hierarchies' columns the quasi-identifiers); the engine counts the base
    frequency set of the quasi-identifiers (in table order) with the
    histograms of every sensitive column, in one pass over the rows.
    """
    from anonlab.dataset import Role
    from anonlab.engine.table import open_table
    from anonlab.hierarchy import Hierarchy

    data = open_table(table)
    if not hierarchies:
        raise AnonlabError(
            "hierarchies is empty: name at least one quasi-identifier and its hierarchy",
            parameter="hierarchies",
        )
    assigned = roles.assign(data.column_names, qi=hierarchies.keys())
    loaded = {
        c: h if isinstance(h, Hierarchy) else Hierarchy.from_csv(h) for c, h in hierarchies.items()
    }
    qis = [c for c, r in assigned.items() if r == Role.QUASI]
    sens = [c for c, r in assigned.items() if r == Role.SENSITIVE]
    base = engine.frequency_set(data, qis, sens, progress=progress)
    return rowless_dataset(base, loaded, assigned, source=source)


def lazy_release(frame: Any, plan: ReleasePlan) -> Any:
    """A Dask DataFrame's release as a lazy Dask DataFrame (:func:`release_partition` on
    every partition; nothing is computed here)."""
    meta = release_partition(frame._meta, plan)
    return frame.map_partitions(release_partition, plan, meta=meta)
