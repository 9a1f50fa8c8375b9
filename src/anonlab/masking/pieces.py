"""Masking over an engine's pieces (docs/masking.md, "Engines").

A method whose released value of a record depends on that record alone (and on
figures of the whole table that one pass finds first) runs piece by piece on the
NumPy and Dask engines and writes one Parquet part per piece; the release is the one
the same method gives in memory on the same table:

- ``topbot``: each value against the limits; the section's counts are the pieces'
  counts added up;
- ``pram`` with a matrix given for every column: a first pass counts each piece's
  records (so a piece knows its first record's position: its records draw the
  uniforms of their positions, :func:`anonlab.masking.pram.record_uniforms`, the same
  as in memory) and finds the strata; the report's transitions and marginals are the
  pieces' added up, its matrices one per stratum of the whole table;
- ``noise`` with ``noise_method = "additive"``: a first pass counts each piece's
  records, a second takes the columns' moments by blocks of 65,536 records
  (:func:`block_shares`: a block wholly in a piece as its moments, a block cut by
  pieces as its values, joined in order), combined in block order as
  :func:`anonlab.masking.noise.blocked_sd` does in memory, so the SDs are the same to
  the last bit; each record's normals are those of its position
  (:func:`anonlab.masking.noise.additive_draws`); the noise's SD in the report is taken
  the same blocked way;
- ``recode`` with its breaks given: a first pass (:func:`recode_plan`) finds, per
  column, a value outside the breaks (refused in one line, as in memory) and the
  values on the lowest break (which close the first interval, ``[b0,b1]``, for every
  piece alike); the second maps each value to its interval's label. Breaks computed
  from a count (``breaks = 5``) need the column's range or quantiles: refused on an
  engine in one line (:func:`engine_refusal`).

The other methods refuse an engine run in one line saying why (:data:`WHOLE_COLUMN`):
each released value depends on the whole column (ranks, a fitted model, the column's
level shares, a permutation).

Every piece is read as the one reader reads a table: every value text, a missing
value ``""`` (:func:`anonlab.engine.kernels.text_column`); the masked columns are
released as text, the others as they are read, so the parts read back as the
in-memory release does. A problem met in a piece (a value that is no number) is one
line naming the piece and the record within it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError

if TYPE_CHECKING:
    import pyarrow as pa

    from anonlab.engine.base import EngineBase
    from anonlab.engine.table import Piece, Table
    from anonlab.masking.noise import Moments
    from anonlab.progress import ProgressFn

#: the methods that run on an engine
ENGINE_METHODS = ("topbot", "recode", "pram", "noise")

#: why each other method refuses an engine
WHOLE_COLUMN: dict[str, str] = {
    "correlated": "its noise follows the whole table's covariance",
    "correlated2": "it needs the whole table's covariance",
    "restr": "it shrinks towards the whole column's mean by a factor of the table's size",
    "romm": "it mixes records by random orthogonal matrices",
    "outdect": "it finds the outliers among the whole table's records",
    "rankswap": "it ranks the whole column",
    "shuffle": "it fits a model to the whole table and permutes the records",
}


def engine_refusal(
    method: str, parameters: Mapping[str, Any], columns: Sequence[str]
) -> str | None:
    """Why ``method`` with ``parameters`` on ``columns`` cannot run on an engine, as the one
    line that refuses it (what runs in memory only, why, and what to do), or ``None``."""
    in_memory = "leave engine at 'numpy' and give output as a file"
    if method == "recode" and len(parameters.get("breaks") or []) == 1:
        return (
            "recode with a count of breaks runs in memory only (its breaks are computed from "
            f"the whole column): give the breaks themselves, or {in_memory}"
        )
    if method == "pram":
        matrix = parameters.get("matrix")
        files = matrix if isinstance(matrix, Mapping) else dict.fromkeys(columns, matrix)
        invariant = [c for c in columns if files.get(c) is None]
        if invariant:
            return (
                f"invariant pram (no matrix for {', '.join(invariant)}) runs in memory only "
                f"(its matrix is built from the whole column's level shares): give matrix, "
                f"or {in_memory}"
            )
    if method == "noise":
        chosen = str(parameters.get("noise_method", "additive"))
        if chosen != "additive":
            reason = WHOLE_COLUMN.get(chosen, "it needs the whole table")
            return f"noise method {chosen} runs in memory only ({reason}): {in_memory}"
    if method in ENGINE_METHODS:
        return None
    reason = WHOLE_COLUMN.get(method, "it needs the whole column")
    return f"mask method {method} runs in memory only ({reason}): {in_memory}"


# ---------------------------------------------------------------------------
# Reading and writing a piece
# ---------------------------------------------------------------------------


def text_frame(batch: pa.Table) -> pd.DataFrame:
    """A batch of a piece as the one reader reads a table: every value text, ``""`` missing."""
    import pyarrow as pa

    from anonlab.engine.kernels import text_column

    return pd.DataFrame(
        {
            name: text_column(batch.column(name)).cast(pa.string()).to_pandas()
            for name in batch.column_names
        }
    )


def _arrow_text(series: pd.Series) -> pa.Array:
    """A released column (text, or numbers where a method keeps them) as Arrow text."""
    import pyarrow as pa

    from anonlab.tabletext import column_from_pandas, text_array

    return text_array(column_from_pandas(series)).cast(pa.string())


def _in_piece(piece: Piece, exc: AnonlabError) -> AnonlabError:
    """``exc`` naming the piece it was met in (its record numbers count from the piece's
    first record); an error reading the input (``parameter`` ``input``: a malformed CSV, a
    Parquet part that does not fit) names its file already and is kept as it is."""
    if exc.parameter == "input":
        return exc
    return AnonlabError(f"{piece.describe()}: {exc.message}", parameter=exc.parameter)


@dataclass(frozen=True)
class PieceResult:
    """What one piece gave: its rows and its share of the method's report section."""

    rows: int
    section: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------
