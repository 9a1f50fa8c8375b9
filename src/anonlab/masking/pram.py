"""Post-randomization of categorical values: sdcMicro's ``pram`` (docs/masking.md, "pram").

Each value of a masked column is replaced by a level drawn from its row of a
transition matrix ``P`` (``P[i, j]``: the chance that level ``i`` is released as
``j``; rows sum to 1). A missing value stays missing. The matrix is

- given (``matrix``: a CSV file whose first row and first column name the levels,
  the same levels in the same order, every row summing to 1 within 1e-9, every
  value of the column a level), or, per column, ``matrix = {column = file}``;
- or invariant PRAM, built as sdcMicro builds it (sdcMicro's ``pramWORK``), per
  stratum from the stratum's own level shares ``p``: diagonal entries
  ``d_i ~ U(pd, 1)``, the rest of row ``i`` ``(1 - d_i) / (L - 1)``; the matrix
  ``Q[k, j] = P[j, k] p_j / sum_l p_l P[l, k]`` that undoes ``P`` by Bayes' rule;
  ``R = P Q``, whose shares are invariant (``p R = p``: Kooiman, Willenborg and
  Gouweleeuw, "PRAM: a method for disclosure limitation of microdata",
  Statistics Netherlands, 1997); and ``Rs = alpha R + (1 - alpha) I``, also
  invariant, which releases each value unchanged with at least ``1 - alpha``.
  ``pd`` and ``alpha`` are one number or one per column (sdcMicro's defaults
  ``pd = 0.8``, ``alpha = 0.5``, anonlab's too).

The levels of a column are its distinct values (ordered as numbers when all are
numbers, else as text; sdcMicro's factor levels) in every stratum, so a value may
be released as a level its stratum lacks, as in sdcMicro. ``strata`` columns split
the records; each stratum gets its own matrix (sdcMicro builds one per stratum too,
but reports only the last).

Seeds (docs/masking.md, "Seeds"): the masked column at position ``c`` draws its
matrix diagonals from ``default_rng([seed, c, 0])`` (``L`` uniforms per stratum, the
strata in sorted order) and its records' uniforms (one per record, in record order,
missing ones included) block by block: the records ``b * 65,536`` to ``(b + 1) *
65,536 - 1`` (:data:`BLOCK_ROWS`) take theirs from ``default_rng([seed, c, 1, b])``
(:func:`record_uniforms`), so a record's uniform depends on its position alone and a
piece of the table draws the same numbers for its records as the whole table does
(the engines, :mod:`anonlab.masking.pieces`); a record of level ``i`` is released as
the first level ``j`` whose cumulative row sum ``P[i, 0] + ... + P[i, j]`` exceeds its
uniform. The independent checker redraws the records' uniforms and applies the
matrices of the report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import Field, field_validator, model_validator

from anonlab.errors import AnonlabError
from anonlab.masking.registry import Masked, MaskingMethod, MethodParams
from anonlab.masking.values import is_numeric, levels_of, number_text, text_of
from anonlab.settings import split_names

#: how far a given matrix's row sums may be from 1 (CSV decimals rarely add up exactly)
ROW_SUM_TOLERANCE = 1e-9
DEFAULT_PD = 0.8
DEFAULT_ALPHA = 0.5
#: records per block of uniforms (module text): each block has its own stream
BLOCK_ROWS = 1 << 16
#: the report's name of the seeds' layout
SEED_LAYOUT = "[seed, column, 0] matrices, [seed, column, 1, block] records (65536 a block)"


def record_uniforms(seed: int, position: int, first_row: int, rows: int) -> NDArray[np.float64]:
    """The uniforms of records ``first_row`` to ``first_row + rows - 1`` of the column at
    ``position`` (module text): block ``b`` draws from ``default_rng([seed, position, 1,
    b])`` (PCG64), its first records' numbers skipped (PCG64's ``advance``: one 64-bit output per
    double) when the records start inside it."""
    out = np.empty(rows, dtype=np.float64)
    end = first_row + rows
    start = first_row
    while start < end:
        block = start // BLOCK_ROWS
        stop = min(end, (block + 1) * BLOCK_ROWS)
        bits = np.random.PCG64(np.random.SeedSequence([seed, position, 1, block]))
        skip = start - block * BLOCK_ROWS
        if skip:
            bits.advance(skip)
        generator = np.random.Generator(bits)
        out[start - first_row : stop - first_row] = generator.random(stop - start)
        start = stop
    return out


def _numbers(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return [float(x) for x in value.split(",") if x.strip()]
        except ValueError:
            raise ValueError(f"'{value}' is not a comma-separated list of numbers") from None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return [value]
    return value


class PramParams(MethodParams):
    """``matrix`` (a file for every column, or ``{column: file}``; the other columns get
    invariant PRAM), ``pd`` and ``alpha`` (one number, or one per column), ``strata``."""

    path_parameters = ("matrix",)

    matrix: str | dict[str, str] | None = None
    pd: list[float] = Field(default_factory=lambda: [DEFAULT_PD])
    alpha: list[float] = Field(default_factory=lambda: [DEFAULT_ALPHA])
    strata: list[str] = Field(default_factory=list)

    @field_validator("pd", "alpha", mode="before")
    @classmethod
    def _number_lists(cls, value: Any) -> Any:
        return _numbers(value)

    @field_validator("strata", mode="before")
    @classmethod
    def _strata(cls, value: Any) -> Any:
        return split_names(value) if isinstance(value, str | list | tuple) else value

    @field_validator("matrix", mode="before")
    @classmethod
    def _matrix(cls, value: Any) -> Any:
        """``FILE``, ``COL=FILE[,COL=FILE]`` or a table ``{col = file}``."""
        import os

        if isinstance(value, os.PathLike):
            return os.fspath(value)
        items = [value] if isinstance(value, str) else value
        if isinstance(items, list | tuple) and items and all("=" in str(i) for i in items):
            pairs = [p for i in items for p in str(i).split(",") if p.strip()]
            return {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in pairs)}
        if isinstance(items, list | tuple) and len(items) == 1:
            return str(items[0])
        return value

    @model_validator(mode="after")
    def _ranges(self) -> PramParams:
        for name in ("pd", "alpha"):
            values = getattr(self, name)
            if not values or any(not 0 <= v <= 1 for v in values):
                raise ValueError(f"{name} {values} must be numbers in [0, 1]")
        return self

    def read_columns(self) -> list[str]:
        return list(self.strata)

    def per_column(self, name: str, values: list[float], columns: Sequence[str]) -> list[float]:
        """``values`` (``pd`` or ``alpha``) one per column: one number recycled."""
        if len(values) == 1:
            return values * len(columns)
        if len(values) != len(columns):
            raise AnonlabError(
                f"{name}: {len(values)} numbers for {len(columns)} columns: give one, or one "
                "per column",
                parameter=name,
            )
        return values

    def matrix_of(self, column: str) -> str | None:
        """The matrix file of ``column`` (``None``: invariant PRAM)."""
        if isinstance(self.matrix, dict):
            return self.matrix.get(column)
        return self.matrix


def read_matrix(path: str) -> tuple[list[str], NDArray[np.float64]]:
    """A transition matrix file: its levels and its rows (checked: module text)."""
    from anonlab.io import read_table

    frame = read_table(path)
    levels = [str(c).strip() for c in frame.columns[1:]]
    rows = [str(v).strip() for v in frame.iloc[:, 0]]
    where = f"matrix '{path}'"
    if rows != levels:
        raise AnonlabError(
            f"{where}: its row names {rows} must be its column names {levels}, in the same "
            "order (a square matrix, levels named in the first row and first column)",
            parameter="matrix",
        )
    if len(set(levels)) != len(levels):
        raise AnonlabError(f"{where} names a level twice", parameter="matrix")
    try:
        values = frame.iloc[:, 1:].to_numpy(dtype=object).astype(np.float64)
    except ValueError:
        raise AnonlabError(
            f"{where} holds an entry that is no number", parameter="matrix"
        ) from None
    check_matrix(values, levels, where)
    return levels, values


def check_matrix(values: NDArray[np.float64], levels: Sequence[str], where: str) -> None:
    """Refuse a matrix with an entry outside [0, 1] or a row whose sum is not 1."""
    if not np.all(np.isfinite(values)) or values.min() < 0 or values.max() > 1:
        raise AnonlabError(
            f"{where}: every entry must be a probability in [0, 1]", parameter="matrix"
        )
    sums = values.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1) > ROW_SUM_TOLERANCE)
    if bad.size:
        i = int(bad[0])
        raise AnonlabError(
            f"{where}: row '{levels[i]}' sums to {sums[i]:.12g}, not 1: every row of a "
            "transition matrix sums to 1",
            parameter="matrix",
        )


def invariant_matrix(
    shares: NDArray[np.float64], pd: float, alpha: float, rng: np.random.Generator
) -> NDArray[np.float64]:
    """sdcMicro's invariant PRAM matrix ``Rs`` for level shares ``shares`` (module text).

    A level no record of the stratum holds may make a column of ``P`` meet no share
    (``pd = 1``): its row of ``Q`` is then the unit row (never used for a record).
    """
    size = len(shares)
    diagonal = pd + (1 - pd) * rng.random(size)  # R's runif(L, min = pd, max = 1)
    if size == 1:
        return np.ones((1, 1))
    p = np.repeat(((1 - diagonal) / (size - 1))[:, None], size, axis=1)
    np.fill_diagonal(p, diagonal)
    reach = shares @ p  # sum_l p_l P[l, k], per k
    safe = np.where(reach > 0, reach, 1.0)
    q = (p * shares[:, None]).T / safe[:, None]  # Q[k, j] = P[j, k] p_j / reach_k
    q[reach <= 0] = np.eye(size)[reach <= 0]
    r = p @ q
    rs = alpha * r + (1 - alpha) * np.eye(size)
    out: NDArray[np.float64] = rs / rs.sum(axis=1, keepdims=True)  # rounding only: sums are 1
    return out


def draw(
    codes: NDArray[np.int64], matrix: NDArray[np.float64], u: NDArray[np.float64]
) -> NDArray[np.int64]:
    """Released level codes: for level ``i`` and uniform ``u``, the first ``j`` whose
    cumulative row sum exceeds ``u`` (``codes`` ``-1``: missing, kept)."""
    cumulative = np.cumsum(matrix, axis=1)
    cumulative[:, -1] = np.inf  # rows sum to 1 up to rounding: the last level takes the rest
    out = codes.copy()
    for i in range(matrix.shape[0]):
        rows = np.flatnonzero(codes == i)
        if rows.size:
            out[rows] = np.searchsorted(cumulative[i], u[rows], side="right")
    return out


def strata_of(
    frame: pd.DataFrame, strata: Sequence[str]
) -> tuple[NDArray[np.int64], list[list[str]]]:
    """Each record's stratum (its index in sorted order) and the strata's values."""
    n = len(frame)
    if not strata:
        return np.zeros(n, dtype=np.int64), [[]]
    keys = pd.MultiIndex.from_arrays([text_of(frame[c]) for c in strata])
    uniques = sorted(set(keys))
    index = {key: i for i, key in enumerate(uniques)}
    return np.fromiter((index[k] for k in keys), dtype=np.int64, count=n), [
        list(key) for key in uniques
    ]


class _ColumnLevels:
    """A column's distinct values (one pass, :func:`pandas.factorize`), their texts (a
    number as :func:`~anonlab.masking.values.number_text` spells it) and each record's."""

    def __init__(self, column: pd.Series) -> None:
        self.column = column
        self.numeric = is_numeric(column)
        raw, uniques = pd.factorize(column, use_na_sentinel=True)
        self.raw = np.asarray(raw, dtype=np.int64)
        self.uniques = list(uniques)
        self.unique_texts = [
            number_text(float(u)) if self.numeric else str(u) for u in self.uniques
        ]
        self.texts = [t for t in self.unique_texts if t != ""]

    def codes(self, levels: list[str]) -> NDArray[np.int64]:
        """Each record's level (``-1``: missing)."""
        lookup = {level: i for i, level in enumerate(levels)}
        of_unique = np.asarray(
            [lookup.get(t, -1) for t in self.unique_texts] + [-1], dtype=np.int64
        )
        return of_unique[self.raw]  # raw -1 (a null) takes the last entry, -1

    def released(self, levels: list[str], out: NDArray[np.int64], index: pd.Index) -> pd.Series:
        """The released values: each level as the column holds it (a level of a matrix no
        record holds as its text, or its number in a numeric column); a missing value as
        it was."""
        value_of: dict[str, Any] = dict(zip(self.unique_texts, self.uniques, strict=True))
        objects = [value_of.get(lv, float(lv) if self.numeric else lv) for lv in levels]
        values = np.asarray([*objects, None], dtype=object)[out]
        missing = out < 0
        values[missing] = self.column.to_numpy(dtype=object)[missing]
        series = pd.Series(values, index=index, name=self.column.name)
        if self.numeric:
            try:
                return series.astype(self.column.dtype)
            except (TypeError, ValueError):
                return series.astype(np.float64)
        return series


