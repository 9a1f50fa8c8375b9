"""The perturbation's passes over the rows, on any engine: a row-wise map, its sample, its check.

Once the column means and deviations are known (:func:`moments_pass`; for
rbt, whose angles need the z-scores' covariance matrix,
:func:`covariance_pass`; both with the transform drawn from the seed:
:func:`plan_transform`), a perturbation releases each record as a function
of that record only: ``y = A (x - mean) / std`` (obt, rbt, rotation), and its
inverse is ``x = mean + std * (A^T y)`` (:class:`~anonlab.engine.base.AffineRows`
computes both); gdp adds its translation and the noise of the record's global
row, ``y = A z + t + e`` (:class:`RowNoise`: the noise of rows
``[j B, (j + 1) B)`` is drawn from ``default_rng([seed, j])``, so a piece
that knows its first global row draws its own). :func:`map_rows` runs such a
map over every piece of a table with :meth:`EngineBase.map_pieces` and writes
one Parquet part per piece into a staged folder; in the same pass each piece
returns

* the moments of what it wrote (count, means, sums of squared deviations:
  the release's fingerprint, combined in piece order by Chan's update);
* whether each mapped input column holds integers (as the in-memory reader
  tells them apart: an integer type, or text spelled ``[+-]digits``);
* a deterministic sample of its input rows: the ``sample_rows`` rows with the
  smallest keys drawn from ``default_rng([SAMPLE_SEED, piece])``, i.e. a
  uniform sample without replacement, the same on every engine and run.

:func:`written_sample` then reads the *written* parts back (again as engine
tasks, one per part) at the sampled positions, and :func:`sample_findings`
checks the pairs of sampled records, independently of the transform code
(:func:`check_sample` refuses a table that fails):

* distances: ``||y_i - y_j|| = ||(x_i - x_j) / std||`` for every pair of the
  sample (:func:`anonlab.verify.perturbation.distance_findings`, all pairs up
  to its limit of 2,000 records: 1,999,000 pairs). A wrong or non-orthogonal
  matrix, a column paired with the wrong partner, a wrong deviation or rows
  written out of order change nearly every distance, so a few thousand
  records catch them; a fault confined to a handful of rows can escape a
  sample, which is why a table of at most the sample's size is checked whole;
* inversion with the key as written (its JSON, not the key class):
  ``x = mean + std * ((y - t - e) A)`` must give the sampled input back to
  ``1e-9 (|x| + std)``, the noise ``e`` drawn here from the key's seed at the
  sampled global rows (:func:`key_noise`). A gdp release keeps no distance,
  so it is checked by this inversion alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.engine import kernels
from anonlab.engine.base import AffineRows, Moments, WriteSummary, base_engine
from anonlab.engine.table import ParquetPiece, Piece, Table
from anonlab.errors import AnonlabError
from anonlab.staging import StagedFolder

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from anonlab.engine.base import Engine
    from anonlab.perturbation.key import Block
    from anonlab.perturbation.library import MatrixLibrary
    from anonlab.progress import ProgressFn

FloatArray = NDArray[np.float64]
#: rows sampled over the whole table (every pair of them is checked: 1,999,000 pairs)
SAMPLE_ROWS = 2_000
#: the seed of the sample's keys (a constant: the sample is part of the check, not a secret)
SAMPLE_SEED = 20_141_114
INTEGER_TEXT = r"^[+-]?[0-9]+$"  # anonlab.textnumbers.INTEGER_TEXT


@dataclass(frozen=True)
class RowNoise:
    """gdp's noise of the blocked stream (:func:`anonlab.perturbation.key.add_noise`), added
    to each mapped row (``sign`` 1, after the map) or removed from each input row (``sign``
    -1, before it); ``first_rows[piece]`` is the global row of the piece's first row."""

    seed: int
    scale: float
    sign: float
    first_rows: Mapping[int, int]


