"""Masking over an engine's pieces (docs/masking.md, "Engines").

A method whose released value of a record depends on that record alone (and on
figures of the whole table that one pass finds first) runs piece by piece on the
NumPy and Dask engines and writes one Parquet part per piece; the release is the one
the same method gives in memory on the same table:

- ``topbot``: each value against the limits; the section's counts are the pieces'
  counts added up;
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
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError

if TYPE_CHECKING:
    import pyarrow as pa

    from anonlab.engine.base import EngineBase
    from anonlab.engine.table import Piece, Table
    from anonlab.progress import ProgressFn

#: the methods that run on an engine
ENGINE_METHODS = ("topbot", "recode")

#: why each other method refuses an engine
WHOLE_COLUMN: dict[str, str] = {
    "pram": "its matrix or the records' draws need the whole column",
    "noise": "its noise is scaled by the whole column's deviations",
    "rankswap": "it ranks the whole column",
    "shuffle": "it fits a model to the whole table and permutes the records",
}


def engine_refusal(method: str, parameters: Mapping[str, Any]) -> str | None:
    """Why ``method`` with ``parameters`` cannot run on an engine (one line), or ``None``."""
    if method == "recode" and len(parameters.get("breaks") or []) == 1:
        return (
            "recode computes its breaks from the whole column (breaks is a count): "
            "give the breaks themselves to run on an engine"
        )
    if method in ENGINE_METHODS:
        return None
    reason = WHOLE_COLUMN.get(method, "it needs the whole column")
    return f"mask method {method} runs in memory only ({reason})"


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
    first record)."""
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
# The map over the pieces
# ---------------------------------------------------------------------------


def mask_piece(
    piece: Piece,
    method: str,
    columns: Sequence[str],
    params: Mapping[str, Any],
    plan: RecodePlan | None,
    keep: Sequence[str],
    folder: str,
    batch_rows: int,
) -> PieceResult:
    """Mask one piece (module text) and write its ``keep`` columns as one Parquet part."""
    import pyarrow as pa

    from anonlab.engine.kernels import write_batches

    sections: list[dict[str, Any]] = []
    names = list(dict.fromkeys([*keep, *columns]))

    def tables() -> Any:
        for batch in piece.batches(names, batch_rows):
            frame = text_frame(batch)
            if method == "recode":
                released, section = _recode_batch(frame, columns, present(plan))
            else:
                released, section = _topbot_batch(frame, columns, params)
            sections.append(section)
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


def mask_pieces(
    engine: EngineBase,
    table: Table,
    method: str,
    columns: Sequence[str],
    params: Mapping[str, Any],
    keep: Sequence[str],
    folder: str,
    *,
    progress: ProgressFn | None = None,
) -> MaskedPieces:
    """Mask ``columns`` of every piece of ``table`` by ``method`` (one of
    :data:`ENGINE_METHODS`, its ``params`` validated) and write the ``keep`` columns as one
    Parquet part per piece into ``folder``; the report section is the in-memory run's."""
    reason = engine_refusal(method, params)
    if reason is not None:
        raise AnonlabError(reason, parameter="engine")
    plan = recode_plan(engine, table, columns, params, progress) if method == "recode" else None
    parts: list[PieceResult] = engine.map_pieces(
        table,
        mask_piece,
        method,
        list(columns),
        dict(params),
        plan,
        list(keep),
        folder,
        engine.batch_rows,
        progress=progress,
        step=f"mask: {method}",
    )
    if method == "recode":
        section: dict[str, Any] = {
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
    return MaskedPieces(sum(p.rows for p in parts), sum(1 for p in parts if p.rows), section)


def _limit(params: Mapping[str, Any], kind: str) -> tuple[float, float] | None:
    """topbot's ``kind`` limit and replacement as the method reads them."""
    from anonlab.masking.topbot import TopBotParams

    value, replacement = TopBotParams.model_validate(dict(params)).limit(kind)
    if value is None or replacement is None:
        return None
    return value, replacement
