"""The work of one piece, and how the results of pieces combine: shared by every engine.

Each engine runs these functions, the NumPy engine in a loop over the pieces,
the Dask engine as tasks over partitions, so the two compute the same
numbers by construction; only the order of *combining* differs, and every
combination here is exact (integer counts, ordered dictionaries) or done in
the same order on both (the moments).

**Dictionaries in first-seen order.** A column's values get codes in order of
first appearance, as :func:`anonlab.dataset.encode_qi` numbers them
(``pandas.factorize(sort=False)``). A piece encodes its values locally; the
union of the pieces' dictionaries taken in piece order (each piece's new
values appended in its own first-seen order) is the dictionary of the whole
table in first-seen order, because every value first seen in piece ``p``
appears after all values first seen in pieces before ``p``.

**Frequency sets.** A :class:`PartialFrequencySet` holds a run of rows' distinct
quasi-identifier tuples in local codes, in order of first appearance, with
their counts, the row of each one's first appearance, and the sparse
sensitive histograms ``(tuple, value, count)``. :func:`merge_partials`
unites consecutive runs: dictionaries united, codes remapped, tuples
concatenated in run order and grouped again; the first occurrence of a tuple
in the concatenation is its first row overall, so the result is again in
first-appearance order. The merge is associative, so a tree of merges (Dask)
and a left fold (NumPy) give the same set.

**Weight sums.** A set may carry, per tuple, the float64 sum of a weights
column (sampling weights, sdcMicro's ``Fk``). A batch sums its rows in row
order (``bincount``), a merge adds the runs' sums in run order (``bincount``
over the concatenation adds one after another). Floating addition is not
associative, so here the shape of the merges matters: with weights both
engines unite the pieces by the same tree, :data:`SPLIT_EVERY` consecutive
sets at a time level by level (:func:`tree_merge`; Dask's tasks, NumPy's
loop), and give the same bits from the same pieces. Against sums per class
in row order the difference is rounding: relative ``~1e-15``, at most about
``(pieces + batches) * 2**-53`` (Higham, "Accuracy and Stability of
Numerical Algorithms", 2nd ed., section 4.2).

**Moments** follow Chan, Golub and LeVeque's pairwise update ("Algorithms for
computing the sample variance", The American Statistician 37(3), 1983): for
runs ``a`` and ``b`` with counts ``n``, means ``m`` and sums of squared
deviations ``M2``, ``delta = m_b - m_a``, ``n = n_a + n_b``,
``m = m_a + delta n_b / n`` and ``M2 = M2_a + M2_b + delta^2 n_a n_b / n``;
the population deviation is ``sqrt(M2 / n)``. Co-moment matrices
``C = sum (x - m)(x - m)^T`` combine the same way,
``C = C_a + C_b + delta delta^T n_a n_b / n``.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.engine.table import Piece
from anonlab.grouping import group_tuples

if TYPE_CHECKING:
    import pyarrow as pa

#: bytes a merge holds per byte of its inputs, the inputs included (measured: ~3.1)
MERGE_FACTOR = 3
#: share of a worker's memory limit a frequency-set merge may use
MEMORY_SHARE = 0.6
SUPPRESSED = "*"  # anonlab.hierarchy.SUPPRESSED, repeated so workers import less
#: sets a merge unites at once in a tree of merges (Dask's merge tasks; both engines with weights)
SPLIT_EVERY = 4


class FrequencySetTooLarge(Exception):  # noqa: N818 -- raised on workers, turned into AnonlabError
    """A merge of partial frequency sets would need more memory than its budget."""

    def __init__(self, needed: int, budget: int, tuples: int) -> None:
        super().__init__(needed, budget, tuples)
        self.needed = needed
        self.budget = budget
        self.tuples = tuples


class UnknownValue(Exception):  # noqa: N818 -- raised on workers, turned into AnonlabError
    """A value of the release pass that the dictionary of the first pass lacks."""

    def __init__(self, column: str, value: str, where: str) -> None:
        super().__init__(column, value, where)
        self.column = column
        self.value = value
        self.where = where


# ---------------------------------------------------------------------------
# Encoding text columns
# ---------------------------------------------------------------------------


def global_codes(
    codes: NDArray[np.int32],
    texts: Sequence[str],
    lookup: Mapping[str, int],
    column: str,
    where: str,
) -> NDArray[np.int32]:
    """A batch column's codes in the first pass's dictionary: its local ``codes`` into
    ``texts`` (:func:`encode_text`) with each text looked up in ``lookup`` (text -> code); a
    text the dictionary lacks is :class:`UnknownValue` (the table changed since; ``where``:
    the piece)."""
    mapped = np.empty(len(texts), dtype=np.int32)
    for i, value in enumerate(texts):
        code = lookup.get(value)
        if code is None:
            raise UnknownValue(column, value, where)
        mapped[i] = code
    return mapped[codes] if len(texts) else np.asarray(codes, dtype=np.int32)


def encode_text(column: Any) -> tuple[NDArray[np.int32], list[str]]:
    """A column's local codes (first-seen order) and the texts they stand for.

    Texts follow :func:`anonlab.tabletext.text_array` (missing -> ``""``). A
    dictionary column (Parquet text read with its dictionary pages) is
    encoded from its indices, without making a string per row. One caveat:
    ``text_array`` prints a timestamp column's fractional seconds when any
    value of the column has them, and here a column is a batch, so a
    timestamp column mixing whole and fractional seconds may print
    differently than when read whole; store such values as text.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    from anonlab.tabletext import text_array

    if isinstance(column, pa.ChunkedArray):
        column = (
            column.chunk(0)
            if column.num_chunks == 1
            else column.unify_dictionaries().combine_chunks()
            if pa.types.is_dictionary(column.type)
            else column.combine_chunks()
        )
    if pa.types.is_dictionary(column.type):
        texts = [str(t) for t in text_array(column.dictionary).to_pylist()] + [""]
        indices = column.indices
        if indices.null_count:
            indices = pc.fill_null(indices, len(texts) - 1)
        codes, uniques = pd.factorize(np.asarray(indices.to_numpy(zero_copy_only=False)))
        local = [texts[int(u)] for u in uniques]
        text_codes, distinct = pd.factorize(np.asarray(local, dtype=object))
        if len(distinct) < len(local):  # two stored values print alike
            codes = text_codes[codes]
            local = [str(t) for t in distinct]
        return codes.astype(np.int32), local
    encoded = pc.dictionary_encode(text_array(column))
    codes_arr = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int32)
    return codes_arr, [str(t) for t in encoded.dictionary.to_pylist()]


