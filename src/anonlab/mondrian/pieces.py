"""Mondrian over an engine's pieces: the cuts from the engine's base frequency set, then one
pass (``map_pieces``) that writes each record with its partition's labels as Parquet parts.

The base frequency set numbers the quasi-identifier tuples in order of first appearance, as
the in-memory frequency set does, and, when a model protects a sensitive attribute, orders
each tuple's values by their text as the in-memory rows are ordered
(:func:`anonlab.mondrian.method.frequency_rows`), so the cuts, strict or relaxed, and so the
release, are the ones the in-memory run finds (docs/mondrian.md, "Engines"). A relaxed cut
may split the records of one frequency row over two partitions, the first ones in table
order to the first partition: a pass over the pieces counts each split row's records in
every piece (:func:`count_split_piece`), so that the writing pass knows, piece by piece,
the place in the table of every record of a split row. The models may protect one
sensitive attribute here (the base counts each sensitive column apart from the others).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

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
    order = sensitive_order(dataset, used[0])
    return FrequencyRows(
        codes=tuples[np.asarray(counts.classes, dtype=np.int64)[order]],
        counts=np.asarray(counts.counts, dtype=np.int64)[order],
        sensitive=np.asarray(counts.values, dtype=np.int64)[order][:, None],
        sensitive_names=(used[0],),
        global_counts=(np.asarray(counts.frequencies, dtype=np.int64),),
    )


def sensitive_order(dataset: Dataset, name: str) -> IntArray:
    """The base's ``(tuple, value)`` pairs of sensitive attribute ``name`` (sorted by tuple,
    then value code) in the frequency rows' order: by tuple, then by the value's text."""
    counts = dataset.base.sensitive[name]
    texts = np.asarray([str(v) for v in counts.dictionary], dtype=object)
    rank = np.empty(len(texts), dtype=np.int64)
    rank[np.argsort(texts, kind="stable")] = np.arange(len(texts), dtype=np.int64)
    values = np.asarray(counts.values, dtype=np.int64)
    return np.asarray(
        np.lexsort((rank[values], np.asarray(counts.classes, dtype=np.int64))), dtype=np.int64
    )


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
    #: relaxed cuts on a model's sensitive attribute: its name and dictionary, whose code
    #: then ends each record's key (a frequency row is a (tuple, value) pair)
    sensitive: str | None = None
    sensitive_dictionary: tuple[str, ...] = ()
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
) -> tuple[MondrianResult, MondrianPlan]:
    """Mondrian on a rowless dataset (its engine's base frequency set), strict or ``relaxed``,
    and the plan that writes the release (:func:`write_piece`; with relaxed cuts,
    :func:`write_parts` counts the split rows' records first)."""
    import time

    import pandas as pd

    refuse_unjudgeable(criteria)
    bind_criteria(criteria, dataset)
    freq = base_rows(dataset, criteria)
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
    sensitive: str | None = None
    dictionary: tuple[str, ...] = ()
    if freq.sensitive.shape[1]:  # rows are (tuple, value) pairs of the first attribute
        name = freq.sensitive_names[0]
        pairs = dataset.base.sensitive[name]
        order = sensitive_order(dataset, name)
        classes = np.asarray(pairs.classes, np.int64)[order]
        if split_rows:  # a (tuple, value) pair may go to two partitions: key the pairs
            sensitive, dictionary = name, tuple(str(v) for v in pairs.dictionary)
            values = np.asarray(pairs.values, np.int64)[order]
            keys = [_key(tuples[classes[r]], int(values[r])) for r in range(classes.shape[0])]
        else:  # every pair of a tuple goes with the tuple
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
        sensitive=sensitive,
        sensitive_dictionary=dictionary,
        split=split,
    )
    empty = pd.DataFrame()
    result = MondrianResult(
        empty, found, columns, freq, np.zeros(0, np.int64), list(criteria), seconds
    )
    return result, plan


def _key(codes: NDArray[np.int32], value: int | None = None) -> bytes:
    """A frequency row's key: its quasi-identifier codes' bytes (int32), then, when the rows
    are (tuple, value) pairs, the value's code."""
    if value is None:
        return codes.tobytes()
    return np.append(codes.astype(np.int32), np.int32(value)).astype(np.int32).tobytes()


def _batch_keys(
    batch: Any, plan: MondrianPlan, lookups: list[dict[str, int]], piece: Piece
) -> tuple[list[bytes], IntArray]:
    """The distinct frequency-row keys of a batch's records and each record's place among
    them (a value the base did not count is an error)."""
    names = [*plan.columns, *([plan.sensitive] if plan.sensitive else [])]
    columns = []
    for j, name in enumerate(names):
        local, values = kernels.encode_text(batch.column(name))
        mapped = np.empty(len(values), dtype=np.int32)
        for i, value in enumerate(values):
            code = lookups[j].get(value)
            if code is None:
                raise kernels.UnknownValue(name, value, piece.describe())
            mapped[i] = code
        columns.append(mapped[local] if len(values) else local.astype(np.int32))
    matrix = np.ascontiguousarray(np.column_stack(columns).astype(np.int32))
    rows = matrix.view(np.dtype((np.void, matrix.dtype.itemsize * matrix.shape[1])))
    distinct, inverse = np.unique(rows.reshape(-1), return_inverse=True)
    return [key.tobytes() for key in distinct], np.asarray(inverse.reshape(-1), dtype=np.int64)


def _lookups(plan: MondrianPlan) -> list[dict[str, int]]:
    dictionaries = [*plan.dictionaries]
    if plan.sensitive:
        dictionaries.append(plan.sensitive_dictionary)
    return [{v: i for i, v in enumerate(d)} for d in dictionaries]


def _read_columns(piece: Piece, plan: MondrianPlan) -> list[str]:
    keep = [c for c in piece.columns() if c not in plan.drop]
    if plan.sensitive and plan.sensitive not in keep:
        keep.append(plan.sensitive)
    return keep


def count_split_piece(
    piece: Piece, plan: MondrianPlan, batch_rows: int
) -> tuple[int, dict[bytes, int]]:
    """The piece's index and the records of each split frequency row (``plan.split``) in
    it."""
    lookups = _lookups(plan)
    names = [*plan.columns, *([plan.sensitive] if plan.sensitive else [])]
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
    from anonlab.engine.base import base_engine

    runner = base_engine(engine)
    plan = with_offsets(engine, table, plan)
    rows: list[int] = runner.map_pieces(
        table,
        write_piece,
        plan,
        str(folder),
        runner.batch_rows,
        progress=progress,
        step="writing the release",
    )
    return sum(rows)