@dataclass(frozen=True)
class PieceMapped:
    """What one piece wrote: its rows, the written columns' moments and sums of squares,
    which input columns hold integers, and its sampled rows (positions in the piece, input
    values)."""

    index: int
    rows: int
    moments: kernels.PartialMoments
    squares: FloatArray
    integer: tuple[bool, ...]
    positions: NDArray[np.int64]
    sample: FloatArray


@dataclass(frozen=True)
class MappedTable:
    """A table mapped and written: the summary, the written columns' moments, integer flags
    of the input columns, the sampled input rows (``positions[piece]`` in each piece), and
    the written columns' sums of squares ``sum y^2``."""

    summary: WriteSummary
    moments: Moments
    integer: tuple[bool, ...]
    positions: dict[int, NDArray[np.int64]]
    sample: FloatArray
    squares: FloatArray

    def fingerprint(self) -> tuple[FloatArray, FloatArray]:
        """The written columns' means and deviations as a key's release fingerprint takes
        them in memory (:func:`anonlab.perturbation.key.fingerprint`): ``mean`` and
        ``sqrt(max(sum y^2 / n - mean^2, 0))``, the same doubles as in memory for a
        table mapped in one batch."""
        n = max(self.moments.count, 1)
        means = self.moments.mean
        return means, np.sqrt(np.maximum(self.squares / n - means * means, 0.0))


def integer_column(column: Any) -> bool:
    """Whether a raw column holds integers: an integer type, or text all ``[+-]digits``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if pa.types.is_integer(kind):
        return True
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return False
    text = column.cast(kind) if pa.types.is_dictionary(column.type) else column
    return bool(len(text) == 0 or pc.all(pc.match_substring_regex(text, INTEGER_TEXT)).as_py())


def numbers(batch: pa.Table, columns: Sequence[str], piece: Piece, seen: int) -> FloatArray:
    """``columns`` of a batch of ``piece`` as doubles
    (:func:`anonlab.engine.kernels.numeric_block`), refusing a value that is not a finite
    number with the in-memory run's line (:func:`anonlab.textnumbers.exact_matrix`: "column
    'c' is not numeric (record 2: 'x') ...", "... has a missing or infinite value ...").

    The records are counted within the batch, which starts at row ``seen`` of the piece: on
    the first batch of the first piece (all of a table read as one piece in one batch) the
    line is the in-memory one word for word; elsewhere it says where the count starts.
    """
    from anonlab.tabletext import to_frame
    from anonlab.textnumbers import exact_matrix

    try:
        x = kernels.numeric_block(batch, columns, piece.describe())
    except AnonlabError as exc:
        engine_error: AnonlabError | None = exc
    else:
        if np.isfinite(x).all():
            return x
        engine_error = None
    try:
        exact_matrix(
            to_frame(batch.select(list(columns)), arrow_strings=True), columns, allow_constant=True
        )
    except AnonlabError as exc:
        if piece.index == 0 and seen == 0:
            raise
        raise AnonlabError(
            f"{exc} (records counted from row {seen + 1} of {piece.describe()})"
        ) from None
    if engine_error is not None:  # a spelling the in-memory reader takes but Arrow does not
        raise engine_error
    return x


def _smallest(keys: FloatArray, size: int) -> NDArray[np.intp]:
    """Indices of the ``size`` smallest ``keys`` (all when there are fewer), in any order."""
    if keys.size <= size:
        return np.arange(keys.size)
    return np.argpartition(keys, size - 1)[:size]


class _Sampler:
    """The ``size`` rows of a piece with the smallest random keys, kept as the rows stream by."""

    def __init__(self, index: int, size: int, d: int) -> None:
        self.rng = np.random.default_rng([SAMPLE_SEED, index])
        self.size = size
        self.keys = np.zeros(0)
        self.positions = np.zeros(0, dtype=np.int64)
        self.values = np.zeros((0, d))
        self.seen = 0

    def add(self, x: FloatArray) -> None:
        """Offer the next rows ``x`` of the piece."""
        keys: FloatArray = self.rng.random((x.shape[0],))
        if self.size < 1:
            self.seen += x.shape[0]
            return
        keep = _smallest(keys, self.size)
        keys = np.concatenate([self.keys, keys[keep]])
        positions = np.concatenate([self.positions, self.seen + keep.astype(np.int64)])
        values = np.concatenate([self.values, x[keep]])
        best = _smallest(keys, self.size)
        self.keys, self.positions, self.values = keys[best], positions[best], values[best]
        self.seen += x.shape[0]

    def result(self) -> tuple[NDArray[np.int64], FloatArray]:
        """The sampled positions in row order, and their rows."""
        order = np.argsort(self.positions)
        return self.positions[order], self.values[order]


def _noisy(x: FloatArray, noise: RowNoise | None, sign: float, piece: int, seen: int) -> FloatArray:
    """``x`` with ``noise`` added (or removed) when its sign is ``sign``; the rows are the
    piece's rows from ``seen`` on."""
    from anonlab.perturbation.key import add_noise

    if noise is None or noise.sign != sign or noise.scale == 0.0:
        return x
    out = np.array(x, dtype=np.float64, copy=True)
    add_noise(
        out,
        noise.seed,
        noise.scale,
        sign=sign,
        blocked=True,
        first_row=noise.first_rows[piece] + seen,
    )
    return out