def text_column(column: Any) -> Any:
    """A column as text without nulls (:func:`anonlab.tabletext.text_array`); a dictionary
    column stays one (its dictionary made text, a null index pointing at ``""``), so
    writing it needs no string per row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from anonlab.tabletext import text_array

    if isinstance(column, pa.ChunkedArray):
        if not pa.types.is_dictionary(column.type):
            return text_array(column)
        column = column.unify_dictionaries().combine_chunks()
    if not pa.types.is_dictionary(column.type):
        return text_array(column)
    dictionary = text_array(column.dictionary)
    indices = column.indices
    if indices.null_count:
        dictionary = pa.concat_arrays([dictionary, pa.array([""], dictionary.type)])
        indices = pc.fill_null(indices, len(dictionary) - 1)
    return pa.DictionaryArray.from_arrays(indices, dictionary)


def unite(dictionaries: Sequence[Sequence[str]]) -> tuple[list[str], list[NDArray[np.int32]]]:
    """The union of ordered dictionaries (each new value appended in order) and each one's
    code map ``local code -> united code``."""
    index: dict[str, int] = {}
    maps = []
    for values in dictionaries:
        maps.append(
            np.fromiter(
                (index.setdefault(v, len(index)) for v in values), dtype=np.int32, count=len(values)
            )
        )
    return list(index), maps


def aggregate_pairs(
    classes: NDArray[Any], values: NDArray[Any], weights: NDArray[Any] | None, n_values: int
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Sum ``weights`` (1 each if ``None``) per ``(class, value)`` pair: the sparse triples
    sorted by class, then value.

    The pair is one int64 key ``class * n_values + value``; the sums are one
    dense ``bincount`` over the key space when it is not much larger than the
    number of pairs, otherwise the keys are hashed and only the distinct
    ones sorted.
    """
    import pandas as pd

    radix = max(n_values, 1)
    key = classes.astype(np.int64) * radix + values.astype(np.int64)
    if key.shape[0] == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    space = int(key.max()) + 1
    if space <= 4 * key.shape[0] + (1 << 16):
        sums = np.bincount(key, weights=weights, minlength=space)
        uniq = np.flatnonzero(sums)
        sums = sums[uniq]
    else:
        inverse, distinct = pd.factorize(key)
        sums = np.bincount(inverse, weights=weights, minlength=len(distinct))
        order = np.argsort(distinct, kind="stable")
        uniq, sums = np.asarray(distinct)[order], sums[order]
        keep = sums != 0
        uniq, sums = uniq[keep], sums[keep]
    return uniq // radix, uniq % radix, np.rint(sums).astype(np.int64)