def pram(frame: pd.DataFrame, columns: Sequence[str], params: Any, seed: int | None) -> Masked:
    """PRAM ``columns`` of ``frame`` (module text); ``seed`` must be given."""
    return pram_rows(frame, columns, params, seed, 0)


def pram_rows(
    frame: pd.DataFrame, columns: Sequence[str], params: Any, seed: int | None, first_row: int
) -> Masked:
    """:func:`pram` of ``frame`` as the records from ``first_row`` on of a larger table
    (their uniforms those of their positions there; a piece of an engine's table)."""
    p: PramParams = params
    if seed is None:
        raise AnonlabError("pram draws random numbers: give a seed", parameter="seed")
    absent = [c for c in p.strata if c not in frame.columns]
    if absent:
        raise AnonlabError(f"strata: unknown column {', '.join(absent)}", parameter="strata")
    overlap = [c for c in p.strata if c in columns]
    if overlap:
        raise AnonlabError(
            f"strata: {', '.join(overlap)} is masked too: a stratum column is released as it is",
            parameter="strata",
        )
    pds = p.per_column("pd", p.pd, columns)
    alphas = p.per_column("alpha", p.alpha, columns)
    stratum, strata_values = strata_of(frame, p.strata)
    released: dict[str, pd.Series] = {}
    entries: dict[str, Any] = {}
    for c, name in enumerate(columns):
        column = frame[name]
        present = _ColumnLevels(column)
        file = p.matrix_of(name)
        if file is not None:
            levels, given = read_matrix(file)
            unknown = sorted(set(present.texts) - set(levels))
            if unknown:
                raise AnonlabError(
                    f"matrix '{file}' lacks level(s) {', '.join(unknown[:5])} of column "
                    f"'{name}': name every value of the column",
                    parameter="matrix",
                )
        else:
            levels, given = levels_of(present.texts), None
        codes = present.codes(levels)
        matrix_rng = np.random.default_rng([seed, c, 0])
        u = record_uniforms(seed, c, first_row, len(codes))
        out = codes.copy()
        matrices = []
        for s, values in enumerate(strata_values):
            rows = np.flatnonzero(stratum == s)
            mine = codes[rows]
            if given is not None:
                matrix = given
            else:
                counts = np.bincount(mine[mine >= 0], minlength=len(levels)).astype(np.float64)
                shares = counts / max(counts.sum(), 1.0)
                matrix = invariant_matrix(shares, pds[c], alphas[c], matrix_rng)
            out[rows] = draw(mine, matrix, u[rows])
            matrices.append(
                {
                    "stratum": dict(zip(p.strata, values, strict=True)),
                    "matrix": matrix.tolist(),
                }
            )
        released[name] = present.released(levels, out, frame.index)
        entries[name] = _column_entry(levels, codes, out, matrices, file, pds[c], alphas[c])
    return Masked(
        released,
        {"strata": list(p.strata), "seed_layout": SEED_LAYOUT, "columns": entries},
    )


