"""Individual ranking (``onedims``) over an engine's pieces: the in-memory release, piece by piece.

In memory (:func:`anonlab.microaggregation.methods.onedims_release`) every column of a
stratum is sorted (equal values by row), cut into fixed groups of ``k`` consecutive
ranks (the last one ``k``..``2k - 1``: :func:`anonlab.microaggregation.aggregates.fixed_labels`)
and each group replaced by its aggregate. All of that depends on each (stratum, column)'s
sorted values alone, and, among equal values, on the rows' order. The passes
(docs/em4adom.md, "Engines"):

1. counts (:func:`count_piece`): every piece counts, per column, its (stratum, value)
   pairs; the strata are the distinct texts of the strata columns, as the one reader
   reads them, and the values the doubles the masked columns parse to (a missing value is
   refused, as in memory);
2. the plan, in this process (:func:`plan_pieces`): per column, the pairs of every piece
   are put in (stratum, value, piece) order. The stratum's sorted column is then
   ``repeat(values, counts)``, the very array the in-memory sort gives, so the groups'
   aggregates are computed by the same function
   (:func:`anonlab.microaggregation.aggregates.fixed_group_aggregates`) on the same doubles
   in the same order: the same bits. A piece's records of one (stratum, value) take the
   ranks ``first + 0, 1, ...`` in their row order, where ``first`` counts the records
   before them in that order (smaller values of the stratum, and the same value in
   earlier pieces): the in-memory order of ties by row. Each piece's released values, in
   its (stratum, value, row) order, are written to a scratch file;
3. release (:func:`release_piece`): every piece sorts its records the same way, takes its
   released values from its file and writes its part of the release (the masked columns
   as doubles, the others as text), one Parquet part per piece, in the table's order.

The group sizes, SSE and SST of the report are computed from the sorted columns (ILh =
SSE / SST on the columns standardized by their mean and population sd, as in memory, up to
the order of summation). This process holds, per masked column, every distinct (stratum,
value) pair, the sorted column and its released values (about 45 bytes a record and column
at the peak); a piece holds
its own records. ``-0.0`` ties with ``0.0`` (as in memory's sort); each piece sends the
places of its negative zeros in its sorted columns, so the sorted column holds them where
the in-memory sort puts them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.encoding import column_scale
from anonlab.engine import kernels
from anonlab.engine.base import WriteSummary
from anonlab.errors import AnonlabError
from anonlab.microaggregation.aggregates import fixed_group_aggregates, group_sizes
from anonlab.parameters import check_k
from anonlab.tempfiles import temp_path_for

if TYPE_CHECKING:
    import pyarrow as pa

    from anonlab.engine.base import Engine
    from anonlab.engine.table import Piece, Table
    from anonlab.progress import ProgressFn
    from anonlab.staging import StagedFolder

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
#: why the other methods refuse an engine
WHOLE_STRATUM = (
    "it orders the records of a stratum on all masked columns together, so it needs every "
    "record of a stratum in one process"
)


# ---------------------------------------------------------------------------
# A piece's records
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PieceArrays:
    """A piece's masked values (rows, p), each record's stratum within the piece (0.. in the
    strata texts' order) and the piece's strata texts in that order."""

    x: FloatArray
    local: IntArray
    keys: tuple[tuple[str, ...], ...]
    negative_zero: NDArray[np.bool_]


def _strata_codes(
    texts: Sequence[NDArray[Any]], rows: int
) -> tuple[IntArray, list[tuple[str, ...]]]:
    """Each record's stratum (0.. in the order of the strata's texts) and those texts."""
    import pandas as pd

    if not texts:
        return np.zeros(rows, dtype=np.int64), [()]
    combined = np.zeros(rows, dtype=np.int64)
    for column in texts:
        codes, values = pd.factorize(column, sort=True)
        # renumbered after each column (the order kept), so the codes stay below ``rows``
        combined = np.unique(combined * max(len(values), 1) + codes, return_inverse=True)[1]
    first = np.unique(combined, return_index=True)[1]
    keys = [tuple(str(column[row]) for column in texts) for row in first]
    return np.asarray(combined, dtype=np.int64).reshape(-1), keys


def _first_missing(column: Any) -> int | None:
    """The first row of ``column`` that is null or empty text, or ``None``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    missing = pc.is_null(column, nan_is_null=pa.types.is_floating(column.type))
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        missing = pc.or_(missing, pc.equal(pc.utf8_trim_whitespace(column), ""))
    rows = np.flatnonzero(np.asarray(missing.to_numpy(zero_copy_only=False), dtype=bool))
    return int(rows[0]) if rows.size else None