# ---------------------------------------------------------------------------
# Frequency sets
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Histogram:
    """Sparse per-tuple histogram of one sensitive column: ``(tuple, value, count)`` triples
    sorted by tuple then value; values index ``dictionary``."""

    dictionary: list[str]
    classes: NDArray[np.int64]
    values: NDArray[np.int64]
    counts: NDArray[np.int64]

    @property
    def nbytes(self) -> int:
        """Memory held by the triples."""
        return int(self.classes.nbytes + self.values.nbytes + self.counts.nbytes)


@dataclass(frozen=True)
class PartialFrequencySet:
    """The distinct quasi-identifier tuples of a run of rows (see the module text)."""

    rows: int
    dictionaries: list[list[str]]
    tuples: NDArray[np.int32]  # (d, m) local codes, first-appearance order
    counts: NDArray[np.int64]
    first_rows: NDArray[np.int64]  # row of first appearance, counted from the run's start
    histograms: list[Histogram]
    weights: NDArray[np.float64] | None = None  # per-tuple sums of a weights column

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays (dictionaries aside)."""
        return int(
            self.tuples.nbytes
            + self.counts.nbytes
            + self.first_rows.nbytes
            + sum(h.nbytes for h in self.histograms)
            + (0 if self.weights is None else self.weights.nbytes)
        )


def weight_values(column: Any, name: str, where: str, first_row: int = 0) -> NDArray[np.float64]:
    """A batch's sampling weights as float64; each must be a finite number above 0.

    A float64 column is taken as it is; other columns are read as text and
    parsed as :func:`anonlab.textnumbers.parse_numbers` parses them in memory
    (stripped, NaN where a value is no number). A bad value is the in-memory
    message of :func:`anonlab.risk.individual.sampling_weights`, its row
    counted in the piece (``first_row`` is the batch's first row there).
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    from anonlab.errors import AnonlabError
    from anonlab.tabletext import text_array
    from anonlab.textnumbers import parse_numbers

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_floating(column.type) or pa.types.is_integer(column.type):
        values = np.asarray(
            column.cast(pa.float64()).to_numpy(zero_copy_only=False), dtype=np.float64
        )  # a null becomes NaN
        text = None
    else:
        try:  # every value a plain number: Arrow's parse, correctly rounded as in memory
            values = np.asarray(
                pc.utf8_trim_whitespace(text_array(column))
                .cast(pa.float64())
                .to_numpy(zero_copy_only=False),
                dtype=np.float64,
            )
            text = None
        except pa.ArrowInvalid:  # some value is not: pandas' reading, NaN where none parses
            text = pd.Series(text_array(column).to_pylist(), dtype=object)
            values = parse_numbers(text).to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values <= 0)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        shown = (
            text.iloc[row]
            if text is not None
            else column[row].as_py()
            if pa.types.is_floating(column.type) or pa.types.is_integer(column.type)
            else str(text_array(column)[row].as_py())
        )
        raise AnonlabError(
            f"weights column '{name}' holds {shown!r} in data row {first_row + row + 1} of "
            f"{where}: every sampling weight must be a number above 0",
            parameter="weights",
        )
    return values


