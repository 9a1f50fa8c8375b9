"""The engine protocol, its results, and the part every backend shares.

An :class:`Engine` runs the few passes over all rows that the methods need
(docs/design.md, "The one hot primitive"); everything else works on their small
results in-process:

* :meth:`Engine.encode`: dictionary-encode columns against one global
  dictionary (:class:`Encoding`);
* :meth:`Engine.frequency_set`: the base frequency set, distinct
  quasi-identifier tuples with counts and sensitive histograms
  (:class:`BaseFrequencySet`);
* :meth:`Engine.write_release`: apply a transformation and a set of
  suppressed classes (:class:`ReleasePlan`) to every row and write the
  release as partitioned Parquet;
* :meth:`Engine.moments`: count, mean and population deviation of numeric
  columns (:class:`Moments`);
* :meth:`Engine.transform_rows`: a row-wise function of numeric columns
  (e.g. a perturbation matrix, :class:`AffineRows`) written as partitioned
  Parquet.

A backend only says how to run a kernel over every piece of a table
(:meth:`EngineBase.map_pieces`) and how to reduce partial frequency sets;
the rest is here, so both backends give the same results.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from anonlab.engine import kernels
from anonlab.engine.table import BATCH_ROWS, Table, TableLike, open_table
from anonlab.errors import AnonlabError, present
from anonlab.grouping import MAX_KEY, group_tuples, pack_codes
from anonlab.progress import ProgressFn
from anonlab.staging import StagedFolder

if TYPE_CHECKING:
    import pyarrow as pa

    from anonlab.paths import PathLike

DictionaryOrder = Literal["first-seen", "sorted"]


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Encoding:
    """Columns dictionary-encoded against one dictionary per column.

    ``dictionaries[j][c]`` is the text of code ``c`` of column ``j``: values in
    order of first appearance in the table (as
    :func:`anonlab.dataset.encode_qi` numbers them), or sorted;
    ``frequencies[j][c]`` counts the rows holding it. ``codes`` (when asked
    for) holds one ``(rows, m)`` int32 block per piece, in table order.
    """

    columns: tuple[str, ...]
    dictionaries: tuple[tuple[str, ...], ...]
    frequencies: tuple[NDArray[np.int64], ...]
    rows: int
    codes: tuple[NDArray[np.int32], ...] | None = None

    def code_matrix(self) -> NDArray[np.int32]:
        """All rows' codes as one ``(rows, m)`` int32 matrix (needs ``codes``)."""
        if self.codes is None:
            raise RuntimeError("this encoding was made without codes=True")
        if not self.codes:
            return np.zeros((0, len(self.columns)), dtype=np.int32)
        return np.concatenate(self.codes)


@dataclass(frozen=True)
class SensitiveCounts:
    """Per-tuple histogram of one sensitive column.

    Triples ``(classes[i], values[i], counts[i])`` sorted by tuple, then
    value: ``counts[i]`` rows of base tuple ``classes[i]`` hold value
    ``dictionary[values[i]]``. ``dictionary`` is in first-seen order and
    ``frequencies`` counts each value over the table (as
    :class:`anonlab.dataset.EncodedSensitive` has them).
    """

    name: str
    dictionary: tuple[str, ...]
    classes: NDArray[np.int64]
    values: NDArray[np.int64]
    counts: NDArray[np.int64]
    frequencies: NDArray[np.int64]


