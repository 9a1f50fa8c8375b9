"""Mondrian over an engine's pieces: the cuts from the engine's base frequency set, then one
pass (``map_pieces``) that writes each record with its partition's labels as Parquet parts.

The base frequency set numbers the quasi-identifier tuples in order of first appearance, as
the in-memory frequency set does, so the strict cuts, and so the release, are the ones the
in-memory run finds (docs/mondrian.md, "Engines"). Relaxed cuts read the order of the
frequency rows, which in memory are the distinct tuples of the quasi-identifiers and every
sensitive column: with sensitive columns a relaxed run has the engine count those tuples too
(:func:`joint_rows`). A relaxed cut may split the records of one frequency row over two
partitions, the first ones in table order to the first partition: a pass over the pieces
counts each split row's records in every piece (:func:`count_split_piece`), so that the
writing pass knows, piece by piece, the place in the table of every record of a split row.
The models may protect one sensitive attribute here (the base counts each sensitive column
apart from the others).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.dataset import Role
from anonlab.engine import kernels
from anonlab.errors import AnonlabError
from anonlab.mondrian.method import (
    MondrianResult,
    check_whole,
    column_labels,
    mondrian_columns,
    refuse_unjudgeable,
)
from anonlab.mondrian.partition import FrequencyRows, partition, summarize
from anonlab.privacy import Criterion
from anonlab.privacy.spec import bind_criteria

if TYPE_CHECKING:
    from anonlab.dataset import Dataset
    from anonlab.engine.base import Engine
    from anonlab.engine.table import Piece
    from anonlab.paths import PathLike
    from anonlab.progress import ProgressFn

IntArray = NDArray[np.int64]


def base_rows(dataset: Dataset, criteria: Sequence[Criterion]) -> FrequencyRows:
    """The frequency rows of a rowless dataset's base: one per quasi-identifier tuple, or, when
    a model protects a sensitive attribute, one per (tuple, value of that attribute)."""
    base = dataset.base
    used = sorted({c.attribute for c in criteria if c.attribute is not None})
    if len(used) > 1:
        raise AnonlabError(
            f"criteria: the models protect {', '.join(used)}: on the engines Mondrian judges "
            "one sensitive attribute (the engine counts each apart); use engine numpy with a "
            "file output",
            parameter="engine",
        )
    tuples = np.asarray(base.tuples, dtype=np.int64)
    if not used:
        return FrequencyRows(
            codes=tuples,
            counts=np.asarray(base.counts, dtype=np.int64),
            sensitive=np.zeros((tuples.shape[0], 0), dtype=np.int64),
            sensitive_names=(),
            global_counts=(),
        )
    counts = base.sensitive[used[0]]
    return FrequencyRows(
        codes=tuples[np.asarray(counts.classes, dtype=np.int64)],
        counts=np.asarray(counts.counts, dtype=np.int64),
        sensitive=np.asarray(counts.values, dtype=np.int64)[:, None],
        sensitive_names=(used[0],),
        global_counts=(np.asarray(counts.frequencies, dtype=np.int64),),
    )


@dataclass(frozen=True)
class JointRows:
    """The frequency rows of a relaxed run with sensitive columns, counted by the engine over
    the quasi-identifiers and every sensitive column together (as
    :func:`anonlab.mondrian.method.frequency_rows` groups the rows in memory): ``freq`` with
    the dataset's codes, ``keys`` each row's codes as the writing pass computes them (the
    quasi-identifiers' codes in the dataset's dictionaries, then each sensitive column's in
    ``dictionaries``)."""

    freq: FrequencyRows
    keys: NDArray[np.int32]
    names: tuple[str, ...]
    dictionaries: tuple[tuple[str, ...], ...]


def joint_rows(engine: Engine, table: Any, dataset: Dataset) -> JointRows:
    """The in-memory run's frequency rows, from the engine: the distinct tuples of the
    quasi-identifiers and every sensitive column in order of first appearance, with their
    counts (one more pass over the pieces, :meth:`Engine.frequency_set`)."""
    from anonlab.dataset import Role

    qi = [q.name for q in dataset.qis]
    names = tuple(dataset.columns_with(Role.SENSITIVE))
    joint = engine.frequency_set(table, [*qi, *names])
    tuples = np.asarray(joint.tuples, dtype=np.int64)
    keys = np.empty(tuples.shape, dtype=np.int32)
    for j, q in enumerate(dataset.qis):  # the joint set's codes in the dataset's dictionaries
        at = {v: i for i, v in enumerate(q.values)}
        remap = np.array([at[v] for v in joint.dictionaries[j]], dtype=np.int64)
        keys[:, j] = remap[tuples[:, j]]
    m = len(qi)
    sensitive = np.empty((tuples.shape[0], len(names)), dtype=np.int64)
    global_counts = []
    counts = np.asarray(joint.counts, dtype=np.int64)
    for i, name in enumerate(names):
        keys[:, m + i] = tuples[:, m + i]
        held = dataset.base.sensitive.get(name)
        own = joint.dictionaries[m + i]
        if held is not None:  # the codes the criteria were bound to
            at = {v: c for c, v in enumerate(held.dictionary)}
            remap = np.array([at[v] for v in own], dtype=np.int64)
            sensitive[:, i] = remap[tuples[:, m + i]]
            global_counts.append(np.asarray(held.frequencies, dtype=np.int64))
        else:
            sensitive[:, i] = tuples[:, m + i]
            global_counts.append(
                np.bincount(tuples[:, m + i], weights=counts, minlength=len(own)).astype(np.int64)
            )
    freq = FrequencyRows(
        codes=keys[:, :m].astype(np.int64),
        counts=counts,
        sensitive=sensitive,
        sensitive_names=names,
        global_counts=tuple(global_counts),
    )
    return JointRows(freq, keys, names, tuple(tuple(d) for d in joint.dictionaries[m:]))


@dataclass(frozen=True)
class MondrianPlan:
    """What the writing pass needs: each quasi-identifier's dictionary (its values' codes in
    the base), the partition of each base tuple (by its codes' bytes), each partition's label
    code per column and the labels, and the columns to drop."""

    columns: tuple[str, ...]
    dictionaries: tuple[tuple[str, ...], ...]
    partition_of: dict[bytes, int]
    label_codes: NDArray[np.int32]  # (partitions, m)
    labels: tuple[tuple[str, ...], ...]
    drop: tuple[str, ...]
    #: relaxed cuts with sensitive columns: their names and dictionaries, whose codes then
    #: end each record's key (a frequency row is a tuple of them all, as in memory)
    sensitive: tuple[str, ...] = ()
    sensitive_dictionaries: tuple[tuple[str, ...], ...] = ()
    #: frequency rows split over partitions (relaxed cuts), by key: the partitions in order
    #: and the number of the row's records (in table order) that go to each and those before
    split: dict[bytes, tuple[IntArray, IntArray]] = field(default_factory=dict)
    #: per piece (by its index), each split row's records in the pieces before it
    offsets: dict[int, dict[bytes, int]] = field(default_factory=dict)


def engine_mondrian(
    dataset: Dataset,
    criteria: Sequence[Criterion],
    *,
    ordered: Sequence[str] = (),
    relaxed: bool = False,
    engine: Engine | None = None,
    table: Any = None,
) -> tuple[MondrianResult, MondrianPlan]:
    """Mondrian on a rowless dataset (its engine's base frequency set), strict or ``relaxed``,
    and the plan that writes the release (:func:`write_piece`; with relaxed cuts,
    :func:`write_parts` counts the split rows' records first). A relaxed run on a table with
    sensitive columns counts its frequency rows over them too (:func:`joint_rows`, on
    ``engine`` and ``table``), as the in-memory run groups its rows."""
    import time

    import pandas as pd

    refuse_unjudgeable(criteria)
    bind_criteria(criteria, dataset)
    freq = base_rows(dataset, criteria)  # refuses two protected attributes
    joint: JointRows | None = None
    if relaxed and dataset.columns_with(Role.SENSITIVE):
        if engine is None:
            raise AnonlabError("relaxed Mondrian with sensitive columns needs the engine's table")
        joint = joint_rows(engine, table, dataset)
        freq = joint.freq
    columns = mondrian_columns(dataset, ordered)
    started = time.process_time()
    check_whole(dataset.n, freq, columns, criteria)
    found = partition(freq, columns, criteria, relaxed=relaxed)
    seconds = time.process_time() - started
    summaries = summarize(found.partitions, freq, columns)
    label_codes = np.zeros((len(found.partitions), len(columns)), dtype=np.int32)
    labels: list[tuple[str, ...]] = []
    for j, (q, column) in enumerate(zip(dataset.qis, columns, strict=True)):
        codes, texts = column_labels(q, column, summaries.low[:, j], summaries.high[:, j])
        merged, back = np.unique(np.asarray(texts, dtype=object), return_inverse=True)
        label_codes[:, j] = back.reshape(-1)[codes]
        labels.append(tuple(str(t) for t in merged))
    tuples = np.ascontiguousarray(np.asarray(dataset.base.tuples, dtype=np.int32))
    owner = np.full(freq.codes.shape[0], -1, dtype=np.int64)
    shares: dict[int, list[tuple[int, int]]] = {}
    for i, p in enumerate(found.partitions):
        for row, count in zip(p.rows.tolist(), p.counts.tolist(), strict=True):
            shares.setdefault(row, []).append((i, count))
    for row, held in shares.items():
        owner[row] = held[0][0]
    split_rows = [row for row, held in shares.items() if len(held) > 1]
    if joint is not None:  # rows of the quasi-identifiers and every sensitive column
        keys = [joint.keys[r].tobytes() for r in range(joint.keys.shape[0])]
    elif freq.sensitive.shape[1]:  # (tuple, value) pairs: a tuple's pairs go with it
        classes = np.asarray(dataset.base.sensitive[freq.sensitive_names[0]].classes, np.int64)
        tuple_owner = np.empty(tuples.shape[0], dtype=np.int64)
        tuple_owner[classes] = owner
        keys = [tuples[i].tobytes() for i in range(tuples.shape[0])]
        owner = tuple_owner
    else:
        keys = [tuples[i].tobytes() for i in range(tuples.shape[0])]
    split = {
        keys[row]: (
            np.array([i for i, _ in shares[row]], dtype=np.int64),
            np.cumsum([c for _, c in shares[row]]).astype(np.int64),
        )
        for row in split_rows
    }
    plan = MondrianPlan(
        columns=tuple(q.name for q in dataset.qis),
        dictionaries=tuple(tuple(q.values) for q in dataset.qis),
        partition_of={keys[i]: int(owner[i]) for i in range(len(keys))},
        label_codes=label_codes,
        labels=tuple(labels),
        drop=tuple(c for c, r in dataset.roles.items() if r.value == "identifying"),
        sensitive=joint.names if joint is not None else (),
        sensitive_dictionaries=joint.dictionaries if joint is not None else (),
        split=split,
    )
    empty = pd.DataFrame()
    result = MondrianResult(
        empty, found, columns, freq, np.zeros(0, np.int64), list(criteria), seconds
    )
    return result, plan


def _batch_keys(
    batch: Any, plan: MondrianPlan, lookups: list[dict[str, int]], piece: Piece
) -> tuple[list[bytes], IntArray]:
    """The distinct frequency-row keys of a batch's records and each record's place among
    them (a value the base did not count is an error)."""
    names = [*plan.columns, *plan.sensitive]
    columns = []
    for j, name in enumerate(names):
        local, values = kernels.encode_text(batch.column(name))
        columns.append(kernels.global_codes(local, values, lookups[j], name, piece.describe()))
    matrix = np.ascontiguousarray(np.column_stack(columns).astype(np.int32))
    rows = matrix.view(np.dtype((np.void, matrix.dtype.itemsize * matrix.shape[1])))
    distinct, inverse = np.unique(rows.reshape(-1), return_inverse=True)
    return [key.tobytes() for key in distinct], np.asarray(inverse.reshape(-1), dtype=np.int64)


def _lookups(plan: MondrianPlan) -> list[dict[str, int]]:
    dictionaries = [*plan.dictionaries, *plan.sensitive_dictionaries]
    return [{v: i for i, v in enumerate(d)} for d in dictionaries]


def _read_columns(piece: Piece, plan: MondrianPlan) -> list[str]:
    keep = [c for c in piece.columns() if c not in plan.drop]
    return keep + [c for c in plan.sensitive if c not in keep]


def count_split_piece(
    piece: Piece, plan: MondrianPlan, batch_rows: int
) -> tuple[int, dict[bytes, int]]:
    """The piece's index and the records of each split frequency row (``plan.split``) in
    it."""
    lookups = _lookups(plan)
    names = [*plan.columns, *plan.sensitive]
    found: dict[bytes, int] = {}
    for batch in piece.batches(names, batch_rows):
        keys, inverse = _batch_keys(batch, plan, lookups, piece)
        counts = np.bincount(inverse, minlength=len(keys))
        for key, count in zip(keys, counts.tolist(), strict=True):
            if key in plan.split:
                found[key] = found.get(key, 0) + int(count)
    return piece.index, found


def write_piece(piece: Piece, plan: MondrianPlan, folder: str, batch_rows: int) -> int:
    """Write one piece with each quasi-identifier replaced by its partition's label (a
    dictionary array of text), the dropped columns left out, the others as their text;
    returns the rows written. A record of a split frequency row goes to the partition its
    place among that row's records in the table gives (``plan.offsets``: the row's records
    in the pieces before). A tuple the base did not count is an error (the table changed
    since the first pass)."""
    import pyarrow as pa

    keep = [c for c in piece.columns() if c not in plan.drop]
    lookups = _lookups(plan)
    seen = dict(plan.offsets.get(piece.index, {}))

    def tables() -> Any:
        for batch in piece.batches(_read_columns(piece, plan), batch_rows):
            keys, inverse = _batch_keys(batch, plan, lookups, piece)
            owners = np.empty(len(keys), dtype=np.int64)
            for i, key in enumerate(keys):
                found = plan.partition_of.get(key)
                if found is None:
                    raise AnonlabError(
                        f"input: {piece.describe()} holds a record the first pass did not "
                        "count: the table changed while it was read; run again",
                        parameter="input",
                    )
                owners[i] = found
            part = owners[inverse]
            for i, key in enumerate(keys):
                if key not in plan.split:
                    continue
                parts, ends = plan.split[key]
                at = np.flatnonzero(inverse == i)  # this row's records, in table order
                place = seen.get(key, 0) + np.arange(at.shape[0], dtype=np.int64)
                part[at] = parts[np.searchsorted(ends, place, side="right")]
                seen[key] = seen.get(key, 0) + int(at.shape[0])
            arrays = []
            for name in keep:
                if name in plan.columns:
                    j = plan.columns.index(name)
                    arrays.append(
                        pa.DictionaryArray.from_arrays(
                            pa.array(plan.label_codes[part, j].astype(np.int32)),
                            pa.array(list(plan.labels[j]), pa.string()),
                        )
                    )
                else:
                    arrays.append(kernels.text_column(batch.column(name)))
            yield pa.Table.from_arrays(arrays, names=keep)

    return kernels.write_batches(folder, piece.index, tables())


def with_offsets(engine: Engine, table: Any, plan: MondrianPlan) -> MondrianPlan:
    """``plan`` with each piece's offsets of the split rows (:func:`count_split_piece` on
    every piece, in piece order); ``plan`` itself when no row is split (strict cuts)."""
    from anonlab.engine.base import base_engine

    if not plan.split:
        return plan
    runner = base_engine(engine)
    counted: list[tuple[int, dict[bytes, int]]] = runner.map_pieces(
        table, count_split_piece, plan, runner.batch_rows, step="counting split rows"
    )
    offsets: dict[int, dict[bytes, int]] = {}
    running: dict[bytes, int] = {}
    for index, counts in counted:  # in piece order
        offsets[index] = dict(running)
        for key, count in counts.items():
            running[key] = running.get(key, 0) + count
    return replace(plan, offsets=offsets)


def write_parts(
    engine: Engine,
    table: Any,
    plan: MondrianPlan,
    folder: PathLike,
    progress: ProgressFn | None = None,
) -> int:
    """Write the release by ``plan``, one Parquet part per piece of ``table``, into
    ``folder`` (:func:`write_piece` on every piece); returns the rows written."""
    from anonlab.engine.base import write_pieces

    plan = with_offsets(engine, table, plan)
    rows: list[int] = write_pieces(engine, table, write_piece, plan, str(folder), progress=progress)
    return sum(rows)