# recode's first pass
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RecodePlan:
    """Per column: the breaks (sorted), whether the first interval is closed, its labels,
    and the values on the lowest break (for the report's note)."""

    breaks: dict[str, tuple[float, ...]]
    closed: dict[str, bool]
    labels: dict[str, tuple[str, ...]]
    on_lowest: dict[str, int]


def recode_extent_piece(
    piece: Piece, columns: Sequence[str], breaks: Sequence[float], batch_rows: int
) -> dict[str, int]:
    """Per column, the values of one piece on the lowest break; a value outside the
    breaks is refused as in memory (naming the piece)."""
    from anonlab.masking.values import finite_floats, numbers_of

    low, high = float(breaks[0]), float(breaks[-1])
    counts = dict.fromkeys(columns, 0)
    seen = 0
    try:
        for batch in piece.batches(list(columns), batch_rows):
            frame = text_frame(batch)
            for name in columns:
                x = finite_floats(frame[name])
                if x is None:
                    x = numbers_of(frame[name], name)[0]
                outside = (x < low) | (x > high)  # False where missing (NaN)
                if outside.any():
                    row = int(np.flatnonzero(outside)[0])
                    raise AnonlabError(
                        f"column '{name}': value {x[row]:g} (record {seen + row + 1}) lies "
                        f"outside the breaks [{low:g}, {high:g}]: give breaks that cover "
                        "every value",
                        parameter="breaks",
                    )
                counts[name] += int(np.count_nonzero(x == low))
            seen += len(frame)
    except AnonlabError as exc:
        raise _in_piece(piece, exc) from None
    return counts