def map_piece(
    piece: Piece,
    columns: Sequence[str],
    keep: Sequence[str],
    function: AffineRows,
    integer_out: Sequence[bool] | None,
    folder: str,
    batch_rows: int,
    sample_rows: int,
    noise: RowNoise | None = None,
) -> PieceMapped:
    """Map ``columns`` of one piece by ``function`` (with ``noise`` removed before it or
    added after it) and write the ``keep`` columns.

    The mapped columns are written as doubles, or as the nearest integers
    (``int64``) where ``integer_out`` says so; the other kept columns as their
    text (:func:`anonlab.engine.kernels.text_column`).
    """
    import pyarrow as pa

    names = list(dict.fromkeys([*keep, *columns]))
    d = len(columns)
    total = kernels.PartialMoments(0, np.zeros(d), np.zeros(d))
    squares = np.zeros(d)
    integer = [True] * d
    sampler = _Sampler(piece.index, sample_rows, d)

    def tables() -> Any:
        nonlocal total, squares
        for batch in piece.batches(names, batch_rows):
            for j, name in enumerate(columns):
                integer[j] = integer[j] and integer_column(batch.column(name))
            seen = sampler.seen
            x = numbers(batch, columns, piece, seen)
            sampler.add(x)
            y = np.asarray(function(_noisy(x, noise, -1.0, piece.index, seen)), dtype=np.float64)
            y = _noisy(y, noise, 1.0, piece.index, seen)
            if x.shape[0]:
                mean = y.mean(axis=0)
                centred = y - mean
                total = kernels.combine_moments(
                    total,
                    kernels.PartialMoments(
                        x.shape[0], mean, np.einsum("ij,ij->j", centred, centred)
                    ),
                )
                squares = squares + np.einsum("ij,ij->j", y, y)
            arrays: list[pa.Array] = []
            for name in keep:
                if name not in columns:
                    arrays.append(kernels.text_column(batch.column(name)))
                    continue
                j = list(columns).index(name)
                column = np.ascontiguousarray(y[:, j])
                if integer_out is not None and integer_out[j]:
                    arrays.append(pa.array(np.rint(column).astype(np.int64)))
                else:
                    arrays.append(pa.array(column))
            yield pa.Table.from_arrays(arrays, names=list(keep))

    rows = kernels.write_batches(folder, piece.index, tables())
    positions, sample = sampler.result()
    return PieceMapped(piece.index, rows, total, squares, tuple(integer), positions, sample)


def pieces_of(table: Table) -> int:
    """How many pieces ``table`` has (a Dask DataFrame's partitions included)."""
    if table.dask_frame is not None:
        return int(table.dask_frame.npartitions)
    return len(table.pieces)