@dataclass(frozen=True)
class BaseFrequencySet:
    """The frequency set of the table at the bottom of the lattice.

    ``tuples[i]`` is a distinct quasi-identifier code tuple (codes index
    ``dictionaries``, first-seen order), in order of first appearance;
    ``counts[i]`` its rows and ``first_rows[i]`` its first row. These are
    the arrays :class:`anonlab.lattice.freqset.FrequencyEngine` computes
    in-process (``base_tuples``, ``bottom.counts``, ``bottom.representatives``
    and ``bottom.sensitive``).
    """

    columns: tuple[str, ...]
    dictionaries: tuple[tuple[str, ...], ...]
    tuples: NDArray[np.int32]
    counts: NDArray[np.int64]
    first_rows: NDArray[np.int64]
    sensitive: dict[str, SensitiveCounts]
    rows: int
    #: per tuple, the sum of the weights column (``frequency_set(..., weights=)``), else None
    weights: NDArray[np.float64] | None = None

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays."""
        total = self.tuples.nbytes + self.counts.nbytes + self.first_rows.nbytes
        if self.weights is not None:
            total += self.weights.nbytes
        for s in self.sensitive.values():
            total += s.classes.nbytes + s.values.nbytes + s.counts.nbytes
        return int(total)

    def value_frequencies(self, j: int) -> NDArray[np.int64]:
        """Rows per value of quasi-identifier ``j`` (``EncodedQI.frequencies``)."""
        return np.bincount(
            self.tuples[:, j], weights=self.counts, minlength=len(self.dictionaries[j])
        ).astype(np.int64)

    def classes_at(
        self, groups: Sequence[NDArray[Any]], cardinalities: Sequence[int]
    ) -> tuple[NDArray[np.int32], NDArray[np.int64]]:
        """The classes at a node: ``(class tuples, counts)``.

        ``groups[j]`` maps quasi-identifier ``j``'s codes to its group codes
        at the node (``EncodedQI.level_codes[level]``) and ``cardinalities[j]``
        is the number of groups there. Classes come in order of first
        appearance.
        """
        mapped = np.column_stack(
            [np.asarray(g)[self.tuples[:, j]] for j, g in enumerate(groups)]
        ).astype(np.int32)
        inverse, first = group_tuples(mapped, cardinalities)
        counts = np.bincount(inverse, weights=self.counts, minlength=len(first))
        return mapped[first], counts.astype(np.int64)


@dataclass(frozen=True)
class Moments:
    """Count, mean and population deviation ``sqrt(sum (x - mean)^2 / n)`` of each column."""

    columns: tuple[str, ...]
    count: int
    mean: NDArray[np.float64]
    std: NDArray[np.float64]

    def check_z_scores(self) -> None:
        """Refuse, as the in-memory standardization does, what has no z-score: an empty
        table, a column with an infinite value, a constant column."""
        if self.count == 0:
            raise AnonlabError("the table has no records: give at least one record")
        bad = ~(np.isfinite(self.mean) & np.isfinite(self.std))
        if bad.any():
            raise AnonlabError(
                f"column '{self.columns[int(np.argmax(bad))]}' holds an infinite "
                "value: give finite numbers"
            )
        if np.any(self.std == 0):
            raise AnonlabError(
                f"column '{self.columns[int(np.argmax(self.std == 0))]}' is "
                "constant: a z-score is impossible; leave it out of columns"
            )


@dataclass(frozen=True)
class WriteSummary:
    """A dataset written: its folder, rows, parts and suppressed rows (releases)."""

    path: Path
    rows: int
    parts: int
    suppressed: int = 0


# ---------------------------------------------------------------------------
# What the writing passes apply
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ReleasePlan:
    """A transformation and a set of suppressed classes, to apply to every row.

    ``dictionaries[j]`` are quasi-identifier ``j``'s values (the global
    dictionary of the first pass), ``groups[j][code]`` the group of each at
    the chosen level and ``labels[j][group]`` the group's label.
    ``suppressed`` holds the class tuples (group codes at the node) whose
    rows are suppressed: ``*`` in every quasi-identifier. ``drop`` names the
    columns left out of the release (the identifying ones).
    """

    columns: tuple[str, ...]
    dictionaries: tuple[tuple[str, ...], ...]
    groups: tuple[NDArray[np.int32], ...]
    labels: tuple[tuple[str, ...], ...]
    suppressed: NDArray[np.int32]
    drop: tuple[str, ...] = ()
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def _lookup(self, j: int) -> dict[str, int]:
        key = f"lookup{j}"
        if key not in self._cache:
            self._cache[key] = {v: i for i, v in enumerate(self.dictionaries[j])}
        found: dict[str, int] = self._cache[key]
        return found

    def groups_of(
        self, j: int, codes: NDArray[np.int32], values: Sequence[str], *, where: str
    ) -> NDArray[np.int32]:
        """Group codes of a batch's column ``j`` from its local codes and their texts."""
        if not len(values):
            return codes
        mapped = kernels.global_codes(codes, values, self._lookup(j), self.columns[j], where)
        return self.groups[j][mapped]

    def _suppressed_keys(self) -> NDArray[np.int64] | set[tuple[int, ...]]:
        if "keys" not in self._cache:
            radix = [max(len(lab), 1) for lab in self.labels]
            if math.prod(radix) <= MAX_KEY:
                self._cache["keys"] = np.unique(_pack(self.suppressed, radix))
            else:
                self._cache["keys"] = {tuple(int(x) for x in row) for row in self.suppressed}
        keys: NDArray[np.int64] | set[tuple[int, ...]] = self._cache["keys"]
        return keys

    def suppressed_rows(self, groups: NDArray[np.int32]) -> NDArray[np.bool_]:
        """Whether each row (its group codes) falls in a suppressed class."""
        if self.suppressed.shape[0] == 0 or groups.shape[0] == 0:
            return np.zeros(groups.shape[0], dtype=bool)
        radix = [max(len(lab), 1) for lab in self.labels]
        inverse, first = group_tuples(groups, radix)
        distinct = groups[first]
        keys = self._suppressed_keys()
        if isinstance(keys, set):
            flags = np.array([tuple(int(x) for x in row) in keys for row in distinct], dtype=bool)
        else:
            flags = np.isin(_pack(distinct, radix), keys)
        return np.asarray(flags[inverse], dtype=bool)

    def label_array(self, j: int, groups: NDArray[np.int32], hidden: NDArray[np.bool_]) -> pa.Array:
        """The labels of column ``j``'s groups, ``*`` where ``hidden`` (a dictionary array:
        indices into the node's labels)."""
        import pyarrow as pa

        labels = list(self.labels[j])
        if kernels.SUPPRESSED in labels:
            star = labels.index(kernels.SUPPRESSED)
        else:
            star = len(labels)
            labels.append(kernels.SUPPRESSED)
        indices = np.where(hidden, star, groups).astype(np.int32)
        return pa.DictionaryArray.from_arrays(pa.array(indices), pa.array(labels, pa.string()))