def recode_plan(
    engine: EngineBase,
    table: Table,
    columns: Sequence[str],
    params: Mapping[str, Any],
    progress: ProgressFn | None = None,
) -> RecodePlan:
    """The first pass of ``recode`` with breaks given (module text): every piece's values
    on the lowest break, and the labels that follow (the same as in memory)."""
    from anonlab.masking.recode import interval_labels

    breaks = np.sort(np.asarray(params["breaks"], dtype=np.float64))
    parts: list[dict[str, int]] = engine.map_pieces(
        table,
        recode_extent_piece,
        list(columns),
        [float(b) for b in breaks],
        engine.batch_rows,
        progress=progress,
        step="recode: finding the values on the lowest break",
    )
    on_lowest = {name: sum(p[name] for p in parts) for name in columns}
    closed = {name: on_lowest[name] > 0 for name in columns}
    labels: dict[str, tuple[str, ...]] = {}
    for name in columns:
        own = interval_labels(breaks, closed[name])
        given = params.get("labels")
        if given is not None:
            if len(given) != len(own):
                raise AnonlabError(
                    f"labels: {len(given)} given for {len(own)} intervals of column "
                    f"'{name}': give one label per interval",
                    parameter="labels",
                )
            own = list(given)
        labels[name] = tuple(own)
    as_tuple = tuple(float(b) for b in breaks)
    return RecodePlan(dict.fromkeys(columns, as_tuple), closed, labels, on_lowest)


def _recode_batch(
    frame: pd.DataFrame, columns: Sequence[str], plan: RecodePlan
) -> tuple[dict[str, pd.Series], dict[str, Any]]:
    """One batch recoded by the plan: the labels as text, the counts per interval."""
    from anonlab.masking.recode import labels_text
    from anonlab.masking.values import finite_floats, numbers_of

    released: dict[str, pd.Series] = {}
    counts: dict[str, list[int]] = {}
    for name in columns:
        column = frame[name]
        x = finite_floats(column)
        missing: NDArray[np.bool_] | None = None
        if x is None:
            x, missing = numbers_of(column, name)
        inner = np.asarray(plan.breaks[name][1:-1], dtype=np.float64)
        codes = np.searchsorted(inner, x, side="left").astype(np.int64)
        if missing is not None and missing.any():
            codes[missing] = -1
        labels = list(plan.labels[name])
        counts[name] = np.bincount(codes[codes >= 0], minlength=len(labels)).tolist()
        released[name] = labels_text(codes, labels, frame.index, name)
    return released, {"counts": counts}


def recode_section(plan: RecodePlan, parts: Sequence[PieceResult]) -> dict[str, Any]:
    """The report section of a piecewise recode: the in-memory run's, its counts the sum
    of the pieces'."""
    entries: dict[str, Any] = {}
    for name, labels in plan.labels.items():
        total = np.zeros(len(labels), dtype=np.int64)
        for part in parts:
            if part.section:
                total += np.asarray(part.section["counts"][name], dtype=np.int64)
        low = plan.breaks[name][0]
        notes = []
        if plan.on_lowest[name]:
            notes.append(
                f"{plan.on_lowest[name]} value(s) sit on the lowest break {low:g}: kept in "
                "the first interval, written closed '[', where sdcMicro releases them as missing"
            )
        entries[name] = {
            "breaks": list(plan.breaks[name]),
            "closed_first": plan.closed[name],
            "labels": list(labels),
            "counts": {label: int(n) for label, n in zip(labels, total, strict=True)},
            "notes": notes,
        }
    return entries


# ---------------------------------------------------------------------------
# topbot
# ---------------------------------------------------------------------------


def _topbot_batch(
    frame: pd.DataFrame, columns: Sequence[str], params: Mapping[str, Any]
) -> tuple[dict[str, pd.Series], dict[str, Any]]:
    from anonlab.masking.registry import get_method, method_params

    method = get_method("topbot")
    masked = method.apply(frame, list(columns), method_params(method, params), None)
    return masked.columns, masked.section


def topbot_section(parts: Sequence[PieceResult], columns: Sequence[str]) -> dict[str, Any]:
    """The report section of a piecewise topbot: the limits, the counts added up."""
    filled = [p.section for p in parts if p.section]
    coded = {name: {"top_coded": 0, "bottom_coded": 0} for name in columns}
    for section in filled:
        for name, count in section["coded"].items():
            for key in ("top_coded", "bottom_coded"):
                coded[name][key] += int(count[key])
    return {"coded": coded}