def _column_entry(
    levels: list[str],
    codes: NDArray[np.int64],
    out: NDArray[np.int64],
    matrices: list[dict[str, Any]],
    file: str | None,
    pd: float,
    alpha: float,
) -> dict[str, Any]:
    """A column's report entry: its matrix (per stratum), the realized transitions and the
    marginals before and after."""
    present = codes >= 0
    size = len(levels)
    pairs = np.bincount(codes[present] * size + out[present], minlength=size * size)
    transitions = [
        {"from": levels[k // size], "to": levels[k % size], "count": int(n)}
        for k, n in enumerate(pairs)
        if n
    ]
    before = np.bincount(codes[present], minlength=size)
    after = np.bincount(out[present], minlength=size)
    return {
        "matrix_source": "given" if file is not None else "invariant",
        "matrix_file": file,
        "pd": None if file is not None else pd,
        "alpha": None if file is not None else alpha,
        "levels": levels,
        "matrices": matrices,
        "transitions": transitions,
        "changed": int((codes[present] != out[present]).sum()),
        "missing": int((~present).sum()),
        "marginals": {
            "original": {lv: int(n) for lv, n in zip(levels, before, strict=True)},
            "released": {lv: int(n) for lv, n in zip(levels, after, strict=True)},
        },
    }


METHOD = MaskingMethod(
    name="pram",
    sdcmicro="pram",
    params=PramParams,
    apply=pram,
    randomized=True,
    kind="categorical",
    summary="post-randomization by a given (--matrix) or invariant (--pd, --alpha) matrix",
)
