"""``evaluate`` on an engine: the EM4ADOM measures of a masked table, piece by piece.

The measures of :func:`anonlab.metrics.evaluate` (docs/formulas.md §2) fall in two kinds.

**Exact** (:data:`EXACT`): sums over records, so pieces' partial sums merged
here give the in-memory figure up to rounding.

* per table (each read alone, one task per piece): the count, column means
  and co-moment matrices ``C = sum (x - mean)(x - mean)^T`` (pieces combined
  in piece order by Chan, Golub and LeVeque's update,
  ``C = C_a + C_b + d d^T n_a n_b / n`` with ``d`` the difference of the
  means), the largest ``|x_j|`` of the original, and each categorical
  column's value counts. They give S_j, IL2 and IL3
  (:func:`anonlab.metrics.utility.il_2_3_moments`), the categorical domains
  and the entropies of ILR;
* per block of aligned rows (below): ``sum (x_ij - x'_ij)^2`` and
  ``sum |x_ij - x'_ij|`` per column and the ZIL distance sum, added in block
  order. ``ILh = sum_j SSE_j / S_j^2 / sum_j C_jj / S_j^2`` and
  ``IL1 = sum_j L1_j / (sqrt(2) s_j) / (n p)`` (``s_j`` with divisor n - 1).

**Blockwise** (:data:`BLOCKWISE`): record linkage is O(n^2) and interval
disclosure ranks the whole column, so they are computed within fixed blocks of
rows: rows ``[k B, (k + 1) B)`` of both tables (``B = block_rows``, default
:data:`DEFAULT_BLOCK_ROWS`; the last block shorter). Each masked record is
linked against the original records of its own block (distances on values
standardized by the *whole* original's mean and S_j), and its interval's width
is ``int(p / 100 * rows of the block / 2)`` ranks of its block. DLD,
DLD_expected and ID are the linked, credited and disclosed records of all
blocks over n; DR and score follow from them. A table of at most B rows is one
block: every figure is then the in-memory one (ILh..IL, ZIL and ILR up to
rounding: measured at most 1.4e-14 relative on the bundled Tarragona and EIA
data; a measure that is itself a small difference of nearly equal moments, as
IL2 of a masking that keeps the variances, keeps only the absolute rounding of
about 1e-16; the others equal). A CSV piece is parsed from its start up to a
unit's first row, so a unit starting inside a CSV piece re-reads that part of
it.

Blocks are global row ranges, whatever the pieces: the two tables are read in
*units* of whole blocks (about :data:`UNIT_ROWS` rows, one task each), each
unit reading its rows from the pieces of each table that hold them (the
pieces' row counts come from the first pass; a Parquet piece is entered at the
row group holding the unit's first row). So the two tables may be split
differently (parts of other sizes, CSV and Parquet), and both engines, which
see the same pieces and units and merge in the same order, give identical
figures.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.engine import kernels
from anonlab.engine.table import FramePiece, ParquetPiece, Piece, Table, open_table
from anonlab.errors import AnonlabError

if TYPE_CHECKING:
    import pyarrow as pa

    from anonlab.engine.base import Engine
    from anonlab.metrics.em4adom import Evaluation
    from anonlab.progress import ProgressFn

FloatArray = NDArray[np.float64]
#: rows of a block of the blockwise measures (record linkage, interval disclosure); the k-d
#: tree's cost per record grows with the block (10 columns: 52 us at 5,000 rows, 44 us at
#: 20,000, 82 us at 50,000, 235 us at 200,000; benchmarks/scale_evaluate.py)
DEFAULT_BLOCK_ROWS = 20_000
#: about this many rows (whole blocks) are one task of the block pass
UNIT_ROWS = 1 << 18
EXACT = ("ILh", "IL1", "IL2", "IL3", "ILs", "IL", "ZIL", "ZIL_percent", "ILR")
BLOCKWISE = ("DLD", "DLD_expected", "ID", "ID_by_p", "DR", "score")
_MISSING = ("", "nan", "na", "none", "null")  # anonlab.encoding.MISSING_TEXT


# ---------------------------------------------------------------------------
# The first pass: each table alone
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TableStats:
    """Moments of a run of rows: count, means, co-moment matrix, largest |x| per column,
    and each categorical column's value counts (text -> records, first-seen order)."""

    rows: int
    mean: FloatArray
    comoment: FloatArray
    absmax: FloatArray
    values: tuple[dict[str, int], ...]


def empty_stats(d: int, c: int) -> TableStats:
    """The statistics of no rows."""
    return TableStats(0, np.zeros(d), np.zeros((d, d)), np.zeros(d), tuple({} for _ in range(c)))