# ---------------------------------------------------------------------------
# pram
# ---------------------------------------------------------------------------


def extent_piece(
    piece: Piece, columns: Sequence[str], strata: Sequence[str], batch_rows: int
) -> tuple[int, set[tuple[str, ...]]]:
    """One piece's records and the strata (their values' texts) among them."""
    rows = 0
    keys: set[tuple[str, ...]] = set()
    for batch in piece.batches(list(strata) or list(columns[:1]), batch_rows):
        frame = text_frame(batch)
        rows += len(frame)
        if strata:
            keys.update(zip(*(frame[c].tolist() for c in strata), strict=True))
    return rows, keys


def _pram_batch(
    frame: pd.DataFrame,
    columns: Sequence[str],
    params: Mapping[str, Any],
    seed: int,
    first_row: int,
) -> tuple[dict[str, pd.Series], dict[str, Any]]:
    """One batch PRAMed as the records from ``first_row`` on (their uniforms)."""
    from anonlab.masking.pram import pram_rows
    from anonlab.masking.registry import get_method, method_params

    method = get_method("pram")
    masked = pram_rows(frame, list(columns), method_params(method, params), seed, first_row)
    section = {
        name: {
            **{k: entry[k] for k in ("matrix_source", "matrix_file", "pd", "alpha", "levels")},
            "matrix": entry["matrices"][0]["matrix"],
            "transitions": {(t["from"], t["to"]): t["count"] for t in entry["transitions"]},
            "changed": entry["changed"],
            "missing": entry["missing"],
            "original": entry["marginals"]["original"],
            "released": entry["marginals"]["released"],
        }
        for name, entry in masked.section["columns"].items()
    }
    return masked.columns, section


