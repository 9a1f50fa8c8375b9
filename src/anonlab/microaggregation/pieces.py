"""Block MDAV on an engine: the table cut into regions, each region microaggregated in one task.

The scalable variant of MDAV (:mod:`anonlab.microaggregation.scalable`) needs
its records in one process. On an engine the standardized records are first
cut into *regions* by a coarse k-d split, and each region is microaggregated
by the scalable variant on its own, one task per region (one after the other
on the NumPy engine). Groups never cross a region's faces. The passes:

1. the column moments (:func:`table_moments`): ``z = (x - mean) / std``
   with the population deviation, as in memory (a column whose streamed
   moments overflow or underflow, numbers near 1e300 or 1e-300, measured
   again on the column scaled by a power of two, as
   :func:`anonlab.encoding.column_scale` does);
2. with ``R = ceil(n / region_rows) > 1`` regions, a sample: every piece
   keeps the rows with the ``SAMPLE_ROWS`` smallest keys drawn from
   ``default_rng([SAMPLE_SEED, piece])`` and this process keeps the
   ``SAMPLE_ROWS`` smallest of all (a uniform sample without replacement of
   the whole table; the whole table when it has no more rows). The same
   pieces give the same sample on every engine;
3. the planes (:func:`region_planes`), from the sample in this process: a
   node that must hold ``r > 1`` regions is cut on the attribute with the
   largest range of its sample rows at the sample quantile ``floor(r/2) / r``
   (rows at or below the plane go left), its sides holding ``floor(r/2)`` and
   ``ceil(r/2)`` regions; so each region holds about ``n / R <= region_rows``
   rows (up to the sample's error);
4. routing (:func:`route_piece`): every row is sent to its leaf by the
   planes, and each piece writes its rows of each leaf as one Parquet shard
   into a scratch folder (the numeric columns as doubles, the others as
   text, and the row's place in the table). The exact counts per leaf come
   back; a leaf with fewer than ``2k`` rows is merged into the neighbouring
   leaf of the tree's order with fewer rows, until every region has at least
   ``2k`` (:func:`merge_small`);
5. one task per region (:func:`microaggregate_region`): its shards read in
   table order, MDAV's scalable variant (``block_size``) on its z-scores, the
   numeric columns replaced by their group means and written as part ``r``
   of the release; the task returns the group sizes, the region's SSE and
   the moments of its z-scores (for SST), and, when asked, checks its part
   as written with the independent checker
   (:func:`anonlab.verify.microaggregation.check_microaggregation`).

With one region the task sees the whole table in table order, so its groups
are those of the in-memory scalable variant. Every step is a function of the
table's pieces alone, so both engines write the same release.
"""

from __future__ import annotations

import math
import os
import secrets
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from anonlab.engine import kernels
from anonlab.engine.base import WriteSummary
from anonlab.engine.table import Piece, Table
from anonlab.errors import AnonlabError
from anonlab.microaggregation.scalable import DEFAULT_REGION_ROWS
from anonlab.staging import StagedFolder
from anonlab.tempfiles import temp_path_for

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from anonlab.engine.base import Engine, Moments
    from anonlab.progress import ProgressFn

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
#: rows of a region by default (docs/engine.md, "microaggregate")
REGION_ROWS = DEFAULT_REGION_ROWS
#: rows of the sample the planes are chosen from
SAMPLE_ROWS = 65_536
#: the seed of the sample's keys (a constant: the planes are part of the method, not a secret)
SAMPLE_SEED = 20_261_124
#: the hidden column of a shard: the row's place in the table, piece << PIECE_SHIFT | row
ORDER = "__anonlab_row"
PIECE_SHIFT = 40


# ---------------------------------------------------------------------------
# The sample and the planes
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PieceSample:
    """A piece's rows and the values of its rows with the smallest sample keys."""

    rows: int
    keys: FloatArray
    x: FloatArray


