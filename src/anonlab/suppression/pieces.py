"""Cell suppression over an engine's pieces: the blanks decided on the engine's frequency set,
then one pass (``map_pieces``) that writes every record with its blanks as Parquet parts.

The method treats all records of one (stratum, key tuple) group alike, and its result depends
on nothing but the groups in order of their first record, their key codes numbered by first
appearance and their counts (:func:`anonlab.suppression.method.suppress_groups`). The engine's
base frequency set over the strata and key columns is exactly that: its tuples in order of
first appearance, its dictionaries in first-seen order (docs/design.md, "The one hot
primitive"). A key's missing value is the empty text there, as it is in the in-memory table,
and becomes the blank code -1; the other codes keep their order, so every comparison of the
method is the one it makes in memory, and the release is the same cell for cell
(docs/suppression.md, "Engines").

The writing pass needs only the groups that lose a cell: a record's key tuple is looked up
among them (its codes in the first pass's dictionaries, as bytes), and a record of any other
group is written as it is. Every column is written as its text (the engines' convention); a
key column is a dictionary column whose blanked cells hold the empty text, the one reader's
missing cell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.engine import kernels
from anonlab.errors import AnonlabError
from anonlab.grouping import group_tuples
from anonlab.suppression.method import (
    SuppressionResult,
    checked_parameters,
    key_ranks,
    protection,
    suppress_groups,
)

if TYPE_CHECKING:
    from anonlab.engine.base import Engine
    from anonlab.engine.table import Piece, Table
    from anonlab.paths import PathLike
    from anonlab.progress import ProgressFn


@dataclass(frozen=True)
class SuppressionPlan:
    """What the writing pass applies: the grouped columns (strata, then keys) and their
    dictionaries from the first pass, each group that loses cells (its codes' bytes) with the
    keys it loses, and the columns left out of the release."""

    columns: tuple[str, ...]
    keys: tuple[str, ...]
    dictionaries: tuple[tuple[str, ...], ...]
    #: codes (int32 over ``columns``, as bytes) -> whether each key is blanked
    blanked: dict[bytes, NDArray[np.bool_]]
    drop: tuple[str, ...]


@dataclass(frozen=True)
class PieceCells:
    """What one piece wrote: its index, its rows and the cells blanked per key."""

    index: int
    rows: int
    blanked: NDArray[np.int64]


def key_codes(dictionary: Sequence[str]) -> NDArray[np.int64]:
    """A column's first-pass codes as the method's key codes: the empty text (a missing value,
    as the one reader gives it) -1, every other value its code, so the values keep the order
    of their first appearance."""
    codes = np.arange(len(dictionary), dtype=np.int64)
    for i, value in enumerate(dictionary):
        if value == "":
            codes[i] = -1
    return codes


def engine_suppression(
    engine: Engine,
    table: Table,
    qi: Sequence[str],
    k: int = 2,
    *,
    importance: Mapping[str, int] | None = None,
    combs: Sequence[tuple[int, int]] | Sequence[int] | None = None,
    strata: Sequence[str] | str | None = None,
    alpha: float = 1.0,
    drop: Sequence[str] = (),
    progress: ProgressFn | None = None,
) -> tuple[SuppressionResult, SuppressionPlan]:
    """:func:`anonlab.suppression.suppress` on ``table`` through ``engine``: the same
    parameters, the same figures (the result holds no release: :func:`write_parts` writes
    it), and the plan of the writing pass. One pass over the rows counts the frequency set of
    the strata and key columns."""
    keys, strata_cols, pairs, needs = checked_parameters(
        list(table.column_names), qi, k, combs, strata, alpha
    )
    columns = [*strata_cols, *keys]
    base = engine.frequency_set(table, columns, progress=progress)
    s = len(strata_cols)
    tuples = np.asarray(base.tuples, dtype=np.int64)
    counts = np.asarray(base.counts, dtype=np.int64)
    codes = np.column_stack(
        [key_codes(base.dictionaries[s + j])[tuples[:, s + j]] for j in range(len(keys))]
    ).reshape(tuples.shape[0], len(keys))
    if s:  # strata numbered by first appearance, as in memory (only the order of errors)
        cards = [len(base.dictionaries[j]) for j in range(s)]
        stratum = group_tuples(tuples[:, :s], cards)[0].astype(np.int64)
    else:
        stratum = np.zeros(tuples.shape[0], dtype=np.int64)
    ranks = key_ranks(importance, codes, keys)
    released, rounds, reached = suppress_groups(
        codes, counts.astype(np.float64), stratum, needs, protection(ranks, keys), alpha
    )
    new = (released < 0) & (codes >= 0)
    weights = counts[:, None]
    lose = np.flatnonzero(new.any(axis=1))
    packed = np.ascontiguousarray(base.tuples, dtype=np.int32)
    plan = SuppressionPlan(
        columns=tuple(columns),
        keys=tuple(keys),
        dictionaries=tuple(tuple(d) for d in base.dictionaries),
        blanked={packed[g].tobytes(): new[g].copy() for g in lose.tolist()},
        drop=tuple(drop),
    )
    result = SuppressionResult(
        release=_no_rows(),
        keys=keys,
        k=k,
        combs=pairs,
        alpha=alpha,
        importance=ranks,
        strata=strata_cols,
        suppressed={key: int((new[:, j] * weights[:, 0]).sum()) for j, key in enumerate(keys)},
        blank_before={
            key: int(((codes[:, j] < 0) * weights[:, 0]).sum()) for j, key in enumerate(keys)
        },
        records_touched=int(counts[lose].sum()),
        rounds=rounds,
        combinations=[
            {"keys": [keys[j] for j in need.keys], "k": need.k, "smallest_frequency": low}
            for need, low in zip(needs, reached, strict=True)
        ],
        records=int(base.rows),
    )
    return result, plan


def _no_rows() -> Any:
    import pandas as pd

    return pd.DataFrame()


def write_piece(piece: Piece, plan: SuppressionPlan, folder: str, batch_rows: int) -> PieceCells:
    """Write one piece with the plan's blanks (the empty text in a key cell of a group that
    loses it), the dropped columns left out, every column as its text; a value the first pass
    did not count is an error (the table changed since)."""
    import pyarrow as pa

    keep = [c for c in piece.columns() if c not in plan.drop]
    lookups = [{v: i for i, v in enumerate(d)} for d in plan.dictionaries]
    key_at = {name: j for j, name in enumerate(plan.keys)}
    blanked = np.zeros(len(plan.keys), dtype=np.int64)
    where = piece.describe()

    def tables() -> Any:
        for batch in piece.batches(keep, batch_rows):
            local: dict[str, tuple[NDArray[np.int32], list[str]]] = {}
            mapped = []
            for j, name in enumerate(plan.columns):
                codes, texts = kernels.encode_text(batch.column(name))
                local[name] = (codes, texts)
                mapped.append(kernels.global_codes(codes, texts, lookups[j], name, where))
            hidden = _hidden_cells(np.column_stack(mapped), plan)
            blanked[:] += hidden.sum(axis=0)
            arrays = []
            for name in keep:
                at = key_at.get(name)
                if at is None:
                    arrays.append(kernels.text_column(batch.column(name)))
                    continue
                key_local, key_texts = local[name]
                arrays.append(_blanked_column(key_local, key_texts, hidden[:, at]))
            yield pa.Table.from_arrays(arrays, names=keep)

    rows = kernels.write_batches(folder, piece.index, tables())
    return PieceCells(piece.index, rows, blanked)


def _hidden_cells(matrix: NDArray[Any], plan: SuppressionPlan) -> NDArray[np.bool_]:
    """(rows, keys): whether each record's key cell is blanked (its group's, by the plan)."""
    rows = matrix.shape[0]
    out = np.zeros((rows, len(plan.keys)), dtype=bool)
    if rows == 0 or not plan.blanked:
        return out
    matrix = np.ascontiguousarray(matrix, dtype=np.int32)
    void = matrix.view(np.dtype((np.void, matrix.dtype.itemsize * matrix.shape[1]))).reshape(-1)
    distinct, inverse = np.unique(void, return_inverse=True)
    masks = np.zeros((distinct.shape[0], len(plan.keys)), dtype=bool)
    for i, key in enumerate(distinct):
        found = plan.blanked.get(key.tobytes())
        if found is not None:
            masks[i] = found
    hidden: NDArray[np.bool_] = masks[np.asarray(inverse).reshape(-1)]
    return hidden


def _blanked_column(codes: NDArray[np.int32], texts: list[str], hidden: NDArray[np.bool_]) -> Any:
    """A key column as a dictionary array of its texts, the ``hidden`` cells the empty text."""
    import pyarrow as pa

    values = list(texts)
    if "" in values:
        empty = values.index("")
    else:
        empty = len(values)
        values.append("")
    indices = np.where(hidden, empty, codes).astype(np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(indices), pa.array(values, pa.string()))


def write_parts(
    engine: Engine,
    table: Table,
    plan: SuppressionPlan,
    folder: PathLike,
    result: SuppressionResult,
    progress: ProgressFn | None = None,
) -> int:
    """Write the release by ``plan``, one Parquet part per piece of ``table`` (:func:`write_piece`
    on every piece), into ``folder``; returns the rows written. Rows or blanked cells other
    than the first pass counted (the table changed while it was read) are an error."""
    from anonlab.engine.base import write_pieces

    written: list[PieceCells] = write_pieces(
        engine, table, write_piece, plan, str(folder), progress=progress
    )
    rows = sum(p.rows for p in written)
    cells = np.sum([p.blanked for p in written], axis=0) if written else np.zeros(0)
    expected = [result.suppressed[key] for key in plan.keys]
    if rows != result.records or (written and [int(c) for c in cells] != expected):
        raise AnonlabError(
            f"input: {table.source} holds other records than the first pass counted: the "
            "table changed while it was read; run again",
            parameter="input",
        )
    return rows