def batch_partial(
    batch: pa.Table,
    qi: Sequence[str],
    sensitive: Sequence[str],
    weights: str | None = None,
    where: str = "the table",
    first_row: int = 0,
) -> PartialFrequencySet:
    """The partial frequency set of one batch of rows; with ``weights`` (a column) each
    tuple's sum of it, in row order (:func:`weight_values` checks the values)."""
    encoded = [encode_text(batch.column(name)) for name in qi]
    matrix = (
        np.column_stack([codes for codes, _ in encoded])
        if encoded
        else np.zeros((batch.num_rows, 0), dtype=np.int32)
    )
    inverse, first = group_tuples(matrix, [len(d) for _, d in encoded])
    counts = np.bincount(inverse, minlength=len(first)).astype(np.int64)
    histograms = []
    for name in sensitive:
        codes, dictionary = encode_text(batch.column(name))
        classes, values, hist = aggregate_pairs(inverse, codes, None, len(dictionary))
        histograms.append(Histogram(dictionary, classes, values, hist))
    sums: NDArray[np.float64] | None = None
    if weights is not None:
        w = weight_values(batch.column(weights), weights, where, first_row)
        sums = np.bincount(inverse, weights=w, minlength=len(first)).astype(np.float64)
    return PartialFrequencySet(
        batch.num_rows,
        [d for _, d in encoded],
        matrix[first].astype(np.int32),
        counts,
        first,
        histograms,
        sums,
    )


def merge_partials(
    parts: Sequence[PartialFrequencySet], budget: int | None = None
) -> PartialFrequencySet:
    """Unite consecutive runs of rows (in order); raise :class:`FrequencySetTooLarge` when
    the merge would need more than ``budget`` bytes."""
    parts = [p for p in parts if p.rows] or list(parts[:1])
    if len(parts) == 1:
        return parts[0]
    needed = MERGE_FACTOR * sum(p.nbytes for p in parts)
    if budget is not None and needed > budget:
        raise FrequencySetTooLarge(needed, budget, sum(len(p.counts) for p in parts))
    m = parts[0].tuples.shape[1]
    columns = [unite([p.dictionaries[j] for p in parts]) for j in range(m)]
    blocks, offsets, row_offsets = [], [0], [0]
    for i, p in enumerate(parts):
        blocks.append(
            np.column_stack([columns[j][1][i][p.tuples[:, j]] for j in range(m)])
            if m
            else np.zeros((len(p.counts), 0), dtype=np.int32)
        )
        offsets.append(offsets[-1] + len(p.counts))
        row_offsets.append(row_offsets[-1] + p.rows)
    tuples = np.concatenate(blocks)
    inverse, first = group_tuples(tuples, [len(values) for values, _ in columns])
    counts = np.bincount(
        inverse, weights=np.concatenate([p.counts for p in parts]), minlength=len(first)
    ).astype(np.int64)
    first_rows = np.concatenate([p.first_rows + row_offsets[i] for i, p in enumerate(parts)])
    histograms = [
        _merge_histograms([p.histograms[s] for p in parts], inverse, offsets)
        for s in range(len(parts[0].histograms))
    ]
    sums: NDArray[np.float64] | None = None
    if parts[0].weights is not None:  # run after run, each tuple's sums added in run order
        sums = np.bincount(
            inverse, weights=np.concatenate([_weights(p) for p in parts]), minlength=len(first)
        ).astype(np.float64)
    return PartialFrequencySet(
        row_offsets[-1],
        [values for values, _ in columns],
        tuples[first].astype(np.int32),
        counts,
        first_rows[first],
        histograms,
        sums,
    )


def _weights(part: PartialFrequencySet) -> NDArray[np.float64]:
    """A set's weight sums (every set of a weighted merge has them)."""
    if part.weights is None:
        raise ValueError("a merge of weighted and unweighted frequency sets")
    return part.weights


def tree_merge(
    parts: Any,
    merge: Callable[[list[PartialFrequencySet]], PartialFrequencySet],
    split_every: int = SPLIT_EVERY,
) -> PartialFrequencySet | None:
    """Unite a stream of consecutive sets by the tree of Dask's merge tasks (``None``: none).

    Level 0 is the sets; level ``l + 1`` is ``merge`` of each ``split_every``
    consecutive sets of level ``l``, the last group perhaps smaller, until
    one set is left. Groups are merged as soon as they are full, so at most
    ``split_every - 1`` sets wait on each level.
    """
    levels: list[list[PartialFrequencySet]] = []

    def push(part: PartialFrequencySet, level: int) -> None:
        if level == len(levels):
            levels.append([])
        levels[level].append(part)
        if len(levels[level]) == split_every:
            group, levels[level] = levels[level], []
            push(merge(group), level + 1)

    for part in parts:
        push(part, 0)
    level = 0
    while level < len(levels):
        waiting = levels[level]
        above = any(levels[level + 1 :])
        if len(waiting) == 1 and not above:
            return waiting[0]
        if waiting:
            levels[level] = []
            push(merge(waiting) if len(waiting) > 1 else waiting[0], level + 1)
        level += 1
    return None