def piece_extent(piece: Piece, columns: Sequence[str], batch_rows: int) -> FloatArray:
    """Each column's smallest and largest value, largest magnitude and whether every value
    is finite (1.0) or not (0.0), as the rows of a ``(4, d)`` array (no rows: ``inf``,
    ``-inf``, 0, 1)."""
    d = len(columns)
    extent = np.array([[np.inf] * d, [-np.inf] * d, [0.0] * d, [1.0] * d])
    for batch in piece.batches(list(columns), batch_rows):
        x = kernels.numeric_block(batch, columns, piece.describe())
        if x.shape[0] == 0:
            continue
        finite = np.isfinite(x).all(axis=0)
        extent[3] = np.minimum(extent[3], finite)
        extent[0] = np.minimum(extent[0], x.min(axis=0))
        extent[1] = np.maximum(extent[1], x.max(axis=0))
        extent[2] = np.maximum(extent[2], np.abs(x).max(axis=0))
    return extent


def piece_scaled_moments(
    piece: Piece, columns: Sequence[str], exponents: Sequence[int], batch_rows: int
) -> kernels.PartialMoments:
    """The moments of one piece's ``columns`` divided by ``2**exponents`` (exact), batch by
    batch as :func:`anonlab.engine.kernels.piece_moments` takes them."""
    scale = -np.asarray(exponents, dtype=np.int64)
    total = kernels.PartialMoments(0, np.zeros(len(columns)), np.zeros(len(columns)))
    for batch in piece.batches(list(columns), batch_rows):
        x = np.ldexp(kernels.numeric_block(batch, columns, piece.describe()), scale)
        if x.shape[0] == 0:
            continue
        mean = x.mean(axis=0)
        centred = x - mean
        m2 = np.einsum("ij,ij->j", centred, centred)
        total = kernels.combine_moments(total, kernels.PartialMoments(x.shape[0], mean, m2))
    return total


def table_moments(
    engine: Engine, table: Table, numeric: Sequence[str], *, progress: ProgressFn | None = None
) -> Moments:
    """The table's count, means and population deviations of ``numeric``, refused as the
    in-memory standardization (:func:`anonlab.encoding.column_scale`) refuses them.

    The moments are streamed (:meth:`Engine.moments`). A column whose streamed mean or
    deviation is not finite, or whose deviation is 0, is measured again when all its values
    are finite and not all equal: on the column divided by ``2**e`` (``2**e`` above its
    largest magnitude, :func:`anonlab.encoding.scale_exponent`; an exact scaling), the mean
    and deviation scaled back by ``2**e``. So numbers near 1e300 (whose squares overflow)
    and near 1e-300 (whose squares underflow to 0) get their finite, positive deviation, as
    in memory; every other column keeps its streamed moments, to the bit. A column with an
    infinite value is refused as such, a constant column with the in-memory line.
    """
    from anonlab.encoding import constant_column, scale_exponent
    from anonlab.engine.base import Moments, base_engine

    numeric = list(numeric)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is measured again
        moments = engine.moments(table, numeric, progress=progress)
    mean, std = np.array(moments.mean, dtype=np.float64), np.array(moments.std, dtype=np.float64)
    again = np.flatnonzero(~(np.isfinite(mean) & np.isfinite(std) & (std > 0)))
    if again.size:
        runner = base_engine(engine)
        names = [numeric[j] for j in again]
        parts: list[FloatArray] = runner.map_pieces(
            table, piece_extent, names, runner.batch_rows, progress=progress, step="column ranges"
        )
        low = np.min([p[0] for p in parts], axis=0)
        high = np.max([p[1] for p in parts], axis=0)
        largest = np.max([p[2] for p in parts], axis=0)
        finite = np.min([p[3] for p in parts], axis=0) > 0
        scaled = [i for i in range(len(names)) if finite[i] and low[i] < high[i]]
        for i in range(len(names)):
            if finite[i] and low[i] == high[i]:
                std[again[i]] = 0.0  # constant: refused below, whatever its streamed m2
        if scaled:
            exponents = [scale_exponent(float(largest[i])) for i in scaled]
            partial: list[kernels.PartialMoments] = runner.map_pieces(
                table,
                piece_scaled_moments,
                [names[i] for i in scaled],
                exponents,
                runner.batch_rows,
                progress=progress,
                step="moments of scaled columns",
            )
            total = kernels.PartialMoments(0, np.zeros(len(scaled)), np.zeros(len(scaled)))
            for part in partial:
                total = kernels.combine_moments(total, part)
            for at, (i, e) in enumerate(zip(scaled, exponents, strict=True)):
                j = int(again[i])
                mean[j] = np.ldexp(total.mean[at], e)
                std[j] = np.ldexp(np.sqrt(total.m2[at] / total.count), e)
    result = Moments(moments.columns, moments.count, mean, std)
    Moments(result.columns, result.count, mean, np.where(std == 0, 1.0, std)).check_z_scores()
    for flat in np.flatnonzero(std == 0):
        raise constant_column(numeric[int(flat)])
    return result