def combine_stats(a: TableStats, b: TableStats) -> TableStats:
    """Two consecutive runs of rows as one (Chan's update of the co-moments)."""
    values = []
    for va, vb in zip(a.values, b.values, strict=True):
        merged = dict(va)
        for text, count in vb.items():
            merged[text] = merged.get(text, 0) + count
        values.append(merged)
    if a.rows == 0 or b.rows == 0:
        base = b if a.rows == 0 else a
        return TableStats(base.rows, base.mean, base.comoment, base.absmax, tuple(values))
    both = kernels.combine_comoments(
        kernels.PartialCoMoments(a.rows, a.mean, a.comoment),
        kernels.PartialCoMoments(b.rows, b.mean, b.comoment),
    )
    return TableStats(
        both.count, both.mean, both.comoment, np.maximum(a.absmax, b.absmax), tuple(values)
    )


def category_text(column: Any) -> pa.Array:
    """A raw column as the stripped text the in-memory reader gives (missing -> ``""``)."""
    import pyarrow.compute as pc

    from anonlab.tabletext import text_array

    return pc.utf8_trim_whitespace(text_array(column))


def piece_stats(
    piece: Piece, numeric: Sequence[str], categorical: Sequence[str], batch_rows: int
) -> TableStats:
    """The :class:`TableStats` of one piece, batch by batch."""
    import pyarrow.compute as pc

    names = list(dict.fromkeys([*numeric, *categorical]))
    total = empty_stats(len(numeric), len(categorical))
    if not names:
        return total
    for batch in piece.batches(names, batch_rows):
        x = kernels.numeric_block(batch, numeric, piece.describe())
        values = []
        for name in categorical:
            counts = pc.value_counts(category_text(batch.column(name)))
            values.append(
                {
                    str(v): int(c)
                    for v, c in zip(
                        counts.field("values").to_pylist(),
                        counts.field("counts").to_pylist(),
                        strict=True,
                    )
                }
            )
        rows = batch.num_rows
        if rows == 0:
            continue
        moments = kernels.block_comoments(x)
        part = TableStats(
            rows,
            moments.mean,
            moments.comoment,
            np.abs(x).max(axis=0) if x.shape[1] else np.zeros(0),
            tuple(values),
        )
        total = combine_stats(total, part)
    return total