def _merge_histograms(
    hists: Sequence[Histogram], inverse: NDArray[np.int64], offsets: Sequence[int]
) -> Histogram:
    """Histograms of consecutive runs at the merged tuples: classes through ``inverse``,
    values through the united dictionary, counts summed."""
    dictionary, maps = unite([h.dictionary for h in hists])
    classes = np.concatenate([inverse[h.classes + offsets[i]] for i, h in enumerate(hists)])
    values = np.concatenate([maps[i][h.values] for i, h in enumerate(hists)])
    weights = np.concatenate([h.counts for h in hists]).astype(np.float64)
    c, v, n = aggregate_pairs(classes, values, weights, len(dictionary))
    return Histogram(dictionary, c, v, n)


def piece_partial(
    piece: Piece,
    qi: Sequence[str],
    sensitive: Sequence[str],
    batch_rows: int,
    budget: int | None = None,
    weights: str | None = None,
) -> PartialFrequencySet:
    """The partial frequency set of one piece: its batches' sets merged as they come.

    Batches are merged lazily: pending batch sets are united with the running
    set once they hold as many tuples as it does, so each tuple is re-grouped
    a bounded number of times on average. With ``weights`` (a column) each
    tuple's sum of it is carried too (module text).
    """
    columns = list(dict.fromkeys([*qi, *sensitive, *([weights] if weights else [])]))
    done: PartialFrequencySet | None = None
    pending: list[PartialFrequencySet] = []
    rows = 0
    for batch in piece.batches(columns, batch_rows):
        pending.append(batch_partial(batch, qi, sensitive, weights, piece.describe(), rows))
        rows += batch.num_rows
        waiting = sum(len(p.counts) for p in pending)
        if done is None or waiting >= len(done.counts):
            done = merge_partials([*([done] if done is not None else []), *pending], budget)
            pending = []
    if done is None and not pending:
        return empty_partial(len(qi), len(sensitive), weighted=weights is not None)
    return merge_partials([*([done] if done is not None else []), *pending], budget)


def empty_partial(m: int, sensitive: int, weighted: bool = False) -> PartialFrequencySet:
    """The frequency set of no rows (with empty weight sums when ``weighted``)."""
    empty = np.zeros(0, dtype=np.int64)
    return PartialFrequencySet(
        0,
        [[] for _ in range(m)],
        np.zeros((0, m), dtype=np.int32),
        empty,
        empty,
        [Histogram([], empty, empty, empty) for _ in range(sensitive)],
        np.zeros(0) if weighted else None,
    )


# ---------------------------------------------------------------------------
# Dictionary encoding with codes kept
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PieceCodes:
    """One piece's columns encoded: local dictionaries, value counts and (optionally) codes."""

    rows: int
    dictionaries: list[list[str]]
    frequencies: list[NDArray[np.int64]]
    codes: NDArray[np.int32] | None  # (rows, m) local codes


def piece_codes(piece: Piece, columns: Sequence[str], batch_rows: int, keep: bool) -> PieceCodes:
    """Encode one piece's ``columns`` batch by batch against growing dictionaries."""
    index: list[dict[str, int]] = [{} for _ in columns]
    freqs: list[NDArray[np.int64]] = [np.zeros(0, dtype=np.int64) for _ in columns]
    blocks: list[NDArray[np.int32]] = []
    rows = 0
    for batch in piece.batches(list(columns), batch_rows):
        block = np.empty((batch.num_rows, len(columns)), dtype=np.int32)
        for j, name in enumerate(columns):
            local, values = encode_text(batch.column(name))
            lookup = np.fromiter(
                (index[j].setdefault(v, len(index[j])) for v in values),
                dtype=np.int32,
                count=len(values),
            )
            codes = lookup[local] if len(values) else local
            block[:, j] = codes
            counts = np.bincount(codes, minlength=len(index[j])).astype(np.int64)
            counts[: len(freqs[j])] += freqs[j]
            freqs[j] = counts
        rows += batch.num_rows
        if keep:
            blocks.append(block)
    kept = None
    if keep:
        kept = np.concatenate(blocks) if blocks else np.zeros((0, len(columns)), dtype=np.int32)
    return PieceCodes(rows, [list(d) for d in index], freqs, kept)