def _indexed_moments(
    piece: Piece, columns: Sequence[str], batch_rows: int
) -> tuple[int, kernels.PartialMoments]:
    """The piece's index and its moments, batch by batch (each batch: mean, then centred
    squares, as :func:`anonlab.engine.kernels.piece_moments`; values read by
    :func:`numbers`)."""
    total = kernels.PartialMoments(0, np.zeros(len(columns)), np.zeros(len(columns)))
    for batch in piece.batches(list(columns), batch_rows):
        x = numbers(batch, columns, piece, total.count)
        if x.shape[0]:
            total = kernels.combine_moments(total, _batch_moments(x)[0])
    return piece.index, total


def _batch_moments(x: NDArray[np.float64]) -> tuple[kernels.PartialMoments, NDArray[np.float64]]:
    """A batch's moments (its mean, then the sums of its centred squares by ``einsum``) and
    its centred values."""
    mean = x.mean(axis=0)
    centred = x - mean
    squares = np.einsum("ij,ij->j", centred, centred)
    return kernels.PartialMoments(x.shape[0], mean, squares), centred


def moments_pass(
    engine: Engine, table: Table, columns: Sequence[str], *, progress: ProgressFn | None = None
) -> tuple[Moments, dict[int, int]]:
    """:meth:`Engine.moments` (pieces combined in order by Chan's update), and the global row
    of each piece's first row (the counts before it), which the blocked noise needs."""
    runner = base_engine(engine)
    parts: list[tuple[int, kernels.PartialMoments]] = runner.map_pieces(
        table, _indexed_moments, list(columns), runner.batch_rows, progress=progress
    )
    total = kernels.PartialMoments(0, np.zeros(len(columns)), np.zeros(len(columns)))
    first_rows: dict[int, int] = {}
    for index, part in parts:
        first_rows[index] = total.count
        total = kernels.combine_moments(total, part)
    if total.count == 0:
        raise table.no_rows_error()
    return (
        Moments(tuple(columns), total.count, total.mean, np.sqrt(total.m2 / total.count)),
        first_rows,
    )


def _piece_comoments(
    piece: Piece, columns: Sequence[str], batch_rows: int
) -> tuple[kernels.PartialMoments, kernels.PartialCoMoments]:
    """One piece's moments (centred squares by ``einsum``, as :func:`moments_pass` and the
    in-memory z-scores take them) and its co-moment matrix, batch by batch."""
    d = len(columns)
    moments = kernels.PartialMoments(0, np.zeros(d), np.zeros(d))
    comoments = kernels.empty_comoments(d)
    for batch in piece.batches(list(columns), batch_rows):
        x = numbers(batch, columns, piece, moments.count)
        if x.shape[0] == 0:
            continue
        part, centred = _batch_moments(x)
        moments = kernels.combine_moments(moments, part)
        comoments = kernels.combine_comoments(
            comoments, kernels.PartialCoMoments(x.shape[0], part.mean, centred.T @ centred)
        )
    return moments, comoments


def covariance_pass(
    engine: Engine, table: Table, columns: Sequence[str], *, progress: ProgressFn | None = None
) -> tuple[Moments, FloatArray]:
    """The moments of ``columns`` and the population covariance of their z-scores, in one
    pass: each piece's centred squares and co-moment matrix ``C``, combined in piece order
    by Chan's update; ``std = sqrt(M2 / n)`` (the doubles :func:`moments_pass` and the
    in-memory z-scores give) and ``cov(z) = C / (n s s^T)``, ``s = sqrt(diag(C) / n)``
    (rbt's angles need nothing else of the data). Refuses what has no z-score
    (:meth:`Moments.check_z_scores`)."""
    runner = base_engine(engine)
    parts: list[tuple[kernels.PartialMoments, kernels.PartialCoMoments]] = runner.map_pieces(
        table,
        _piece_comoments,
        list(columns),
        runner.batch_rows,
        progress=progress,
        step="reading the covariances",
    )
    d = len(columns)
    moments = kernels.PartialMoments(0, np.zeros(d), np.zeros(d))
    total = kernels.empty_comoments(d)
    for part_moments, part_comoments in parts:
        moments = kernels.combine_moments(moments, part_moments)
        total = kernels.combine_comoments(total, part_comoments)
    count = max(total.count, 1)
    result = Moments(tuple(columns), total.count, moments.mean, np.sqrt(moments.m2 / count))
    result.check_z_scores()
    scale = np.sqrt(np.maximum(total.comoment.diagonal(), 0.0) / count)
    return result, total.comoment / count / np.outer(scale, scale)