def _smallest(keys: FloatArray, size: int) -> NDArray[np.intp]:
    """Indices of the ``size`` smallest ``keys`` (all when there are fewer), in key order."""
    if keys.size > size:
        pick = np.argpartition(keys, size - 1)[:size]
        return np.asarray(pick[np.argsort(keys[pick], kind="stable")])
    return np.argsort(keys, kind="stable")


def piece_sample(piece: Piece, columns: Sequence[str], batch_rows: int, size: int) -> PieceSample:
    """The ``size`` rows of a piece with the smallest keys of ``default_rng([SAMPLE_SEED,
    piece])`` (one key a row, in row order), kept as the batches stream by."""
    rng = np.random.default_rng([SAMPLE_SEED, piece.index])
    keys = np.zeros(0)
    x = np.zeros((0, len(columns)))
    rows = 0
    for batch in piece.batches(list(columns), batch_rows):
        block = kernels.numeric_block(batch, columns, piece.describe())
        keys = np.concatenate([keys, rng.random(block.shape[0])])
        x = np.vstack([x, block])
        rows += block.shape[0]
        keep = _smallest(keys, size)
        keys, x = keys[keep], x[keep]
    return PieceSample(rows, keys, x)


def table_sample(parts: Sequence[PieceSample], size: int) -> FloatArray:
    """The ``size`` rows with the smallest keys over all pieces (in key order)."""
    if not parts:
        return np.zeros((0, 0))
    keys = np.concatenate([p.keys for p in parts])
    x = np.vstack([p.x for p in parts])
    return np.asarray(x[_smallest(keys, size)])


@dataclass(frozen=True)
class RegionPlanes:
    """A k-d tree of planes: node ``i`` sends a row with ``z[axis[i]] <= threshold[i]`` to
    ``left[i]``, others to ``right[i]``; a leaf (``axis = -1``) is leaf ``leaf[i]``, leaves
    numbered in the tree's depth-first order (left first)."""

    axis: IntArray
    threshold: FloatArray
    left: IntArray
    right: IntArray
    leaf: IntArray

    @property
    def leaves(self) -> int:
        """How many leaves the tree has."""
        return int((self.leaf >= 0).sum())

    def route(self, z: FloatArray) -> IntArray:
        """The leaf of each row of ``z``."""
        node = np.zeros(z.shape[0], dtype=np.int64)
        while True:
            inner = np.flatnonzero(self.axis[node] >= 0)
            if inner.size == 0:
                return np.asarray(self.leaf[node])
            at = node[inner]
            lower = z[inner, self.axis[at]] <= self.threshold[at]
            node[inner] = np.where(lower, self.left[at], self.right[at])