def piece_arrays(
    table: pa.Table, columns: Sequence[str], strata: Sequence[str], where: str
) -> PieceArrays:
    """The masked values and the strata of a piece's records (read whole)."""
    for name in columns:  # a missing value: the in-memory line, not "no number"
        gap = _first_missing(table.column(name))
        if gap is not None:
            raise AnonlabError(
                f"column '{name}' of {where} has a missing value at row {gap + 1}: fill or "
                "drop missing values first"
            )
    x = kernels.numeric_block(table, columns, where)
    negative_zero = (x == 0) & np.signbit(x)
    x = x + 0.0  # -0.0 sorts as 0.0 (a tie); its sign is kept apart
    bad = np.isnan(x)
    if bad.any():  # a text such as "nan"
        row, j = (int(v) for v in np.argwhere(bad)[0])
        raise AnonlabError(
            f"column '{columns[j]}' of {where} has a missing value (NaN) at row {row + 1}: "
            "fill or drop missing values first"
        )
    texts = [
        np.asarray(_plain(table.column(c)).to_numpy(zero_copy_only=False), dtype=object)
        for c in strata
    ]
    local, keys = _strata_codes(texts, table.num_rows)
    return PieceArrays(np.ascontiguousarray(x), local, tuple(keys), negative_zero)


def _read_whole(piece: Piece, names: Sequence[str], batch_rows: int) -> pa.Table:
    """A piece's ``names`` columns read whole."""
    import pyarrow as pa

    batches = list(piece.batches(list(names), batch_rows))
    if not batches:
        return pa.table({name: pa.array([], pa.string()) for name in names})
    return pa.concat_tables(batches)


def column_order(x: FloatArray, local: IntArray) -> IntArray:
    """The records of one column in (stratum, value, row) order (a stable sort)."""
    return np.asarray(np.lexsort((x, local)), dtype=np.int64)


# ---------------------------------------------------------------------------
# Pass 1: the counts
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PieceCounts:
    """A piece's records and, per column, its distinct (stratum, value) pairs in (stratum,
    value) order with their counts (``stratum`` numbers ``keys``)."""

    index: int
    rows: int
    keys: tuple[tuple[str, ...], ...]
    stratum: list[IntArray] = field(default_factory=list)
    values: list[FloatArray] = field(default_factory=list)
    counts: list[IntArray] = field(default_factory=list)
    negative_zeros: list[IntArray] = field(default_factory=list)


def count_piece(
    piece: Piece, columns: Sequence[str], strata: Sequence[str], batch_rows: int
) -> PieceCounts:
    """Pass 1 (module text): a piece's (stratum, value) counts per column."""
    names = list(dict.fromkeys([*columns, *strata]))
    arrays = piece_arrays(_read_whole(piece, names, batch_rows), columns, strata, piece.describe())
    result = PieceCounts(piece.index, arrays.x.shape[0], arrays.keys)
    for j in range(len(columns)):
        order = column_order(arrays.x[:, j], arrays.local)
        v = arrays.x[order, j]
        s = arrays.local[order]
        if v.size:
            starts = np.flatnonzero(np.concatenate([[True], (v[1:] != v[:-1]) | (s[1:] != s[:-1])]))
        else:
            starts = np.zeros(0, dtype=np.int64)
        result.stratum.append(np.asarray(s[starts], dtype=np.int64))
        result.values.append(np.asarray(v[starts], dtype=np.float64))
        result.counts.append(np.diff(np.append(starts, v.size)).astype(np.int64))
        result.negative_zeros.append(np.flatnonzero(arrays.negative_zero[order, j]))
    return result


# ---------------------------------------------------------------------------
# Pass 2: the plan, in this process
# ---------------------------------------------------------------------------


def plan_name(index: int) -> str:
    """The scratch file of piece ``index``'s released values."""
    return f"plan-{index:05d}.npy"


@dataclass(frozen=True)
class OnedimsPlan:
    """What the plan found: the strata (texts, in order) and their records, the table's
    records, mean and population sd per column, SSE and SST (standardized)."""

    strata: tuple[tuple[str, ...], ...]
    stratum_rows: IntArray
    rows: int
    mean: FloatArray
    std: FloatArray
    sse: float
    sst: float


def _check_strata(
    keys: Sequence[tuple[str, ...]], rows: IntArray, strata: Sequence[str], k: int
) -> None:
    """Refuse ``k`` above the table's records, or a stratum of fewer than ``k`` records, with
    the in-memory lines."""
    check_k(k, int(rows.sum()))
    small = np.flatnonzero(rows < k)
    if not small.size:
        return
    first = int(small[0])
    where = ", ".join(f"{c} = {v}" for c, v in zip(strata, keys[first], strict=True))
    raise AnonlabError(
        f"the stratum {where} holds {int(rows[first])} record(s), fewer than k = {k} "
        f"({small.size} of {rows.size} strata are): choose a smaller k or coarser strata",
        parameter="strata",
    )