def map_rows(
    engine: Engine,
    table: Table,
    columns: Sequence[str],
    keep: Sequence[str],
    function: AffineRows,
    staged: StagedFolder,
    *,
    integer_out: Sequence[bool] | None = None,
    sample_rows: int = SAMPLE_ROWS,
    noise: RowNoise | None = None,
    progress: ProgressFn | None = None,
) -> MappedTable:
    """Map ``columns`` of every row by ``function`` (and ``noise``), write the ``keep``
    columns into ``staged`` (one part per non-empty piece), and sample about
    ``sample_rows`` input rows (module text). The caller commits ``staged``."""
    runner = base_engine(engine)
    per_piece = -(-sample_rows // max(1, pieces_of(table)))
    parts: list[PieceMapped] = runner.map_pieces(
        table,
        map_piece,
        list(columns),
        list(keep),
        function,
        integer_out,
        str(staged.path),
        runner.batch_rows,
        per_piece,
        noise,
        progress=progress,
        step="perturbing rows",
    )
    d = len(columns)
    total = kernels.PartialMoments(0, np.zeros(d), np.zeros(d))
    for p in parts:
        total = kernels.combine_moments(total, p.moments)
    integer = tuple(all(p.integer[j] for p in parts if p.rows) for j in range(d))
    summary = WriteSummary(
        staged.target, sum(p.rows for p in parts), sum(1 for p in parts if p.rows)
    )
    count = max(total.count, 1)
    moments = Moments(tuple(columns), total.count, total.mean, np.sqrt(total.m2 / count))
    sample = np.concatenate([p.sample for p in parts]) if parts else np.zeros((0, d))
    squares = np.zeros(d)
    for p in parts:
        squares = squares + p.squares
    return MappedTable(
        summary,
        moments,
        integer,
        {p.index: p.positions for p in parts if p.positions.size},
        sample,
        squares,
    )


def read_positions(
    piece: Piece, positions: Mapping[int, NDArray[np.int64]], batch_rows: int
) -> pa.Table | None:
    """The rows of one written part at ``positions[piece.index]``, every column as written."""
    import pyarrow as pa

    wanted = positions.get(piece.index, np.zeros(0, dtype=np.int64))
    found: list[pa.Table] = []
    start = filled = 0
    for batch in piece.batches(list(piece.columns()), batch_rows):
        stop = start + batch.num_rows
        here = wanted[(wanted >= start) & (wanted < stop)]
        if here.size:
            found.append(batch.take(pa.array(here - start)))
            filled += here.size
        start = stop
        if filled == wanted.size:
            break
    if filled != wanted.size:
        raise AnonlabError(
            f"verification failed, nothing written: {piece.describe()} has "
            f"{start} rows, fewer than the input's piece it was written from",
            parameter="output",
        )
    return pa.concat_tables(found) if found else None


def written_sample(
    engine: Engine, folder: Path, mapped: MappedTable, *, progress: ProgressFn | None = None
) -> pd.DataFrame:
    """The written rows at the sampled positions, read back from the parts in ``folder`` (one
    task per part: each part is read whole, whatever its row groups), as a DataFrame of the
    written columns (text as Arrow strings, numbers as numbers)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from anonlab.tabletext import to_frame

    pieces = []
    for index in sorted(mapped.positions):
        path = folder / kernels.part_name(index)
        pieces.append(ParquetPiece(index, str(path), tuple(pq.read_schema(path).names)))
    if not pieces:
        raise AnonlabError(
            "verification failed, nothing written: the release has no rows", parameter="input"
        )
    table = Table(f"folder '{folder}'", pieces[0].names, tuple(pieces))
    blocks: list[pa.Table | None] = base_engine(engine).map_pieces(
        table,
        read_positions,
        mapped.positions,
        base_engine(engine).batch_rows,
        progress=progress,
        step="reading the sample back",
    )
    return to_frame(pa.concat_tables([b for b in blocks if b is not None]), arrow_strings=True)


def sample_rows(mapped: MappedTable, first_rows: Mapping[int, int]) -> NDArray[np.int64]:
    """The global rows of ``mapped.sample`` (``first_rows[piece]``: the piece's first row)."""
    found = [first_rows[i] + p for i, p in mapped.positions.items()]
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def sample_findings(
    x: FloatArray,
    y: FloatArray,
    std: FloatArray,
    key: Mapping[str, Any] | None,
    columns: Sequence[str],
    rows: NDArray[np.int64] | None = None,
) -> list[str]:
    """Problems of sampled rows ``x`` (input) and ``y`` (written), empty when they hold.

    Distances of every pair (``std``: the input's deviations) unless ``key``
    is gdp's (its noise moves them), then undoing ``y`` with the key's JSON
    (module text; ``rows``: the global rows of the sample, for gdp's noise).
    With ``key=None`` only the distances are checked.
    """
    from anonlab.verify.perturbation import ALL_PAIRS_LIMIT, distance_findings

    problems: list[str] = []
    if key is None or key.get("method") != "gdp":
        problems = distance_findings(x, y, std, all_pairs_limit=max(ALL_PAIRS_LIMIT, x.shape[0]))
    if key is not None:
        problems += undo_findings(key, x, y, columns, rows)
    return problems


def key_noise(noise: Mapping[str, Any], rows: NDArray[np.int64], d: int) -> FloatArray:
    """The noise ``e`` of a key's ``noise`` entry (seed, scale, blocked stream) at global
    ``rows``, drawn from the seed here: row ``r`` is row ``r - j B`` of
    ``default_rng([seed, j])``'s stream, ``j = r // B`` (one draw per block sampled)."""
    from anonlab.perturbation.key import NOISE_BLOCK

    scale = float(noise.get("scale") or 0.0)
    out = np.zeros((rows.size, d))
    if noise.get("seed") is None or scale == 0.0:
        return out
    if noise.get("stream") != "blocked":
        raise ValueError("the noise is one stream over all records, not blocked")
    blocks = rows // NOISE_BLOCK
    for block in np.unique(blocks):
        here = np.flatnonzero(blocks == block)
        within = rows[here] - block * NOISE_BLOCK
        gen = np.random.default_rng([int(noise["seed"]), int(block)])
        out[here] = gen.standard_normal((int(within.max()) + 1, d))[within] * scale
    return out


def undo_findings(
    key: Mapping[str, Any],
    x: FloatArray,
    y: FloatArray,
    columns: Sequence[str],
    rows: NDArray[np.int64] | None = None,
) -> list[str]:
    """``mean + std * ((y - t - e) A)`` from the key's plain JSON must be ``x`` to
    ``1e-9 (|x| + std)`` (``t`` the translation, if any; ``e`` the noise at global
    ``rows``, :func:`key_noise`)."""
    from anonlab.verify.perturbation import INVERT_RTOL

    try:
        names = [str(c) for c in key["columns"]]
        pos = [list(columns).index(c) for c in names]
        means = np.asarray(key["means"], dtype=np.float64)
        stds = np.asarray(key["stds"], dtype=np.float64)
        matrix = np.zeros((len(names), len(names)))
        for block in key["blocks"]:
            idx = [names.index(str(c)) for c in block["columns"]]
            matrix[np.ix_(idx, idx)] = np.asarray(block["matrix"], dtype=np.float64)
        shift = np.asarray(key.get("translation") or np.zeros(len(names)), dtype=np.float64)
        noise = key_noise(
            key.get("noise") or {}, np.arange(x.shape[0]) if rows is None else rows, len(names)
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return [f"the key as written is damaged ({exc})"]
    xs, ys = x[:, pos], y[:, pos]
    restored = means + stds * ((ys - shift - noise) @ matrix)
    wrong = np.abs(restored - xs) > INVERT_RTOL * (np.abs(xs) + stds)
    if not wrong.any():
        return []
    i, j = (int(v[0]) for v in np.nonzero(wrong))
    return [
        f"undoing the release with the key gives {restored[i, j]:.12g} for column "
        f"'{names[j]}' of sampled record {i + 1}, but the input holds {xs[i, j]:.12g} "
        f"({int(wrong.sum()):,} sampled values differ)"
    ]


@dataclass(frozen=True)
class TransformPlan:
    """The column moments and the transform of a perturbation over pieces: the blocks; gdp's
    translation, noise seed and noise; each piece's first global row (gdp only, else
    empty)."""

    moments: Moments
    blocks: list[Block]
    translation: FloatArray | None = None
    noise_seed: int | None = None
    noise: RowNoise | None = None
    first_rows: dict[int, int] = field(default_factory=dict)


def plan_transform(
    engine: Engine,
    table: Table,
    names: list[str],
    method: str,
    seed: int,
    *,
    min_privacy: float,
    rho: tuple[float, float],
    noise: float,
    library: MatrixLibrary | None,
    progress: ProgressFn | None = None,
) -> TransformPlan:
    """The column moments (one pass) and the transform, drawn from the seed as in memory
    (:func:`anonlab.perturbation.transforms.perturb_array`, in the same order of draws).

    rbt's angles come from the z-scores' covariance matrix
    (:func:`covariance_pass` gives both in the same pass); obt and rotation
    from the seed alone (:func:`~anonlab.perturbation.transforms.data_free_blocks`);
    gdp's translation ``t ~ U(-1, 1)^d`` and noise seed are drawn after its
    rotation, its noise placed by each piece's first global row
    (:func:`moments_pass`, :class:`RowNoise`).
    """
    from anonlab.perturbation.transforms import data_free_blocks, rbt_blocks

    rng = np.random.default_rng(seed)
    if method == "rbt":
        moments, cov = covariance_pass(engine, table, names, progress=progress)
        return TransformPlan(moments, rbt_blocks(names, cov, rng, rho))
    moments, first_rows = moments_pass(engine, table, names, progress=progress)
    moments.check_z_scores()
    blocks = data_free_blocks(
        method, names, rng, seed=seed, min_privacy=min_privacy, library=library
    )
    if method != "gdp":
        return TransformPlan(moments, blocks)
    translation = rng.uniform(-1.0, 1.0, len(names))
    noise_seed = int(rng.integers(2**62))
    row_noise = RowNoise(noise_seed, float(noise), 1.0, first_rows) if noise > 0 else None
    return TransformPlan(moments, blocks, translation, noise_seed, row_noise, first_rows)


def check_sample(
    mapped: MappedTable,
    written: FloatArray,
    std: FloatArray,
    key: Mapping[str, Any],
    columns: Sequence[str],
    first_rows: Mapping[int, int] | None,
    *,
    restored: bool = False,
) -> None:
    """Refuse a written table whose sampled rows fail :func:`sample_findings` (nothing is
    written then).

    ``written`` holds the written values at the sampled rows; ``mapped.sample``
    the input's. A release (``restored=False``) is checked as the written
    ``y`` of the input ``x``; a restored table as the ``x`` whose release was
    the input. ``first_rows`` places the sample at its global rows (gdp's
    noise); ``None`` when no noise needs them.
    """
    rows = sample_rows(mapped, first_rows) if first_rows else None
    x, y = (written, mapped.sample) if restored else (mapped.sample, written)
    problems = sample_findings(x, y, std, key, columns, rows)
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")