def _pram_merged(sections: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Batches' or pieces' PRAM counts added up (their matrices and levels are one)."""
    total: dict[str, Any] = {}
    for section in sections:
        for name, entry in section.items():
            mine = total.get(name)
            if mine is None:
                total[name] = {
                    **entry,
                    "transitions": dict(entry["transitions"]),
                    "original": dict(entry["original"]),
                    "released": dict(entry["released"]),
                }
                continue
            for key, count in entry["transitions"].items():
                mine["transitions"][key] = mine["transitions"].get(key, 0) + count
            for side in ("original", "released"):
                for level, count in entry[side].items():
                    mine[side][level] += count
            mine["changed"] += entry["changed"]
            mine["missing"] += entry["missing"]
    return total


def pram_section(
    parts: Sequence[PieceResult], strata: Sequence[str], keys: Sequence[tuple[str, ...]]
) -> dict[str, Any]:
    """The report section of a piecewise PRAM: the in-memory run's (module text)."""
    from anonlab.masking.pram import SEED_LAYOUT

    merged = _pram_merged([p.section for p in parts if p.section])
    stratum_values = [list(k) for k in sorted(keys)] if strata else [[]]
    entries: dict[str, Any] = {}
    for name, entry in merged.items():
        levels = list(entry["levels"])
        rank = {level: i for i, level in enumerate(levels)}
        pairs = sorted(entry["transitions"].items(), key=lambda t: (rank[t[0][0]], rank[t[0][1]]))
        entries[name] = {
            **{k: entry[k] for k in ("matrix_source", "matrix_file", "pd", "alpha")},
            "levels": levels,
            "matrices": [
                {"stratum": dict(zip(strata, values, strict=True)), "matrix": entry["matrix"]}
                for values in stratum_values
            ],
            "transitions": [{"from": a, "to": b, "count": int(n)} for (a, b), n in pairs if n],
            "changed": int(entry["changed"]),
            "missing": int(entry["missing"]),
            "marginals": {"original": entry["original"], "released": entry["released"]},
        }
    return {"strata": list(strata), "seed_layout": SEED_LAYOUT, "columns": entries}


# ---------------------------------------------------------------------------
# noise (additive)
# ---------------------------------------------------------------------------

#: one piece's share of a column block's moments: ``(block, moments per column, None)`` for
#: a block wholly in the piece, ``(block, None, values)`` for the piece's part of a block
#: it shares with its neighbours
BlockShare: TypeAlias = "tuple[int, list[Moments] | None, NDArray[np.float64] | None]"


def block_shares(values: NDArray[np.float64], first_row: int) -> list[BlockShare]:
    """The blocks (:data:`anonlab.masking.noise.BLOCK_ROWS` records) that ``values``, the
    records from ``first_row`` on, meet: a whole block's moments, a cut one's values."""
    from anonlab.masking.noise import BLOCK_ROWS, block_moments

    shares: list[BlockShare] = []
    end = first_row + len(values)
    start = first_row
    while start < end:
        block = start // BLOCK_ROWS
        stop = min(end, (block + 1) * BLOCK_ROWS)
        part = values[start - first_row : stop - first_row]
        if start == block * BLOCK_ROWS and stop == (block + 1) * BLOCK_ROWS:
            moments = [block_moments(part[:, j]) for j in range(values.shape[1])]
            shares.append((block, moments, None))
        else:
            shares.append((block, None, np.array(part)))
        start = stop
    return shares


def sd_of_shares(shares: Sequence[BlockShare], columns: int) -> NDArray[np.float64]:
    """Each column's SD from every piece's block shares (in piece order): a cut block's
    values joined, then every block's moments combined in block order, as
    :func:`anonlab.masking.noise.blocked_sd` does in memory."""
    from anonlab.masking.noise import block_moments, combine_moments, sd_of

    whole: dict[int, list[Moments]] = {}
    cut: dict[int, list[NDArray[np.float64]]] = {}
    for block, moments, values in shares:
        if moments is not None:
            whole[block] = moments
        elif values is not None:
            cut.setdefault(block, []).append(values)
    for block, pieces in cut.items():
        joined = np.concatenate(pieces)
        whole[block] = [block_moments(joined[:, j]) for j in range(columns)]
    out = np.zeros(columns)
    for j in range(columns):
        total: Moments = (0, 0.0, 0.0, 0)
        for block in sorted(whole):
            total = combine_moments(total, whole[block][j])
        out[j] = sd_of(total)
    return out


def _piece_numbers(piece: Piece, columns: Sequence[str], batch_rows: int) -> NDArray[np.float64]:
    """One piece's ``columns`` as numbers (NaN where missing)."""
    from anonlab.masking.noise import numeric_block

    blocks = [
        numeric_block(text_frame(batch), columns)
        for batch in piece.batches(list(columns), batch_rows)
    ]
    return np.concatenate(blocks) if blocks else np.zeros((0, len(columns)))


def noise_moments_piece(
    piece: Piece, columns: Sequence[str], first_rows: Sequence[int], batch_rows: int
) -> list[BlockShare]:
    """One piece's shares of the blocks' moments of ``columns`` (:func:`block_shares`)."""
    try:
        x = _piece_numbers(piece, columns, batch_rows)
    except AnonlabError as exc:
        raise _in_piece(piece, exc) from None
    return block_shares(x, first_rows[piece.index])


def _noise_batch(
    frame: pd.DataFrame,
    columns: Sequence[str],
    scale: NDArray[np.float64],
    seed: int,
    first_row: int,
) -> tuple[dict[str, pd.Series], dict[str, Any]]:
    """One batch with additive noise, its records' draws those of their positions."""
    from anonlab.masking.noise import additive_rows, numeric_block, released_columns

    x = numeric_block(frame, columns)
    y = additive_rows(x, scale, seed, first_row)
    changed = ~np.isclose(y, x, rtol=0.0, atol=0.0) & ~np.isnan(x)
    section = {
        "changed": changed.sum(axis=0).tolist(),
        "records_changed": int(changed.any(axis=1).sum()),
        "noise": block_shares(y - x, first_row),
    }
    return released_columns(frame, columns, y), section


def noise_section(
    parts: Sequence[PieceResult], columns: Sequence[str], method: str, sd: NDArray[np.float64]
) -> dict[str, Any]:
    """The report section of a piecewise additive noise: the in-memory run's."""
    from anonlab.masking.noise import ADDITIVE_LAYOUT

    filled = [p.section for p in parts if p.section]
    changed = np.zeros(len(columns), dtype=np.int64)
    for section in filled:
        changed += np.asarray(section["changed"], dtype=np.int64)
    shares = [share for section in filled for share in section["noise"]]
    noise_sd = sd_of_shares(shares, len(columns))
    return {
        "noise_method": method,
        "seed_layout": ADDITIVE_LAYOUT,
        "records_changed": int(sum(s["records_changed"] for s in filled)),
        "columns": {
            name: {
                "sd": float(sd[j]),
                "noise_sd": float(noise_sd[j]),
                "changed": int(changed[j]),
            }
            for j, name in enumerate(columns)
        },
    }


# ---------------------------------------------------------------------------
# The map over the pieces
# ---------------------------------------------------------------------------


def mask_piece(
    piece: Piece,
    method: str,
    columns: Sequence[str],
    params: Mapping[str, Any],
    plan: RecodePlan | None,
    draws: tuple[int, Sequence[int]] | None,
    scale: Sequence[float] | None,
    keep: Sequence[str],
    folder: str,
    batch_rows: int,
) -> PieceResult:
    """Mask one piece (module text) and write its ``keep`` columns as one Parquet part;
    ``draws`` is a randomized method's seed and every piece's first record's position,
    ``scale`` additive noise's SD per column."""
    import pyarrow as pa

    from anonlab.engine.kernels import write_batches

    sections: list[dict[str, Any]] = []
    names = list(dict.fromkeys([*keep, *columns]))
    seen = 0

    def tables() -> Any:
        nonlocal seen
        for batch in piece.batches(names, batch_rows):
            frame = text_frame(batch)
            if method == "recode":
                released, section = _recode_batch(frame, columns, present(plan))
            elif method in ("pram", "noise"):
                if draws is None:
                    raise RuntimeError(f"{method} over pieces needs its seed and first records")
                seed, first_rows = draws
                first = first_rows[piece.index] + seen
                if method == "pram":
                    released, section = _pram_batch(frame, columns, params, seed, first)
                else:
                    if scale is None:
                        raise RuntimeError("noise over pieces needs its scale")
                    sizes = np.asarray(scale, dtype=np.float64)
                    released, section = _noise_batch(frame, columns, sizes, seed, first)
            else:
                released, section = _topbot_batch(frame, columns, params)
            sections.append(section)
            seen += len(frame)
            arrays = [
                _arrow_text(released[name]) if name in released else _arrow_text(frame[name])
                for name in keep
            ]
            yield pa.Table.from_arrays(arrays, names=list(keep))

    try:
        rows = write_batches(folder, piece.index, tables())
    except AnonlabError as exc:
        raise _in_piece(piece, exc) from None
    return PieceResult(rows, _merged(method, sections, columns))


def present(plan: RecodePlan | None) -> RecodePlan:
    """The recode plan, which a recode map always has."""
    if plan is None:
        raise RuntimeError("recode over pieces needs its plan (recode_plan)")
    return plan


def _merged(method: str, sections: list[dict[str, Any]], columns: Sequence[str]) -> dict[str, Any]:
    """One piece's batches' sections as one."""
    if not sections:
        return {}
    if method == "pram":
        return _pram_merged(sections)
    if method == "noise":
        return {
            "changed": np.sum([s["changed"] for s in sections], axis=0).tolist(),
            "records_changed": sum(s["records_changed"] for s in sections),
            "noise": [share for s in sections for share in s["noise"]],
        }
    if method == "recode":
        counts = {
            name: np.sum([s["counts"][name] for s in sections], axis=0).tolist() for name in columns
        }
        return {"counts": counts}
    return topbot_section([PieceResult(0, s) for s in sections], columns)


@dataclass(frozen=True)
class MaskedPieces:
    """A piecewise masking: rows and parts written and the method's report section."""

    rows: int
    parts: int
    section: dict[str, Any]
    first_rows: tuple[int, ...] | None = None


def mask_pieces(
    engine: EngineBase,
    table: Table,
    method: str,
    columns: Sequence[str],
    params: Mapping[str, Any],
    keep: Sequence[str],
    folder: str,
    *,
    seed: int | None = None,
    progress: ProgressFn | None = None,
) -> MaskedPieces:
    """Mask ``columns`` of every piece of ``table`` by ``method`` (one of
    :data:`ENGINE_METHODS`, its ``params`` validated; ``seed`` a randomized method's) and
    write the ``keep`` columns as one Parquet part per piece into ``folder``; the report
    section is the in-memory run's. :attr:`MaskedPieces.first_rows` holds each piece's
    first record's position (``None`` for a method that needs none)."""
    reason = engine_refusal(method, params, columns)
    if reason is not None:
        raise AnonlabError(reason, parameter="engine")
    plan = recode_plan(engine, table, columns, params, progress) if method == "recode" else None
    draws: tuple[int, list[int]] | None = None
    strata: list[str] = list(params.get("strata") or []) if method == "pram" else []
    keys: set[tuple[str, ...]] = set()
    scale: list[float] | None = None
    sd = np.zeros(len(columns))
    if method in ("pram", "noise"):
        if seed is None:
            raise AnonlabError(f"{method} draws random numbers: give a seed", parameter="seed")
        extents: list[tuple[int, set[tuple[str, ...]]]] = engine.map_pieces(
            table,
            extent_piece,
            list(columns),
            strata,
            engine.batch_rows,
            progress=progress,
            step="pram: counting the records of every piece",
        )
        starts = np.cumsum([0, *(rows for rows, _ in extents)])[:-1]
        draws = (seed, [int(r) for r in starts])
        for _, found in extents:
            keys |= found
    if method == "noise" and draws is not None:
        shares: list[list[BlockShare]] = engine.map_pieces(
            table,
            noise_moments_piece,
            list(columns),
            draws[1],
            engine.batch_rows,
            progress=progress,
            step="noise: the columns' moments",
        )
        sd = sd_of_shares([share for piece in shares for share in piece], len(columns))
        scale = [float(v) for v in float(params.get("noise", 50.0)) / 100.0 * sd]
    parts: list[PieceResult] = engine.map_pieces(
        table,
        mask_piece,
        method,
        list(columns),
        dict(params),
        plan,
        draws,
        scale,
        list(keep),
        folder,
        engine.batch_rows,
        progress=progress,
        step=f"mask: {method}",
    )
    if method == "pram":
        section: dict[str, Any] = pram_section(parts, strata, sorted(keys))
    elif method == "noise":
        section = noise_section(parts, columns, "additive", sd)
    elif method == "recode":
        section = {
            "recode_method": params.get("recode_method", "equidistant"),
            "columns": recode_section(present(plan), parts),
        }
    else:
        top = _limit(params, "top")
        bottom = _limit(params, "bottom")
        section = {
            "top": None if top is None else {"value": top[0], "replacement": top[1]},
            "bottom": None if bottom is None else {"value": bottom[0], "replacement": bottom[1]},
            **topbot_section(parts, columns),
        }
    return MaskedPieces(
        sum(p.rows for p in parts),
        sum(1 for p in parts if p.rows),
        section,
        None if draws is None else tuple(draws[1]),
    )


def _limit(params: Mapping[str, Any], kind: str) -> tuple[float, float] | None:
    """topbot's ``kind`` limit and replacement as the method reads them."""
    from anonlab.masking.topbot import TopBotParams

    value, replacement = TopBotParams.model_validate(dict(params)).limit(kind)
    if value is None or replacement is None:
        return None
    return value, replacement