# ---------------------------------------------------------------------------
# Moments
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PartialMoments:
    """Count, means and sums of squared deviations of a run of rows (one entry a column)."""

    count: int
    mean: NDArray[np.float64]
    m2: NDArray[np.float64]


def _merged_mean(
    a_count: int, a_mean: NDArray[np.float64], b_count: int, b_mean: NDArray[np.float64]
) -> tuple[int, NDArray[np.float64], NDArray[np.float64], float]:
    """What Chan's update of two consecutive runs (both with rows) shares between the
    moments and the co-moments: ``n = n_a + n_b``, ``delta = mean_b - mean_a``, the merged
    mean ``mean_a + delta n_b / n`` and the weight ``n_a n_b / n`` of ``delta``'s term."""
    n = a_count + b_count
    delta = b_mean - a_mean
    return n, delta, a_mean + delta * (b_count / n), a_count * b_count / n


def combine_moments(a: PartialMoments, b: PartialMoments) -> PartialMoments:
    """Chan, Golub and LeVeque's update for two consecutive runs (module text):
    ``M2 = M2_a + M2_b + delta^2 n_a n_b / n``."""
    if a.count == 0:
        return b
    if b.count == 0:
        return a
    n, delta, mean, weight = _merged_mean(a.count, a.mean, b.count, b.mean)
    return PartialMoments(n, mean, a.m2 + b.m2 + delta * delta * weight)


@dataclass(frozen=True)
class PartialCoMoments:
    """Count, means and co-moment matrix ``C = sum (x - mean)(x - mean)^T`` of a run of rows."""

    count: int
    mean: NDArray[np.float64]
    comoment: NDArray[np.float64]


def empty_comoments(d: int) -> PartialCoMoments:
    """The co-moments of no rows over ``d`` columns."""
    return PartialCoMoments(0, np.zeros(d), np.zeros((d, d)))


def block_comoments(x: NDArray[np.float64]) -> PartialCoMoments:
    """The co-moments of the rows of ``x`` (its mean, then ``(x - mean)^T (x - mean)``)."""
    if x.shape[0] == 0:
        return empty_comoments(x.shape[1])
    mean = x.mean(axis=0)
    centred = x - mean
    return PartialCoMoments(x.shape[0], mean, centred.T @ centred)


def combine_comoments(a: PartialCoMoments, b: PartialCoMoments) -> PartialCoMoments:
    """Chan's update of co-moment matrices for two consecutive runs:
    ``C = C_a + C_b + delta delta^T n_a n_b / n`` (module text)."""
    if a.count == 0:
        return b
    if b.count == 0:
        return a
    n, delta, mean, weight = _merged_mean(a.count, a.mean, b.count, b.mean)
    return PartialCoMoments(n, mean, a.comoment + b.comoment + np.outer(delta, delta) * weight)


def piece_comoments(piece: Piece, columns: Sequence[str], batch_rows: int) -> PartialCoMoments:
    """The co-moments of ``columns`` of one piece, batches combined in order."""
    total = empty_comoments(len(columns))
    for batch in piece.batches(list(columns), batch_rows):
        total = combine_comoments(
            total, block_comoments(numeric_block(batch, columns, piece.describe()))
        )
    return total


def numeric_block(batch: pa.Table, columns: Sequence[str], where: str) -> NDArray[np.float64]:
    """``columns`` of a batch as a ``(rows, d)`` float64 matrix, each value the double its
    text parses to (:func:`anonlab.tabletext.double_array`; a missing value is an error)."""
    from anonlab.tabletext import double_array

    out = np.empty((batch.num_rows, len(columns)), dtype=np.float64, order="F")
    for j, name in enumerate(columns):
        out[:, j] = double_array(batch.column(name), name, where).to_numpy()
    return out