def piece_numeric_flags(
    piece: Piece, columns: Sequence[str], batch_rows: int
) -> tuple[tuple[bool, bool], ...]:
    """Per column: whether a present value is not a number, and whether any value is present
    (a value is missing when its stripped text is empty or nan/na/none/null, as in memory)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    bad = [False] * len(columns)
    present = [False] * len(columns)
    for batch in piece.batches(list(columns), batch_rows):
        for j, name in enumerate(columns):
            column = batch.column(name)
            kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
            if pa.types.is_integer(kind) or pa.types.is_floating(kind):
                present[j] = present[j] or column.null_count < len(column)
                continue
            if bad[j]:
                continue
            text = category_text(column)
            missing = pc.is_in(pc.utf8_lower(text), pa.array(_MISSING))
            given = pc.filter(text, pc.invert(missing))
            present[j] = present[j] or len(given) > 0
            try:
                given.cast(pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                bad[j] = True
    return tuple(zip(bad, present, strict=True))


# ---------------------------------------------------------------------------
# The block pass: both tables, aligned rows
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """``take`` rows of a piece from its row ``skip`` (``piece`` None: partition
    ``partition`` of a Dask DataFrame, given to the task)."""

    piece: Piece | None
    partition: int
    skip: int
    take: int


@dataclass(frozen=True)
class Unit(Piece):
    """Consecutive blocks (global row ranges) and the segments of each table holding them."""

    index: int
    blocks: tuple[tuple[int, int], ...]
    original: tuple[Segment, ...]
    masked: tuple[Segment, ...]

    def columns(self) -> tuple[str, ...]:
        return ()

    def batches(self, columns: Sequence[str], batch_rows: int) -> Iterator[pa.Table]:
        raise NotImplementedError("a unit is read by unit_sums")

    def describe(self) -> str:
        return f"rows {self.blocks[0][0] + 1}-{self.blocks[-1][1]} of the two tables"


@dataclass(frozen=True)
class CategorySpec:
    """A categorical column: the original's domain (ordered) and the masked table's (the
    original's plus nominal values it lacks), with the code of every text seen."""

    name: str
    ordinal: bool
    domain: tuple[str, ...]
    masked_domain: tuple[str, ...]
    lookup: dict[str, int] = field(repr=False)
    masked_lookup: dict[str, int] = field(repr=False)


@dataclass(frozen=True)
class PairSpec:
    """What every block needs: the columns, the original's means and S_j, the interval sizes,
    the categorical domains."""

    numeric: tuple[str, ...]
    mean: FloatArray
    std: FloatArray
    p_values: tuple[float, ...]
    categories: tuple[CategorySpec, ...]
    threads: int = 1  # the k-d tree's (numeric linkage), in this process only


@dataclass(frozen=True)
class BlockSums:
    """One block's sums: rows, squared and absolute differences per column, ZIL, linked and
    credited records (DLD), and disclosed records for each p (ID)."""

    rows: int
    sse: FloatArray
    l1: FloatArray
    zil: float
    linked: int
    expected: float
    disclosed: tuple[int, ...]


def _segment_batches(
    piece: Piece, columns: Sequence[str], skip: int, take: int, batch_rows: int
) -> Iterator[pa.Table]:
    """Rows ``[skip, skip + take)`` of a piece, in batches (a Parquet piece entered at the row
    group holding row ``skip``)."""
    if isinstance(piece, ParquetPiece) and skip > 0:
        import pyarrow.parquet as pq

        meta = pq.read_metadata(piece.path)
        groups = (
            piece.row_groups if piece.row_groups is not None else tuple(range(meta.num_row_groups))
        )
        at, first = 0, 0
        chosen: list[int] = []
        for g in groups:
            size = meta.row_group(g).num_rows
            if at + size > skip and at < skip + take:
                if not chosen:
                    first = at
                chosen.append(g)
            at += size
        piece = replace(piece, row_groups=tuple(chosen))  # its partition, storage, casts kept
        skip -= first
    seen = 0
    for batch in piece.batches(list(columns), batch_rows):
        lo, hi = max(skip - seen, 0), min(skip + take - seen, batch.num_rows)
        seen += batch.num_rows
        if hi > lo:
            yield batch.slice(lo, hi - lo)
        if seen >= skip + take:
            return


def _segment_rows(
    segments: Sequence[Segment],
    spec: PairSpec,
    masked: bool,
    batch_rows: int,
    parts: Mapping[int, Any],
) -> Generator[tuple[FloatArray, NDArray[np.int64]], None, None]:
    """The rows of a table's segments in batches, as (numbers, categorical codes)."""
    names = list(dict.fromkeys([*spec.numeric, *(c.name for c in spec.categories)]))
    for seg in segments:
        piece = (
            seg.piece if seg.piece is not None else FramePiece(seg.partition, parts[seg.partition])
        )
        where = piece.describe()
        for batch in _segment_batches(piece, names, seg.skip, seg.take, batch_rows):
            yield (
                kernels.numeric_block(batch, spec.numeric, where),
                _codes(batch, spec, masked, where),
            )


def _codes(batch: pa.Table, spec: PairSpec, masked: bool, where: str) -> NDArray[np.int64]:
    """The categorical columns of a batch as codes of the original's (or masked) domain."""
    import pyarrow.compute as pc

    out = np.empty((batch.num_rows, len(spec.categories)), dtype=np.int64)
    for j, cat in enumerate(spec.categories):
        lookup = cat.masked_lookup if masked else cat.lookup
        encoded = pc.dictionary_encode(category_text(batch.column(cat.name))).combine_chunks()
        texts = encoded.dictionary.to_pylist()
        missing = [t for t in texts if t not in lookup]
        if missing:
            raise AnonlabError(
                f"input: column '{cat.name}' of {where} holds '{missing[0]}', "
                "which the first pass did not see: the table changed during "
                "the run; run it again",
                parameter="input",
            )
        codes = np.array([lookup[t] for t in texts], dtype=np.int64)
        out[:, j] = codes[encoded.indices.to_numpy(zero_copy_only=False)] if texts else 0
    return out


class _Rows:
    """The rows of a table's segments, handed out ``k`` at a time as (numbers, codes)."""

    def __init__(
        self,
        segments: Sequence[Segment],
        spec: PairSpec,
        masked: bool,
        batch_rows: int,
        parts: Mapping[int, Any] | None,
    ) -> None:
        self.batches = _segment_rows(segments, spec, masked, batch_rows, parts or {})
        self.x = np.zeros((0, len(spec.numeric)))
        self.codes = np.zeros((0, len(spec.categories)), dtype=np.int64)
        self.at = 0  # rows of the current batch handed out

    def close(self) -> None:
        """Let go of the batch being read (and its file)."""
        self.batches.close()
        self.x = self.x[:0]

    def take(self, k: int) -> tuple[FloatArray, NDArray[np.int64]]:
        """The next ``k`` rows (only they are copied, not the rest of the batch)."""
        xs, cs = [], []
        while k > 0:
            if self.at == self.x.shape[0]:
                following = next(self.batches, None)
                if following is None:
                    raise AnonlabError(
                        "input: a table has fewer rows than its first pass "
                        "counted: it changed during the run; run it again",
                        parameter="input",
                    )
                self.x, self.codes = following
                self.at = 0
            use = min(k, self.x.shape[0] - self.at)
            xs.append(self.x[self.at : self.at + use])
            cs.append(self.codes[self.at : self.at + use])
            self.at += use
            k -= use
        return np.concatenate(xs), np.concatenate(cs)


def block_sums(
    x: FloatArray,
    codes: NDArray[np.int64],
    xm: FloatArray,
    codes_m: NDArray[np.int64],
    spec: PairSpec,
) -> BlockSums:
    """The sums of one block (module text); linkage and ID as :mod:`anonlab.metrics.risk`
    computes them on the block alone, distances standardized by the whole original."""
    from anonlab.encoding import CategoricalColumn, category_distance
    from anonlab.metrics import risk

    n = x.shape[0]
    diff = x - xm
    cats = [
        CategoricalColumn(c.name, codes[:, j], c.domain, c.ordinal)
        for j, c in enumerate(spec.categories)
    ]
    cats_m = [
        CategoricalColumn(c.name, codes_m[:, j], c.masked_domain, c.ordinal)
        for j, c in enumerate(spec.categories)
    ]
    zil = 0.0
    for a, b in zip(cats, cats_m, strict=True):
        zil += float(np.sum(category_distance(a, a.codes, b.codes)))
    z, zm = (x - spec.mean) / spec.std, (xm - spec.mean) / spec.std
    link = (
        risk.linkage_mixed(z, cats, zm, cats_m)
        if cats
        else risk.linkage_numeric(z, zm, workers=spec.threads)
    )
    disclosed: tuple[int, ...] = ()
    if spec.numeric:
        shares = risk.interval_disclosures(x, xm, spec.p_values)
        disclosed = tuple(round(v * n) for v in shares)
    return BlockSums(
        n,
        np.einsum("ij,ij->j", diff, diff),
        np.abs(diff).sum(axis=0),
        zil,
        int(np.sum(link.linked)),
        float(np.sum(link.expected)),
        disclosed,
    )


def unit_sums(
    unit: Unit,
    spec: PairSpec,
    batch_rows: int,
    parts_original: Mapping[int, Any] | None = None,
    parts_masked: Mapping[int, Any] | None = None,
) -> list[BlockSums]:
    """The :class:`BlockSums` of every block of a unit, in order (``parts_*``: the Dask
    partitions the segments name, as pandas DataFrames)."""
    original = _Rows(unit.original, spec, False, batch_rows, parts_original)
    masked = _Rows(unit.masked, spec, True, batch_rows, parts_masked)
    out = []
    try:
        for start, stop in unit.blocks:
            x, codes = original.take(stop - start)
            xm, codes_m = masked.take(stop - start)
            out.append(block_sums(x, codes, xm, codes_m, spec))
    finally:
        original.close()
        masked.close()
    return out


def frame_unit(
    unit: Unit,
    spec: PairSpec,
    batch_rows: int,
    parts_original: Mapping[int, Any],
    parts_masked: Mapping[int, Any],
) -> list[BlockSums]:
    """:func:`unit_sums` as a Dask task (an AnonlabError travels back with its parameter)."""
    from anonlab.engine.dask_backend import on_worker

    result: list[BlockSums] = on_worker(
        unit_sums, unit, spec, batch_rows, parts_original, parts_masked
    )
    return result


def segments(rows: Sequence[int], table: Table, start: int, stop: int) -> tuple[Segment, ...]:
    """The segments of ``table`` (pieces of ``rows`` rows each) holding rows ``[start, stop)``."""
    out = []
    at = 0
    for i, size in enumerate(rows):
        lo, hi = max(start, at), min(stop, at + size)
        if hi > lo:
            piece = table.pieces[i] if table.dask_frame is None else None
            out.append(Segment(piece, i, lo - at, hi - lo))
        at += size
    return tuple(out)


def plan_units(
    n: int,
    block_rows: int,
    original: Table,
    rows_original: Sequence[int],
    masked: Table,
    rows_masked: Sequence[int],
) -> list[Unit]:
    """Blocks ``[k B, (k + 1) B)`` grouped into units of about :data:`UNIT_ROWS` rows."""
    blocks = [(s, min(n, s + block_rows)) for s in range(0, n, block_rows)]
    per_unit = max(1, UNIT_ROWS // block_rows)
    units: list[Unit] = []
    for i in range(0, len(blocks), per_unit):
        run = tuple(blocks[i : i + per_unit])
        start, stop = run[0][0], run[-1][1]
        units.append(
            Unit(
                len(units),
                run,
                segments(rows_original, original, start, stop),
                segments(rows_masked, masked, start, stop),
            )
        )
    return units


def run_units(
    engine: Engine,
    units: Sequence[Unit],
    original: Table,
    masked: Table,
    spec: PairSpec,
    progress: ProgressFn | None,
) -> list[BlockSums]:
    """Every unit's block sums, in block order, on ``engine`` (one task a unit)."""
    from anonlab.engine.base import base_engine

    runner = base_engine(engine)
    step = "evaluate: blocks"
    if original.dask_frame is None and masked.dask_frame is None:
        table = Table("the blocks", (), tuple(units))
        per_unit: list[list[BlockSums]] = runner.map_pieces(
            table, unit_sums, spec, runner.batch_rows, progress=progress, step=step
        )
    else:
        per_unit = _frame_units(runner, units, original, masked, spec, progress, step)
    return [b for blocks in per_unit for b in blocks]


def _frame_units(
    runner: Any,
    units: Sequence[Unit],
    original: Table,
    masked: Table,
    spec: PairSpec,
    progress: ProgressFn | None,
    step: str,
) -> list[list[BlockSums]]:
    """The units when a table is a Dask DataFrame: its partitions are given to each task."""
    import dask.base
    from dask.delayed import delayed

    from anonlab.progress import report_to

    parts_o = original.dask_frame.to_delayed() if original.dask_frame is not None else None
    parts_m = masked.dask_frame.to_delayed() if masked.dask_frame is not None else None

    def wanted(parts: Any, segs: Sequence[Segment]) -> dict[int, Any]:
        return {} if parts is None else {s.partition: parts[s.partition] for s in segs}

    if runner.name == "dask":
        tasks = [
            delayed(frame_unit, pure=False)(
                u, spec, runner.batch_rows, wanted(parts_o, u.original), wanted(parts_m, u.masked)
            )
            for u in units
        ]
        futures = list(runner.client.compute(tasks))
        try:
            runner._wait(futures, progress, step)
            gathered: list[list[BlockSums]] = runner._run(lambda: runner.client.gather(futures))
        except BaseException:
            runner.client.cancel(futures, force=True)
            raise
        return gathered
    report = report_to(progress)
    out = []
    for i, u in enumerate(units):
        compute: Any = dask.base.compute
        got_o, got_m = compute(wanted(parts_o, u.original), wanted(parts_m, u.masked))
        out.append(unit_sums(u, spec, runner.batch_rows, got_o, got_m))
        report(step, i + 1, len(units))
    return out


# ---------------------------------------------------------------------------
# The evaluation
# ---------------------------------------------------------------------------


def evaluate_on_engine(
    original: Any,
    masked: Any,
    columns: str | Sequence[str] | None = "all-numeric",
    *,
    engine: Engine | None = None,
    nominal: str | Sequence[str] | None = None,
    ordinal: str | Sequence[str] | None = None,
    orders: Mapping[str, Sequence[str]] | None = None,
    lambdas: Sequence[float] | None = None,
    tau: Sequence[float] | None = None,
    gamma: Sequence[float] | None = None,
    interval_p: str | Sequence[float] | float | None = None,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    workers: int = 1,
    delimiter: str | None = None,
    progress: ProgressFn | None = None,
    exclude: Sequence[str] = (),
) -> Evaluation:
    """The EM4ADOM measures of ``masked`` against ``original``, read piece by piece.

    ``original`` and ``masked`` are Parquet files, folders or globs, CSV
    files, or pandas or Dask DataFrames (anything
    :func:`anonlab.engine.open_table` opens), the same records in the same
    order; the other arguments are :func:`anonlab.metrics.evaluate`'s.
    ``engine`` runs the passes (default: a NumPy engine in this process);
    ``workers`` threads search the nearest neighbours of numeric linkage on
    the NumPy engine (-1: every CPU; Dask tasks use one).
    Exact and blockwise measures as the module text says; ``block_rows`` is
    B. ``exclude`` (the columns that other roles name, e.g. identifying
    ones) is left out of ``all-numeric``. The result's
    ``measure_parameters`` say which measures are which (``blocks``).
    """
    from anonlab.engine import open_engine
    from anonlab.metrics import utility
    from anonlab.metrics.tradeoff import DEFAULT_GAMMA, DEFAULT_TAU

    if isinstance(block_rows, bool) or not isinstance(block_rows, int) or block_rows < 2:
        raise AnonlabError(
            f"block_rows must be a whole number of at least 2 (got {block_rows!r})",
            parameter="block_rows",
        )
    from anonlab.metrics.em4adom import Weights, parse_p_values
    from anonlab.threads import check_workers

    check_workers(workers)
    weights = Weights(
        utility.weights(lambdas or utility.DEFAULT_LAMBDA, "lambda", 3),
        utility.weights(tau or DEFAULT_TAU, "tau", 2),
        utility.weights(gamma or DEFAULT_GAMMA, "gamma", 2),
        parse_p_values(interval_p),
    )
    run = engine if engine is not None else open_engine("numpy")
    try:
        return _evaluate(
            run,
            open_table(original, delimiter=delimiter),
            open_table(masked, delimiter=delimiter),
            columns,
            nominal,
            ordinal,
            orders,
            weights,
            block_rows,
            workers,
            progress,
            exclude,
        )
    finally:
        if engine is None:
            run.close()


def _names(value: str | Sequence[str] | None) -> list[str]:
    from anonlab.settings import split_names

    return split_names(value)


def _evaluate(
    engine: Engine,
    original: Table,
    masked: Table,
    columns: str | Sequence[str] | None,
    nominal: Any,
    ordinal: Any,
    orders: Mapping[str, Sequence[str]] | None,
    weights: Any,
    block_rows: int,
    workers: int,
    progress: ProgressFn | None,
    exclude: Sequence[str] = (),
) -> Evaluation:
    """The evaluation of two opened tables (see :func:`evaluate_on_engine`)."""
    from anonlab.engine.base import base_engine

    runner = base_engine(engine)
    nominal_names, ordinal_names = _names(nominal), _names(ordinal)
    numeric = _numeric_names(
        runner, original, columns, [*nominal_names, *ordinal_names], progress, exclude
    )
    categorical = [*nominal_names, *ordinal_names]
    original.check_columns([*numeric, *categorical], "columns")
    for name in [*numeric, *categorical]:
        if name not in masked.column_names:
            from anonlab.metrics.em4adom import MissingColumnError

            raise MissingColumnError(name)
    stats_o, rows_o = _stats(runner, original, numeric, categorical, progress, "original")
    stats_m, rows_m = _stats(runner, masked, numeric, categorical, progress, "masked table")
    n = stats_o.rows
    if n != stats_m.rows:
        raise AnonlabError(
            f"the original has {n} rows but the masked table has {stats_m.rows}: "
            "give a masked table with the same records in the same order"
        )
    if n == 0:
        raise AnonlabError(
            "the original has no rows: give at least one record", parameter="original"
        )
    std = np.sqrt(stats_o.comoment.diagonal() / n)
    for j, s in enumerate(std):
        if not s > 0:
            raise AnonlabError(
                f"column '{numeric[j]}' of the original is constant (standard "
                "deviation S_j = 0), so it cannot be standardized: leave it out "
                "of columns",
                parameter="columns",
            )
    cats = _categories(nominal_names, ordinal_names, orders or {}, stats_o, stats_m)
    spec = PairSpec(
        tuple(numeric),
        stats_o.mean,
        std,
        weights.p_values,
        cats,
        workers if runner.name == "numpy" else 1,
    )
    units = plan_units(n, block_rows, original, rows_o, masked, rows_m)
    blocks = run_units(engine, units, original, masked, spec, progress)
    return _assemble(
        spec,
        stats_o,
        stats_m,
        blocks,
        weights,
        block_rows,
        original,
        masked,
        nominal_names,
        ordinal_names,
    )


def all_numeric_names(
    runner: Any, table: Table, exclude: Sequence[str], progress: ProgressFn | None, step: str
) -> list[str]:
    """``all-numeric`` over a table read in pieces: every column not in ``exclude`` whose
    present values are all numbers and that has one (the rule of
    :func:`anonlab.encoding.is_numeric_column`, piece by piece)."""
    left_out = set(exclude)
    candidates = [c for c in table.column_names if c not in left_out]
    flags: list[tuple[tuple[bool, bool], ...]] = runner.map_pieces(
        table, piece_numeric_flags, candidates, runner.batch_rows, progress=progress, step=step
    )
    return [
        c
        for j, c in enumerate(candidates)
        if not any(f[j][0] for f in flags) and any(f[j][1] for f in flags)
    ]


def _numeric_names(
    runner: Any,
    original: Table,
    columns: str | Sequence[str] | None,
    categorical: Sequence[str],
    progress: ProgressFn | None,
    exclude: Sequence[str] = (),
) -> list[str]:
    """The numeric columns: as given, or ``all-numeric`` found by a pass over the original
    (leaving out the categorical columns and ``exclude``, the columns other roles name)."""
    from anonlab.encoding import ALL_NUMERIC

    names = _names(columns)
    if columns is None and categorical:
        return []
    if names and names != [ALL_NUMERIC]:
        if ALL_NUMERIC in names:
            raise AnonlabError(
                "columns 'all-numeric' cannot be mixed with column names: give "
                "all-numeric alone or names only",
                parameter="columns",
            )
        twice = [c for i, c in enumerate(names) if c in names[:i]]
        if twice:
            raise AnonlabError(
                f"column '{twice[0]}' is named twice: list each column once", parameter="columns"
            )
        both = sorted(set(names) & set(categorical))
        if both:
            raise AnonlabError(
                f"column '{both[0]}' is named both numeric and categorical: "
                "give each column one type"
            )
        return names
    chosen = all_numeric_names(
        runner,
        original,
        [*categorical, *exclude],
        progress,
        "evaluate: finding the numeric columns",
    )
    if not chosen and not categorical and not exclude:
        raise AnonlabError(
            "no numeric column found for columns 'all-numeric': name the "
            "numeric columns in columns",
            parameter="columns",
        )
    return chosen


def _stats(
    runner: Any,
    table: Table,
    numeric: Sequence[str],
    categorical: Sequence[str],
    progress: ProgressFn | None,
    what: str,
) -> tuple[TableStats, list[int]]:
    """A table's statistics, pieces combined in order, and each piece's rows."""
    parts: list[TableStats] = runner.map_pieces(
        table,
        piece_stats,
        list(numeric),
        list(categorical),
        runner.batch_rows,
        progress=progress,
        step=f"evaluate: reading the {what}",
    )
    total = empty_stats(len(numeric), len(categorical))
    for p in parts:
        total = combine_stats(total, p)
    return total, [p.rows for p in parts]


def _categories(
    nominal: Sequence[str],
    ordinal: Sequence[str],
    orders: Mapping[str, Sequence[str]],
    stats_o: TableStats,
    stats_m: TableStats,
) -> tuple[CategorySpec, ...]:
    """Each categorical column's domains, as :func:`anonlab.encoding.encode_all` and
    :func:`~anonlab.encoding.encode_like` make them in memory, from the value counts."""
    stray = [c for c in orders if c not in set(ordinal)]
    if stray:
        raise AnonlabError(
            f"orders names column '{stray[0]}', which is not an ordinal "
            "column: list it in ordinal or drop its order",
            parameter="orders",
        )
    out = []
    for j, name in enumerate([*nominal, *ordinal]):
        is_ordinal = j >= len(nominal)
        present = list(stats_o.values[j])
        domain = _domain(name, present, is_ordinal, orders.get(name))
        lookup = {v: i for i, v in enumerate(domain)}
        masked_lookup = _masked_lookup(name, domain, list(stats_m.values[j]), is_ordinal)
        masked_domain = (
            *domain,
            *sorted(
                (v for v, c in masked_lookup.items() if c >= len(domain)),
                key=lambda v: masked_lookup[v],
            ),
        )
        out.append(
            CategorySpec(name, is_ordinal, tuple(domain), masked_domain, lookup, masked_lookup)
        )
    return tuple(out)


def _domain(
    name: str, present: Sequence[str], ordinal: bool, order: Sequence[str] | None
) -> list[str]:
    """The original's ordered domain of one column (``encode_categorical``'s rules)."""
    from anonlab.encoding import _as_number, natural_order

    if ordinal and "" in present:
        raise AnonlabError(
            f"ordinal column '{name}' of the original has a missing value: fill it or drop the row"
        )
    if order is not None:
        domain = [str(v).strip() for v in order]
        twice = [v for i, v in enumerate(domain) if v in domain[:i]]
        if twice:
            raise AnonlabError(
                f"value '{twice[0]}' is named twice in the order of ordinal "
                f"column '{name}': list each value once"
            )
        missing = sorted(set(present) - set(domain))
        if missing:
            raise AnonlabError(
                f"value '{missing[0]}' of ordinal column '{name}' is not in its "
                "order: list every value"
            )
        return domain
    if ordinal:
        words = [v for v in present if _as_number(v) is None]
        if words and len(words) < len(present):
            raise AnonlabError(
                f"ordinal column '{name}' of the original mixes numbers and text "
                f"('{words[0]}'): give the order of its values in orders",
                parameter="orders",
            )
        return natural_order(present)
    return sorted(present)


def _masked_lookup(
    name: str, domain: Sequence[str], present: Sequence[str], ordinal: bool
) -> dict[str, int]:
    """Codes of the masked table's texts (``encode_like``'s rules: a text spelling a number
    of the domain takes its code; other nominal values are appended, sorted)."""
    from anonlab.encoding import _as_number, _numeric_lookup

    lookup = {v: i for i, v in enumerate(domain)}
    by_number = _numeric_lookup(domain)
    for v in set(present) - set(lookup):
        number = _as_number(v)
        if number is not None and number in by_number:
            lookup[v] = by_number[number]
    extra = sorted(set(present) - set(lookup))
    if extra and ordinal:
        raise AnonlabError(
            f"value '{extra[0]}' of ordinal column '{name}' in the masked table "
            "is not a value of the original: an ordinal value must come from "
            "its domain"
        )
    for i, v in enumerate(extra):
        lookup[v] = len(domain) + i
    return lookup


def _assemble(
    spec: PairSpec,
    stats_o: TableStats,
    stats_m: TableStats,
    blocks: Sequence[BlockSums],
    weights: Any,
    block_rows: int,
    original: Table,
    masked: Table,
    nominal: list[str],
    ordinal: list[str],
) -> Evaluation:
    """The measures from the merged sums, keyed and noted as in memory."""
    from anonlab.metrics import utility
    from anonlab.metrics.em4adom import Evaluation, report_parameters
    from anonlab.metrics.tradeoff import disclosure_risk, score

    n, d = stats_o.rows, len(spec.numeric)
    sse, l1 = np.zeros(d), np.zeros(d)
    zil, linked, expected = 0.0, 0, 0.0
    disclosed = np.zeros(len(spec.p_values), dtype=np.int64)
    for b in blocks:
        sse += b.sse
        l1 += b.l1
        zil += b.zil
        linked += b.linked
        expected += b.expected
        if d:
            disclosed += np.asarray(b.disclosed, dtype=np.int64)
    measures: dict[str, Any] = {}
    notes = _column_notes(original, masked)
    if d:
        notes += _numeric_loss(spec, stats_o, stats_m, sse, l1, weights.lam, measures)
    if spec.categories:
        h = hm = 0.0
        for j, cat in enumerate(spec.categories):
            h += utility.entropy_of_counts(
                _counts(stats_o.values[j], cat.lookup, len(cat.domain)), cat.ordinal
            )
            hm += utility.entropy_of_counts(
                _counts(stats_m.values[j], cat.masked_lookup, len(cat.masked_domain)), cat.ordinal
            )
        measures.update(
            {
                "ZIL": zil,
                "ZIL_percent": 100.0 * zil / (n * len(spec.categories)),
                "ILR": utility.ilr_of_entropies(h, hm),
            }
        )
    measures["DLD"] = linked / n
    measures["DLD_expected"] = expected / n
    if d:
        each = {f"{p:g}": float(c / n) for p, c in zip(spec.p_values, disclosed, strict=True)}
        id_mean = float(np.mean(list(each.values())))
        measures["ID"] = id_mean
        measures["ID_by_p"] = each
        measures["DR"] = disclosure_risk(measures["DLD"], id_mean, weights.tau)
        measures["score"] = score(measures["IL"], measures["DR"], weights.gamma)
    else:
        notes.append("no numeric column: ILh..IL, ID, DR and score need numeric attributes")
    parameters = report_parameters(weights, bool(spec.categories))
    parameters["blocks"] = {
        "block_rows": block_rows,
        "count": len(blocks),
        "exact": [m for m in EXACT if m in measures],
        "blockwise": [m for m in BLOCKWISE if m in measures],
        "rule": "DLD, DLD_expected and ID within blocks of block_rows consecutive records "
        "(each masked record against the originals of its block; ID's interval "
        "width from the block's size); the other measures over the whole table",
    }
    return Evaluation(measures, parameters, n, list(spec.numeric), nominal, ordinal, notes)


def _counts(values: Mapping[str, int], lookup: Mapping[str, int], size: int) -> NDArray[np.int64]:
    """Records per domain code from a column's value counts."""
    out = np.zeros(size, dtype=np.int64)
    for text, count in values.items():
        out[lookup[text]] += count
    return out


def _numeric_loss(
    spec: PairSpec,
    stats_o: TableStats,
    stats_m: TableStats,
    sse: FloatArray,
    l1: FloatArray,
    lam: tuple[float, ...],
    measures: dict[str, Any],
) -> list[str]:
    """ILh, IL1, IL2, IL3, ILs and IL from the sums (module text); returns notes."""
    from anonlab.metrics import utility

    n, d = stats_o.rows, len(spec.numeric)
    scale = spec.std * spec.std
    ilh = float(np.sum(sse / scale) / np.sum(stats_o.comoment.diagonal() / scale))
    sample_std = np.sqrt(stats_o.comoment.diagonal() / (n - 1)) if n > 1 else np.full(d, np.nan)
    il1 = float(np.sum(l1 / (np.sqrt(2.0) * sample_std)) / (n * d))
    loss = utility.il_2_3_moments(
        n, stats_o.mean, stats_o.comoment / n, stats_m.mean, stats_m.comoment / n, stats_o.absmax
    )
    ils = utility.il_s(lam, il1, loss.il2, loss.il3)
    measures.update(
        {
            "ILh": ilh,
            "IL1": il1,
            "IL2": loss.il2,
            "IL3": loss.il3,
            "ILs": ils,
            "IL": (ilh + ils) / 2,
        }
    )
    if loss.excluded_terms:
        return [
            f"{loss.excluded_terms} relative term(s) of IL2/IL3 had an original "
            "mean or covariance of 0 (up to rounding) and were left out of "
            "their average"
        ]
    return []


def _column_notes(original: Table, masked: Table) -> list[str]:
    """A note when the two tables have different other columns (as in memory)."""
    only_original = [c for c in original.column_names if c not in set(masked.column_names)]
    only_masked = [c for c in masked.column_names if c not in set(original.column_names)]
    if only_original or only_masked:
        return [
            "the tables' other columns differ (not evaluated): "
            f"only in the original {only_original}, only in the masked {only_masked}"
        ]
    return []