def _pack(matrix: NDArray[Any], radix: Sequence[int]) -> NDArray[np.int64]:
    """Rows of a code matrix as one int64 each (:func:`anonlab.grouping.pack_codes`)."""
    return pack_codes([matrix[:, j] for j in range(matrix.shape[1])], radix)


@dataclass(frozen=True)
class AffineRows:
    """``x -> ((x - mean) / std) @ matrix.T * out_std + out_mean``, row by row.

    With ``out_std`` and ``out_mean`` left out the result stays standardized
    (the perturbation release); with them it is brought back to the data's
    scale. Each row's product is computed alone, so any split of the rows
    into blocks gives the same doubles.
    """

    mean: NDArray[np.float64]
    std: NDArray[np.float64]
    matrix: NDArray[np.float64]
    out_mean: NDArray[np.float64] | None = None
    out_std: NDArray[np.float64] | None = None

    def __call__(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        z = (x - self.mean) / self.std
        y: NDArray[np.float64] = np.asarray((self.matrix @ z.T).T, dtype=np.float64)
        if self.out_std is not None:
            y = y * self.out_std
        if self.out_mean is not None:
            y = y + self.out_mean
        return y


# ---------------------------------------------------------------------------
# The protocol
# ---------------------------------------------------------------------------


@runtime_checkable
class Engine(Protocol):
    """The large-data operations, on some backend (``numpy`` or ``dask``)."""

    name: str

    def encode(
        self,
        table: TableLike,
        columns: Sequence[str],
        *,
        order: DictionaryOrder = "first-seen",
        codes: bool = False,
        progress: ProgressFn | None = None,
    ) -> Encoding:
        """Dictionary-encode ``columns`` against one global dictionary each."""
        ...

    def frequency_set(
        self,
        table: TableLike,
        qi: Sequence[str],
        sensitive: Sequence[str] = (),
        *,
        progress: ProgressFn | None = None,
        weights: str | None = None,
    ) -> BaseFrequencySet:
        """Distinct ``qi`` tuples with counts, per-tuple histograms of ``sensitive`` and,
        with ``weights``, per-tuple sums of that column."""
        ...

    def write_release(
        self,
        table: TableLike,
        plan: ReleasePlan,
        output: PathLike | StagedFolder,
        *,
        progress: ProgressFn | None = None,
    ) -> WriteSummary:
        """Apply ``plan`` to every row and write the release as partitioned Parquet."""
        ...

    def moments(
        self, table: TableLike, columns: Sequence[str], *, progress: ProgressFn | None = None
    ) -> Moments:
        """Count, mean and population deviation of numeric ``columns``."""
        ...

    def transform_rows(
        self,
        table: TableLike,
        columns: Sequence[str],
        function: kernels.RowFunction,
        output: PathLike | StagedFolder,
        *,
        progress: ProgressFn | None = None,
    ) -> WriteSummary:
        """Replace ``columns`` by a row-wise function of them; write partitioned Parquet."""
        ...

    def close(self) -> None:
        """Release the engine's resources (a Dask cluster it started)."""
        ...

    def __enter__(self) -> Engine:
        """The engine itself, closed on leaving a ``with`` block."""
        ...

    def __exit__(self, *exc: object) -> None:
        """Close the engine."""
        ...


class EngineBase:
    """The operations in terms of two backend primitives.

    :meth:`map_pieces` runs a kernel over every piece and returns the results
    in piece order; :meth:`reduce_partials` unites the pieces' partial
    frequency sets. ``budget`` (bytes) bounds a frequency-set merge.
    """

    name = "base"

    def __init__(self, *, batch_rows: int = BATCH_ROWS, budget: int | None = None) -> None:
        if batch_rows < 1:
            raise AnonlabError(
                f"batch_rows must be at least 1 (got {batch_rows})", parameter="batch_rows"
            )
        self.batch_rows = batch_rows
        self.budget = budget

    # backend primitives -------------------------------------------------------

    def map_pieces(
        self,
        table: Table,
        kernel: Callable[..., Any],
        *args: Any,
        progress: ProgressFn | None = None,
        step: str = "reading pieces",
    ) -> list[Any]:
        """``kernel(piece, *args)`` for every piece of ``table``, in piece order."""
        raise NotImplementedError

    def reduce_partials(
        self,
        table: Table,
        qi: Sequence[str],
        sensitive: Sequence[str],
        progress: ProgressFn | None,
        weights: str | None = None,
    ) -> kernels.PartialFrequencySet:
        """The partial frequency set of the whole table (with sums of ``weights``)."""
        raise NotImplementedError

    def close(self) -> None:
        """Nothing to release."""

    def __enter__(self) -> EngineBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # operations -------------------------------------------------------------

    def encode(
        self,
        table: TableLike,
        columns: Sequence[str],
        *,
        order: DictionaryOrder = "first-seen",
        codes: bool = False,
        progress: ProgressFn | None = None,
    ) -> Encoding:
        """Dictionary-encode ``columns``: global dictionaries (first-seen or sorted), value
        counts and, with ``codes``, every row's codes (one block per piece)."""
        data = open_table(table)
        names = _columns(data, columns, "columns")
        if order not in ("first-seen", "sorted"):
            raise AnonlabError(
                f"order '{order}' is not a choice: give 'first-seen' or 'sorted'", parameter="order"
            )
        parts: list[kernels.PieceCodes] = self.map_pieces(
            data, kernels.piece_codes, names, self.batch_rows, codes, progress=progress
        )
        dictionaries, freqs, blocks = [], [], []
        maps: list[list[NDArray[np.int32]]] = []
        for j in range(len(names)):
            united, code_maps = kernels.unite([p.dictionaries[j] for p in parts])
            total = np.zeros(len(united), dtype=np.int64)
            for p, cmap in zip(parts, code_maps, strict=True):
                np.add.at(total, cmap, p.frequencies[j])
            if order == "sorted":
                rank = np.argsort(np.argsort(np.asarray(united, dtype=object), kind="stable"))
                code_maps = [rank[c].astype(np.int32) for c in code_maps]
                sorted_total = np.zeros_like(total)
                sorted_total[rank] = total
                united, total = sorted(united), sorted_total
            dictionaries.append(tuple(united))
            freqs.append(total)
            maps.append(code_maps)
        if codes:
            for i, p in enumerate(parts):
                piece_codes = present(p.codes, f"piece {i}'s codes")
                for j in range(len(names)):  # local codes -> global codes, in place
                    if len(maps[j][i]):
                        piece_codes[:, j] = maps[j][i][piece_codes[:, j]]
                blocks.append(piece_codes)
        return Encoding(
            tuple(names),
            tuple(dictionaries),
            tuple(freqs),
            sum(p.rows for p in parts),
            tuple(blocks) if codes else None,
        )

    def frequency_set(
        self,
        table: TableLike,
        qi: Sequence[str],
        sensitive: Sequence[str] = (),
        *,
        progress: ProgressFn | None = None,
        weights: str | None = None,
    ) -> BaseFrequencySet:
        """The base frequency set: distinct ``qi`` tuples in order of first appearance, their
        counts and first rows, and per-tuple histograms of each ``sensitive`` column.

        ``weights`` names a column of sampling weights, each a finite number
        above 0 (else an :class:`AnonlabError` naming the piece and row): each
        tuple's sum of it is counted in the same pass (``weights`` of the
        result; float64, added in an order both backends share, see
        :mod:`anonlab.engine.kernels`).
        """
        data = open_table(table)
        qi_names = _columns(data, qi, "qi")
        if not qi_names:
            raise AnonlabError(
                "qi is empty: name at least one quasi-identifier column", parameter="qi"
            )
        sens = _columns(data, sensitive, "sensitive")
        both = sorted(set(qi_names) & set(sens))
        if both:
            raise AnonlabError(
                f"sensitive names '{both[0]}', a quasi-identifier too: give each column one role",
                parameter="sensitive",
            )
        if weights is not None:
            _columns(data, [weights], "weights")
            if weights in qi_names or weights in sens:
                raise AnonlabError(
                    f"weights names '{weights}', a quasi-identifier or "
                    "sensitive column too: give each column one role",
                    parameter="weights",
                )
        part = self.reduce_partials(data, qi_names, sens, progress, weights)
        sensitive_counts = {}
        for name, h in zip(sens, part.histograms, strict=True):
            freq = np.bincount(h.values, weights=h.counts, minlength=len(h.dictionary)).astype(
                np.int64
            )
            sensitive_counts[name] = SensitiveCounts(
                name, tuple(h.dictionary), h.classes, h.values, h.counts, freq
            )
        return BaseFrequencySet(
            tuple(qi_names),
            tuple(tuple(d) for d in part.dictionaries),
            part.tuples,
            part.counts,
            part.first_rows,
            sensitive_counts,
            part.rows,
            part.weights,
        )

    def write_release(
        self,
        table: TableLike,
        plan: ReleasePlan,
        output: PathLike | StagedFolder,
        *,
        progress: ProgressFn | None = None,
    ) -> WriteSummary:
        """Apply ``plan`` to every row and write one Parquet part per piece, atomically.

        ``output`` is the release folder (written to a temporary folder beside
        it, renamed at the end) or a :class:`StagedFolder` the caller commits.
        A value missing from the plan's dictionaries is an error naming
        ``input`` (the table changed since the first pass).
        """
        data = open_table(table)
        _columns(data, plan.columns, "qi")
        _columns(data, plan.drop, "drop")
        with _staging(output) as staged:
            results: list[kernels.ReleaseCounts] = self.map_pieces(
                data,
                kernels.write_release_piece,
                plan,
                str(staged.path),
                self.batch_rows,
                progress=progress,
                step="writing the release",
            )
            parts = sum(1 for r in results if r.rows)
            summary = WriteSummary(
                staged.target,
                sum(r.rows for r in results),
                parts,
                sum(r.suppressed for r in results),
            )
            _finish(staged, output)
        return summary

    def moments(
        self, table: TableLike, columns: Sequence[str], *, progress: ProgressFn | None = None
    ) -> Moments:
        """Count, mean and population deviation of ``columns`` (values parsed as doubles;
        pieces combined in order by Chan's update, :mod:`anonlab.engine.kernels`)."""
        data = open_table(table)
        names = _columns(data, columns, "columns")
        parts: list[kernels.PartialMoments] = self.map_pieces(
            data, kernels.piece_moments, names, self.batch_rows, progress=progress
        )
        total = kernels.PartialMoments(0, np.zeros(len(names)), np.zeros(len(names)))
        for p in parts:
            total = kernels.combine_moments(total, p)
        if total.count == 0:
            raise AnonlabError(
                f"input: {data.source} has no rows: give at least one record", parameter="input"
            )
        return Moments(tuple(names), total.count, total.mean, np.sqrt(total.m2 / total.count))

    def transform_rows(
        self,
        table: TableLike,
        columns: Sequence[str],
        function: kernels.RowFunction,
        output: PathLike | StagedFolder,
        *,
        progress: ProgressFn | None = None,
    ) -> WriteSummary:
        """Replace ``columns`` by ``function`` of each block of rows (a ``(rows, d)`` float64
        matrix in, the same shape out) and write one Parquet part per piece, atomically.

        ``function`` must act on each row alone (so blocks may be split
        anywhere) and, on Dask, pickle (a module-level function, a
        :class:`functools.partial` of one, or :class:`AffineRows`).
        """
        data = open_table(table)
        names = _columns(data, columns, "columns")
        with _staging(output) as staged:
            rows: list[int] = self.map_pieces(
                data,
                kernels.transform_piece,
                names,
                function,
                str(staged.path),
                self.batch_rows,
                progress=progress,
                step="transforming rows",
            )
            summary = WriteSummary(staged.target, sum(rows), sum(1 for r in rows if r))
            _finish(staged, output)
        return summary


def _columns(table: Table, columns: Sequence[str], parameter: str) -> list[str]:
    if isinstance(columns, str):
        raise AnonlabError(
            f"{parameter} '{columns}' must be a list of column names, e.g. ['{columns}']",
            parameter=parameter,
        )
    names = [str(c) for c in columns]
    table.check_columns(names, parameter)
    twice = [c for i, c in enumerate(names) if c in names[:i]]
    if twice:
        raise AnonlabError(
            f"{parameter} names the column '{twice[0]}' twice: name it once", parameter=parameter
        )
    return names


@functools.singledispatch
def _staging(output: Any) -> StagedFolder:
    return StagedFolder(Path(output))


@_staging.register
def _(output: StagedFolder) -> StagedFolder:
    return output


def _finish(staged: StagedFolder, output: object) -> None:
    """Commit a folder staged here (a caller's :class:`StagedFolder` is theirs to commit)."""
    if staged is not output:
        staged.commit()


_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_memory_limit(memory_limit: int | float | str | None) -> int | None:
    """``memory_limit`` in bytes: a number of bytes or a text such as ``"4GB"``, ``"512 MiB"``
    (decimal and binary units, as Dask reads them); ``None`` stays ``None``."""
    if memory_limit is None:
        return None
    value: float | None = None
    if isinstance(memory_limit, int | float) and not isinstance(memory_limit, bool):
        value = float(memory_limit)
    elif isinstance(memory_limit, str):
        match = re.fullmatch(
            r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*", memory_limit
        )
        if match and match[2].lower() in _UNITS:
            value = float(match[1]) * _UNITS[match[2].lower()]
    if value is None or not math.isfinite(value) or value <= 0:
        raise AnonlabError(
            f"memory_limit {memory_limit!r} is not an amount of memory: give "
            "a number of bytes or a text such as '4GB'",
            parameter="memory_limit",
        )
    return int(value)


def base_engine(engine: Engine) -> EngineBase:
    """``engine`` as the :class:`EngineBase` whose ``map_pieces`` the families' passes use (both
    backends are one)."""
    if not isinstance(engine, EngineBase):
        raise TypeError(f"engine {engine!r} is not built on anonlab.engine.base.EngineBase")
    return engine


def write_pieces(
    engine: Engine,
    table: Table,
    kernel: Callable[..., Any],
    *args: Any,
    progress: ProgressFn | None = None,
) -> list[Any]:
    """A family's release written over the pieces of ``table``: ``kernel(piece, *args,
    batch_rows)`` on every piece (``args`` the family's plan and the folder, as text, that
    each call writes its piece's Parquet part into), in piece order
    (:meth:`EngineBase.map_pieces`); returns what each call returned (its rows, its blanked
    cells...), in piece order, for the family's check of the first pass's counts."""
    runner = base_engine(engine)
    return runner.map_pieces(
        table,
        kernel,
        *args,
        runner.batch_rows,
        progress=progress,
        step="writing the release",
    )