def piece_moments(piece: Piece, columns: Sequence[str], batch_rows: int) -> PartialMoments:
    """The moments of one piece, batch by batch (each batch: mean, then centred squares)."""
    total = PartialMoments(0, np.zeros(len(columns)), np.zeros(len(columns)))
    for batch in piece.batches(list(columns), batch_rows):
        x = numeric_block(batch, columns, piece.describe())
        if x.shape[0] == 0:
            continue
        mean = x.mean(axis=0)
        centred = x - mean
        m2 = np.einsum("ij,ij->j", centred, centred)
        total = combine_moments(total, PartialMoments(x.shape[0], mean, m2))
    return total


# ---------------------------------------------------------------------------
# Writing pieces
# ---------------------------------------------------------------------------


def part_name(index: int) -> str:
    """The file name of piece ``index`` in a written dataset."""
    return f"part-{index:05d}.parquet"


def write_batches(folder: str, index: int, batches: Any) -> int:
    """Write Arrow tables as one Parquet part (to a temporary name, then renamed, so a task
    run twice leaves one whole file); returns the rows written."""
    import pyarrow.parquet as pq

    target = Path(folder) / part_name(index)
    tmp = Path(folder) / f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    writer = None
    rows = 0
    try:
        for table in batches:
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            writer.write_table(table)
            rows += table.num_rows
        if writer is None:
            return 0
        writer.close()
        writer = None
        os.replace(tmp, target)
    finally:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)
    return rows


@dataclass(frozen=True)
class ReleaseCounts:
    """Rows one piece wrote, and how many of them were suppressed."""

    rows: int
    suppressed: int


def write_release_piece(piece: Piece, plan: Any, folder: str, batch_rows: int) -> ReleaseCounts:
    """Apply ``plan`` (a :class:`anonlab.engine.base.ReleasePlan`) to one piece and write it.

    Each quasi-identifier's text is mapped through the plan's dictionary to
    its group at the node and that group's label; rows whose class (tuple of
    groups) is one of the plan's suppressed classes get ``*`` in every
    quasi-identifier. Dropped columns are left out; every other column is
    written as its text. Quasi-identifiers (and text columns the source
    stores with a dictionary) are written as Arrow dictionaries of text, as
    a release's categorical columns are: Parquet stores their dictionary
    pages as they are.
    """
    suppressed = [0]
    rows = write_batches(folder, piece.index, release_tables(piece, plan, batch_rows, suppressed))
    return ReleaseCounts(rows, suppressed[0])


def release_tables(
    piece: Piece, plan: Any, batch_rows: int, suppressed: list[int]
) -> Iterator[Any]:
    """The release of one piece by ``plan``, an Arrow table per batch
    (:func:`write_release_piece`); ``suppressed[0]`` counts the suppressed rows."""
    import pyarrow as pa

    keep = [c for c in piece.columns() if c not in plan.drop]
    for batch in piece.batches(keep, batch_rows):
        groups = np.column_stack(
            [
                plan.groups_of(j, *encode_text(batch.column(name)), where=piece.describe())
                for j, name in enumerate(plan.columns)
            ]
        )
        hidden = plan.suppressed_rows(groups)
        suppressed[0] += int(hidden.sum())
        arrays = []
        for name in keep:
            if name in plan.columns:
                j = plan.columns.index(name)
                arrays.append(plan.label_array(j, groups[:, j], hidden))
            else:
                arrays.append(text_column(batch.column(name)))
        yield pa.Table.from_arrays(arrays, names=keep)


RowFunction = Callable[[NDArray[np.float64]], NDArray[np.float64]]


def transform_piece(
    piece: Piece, columns: Sequence[str], function: RowFunction, folder: str, batch_rows: int
) -> int:
    """Replace ``columns`` of one piece by ``function`` of their ``(rows, d)`` float64 block
    and write it (the other columns as their text); returns the rows written."""
    import pyarrow as pa

    names = list(piece.columns())

    def tables() -> Any:
        for batch in piece.batches(names, batch_rows):
            x = numeric_block(batch, columns, piece.describe())
            y = np.asarray(function(x), dtype=np.float64)
            if y.shape != x.shape:
                raise ValueError(
                    f"the row function returned shape {y.shape} for a block of shape {x.shape}"
                )
            arrays = [
                pa.array(np.ascontiguousarray(y[:, columns.index(name)]))
                if name in columns
                else text_column(batch.column(name))
                for name in names
            ]
            yield pa.Table.from_arrays(arrays, names=names)

    return write_batches(folder, piece.index, tables())