def region_planes(z: FloatArray, regions: int) -> RegionPlanes:
    """Planes cutting the sample ``z`` into ``regions`` leaves of about equal size.

    A node holding ``r > 1`` regions cuts on the attribute with the largest
    range of its rows at the value of rank ``round(|rows| floor(r/2) / r)``
    (ties in the attribute by row number); the sides hold ``floor(r/2)`` and
    ``ceil(r/2)`` regions. A node whose rows cannot be cut (fewer than two,
    or all equal on the attribute) stays one leaf.
    """
    axis: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    leaf: list[int] = []

    def node(rows: IntArray, r: int) -> int:
        i = len(axis)
        axis.append(-1)
        threshold.append(0.0)
        left.append(-1)
        right.append(-1)
        leaf.append(-1)
        cut = _cut(z[rows], r) if r > 1 and rows.size >= 2 else None
        if cut is None:
            leaf[i] = sum(1 for x in leaf if x >= 0)
            return i
        a, t = cut
        lower = z[rows, a] <= t
        axis[i], threshold[i] = a, t
        left[i] = node(rows[lower], r // 2)
        right[i] = node(rows[~lower], r - r // 2)
        return i

    node(np.arange(z.shape[0]), max(regions, 1))
    return RegionPlanes(
        np.asarray(axis, dtype=np.int64),
        np.asarray(threshold),
        np.asarray(left, dtype=np.int64),
        np.asarray(right, dtype=np.int64),
        np.asarray(leaf, dtype=np.int64),
    )


def _cut(part: FloatArray, r: int) -> tuple[int, float] | None:
    """The attribute and value of a node's plane, or ``None`` when the rows cannot be cut."""
    a = int(np.argmax(part.max(axis=0) - part.min(axis=0)))
    values = np.sort(part[:, a], kind="stable")
    rank = min(max(round(values.size * (r // 2) / r), 1), values.size - 1)
    t = float(values[rank - 1])
    if t >= values[-1]:  # everything at or below the plane: take the value below instead
        below = values[values < t]
        if below.size == 0:
            return None
        t = float(below[-1])
    return a, t


def merge_small(counts: Sequence[int], least: int) -> list[list[int]]:
    """Leaves (by number) united into regions of at least ``least`` rows each.

    While a region has fewer rows than ``least`` and there are two or more,
    the smallest (the first of equal ones) joins its neighbour in the leaves'
    order (the previous or next region) that has fewer rows (the previous
    one on a tie).
    """
    regions = [[i] for i in range(len(counts))]
    sizes = [int(c) for c in counts]
    while len(regions) > 1 and min(sizes) < least:
        i = sizes.index(min(sizes))
        if i == 0:
            j = 1
        elif i == len(regions) - 1:
            j = i - 1
        else:
            j = i - 1 if sizes[i - 1] <= sizes[i + 1] else i + 1
        a, b = min(i, j), max(i, j)
        regions[a : b + 1] = [regions[a] + regions[b]]
        sizes[a : b + 1] = [sizes[a] + sizes[b]]
    return regions


# ---------------------------------------------------------------------------
# Routing: every row to its leaf, as shards
# ---------------------------------------------------------------------------


def shard_name(leaf: int, piece: int) -> str:
    """The file name of piece ``piece``'s rows of leaf ``leaf`` in the scratch folder."""
    return f"leaf-{leaf:05d}-piece-{piece:05d}.parquet"


def _plain(column: Any) -> Any:
    """A column as plain text without nulls (a dictionary column decoded)."""
    import pyarrow as pa

    text = kernels.text_column(column)
    if pa.types.is_dictionary(text.type):
        text = text.dictionary_decode()
    return text


@dataclass(frozen=True)
class PieceRouted:
    """What routing one piece gave: its rows and its rows per leaf (shards written)."""

    index: int
    rows: int
    counts: IntArray


def route_piece(
    piece: Piece,
    numeric: Sequence[str],
    keep: Sequence[str],
    mean: FloatArray,
    std: FloatArray,
    planes: RegionPlanes,
    folder: str,
    batch_rows: int,
) -> PieceRouted:
    """Send each row of a piece to its leaf and write the piece's rows of each leaf as one
    shard: the ``keep`` columns (numeric ones as doubles, others as text) and :data:`ORDER`.
    Each shard is written under a temporary name and renamed when whole (a task run again
    writes the same shards)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writers: dict[int, tuple[Any, Path]] = {}
    counts = np.zeros(planes.leaves, dtype=np.int64)
    offset = 0
    try:
        for batch in piece.batches(list(keep), batch_rows):
            x = kernels.numeric_block(batch, numeric, piece.describe())
            leaf = planes.route((x - mean) / std)
            order = (np.int64(piece.index) << PIECE_SHIFT) + offset + np.arange(x.shape[0])
            arrays = [
                pa.array(np.ascontiguousarray(x[:, numeric.index(name)]))
                if name in numeric
                else _plain(batch.column(name))
                for name in keep
            ]
            table = pa.Table.from_arrays([*arrays, pa.array(order)], names=[*keep, ORDER])
            for target in np.unique(leaf):
                rows = np.flatnonzero(leaf == target)
                counts[target] += rows.size
                if int(target) not in writers:
                    tmp = (
                        Path(folder) / f".{shard_name(int(target), piece.index)}."
                        f"{os.getpid()}-{secrets.token_hex(4)}.tmp"
                    )
                    writers[int(target)] = (pq.ParquetWriter(tmp, table.schema), tmp)
                writers[int(target)][0].write_table(table.take(pa.array(rows)))
            offset += x.shape[0]
        for target, (writer, tmp) in sorted(writers.items()):
            writer.close()
            os.replace(tmp, Path(folder) / shard_name(target, piece.index))
    finally:
        for writer, tmp in writers.values():
            writer.close()
            tmp.unlink(missing_ok=True)
    return PieceRouted(piece.index, offset, counts)


# ---------------------------------------------------------------------------
# One region
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RegionPiece(Piece):
    """One region: its shards (files of the scratch folder), read whole in table order."""

    index: int
    files: tuple[str, ...]
    names: tuple[str, ...]

    def columns(self) -> tuple[str, ...]:
        return self.names

    def read(self) -> pa.Table:
        """The region's rows (with :data:`ORDER`), in table order."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.concat_tables([pq.read_table(f) for f in self.files])
        order = np.argsort(table.column(ORDER).to_numpy(), kind="stable")
        return table.take(pa.array(order))

    def batches(self, columns: Sequence[str], batch_rows: int) -> Any:
        table = self.read().select(list(columns))
        for start in range(0, max(table.num_rows, 1), batch_rows):
            yield table.slice(start, batch_rows)

    def describe(self) -> str:
        return f"region {self.index}"


@dataclass(frozen=True)
class RegionDone:
    """What one region's task gave: rows, group sizes, SSE, its z-scores' moments, the rows'
    places in the table (when asked for) and the checker's findings (when asked for)."""

    index: int
    rows: int
    size_counts: IntArray  # size_counts[s]: groups of s records
    sse: float
    moments: kernels.PartialMoments
    order: IntArray | None
    problems: tuple[str, ...]


def microaggregate_region(
    region: RegionPiece,
    numeric: Sequence[str],
    mean: FloatArray,
    std: FloatArray,
    k: int,
    block_size: int,
    workers: int,
    folder: str,
    keep_order: bool,
    check: bool,
) -> RegionDone:
    """MDAV's scalable variant on one region; its release written as part ``region.index``.

    SSE = sum ||z - z'||^2 with z' the group means standardized by the
    table's moments, as :func:`anonlab.metrics.utility.il_h` sums it.
    """
    import pyarrow as pa

    from anonlab.microaggregation.mdav import group_means
    from anonlab.microaggregation.scalable import scalable_mdav_labels

    table = region.read()
    names = [c for c in table.column_names if c != ORDER]
    x = np.column_stack([table.column(c).to_numpy() for c in numeric]).astype(np.float64)
    z = (x - mean) / std
    labels = scalable_mdav_labels(z, k, block_size, workers=workers)
    xm = group_means(x, labels)
    sse = float(np.sum((z - (xm - mean) / std) ** 2))
    centre = z.mean(axis=0)
    moments = kernels.PartialMoments(
        z.shape[0], centre, np.einsum("ij,ij->j", z - centre, z - centre)
    )
    arrays = [
        pa.array(np.ascontiguousarray(xm[:, numeric.index(c)])) if c in numeric else table.column(c)
        for c in names
    ]
    released = pa.Table.from_arrays(arrays, names=names)
    rows = kernels.write_batches(folder, region.index, [released])
    problems: tuple[str, ...] = ()
    if check:
        problems = tuple(
            check_part(
                table.select(names), Path(folder) / kernels.part_name(region.index), numeric, k
            )
        )
    order = table.column(ORDER).to_numpy().astype(np.int64) if keep_order else None
    return RegionDone(
        region.index,
        rows,
        np.bincount(np.bincount(labels)).astype(np.int64),
        sse,
        moments,
        order,
        problems,
    )


def check_part(original: pa.Table, part: Path, numeric: Sequence[str], k: int) -> list[str]:
    """The independent checker's findings on one written part against its region's rows."""
    import pyarrow.parquet as pq

    from anonlab.verify.microaggregation import check_microaggregation

    written = pq.read_table(part).to_pandas()
    return check_microaggregation(original.to_pandas(), written, k, numeric=list(numeric))


# ---------------------------------------------------------------------------
# The whole pass
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RegionsResult:
    """The release written by regions: its summary, each region's rows, the groups of each
    size (``size_counts[s]``: groups of ``s`` records), SSE and SST, the rows' places (piece
    offsets and each released row's place, when kept) and the per-region checker's findings."""

    summary: WriteSummary
    region_rows: tuple[int, ...]
    size_counts: IntArray
    sse: float
    sst: float
    piece_rows: tuple[int, ...]
    order: IntArray | None
    problems: tuple[str, ...]

    def table_rows(self) -> IntArray:
        """Each released row's number in the table (needs ``order``)."""
        if self.order is None:
            raise RuntimeError("the regions were written without keep_order=True")
        offsets = np.concatenate([[0], np.cumsum(self.piece_rows)]).astype(np.int64)
        piece = self.order >> PIECE_SHIFT
        return np.asarray(offsets[piece] + (self.order & ((1 << PIECE_SHIFT) - 1)))

    def holds_every_row_once(self) -> bool:
        """Whether the released rows' places (:meth:`table_rows`) are every row of the table
        exactly once (needs ``order``)."""
        places = self.table_rows()
        n = sum(self.piece_rows)
        return bool(places.size == n and np.all(np.bincount(places, minlength=n) == 1))

    def report_keys(
        self, *, variant: str, k: int, block_size: int, numeric: Sequence[str]
    ) -> dict[str, Any]:
        """The report keys of :meth:`MicroaggregationResult.summary
        <anonlab.microaggregation.masking.MicroaggregationResult.summary>`, from the regions'
        figures: group sizes summed over the regions, ``ILh`` = SSE / SST."""
        counts = self.size_counts
        sizes = np.flatnonzero(counts)
        return {
            "method": "MDAV",
            "variant": variant,
            "k": k,
            "records": self.summary.rows,
            "columns": list(numeric),
            "nominal": [],
            "ordinal": [],
            "groups": int(counts.sum()),
            "group_sizes": {
                "min": int(sizes.min()),
                "max": int(sizes.max()),
                "count_by_size": {str(int(c)): int(counts[c]) for c in sizes},
            },
            "measures": {"ILh": self.sse / self.sst},
            "block_size": block_size,
        }


def head_frame(table: Table, rows: int) -> pd.DataFrame:
    """The first ``rows`` rows of ``table`` (of its first piece with rows) as a DataFrame (its
    columns and no rows when it has none): what a run decides the columns' types and roles
    on before any pass."""
    import pandas as pd

    from anonlab.tabletext import to_frame

    if table.dask_frame is not None:
        head: pd.DataFrame = table.dask_frame.head(rows, npartitions=-1)
        return head
    for piece in table.pieces:  # the first piece with rows: a part may be empty
        first = next(iter(piece.batches(list(table.column_names), rows)), None)
        if first is not None and first.num_rows:
            return to_frame(first)
    return pd.DataFrame(columns=list(table.column_names))


def regions_for(rows: int, region_rows: int) -> int:
    """How many regions ``rows`` rows are cut into: ``ceil(rows / region_rows)``."""
    return max(1, math.ceil(rows / region_rows))


def microaggregate_regions(
    engine: Engine,
    table: Table,
    numeric: Sequence[str],
    keep: Sequence[str],
    *,
    rows: int,
    mean: FloatArray,
    std: FloatArray,
    k: int,
    block_size: int,
    region_rows: int,
    output: StagedFolder,
    workers: int = 1,
    keep_order: bool = False,
    check_regions: bool = False,
    progress: ProgressFn | None = None,
) -> RegionsResult:
    """Cut ``table`` into regions, microaggregate each and write the release into ``output``
    (the caller commits it); see the module text. ``rows``, ``mean`` and ``std`` are the
    table's moments of ``numeric``; ``keep`` the columns released (in order)."""
    from anonlab.engine.base import base_engine

    runner = base_engine(engine)
    if region_rows < 2 * k:
        raise AnonlabError(
            f"region_rows must be at least 2k = {2 * k} (got {region_rows})",
            parameter="region_rows",
        )
    numeric, keep = list(numeric), list(keep)
    regions = regions_for(rows, region_rows)
    planes = region_planes(np.zeros((1, len(numeric))), 1)
    if regions > 1:
        parts: list[PieceSample] = runner.map_pieces(
            table,
            piece_sample,
            numeric,
            runner.batch_rows,
            SAMPLE_ROWS,
            progress=progress,
            step="sampling the regions' planes",
        )
        planes = region_planes((table_sample(parts, SAMPLE_ROWS) - mean) / std, regions)
    scratch = temp_path_for(output.target)  # removed by a later run if this one is killed
    scratch.mkdir()
    try:
        routed: list[PieceRouted] = runner.map_pieces(
            table,
            route_piece,
            numeric,
            keep,
            mean,
            std,
            planes,
            str(scratch),
            runner.batch_rows,
            progress=progress,
            step="routing rows to regions",
        )
        counts = np.sum([r.counts for r in routed], axis=0, dtype=np.int64).reshape(-1)
        pieces = []
        for i, leaves in enumerate(merge_small(list(counts), 2 * k)):
            files = [
                str(scratch / shard_name(leaf, r.index))
                for r in routed
                for leaf in leaves
                if r.counts[leaf]
            ]
            pieces.append(RegionPiece(i, tuple(files), tuple(keep)))
        done: list[RegionDone] = runner.map_pieces(
            Table("the regions", tuple(keep), tuple(pieces)),
            microaggregate_region,
            numeric,
            mean,
            std,
            k,
            block_size,
            workers,
            str(output.path),
            keep_order,
            check_regions,
            progress=progress,
            step="microaggregating regions",
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    total = kernels.PartialMoments(0, np.zeros(len(numeric)), np.zeros(len(numeric)))
    for d in done:
        total = kernels.combine_moments(total, d.moments)
    order = np.concatenate([d.order for d in done if d.order is not None]) if keep_order else None
    summary = WriteSummary(output.target, sum(d.rows for d in done), len(done))
    size_counts = np.zeros(max(d.size_counts.size for d in done), dtype=np.int64)
    for d in done:
        size_counts[: d.size_counts.size] += d.size_counts
    return RegionsResult(
        summary,
        tuple(d.rows for d in done),
        size_counts,
        sum(d.sse for d in done),
        float(total.m2.sum()),
        tuple(r.rows for r in routed),
        order,
        tuple(p for d in done for p in d.problems),
    )
