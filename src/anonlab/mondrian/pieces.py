"""Mondrian over an engine's pieces: the cuts from the engine's base frequency set, then one
pass (``map_pieces``) that writes each record with its partition's labels as Parquet parts.

The base frequency set numbers the quasi-identifier tuples in order of first appearance, as
the in-memory frequency set does, so the strict cuts, and so the release, are the ones the
in-memory run finds (docs/mondrian.md, "Engines"). A relaxed cut splits the records of one
tuple by their order in the table, which one pass over independent pieces does not know:
relaxed runs stay in memory. The models may protect one sensitive attribute here (the base
counts each sensitive column apart from the others).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
    return FrequencyRows(
        codes=tuples[np.asarray(counts.classes, dtype=np.int64)],
        counts=np.asarray(counts.counts, dtype=np.int64),
        sensitive=np.asarray(counts.values, dtype=np.int64)[:, None],
        sensitive_names=(used[0],),
        global_counts=(np.asarray(counts.frequencies, dtype=np.int64),),
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


def engine_mondrian(
    dataset: Dataset, criteria: Sequence[Criterion], *, ordered: Sequence[str] = ()
) -> tuple[MondrianResult, MondrianPlan]:
    """Strict Mondrian on a rowless dataset (its engine's base frequency set), and the plan
    that writes the release (:func:`write_piece`)."""
    import time

    import pandas as pd

    refuse_unjudgeable(criteria)
    bind_criteria(criteria, dataset)
    freq = base_rows(dataset, criteria)
    columns = mondrian_columns(dataset, ordered)
    started = time.process_time()
    check_whole(dataset.n, freq, columns, criteria)
    found = partition(freq, columns, criteria, relaxed=False)
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
    owner = np.empty(freq.codes.shape[0], dtype=np.int64)
    for i, p in enumerate(found.partitions):
        owner[p.rows] = i
    tuple_owner = np.empty(tuples.shape[0], dtype=np.int64)
    if freq.sensitive.shape[1]:  # rows are (tuple, value) pairs of the first attribute
        classes = np.asarray(dataset.base.sensitive[freq.sensitive_names[0]].classes, np.int64)
        tuple_owner[classes] = owner
    else:
        tuple_owner[:] = owner
    plan = MondrianPlan(
        columns=tuple(q.name for q in dataset.qis),
        dictionaries=tuple(tuple(q.values) for q in dataset.qis),
        partition_of={tuples[i].tobytes(): int(tuple_owner[i]) for i in range(tuples.shape[0])},
        label_codes=label_codes,
        labels=tuple(labels),
        drop=tuple(c for c, r in dataset.roles.items() if r.value == "identifying"),
    )
    empty = pd.DataFrame()
    result = MondrianResult(
        empty, found, columns, freq, np.zeros(0, np.int64), list(criteria), seconds
    )
    return result, plan


def write_piece(piece: Piece, plan: MondrianPlan, folder: str, batch_rows: int) -> int:
    """Write one piece with each quasi-identifier replaced by its partition's label (a
    dictionary array of text), the dropped columns left out, the others as their text;
    returns the rows written. A tuple the base did not count is an error (the table changed
    since the first pass)."""
    import pyarrow as pa

    keep = [c for c in piece.columns() if c not in plan.drop]
    lookups = [{v: i for i, v in enumerate(d)} for d in plan.dictionaries]

    def tables() -> Any:
        for batch in piece.batches(keep, batch_rows):
            columns = []
            for j, name in enumerate(plan.columns):
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
            owners = np.empty(distinct.shape[0], dtype=np.int64)
            for i, key in enumerate(distinct):
                found = plan.partition_of.get(key.tobytes())
                if found is None:
                    raise AnonlabError(
                        f"input: {piece.describe()} holds a record the first pass did not "
                        "count: the table changed while it was read; run again",
                        parameter="input",
                    )
                owners[i] = found
            part = owners[inverse.reshape(-1)]
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