def _ranks(part: PieceCounts, j: int, starts: IntArray) -> IntArray:
    """The rank in its stratum's sorted column ``j`` (counted over all strata) of each of a
    piece's records, in the piece's (stratum, value, row) order: a pair's records take the
    ranks from its first rank on, in their row order."""
    counts = part.counts[j]
    before = np.cumsum(counts) - counts
    return np.asarray(np.repeat(starts - before, counts) + np.arange(part.rows), dtype=np.int64)


def plan_pieces(
    parts: Sequence[PieceCounts],
    columns: Sequence[str],
    strata: Sequence[str],
    k: int,
    aggr: str,
    trim: float,
    folder: Path,
) -> OnedimsPlan:
    """Pass 2 (module text): the groups' aggregates, and each piece's released values in its
    (stratum, value, row) order, saved as :func:`plan_name` in ``folder``."""
    from anonlab.engine.base import Moments

    keys = sorted({key for part in parts for key in part.keys})
    number = {key: i for i, key in enumerate(keys)}
    to_global = [np.asarray([number[key] for key in part.keys], dtype=np.int64) for part in parts]
    p = len(columns)
    n = sum(part.rows for part in parts)
    stratum_rows = np.zeros(max(len(keys), 1), dtype=np.int64)
    if parts and p:
        for part, mapping in zip(parts, to_global, strict=True):
            np.add.at(stratum_rows, mapping[part.stratum[0]], part.counts[0])
    _check_strata(keys or [()], stratum_rows, strata, k)
    bounds = np.concatenate([[0], np.cumsum(stratum_rows)])
    ordered = np.empty((p, n), dtype=np.float64)  # a sorted column a row
    starts: list[list[IntArray]] = []  # [column][piece]: each pair's first rank
    for j in range(p):
        g = np.concatenate([m[part.stratum[j]] for part, m in zip(parts, to_global, strict=True)])
        v = np.concatenate([part.values[j] for part in parts])
        c = np.concatenate([part.counts[j] for part in parts])
        which = np.concatenate(
            [np.full(part.values[j].size, i, dtype=np.int64) for i, part in enumerate(parts)]
        )
        order = np.lexsort((which, v, g))
        ranks = np.empty(order.size, dtype=np.int64)
        ranks[order] = np.cumsum(c[order]) - c[order]
        ordered[j] = np.repeat(v[order], c[order])
        offsets = np.cumsum([0, *(part.values[j].size for part in parts)])
        starts.append([ranks[offsets[i] : offsets[i + 1]] for i in range(len(parts))])
        for i, part in enumerate(parts):  # a negative zero at its rank, as in memory
            if part.negative_zeros[j].size:
                ordered[j, _ranks(part, j, starts[j][i])[part.negative_zeros[j]]] = -0.0
    if not n:
        Moments(tuple(columns), 0, np.zeros(p), np.zeros(p)).check_z_scores()  # no records
    # the in-memory standardization's means, deviations and refusal of a constant column
    # (numbers near 1e300 or 1e-300 measured on the column scaled, as in memory)
    mean, std = column_scale(ordered.T, columns)
    moments = Moments(tuple(columns), n, mean, std)
    released = np.empty_like(ordered)
    refined = p == 1  # sdcMicro's one-variable path (as in memory)
    for s in range(len(keys) or 1):
        lo, hi = int(bounds[s]), int(bounds[s + 1])
        values = fixed_group_aggregates(
            ordered[:, lo:hi], k, aggr, trim, refined=refined, transposed=True
        )
        released[:, lo:hi] = np.repeat(values, group_sizes(hi - lo, k), axis=0).T
    sse = sst = 0.0
    for j in range(p):  # column by column: no (n, p) temporaries
        z = (ordered[j] - moments.mean[j]) / moments.std[j]
        sse += float(np.sum((z - (released[j] - moments.mean[j]) / moments.std[j]) ** 2))
        sst += float(np.sum((z - z.mean()) ** 2))
    for i, part in enumerate(parts):
        plan = np.empty((p, part.rows), dtype=np.float64)
        for j in range(p):
            plan[j] = released[j, _ranks(part, j, starts[j][i])]
        np.save(folder / plan_name(part.index), plan)
    return OnedimsPlan(tuple(keys), stratum_rows, n, moments.mean, moments.std, sse, sst)


# ---------------------------------------------------------------------------
# Pass 3: the release
# ---------------------------------------------------------------------------


def _plain(column: Any) -> Any:
    """A column as plain text without nulls (a dictionary column decoded)."""
    import pyarrow as pa

    text = kernels.text_column(column)
    if pa.types.is_dictionary(text.type):
        text = text.dictionary_decode()
    return text


def release_piece(
    piece: Piece,
    columns: Sequence[str],
    strata: Sequence[str],
    keep: Sequence[str],
    plans: str,
    folder: str,
    batch_rows: int,
) -> int:
    """Pass 3 (module text): a piece's part of the release, written as part
    ``piece.index`` of ``folder``; returns its rows."""
    import pyarrow as pa

    names = list(dict.fromkeys([*keep, *columns, *strata]))
    table = _read_whole(piece, names, batch_rows)
    arrays = piece_arrays(table, columns, strata, piece.describe())
    rows = arrays.x.shape[0]
    if rows == 0:
        return 0
    plan = np.load(Path(plans) / plan_name(piece.index))
    released = np.empty((rows, len(columns)), dtype=np.float64)
    for j in range(len(columns)):
        released[column_order(arrays.x[:, j], arrays.local), j] = plan[j]

    def tables() -> Iterator[pa.Table]:
        for start in range(0, rows, batch_rows):
            stop = min(rows, start + batch_rows)
            out = [
                pa.array(np.ascontiguousarray(released[start:stop, columns.index(name)]))
                if name in columns
                else _plain(table.column(name).slice(start, stop - start))
                for name in keep
            ]
            yield pa.Table.from_arrays(out, names=list(keep))

    return kernels.write_batches(folder, piece.index, tables())


# ---------------------------------------------------------------------------
# The whole run
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class OnedimsResult:
    """The release written piece by piece: its summary and the plan's figures."""

    summary: WriteSummary
    plan: OnedimsPlan
    piece_rows: tuple[int, ...]

    def report_keys(
        self, *, k: int, aggr: str, trim: float, strata: Sequence[str], numeric: Sequence[str]
    ) -> dict[str, Any]:
        """The report keys of the in-memory run's
        :meth:`~anonlab.microaggregation.masking.MicroaggregationResult.summary` (the groups
        are those of one column: the same sizes in every column)."""
        sizes = np.concatenate([group_sizes(int(r), k) for r in self.plan.stratum_rows])
        found, counts = np.unique(sizes, return_counts=True)
        return {
            "aggr": aggr,
            "trim": trim,
            "strata": list(strata),
            "seed": None,
            "per_column": True,
            "method": "onedims",
            "variant": "exact",
            "k": k,
            "records": self.plan.rows,
            "columns": list(numeric),
            "nominal": [],
            "ordinal": [],
            "groups": int(sizes.size),
            "group_sizes": {
                "min": int(sizes.min()),
                "max": int(sizes.max()),
                "count_by_size": {str(int(s)): int(c) for s, c in zip(found, counts, strict=True)},
            },
            "measures": {"ILh": self.plan.sse / self.plan.sst},
            "block_size": None,
        }


def onedims_pieces(
    engine: Engine,
    table: Table,
    columns: Sequence[str],
    strata: Sequence[str],
    keep: Sequence[str],
    *,
    k: int,
    aggr: str,
    trim: float,
    output: StagedFolder,
    progress: ProgressFn | None = None,
) -> OnedimsResult:
    """Individual ranking of ``columns`` within ``strata`` over the pieces of ``table``; the
    ``keep`` columns written into ``output`` (the caller commits it), one part per piece."""
    from anonlab.engine.base import base_engine
    from anonlab.microaggregation.methods import check_method

    check_method("onedims", aggr, trim)
    runner = base_engine(engine)
    columns, strata, keep = list(columns), list(strata), list(keep)
    parts: list[PieceCounts] = runner.map_pieces(
        table,
        count_piece,
        columns,
        strata,
        runner.batch_rows,
        progress=progress,
        step="onedims: counting values",
    )
    if not sum(part.rows for part in parts):  # the one reader's line, as in memory
        raise table.no_rows_error()
    scratch = temp_path_for(output.target)  # removed by a later run if this one is killed
    scratch.mkdir()
    try:
        plan = plan_pieces(parts, columns, strata, k, aggr, trim, scratch)
        rows: list[int] = runner.map_pieces(
            table,
            release_piece,
            columns,
            strata,
            keep,
            str(scratch),
            str(output.path),
            runner.batch_rows,
            progress=progress,
            step="onedims: writing the release",
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = WriteSummary(output.target, sum(rows), sum(1 for r in rows if r))
    return OnedimsResult(summary, plan, tuple(part.rows for part in parts))
