"""The independent check of a masking release (``anonlab mask``; docs/masking.md).

Written apart from the masking family (it imports none of it): it reads the
original, the release as written and the run's report, and returns the problems it
finds (none: the release is what the report says):

- every column the run did not mask is released unchanged, value for value;
- ``pram``: every released value is a level of its column (a missing value stays
  missing), every matrix of the report has entries in [0, 1] and rows summing to 1,
  an invariant matrix keeps its stratum's level shares (``p R = p``), the report's
  transition counts and marginals are those of the original and the release; and
  when the report holds the seed, the records' uniforms are drawn again (one per
  record: record ``r`` takes number ``r mod 65,536`` of ``default_rng([seed, column
  position, 1, r // 65,536])``; a report of the earlier layout ``[seed, column, 0|1]``,
  number ``r`` of ``default_rng([seed, column position, 1])``) and each record's
  released level must be the first whose cumulative row sum exceeds its uniform;
- ``topbot``: every value above the top limit (below the bottom one) is the
  replacement, every other value its original text;
- ``recode``: the labels are R's ``cut`` labels of the reported breaks (``%.{d}g``
  with the least ``d`` from 8 to 12 that keeps adjacent breaks apart, ``[`` for a
  closed first interval), the breaks rise, and every released value is the label
  of the interval that holds its original value.

A method with no check here gets the first check only (:data:`CHECKS`).

A release an engine wrote as a folder of Parquet parts (one part per piece of the
input, ``part-<piece>``) is checked piece by piece (:func:`check_masking_pieces`): each
piece of the input, read as text, against its part, by the same checks (those of
``topbot`` and ``recode`` look at one record at a time).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

if TYPE_CHECKING:
    from anonlab.engine.base import EngineBase
    from anonlab.engine.table import Piece, Table
    from anonlab.progress import ProgressFn

#: how far a matrix row's sum may be from 1
TOLERANCE = 1e-9
#: PRAM's records per block of uniforms (module text)
PRAM_BLOCK = 65_536
#: additive noise's records per block of normals
NOISE_BLOCK = 65_536
#: the seed layout of noise reports written before the blocks
NOISE_OLD_LAYOUT = "default_rng([seed, 0])"
#: the seed layout of PRAM reports written before the blocks
PRAM_OLD_LAYOUT = "[seed, column, 0|1]"


def _text(column: pd.Series) -> NDArray[np.object_]:
    """The values as text, a missing one ``""``."""
    missing = column.isna().to_numpy()
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        values = column.astype(str).to_numpy(dtype=object)
    else:
        values = column.to_numpy(dtype=object, copy=True)
        odd = np.flatnonzero(~missing & np.asarray([not isinstance(v, str) for v in values]))
        values[odd] = [str(values[i]) for i in odd]
    values[missing] = ""
    return values


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def check_masking(
    original: pd.DataFrame,
    release: pd.DataFrame,
    columns: Sequence[str],
    report: Mapping[str, Any],
    *,
    first_row: int = 0,
    tally: dict[str, Any] | None = None,
) -> list[str]:
    """The problems of ``release`` against ``original`` and the run's ``report`` (module
    text); ``columns`` are the masked ones. ``original`` may be a piece of the table
    from record ``first_row`` on; PRAM's transition counts are then added into ``tally``
    (the caller compares the sums with the report: :func:`check_masking_pieces`)."""
    problems: list[str] = []
    if len(original) != len(release):
        return [f"the release has {len(release)} records, the original {len(original)}"]
    for name in release.columns:
        if name not in original.columns:
            problems.append(f"column '{name}' is not a column of the original")
        elif name not in columns:
            before, after = _text(original[name]), _text(release[name])
            changed = np.flatnonzero(before != after)
            if changed.size:
                r = int(changed[0])
                problems.append(
                    f"column '{name}' is not masked but record {r + 1} changed from "
                    f"'{before[r]}' to '{after[r]}'"
                )
    missing = [c for c in columns if c not in release.columns]
    if missing:
        return [*problems, f"masked column(s) {', '.join(missing)} are not released"]
    check = CHECKS.get(str(report.get("method")))
    if check is _check_pram or check is _check_noise:
        problems.extend(
            check(original, release, list(columns), report, first_row=first_row, tally=tally)
        )
    elif check is not None:
        problems.extend(check(original, release, list(columns), report))
    return problems


# ---------------------------------------------------------------------------
# pram
# ---------------------------------------------------------------------------


def _matrix_problems(matrix: NDArray[np.float64], where: str) -> list[str]:
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        return [f"{where}: the matrix is not square"]
    if not np.all(np.isfinite(matrix)) or matrix.min() < 0 or matrix.max() > 1:
        return [f"{where}: an entry is not a probability in [0, 1]"]
    sums = matrix.sum(axis=1)
    worst = int(np.argmax(np.abs(sums - 1)))
    if abs(sums[worst] - 1) > TOLERANCE:
        return [f"{where}: row {worst + 1} sums to {sums[worst]:.12g}, not 1"]
    return []


def _add_tally(
    tally: dict[str, Any],
    name: str,
    counted: Mapping[tuple[str, str], int],
    released: Mapping[str, int],
) -> None:
    """A piece's transitions and released marginals added into ``tally[name]``."""
    mine = tally.setdefault(name, ({}, {}))
    for key, count in counted.items():
        mine[0][key] = mine[0].get(key, 0) + count
    for level, count in released.items():
        mine[1][level] = mine[1].get(level, 0) + count


def _check_pram(
    original: pd.DataFrame,
    release: pd.DataFrame,
    columns: list[str],
    report: Mapping[str, Any],
    *,
    first_row: int = 0,
    tally: dict[str, Any] | None = None,
) -> list[str]:
    """``first_row``: the position of ``original``'s first record in the table (a piece's);
    ``tally``: where a piece's transitions are added up instead of compared."""
    problems: list[str] = []
    section = report["masking"]
    strata = list(section.get("strata", []))
    seed = report.get("seed")
    n = len(original)
    keys = (
        [tuple(row) for row in zip(*(_text(original[c]) for c in strata), strict=True)]
        if strata
        else [()] * n
    )
    for position, name in enumerate(columns):
        entry = section["columns"][name]
        levels = [str(v) for v in entry["levels"]]
        index = {v: i for i, v in enumerate(levels)}
        before, after = _text(original[name]), _text(release[name])
        if any(v != "" and v not in index for v in before):
            problems.append(f"pram: column '{name}' holds a value the report's levels lack")
            continue
        odd = [v for v in after if v != "" and v not in index]
        if odd:
            problems.append(f"pram: column '{name}' releases '{odd[0]}', not one of its levels")
            continue
        moved = np.flatnonzero((before == "") != (after == ""))
        if moved.size:
            problems.append(
                f"pram: column '{name}' record {int(moved[0]) + 1}: a missing value must stay "
                "missing and only it"
            )
            continue
        matrices: dict[tuple[str, ...], NDArray[np.float64]] = {}
        for m in entry["matrices"]:
            key = tuple(str(m["stratum"][c]) for c in strata)
            matrix = np.asarray(m["matrix"], dtype=np.float64)
            where = f"pram: column '{name}' stratum {key or 'all'}"
            problems.extend(_matrix_problems(matrix, where))
            if matrix.shape != (len(levels), len(levels)):
                problems.append(f"{where}: the matrix does not have one row per level")
            matrices[key] = matrix
        if problems:
            continue
        a = np.fromiter((index.get(v, -1) for v in before), dtype=np.int64, count=n)
        b = np.fromiter((index.get(v, -1) for v in after), dtype=np.int64, count=n)
        counted, released = _pram_tally(levels, a, b)
        if tally is None:
            problems.extend(_pram_compare(name, entry, counted, released))
        else:  # a piece's: added up by the caller
            _add_tally(tally, name, counted, released)
        order = {key: i for i, key in enumerate(matrices)}
        stratum_of = np.fromiter((order.get(k, -1) for k in keys), dtype=np.int64, count=n)
        if np.any(stratum_of < 0):
            problems.append(f"pram: column '{name}': a stratum of the data has no matrix")
            continue
        if entry.get("matrix_source") == "invariant":
            problems.extend(_invariance(name, matrices, stratum_of, a, len(levels)))
        if seed is not None:
            problems.extend(
                _redrawn(
                    name,
                    int(seed),
                    position,
                    list(matrices.values()),
                    stratum_of,
                    a,
                    b,
                    levels,
                    first_row,
                    str(section.get("seed_layout", "")),
                )
            )
    return problems


def _pram_uniforms(seed: int, position: int, first_row: int, rows: int, layout: str) -> Any:
    """The uniforms of records ``first_row`` on (module text), each block drawn whole."""
    if layout == PRAM_OLD_LAYOUT:
        return np.random.default_rng([seed, position, 1]).random(first_row + rows)[first_row:]
    first, last = first_row // PRAM_BLOCK, (first_row + rows - 1) // PRAM_BLOCK
    drawn = [
        np.random.default_rng([seed, position, 1, block]).random(PRAM_BLOCK)
        for block in range(first, last + 1)
    ]
    start = first_row - first * PRAM_BLOCK
    return np.concatenate(drawn)[start : start + rows] if drawn else np.empty(0)


def _redrawn(
    name: str,
    seed: int,
    position: int,
    stack: list[NDArray[np.float64]],
    stratum_of: NDArray[np.int64],
    a: NDArray[np.int64],
    b: NDArray[np.int64],
    levels: list[str],
    first_row: int,
    layout: str,
) -> list[str]:
    """Each record's level drawn again from the seed's uniforms and its stratum's matrix."""
    u = _pram_uniforms(seed, position, first_row, len(a), layout)
    expected = np.full(len(a), -1, dtype=np.int64)
    for s, matrix in enumerate(stack):
        cumulative = np.cumsum(matrix, axis=1)
        for i in range(matrix.shape[0]):
            rows = np.flatnonzero((stratum_of == s) & (a == i))
            drawn = np.searchsorted(cumulative[i], u[rows], side="right")
            expected[rows] = np.minimum(drawn, len(levels) - 1)
    wrong = np.flatnonzero((a >= 0) & (expected != b))
    if wrong.size:
        r = int(wrong[0])
        return [
            f"pram: column '{name}' record {r + 1} is '{levels[b[r]]}', the seed's draw "
            f"gives '{levels[expected[r]]}'"
        ]
    return []


def _invariance(
    name: str,
    matrices: Mapping[tuple[str, ...], NDArray[np.float64]],
    stratum_of: NDArray[np.int64],
    a: NDArray[np.int64],
    size: int,
) -> list[str]:
    """An invariant matrix keeps its stratum's level shares: ``p R = p``."""
    for s, (key, matrix) in enumerate(matrices.items()):
        mine = a[(stratum_of == s) & (a >= 0)]
        shares = np.bincount(mine, minlength=size) / max(mine.size, 1)
        if np.max(np.abs(shares @ matrix - shares)) > 1e-9:
            return [
                f"pram: column '{name}' stratum {key or 'all'}: the invariant matrix does not "
                "keep the level shares (p R != p)"
            ]
    return []


def _pram_tally(
    levels: list[str], a: NDArray[np.int64], b: NDArray[np.int64]
) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """The transitions counted (original level, released level) and the released
    marginals of the records present."""
    present = a >= 0
    counted: dict[tuple[str, str], int] = {}
    for i, j in zip(a[present], b[present], strict=True):
        counted[(levels[i], levels[j])] = counted.get((levels[i], levels[j]), 0) + 1
    released = {lv: 0 for lv in levels}
    for j in b[present]:
        released[levels[j]] += 1
    return counted, released


def _pram_compare(
    name: str,
    entry: Mapping[str, Any],
    counted: Mapping[tuple[str, str], int],
    released: Mapping[str, int],
) -> list[str]:
    """The report's transition counts and marginals against those counted."""
    reported = {(t["from"], t["to"]): int(t["count"]) for t in entry["transitions"]}
    if reported != dict(counted):
        return [f"pram: column '{name}': the report's transition counts are not the release's"]
    if dict(entry["marginals"]["released"]) != dict(released):
        return [f"pram: column '{name}': the report's released marginals are not the release's"]
    return []


# ---------------------------------------------------------------------------
# topbot
# ---------------------------------------------------------------------------


def _limits(p: Mapping[str, Any], kind: str) -> tuple[float | None, float | None]:
    if p.get("value") is not None and p.get("kind", "top") == kind:
        value, replacement = p["value"], p.get("replacement")
    else:
        value, replacement = p.get(kind), p.get(f"{kind}_replacement")
    if value is None:
        return None, None
    return float(value), float(value if replacement is None else replacement)


def _check_topbot(
    original: pd.DataFrame, release: pd.DataFrame, columns: list[str], report: Mapping[str, Any]
) -> list[str]:
    p = report["parameters"]["parameters"]
    top, top_to = _limits(p, "top")
    bottom, bottom_to = _limits(p, "bottom")
    for name in columns:
        before, after = _text(original[name]), _text(release[name])
        for r, (x_text, y_text) in enumerate(zip(before, after, strict=True)):
            x = _number(x_text)
            if x is None:
                if y_text != x_text:
                    return [
                        f"topbot: column '{name}' record {r + 1}: a value that is no number changed"
                    ]
                continue
            if top is not None and x > top:
                want: float | None = top_to
            elif bottom is not None and x < bottom:
                want = bottom_to
            else:
                want = None
            if want is None and y_text != x_text:
                return [
                    f"topbot: column '{name}' record {r + 1}: '{x_text}' is within the "
                    f"limits but released as '{y_text}'"
                ]
            if want is not None and _number(y_text) != want:
                return [
                    f"topbot: column '{name}' record {r + 1}: '{x_text}' must be coded "
                    f"{want:g}, released as '{y_text}'"
                ]
    return []


# ---------------------------------------------------------------------------
# recode
# ---------------------------------------------------------------------------


def _cut_labels(breaks: Sequence[float], closed_first: bool) -> list[str]:
    """R's ``cut`` labels with ``dig.lab = 8`` (module text)."""
    for digits in range(8, 13):
        texts = [f"{b:.{digits}g}" for b in breaks]
        if all(x != y for x, y in itertools.pairwise(texts)):
            labels = [f"({x},{y}]" for x, y in itertools.pairwise(texts)]
            if closed_first and labels:
                labels[0] = "[" + labels[0][1:]
            return labels
    return [f"Range_{i}" for i in range(1, len(breaks))]


def _check_recode(
    original: pd.DataFrame, release: pd.DataFrame, columns: list[str], report: Mapping[str, Any]
) -> list[str]:
    custom = report["parameters"]["parameters"].get("labels")
    for name in columns:
        entry = report["masking"]["columns"][name]
        breaks = [float(b) for b in entry["breaks"]]
        if any(x >= y for x, y in itertools.pairwise(breaks)):
            return [f"recode: column '{name}': the breaks do not rise"]
        labels = list(entry["labels"])
        expected = list(custom) if custom else _cut_labels(breaks, bool(entry["closed_first"]))
        if labels != expected:
            return [
                f"recode: column '{name}': labels {labels[:3]}... do not match the breaks "
                f"(expected {expected[:3]}...)"
            ]
        before, after = _text(original[name]), _text(release[name])
        lowest = breaks[0]
        for r, (x_text, y_text) in enumerate(zip(before, after, strict=True)):
            if x_text == "":
                if y_text != "":
                    return [f"recode: column '{name}' record {r + 1}: a missing value was recoded"]
                continue
            x = _number(x_text)
            if x is None:
                return [f"recode: column '{name}' record {r + 1}: '{x_text}' is no number"]
            k = next((i for i in range(1, len(breaks)) if x <= breaks[i]), None)
            if k is None or x < lowest or (x == lowest and not entry["closed_first"]):
                return [f"recode: column '{name}' record {r + 1}: {x_text} lies outside the breaks"]
            if y_text != labels[k - 1]:
                return [
                    f"recode: column '{name}' record {r + 1}: {x_text} released as "
                    f"'{y_text}', its interval is '{labels[k - 1]}'"
                ]
    return []


Check = Callable[[pd.DataFrame, pd.DataFrame, list[str], Mapping[str, Any]], list[str]]

#: method -> its own check (beside the unmasked columns' check every method gets)
CHECKS: dict[str, Check] = {
    "pram": _check_pram,
    "topbot": _check_topbot,
    "recode": _check_recode,
}


# ---------------------------------------------------------------------------
# noise, rankswap, shuffle (numeric masking)
# ---------------------------------------------------------------------------


def _numbers(column: pd.Series) -> NDArray[np.float64]:
    """A column's values as doubles, NaN where missing (or no number)."""
    texts = pd.Series(_text(column), dtype=object).replace("", None)
    return np.asarray(pd.to_numeric(texts, errors="coerce"), dtype=np.float64)


def _block(frame: pd.DataFrame, columns: Sequence[str]) -> NDArray[np.float64]:
    return np.column_stack([_numbers(frame[c]) for c in columns])


def _sd(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each column's SD (divisor n - 1) over its values present (:func:`_column_sd`)."""
    return np.array([_column_sd(x[:, j]) for j in range(x.shape[1])], dtype=np.float64)


def _column_sd(values: NDArray[np.float64]) -> float:
    """The SD (divisor n - 1) of the values present, 0 for fewer than two.

    Taken on the values divided by a power of two near their largest magnitude, then
    multiplied back: exact (a power of two only moves the exponents), and the squares
    neither overflow near 1e300 nor underflow near 1e-300.
    """
    present = values[~np.isnan(values)]
    if present.size < 2:
        return 0.0
    largest = float(np.max(np.abs(present)))
    exponent = math.frexp(largest)[1] if math.isfinite(largest) else 0
    return math.ldexp(float(np.std(np.ldexp(present, -exponent), ddof=1)), exponent)


def _extreme_exponents(x: NDArray[np.float64]) -> NDArray[np.int64]:
    """Per column of ``x``, the ``e`` of the power of two ``2**e`` at or above its largest
    finite magnitude where that magnitude lies beyond ``2**256`` or below ``2**-256``
    (products of such numbers overflow or underflow), else 0."""
    exponents = np.zeros(x.shape[1], dtype=np.int64)
    for j in range(x.shape[1]):
        finite = np.abs(x[np.isfinite(x[:, j]), j])
        largest = float(finite.max()) if finite.size else 0.0
        if largest > 2.0**256 or 0.0 < largest < 2.0**-256:
            exponents[j] = math.frexp(largest)[1]
    return exponents


def _close(a: NDArray[np.float64], b: NDArray[np.float64], what: str) -> list[str]:
    scale = max(float(np.nanmax(np.abs(a))) if a.size else 0.0, 1.0)
    gap = np.abs(np.nan_to_num(a - b)) > 1e-9 * scale
    if gap.any():
        r, c = np.argwhere(gap)[0]
        return [f"{what}: record {r + 1} column {c + 1} is {a[r, c]!r}, expected {b[r, c]!r}"]
    return []


def _band(ratio: float, n: int) -> bool:
    """Whether an SD ratio is within six standard errors of 1 (``se ~ 1/sqrt(2(n-1))``)."""
    return abs(ratio - 1.0) <= 6.0 / math.sqrt(2.0 * max(n - 1, 1)) + 1e-9


def _noise_moments(
    method: str, x: NDArray[np.float64], y: NDArray[np.float64], p: Mapping[str, Any]
) -> list[str]:
    """Checks without the seed: the noise's size per column, within sampling error."""
    n = int(np.sum(~np.isnan(x[:, 0])))
    sd = _sd(x)
    share = float(p.get("noise", 50.0)) / 100.0
    if method == "correlated2":
        delta = float(p.get("delta", 0.1))
        d1 = math.sqrt(1.0 - delta**2)
        e = (y - d1 * x) / delta
        expected_sd = sd
    else:
        e = y - x
        expected_sd = sd * (math.sqrt(share) if method == "correlated" else share)
    for j in range(x.shape[1]):
        if expected_sd[j] == 0:
            continue
        ratio = _column_sd(e[:, j]) / expected_sd[j]
        if not _band(ratio, n):
            return [
                f"noise: column {j + 1}: the noise's SD is {ratio:.3f} times the expected "
                f"{expected_sd[j]:.6g}, beyond sampling error"
            ]
    return []


def _gram_schmidt(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """The orthonormal factor of ``matrix`` with positive ``R`` diagonal, via Cholesky:
    ``Q = A R^-1`` where ``A^T A = R^T R``."""
    upper = np.linalg.cholesky(matrix.T @ matrix).T
    q: NDArray[np.float64] = np.linalg.solve(upper.T, matrix.T).T
    return q


def _romm_redrawn(
    x: NDArray[np.float64], seed: int, p: float, section: Mapping[str, Any]
) -> NDArray[np.float64]:
    """ROMM's release drawn again (docs/masking.md, Noise: one matrix up to 1024 records,
    else random blocks of about 256, ``p`` scaled by ``sqrt((n - 1) / (b - 1))``)."""
    rng = np.random.default_rng([seed, 0])
    n = x.shape[0]
    blocks = int(section.get("romm_blocks", 1))
    if blocks == 1:
        return _gram_schmidt(np.eye(n) + p * rng.standard_normal((n, n))) @ x
    order = rng.permutation(n)
    out = np.empty_like(x)
    for rows in np.array_split(order, blocks):
        b = rows.size
        scaled = p * math.sqrt((n - 1) / max(b - 1, 1))
        out[rows] = _gram_schmidt(np.eye(b) + scaled * rng.standard_normal((b, b))) @ x[rows]
    return out


def _additive_normals(seed: int, columns: int, first_row: int, rows: int) -> Any:
    """Additive noise's normals of records ``first_row`` on: record ``r`` takes row ``r mod
    65,536`` of ``default_rng([seed, 0, r // 65,536]).standard_normal((65,536, m))``."""
    if rows == 0:
        return np.empty((0, columns))
    first, last = first_row // NOISE_BLOCK, (first_row + rows - 1) // NOISE_BLOCK
    drawn = [
        np.random.default_rng([seed, 0, block]).standard_normal((NOISE_BLOCK, columns))
        for block in range(first, last + 1)
    ]
    start = first_row - first * NOISE_BLOCK
    return np.concatenate(drawn)[start : start + rows]


def _noise_redrawn(
    method: str,
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    seed: int,
    p: Mapping[str, Any],
    section: Mapping[str, Any],
    first_row: int = 0,
    sd: NDArray[np.float64] | None = None,
) -> list[str]:
    """Checks with the seed: the noise drawn again (``default_rng([seed, 0])``; additive
    noise of the block layout: :func:`_additive_normals` at ``first_row``, the columns'
    SDs ``sd`` when given, a piece's, else the SDs of ``x``)."""
    share = float(p.get("noise", 50.0)) / 100.0
    n, m = x.shape
    if method == "additive" and section.get("seed_layout") != NOISE_OLD_LAYOUT:
        z = _additive_normals(seed, m, first_row, n)
        return _close(y, x + z * (share * (_sd(x) if sd is None else sd)), "additive")
    rng = np.random.default_rng([seed, 0])
    if method == "romm":
        return _close(y, _romm_redrawn(x, seed, float(p.get("p", 0.001)), section), "romm")
    if method == "outdect":
        rows = np.flatnonzero(np.any(np.nan_to_num(y - x) != 0, axis=1))
        rng.integers(0, 2**31 - 1)  # the MCD's seed, drawn first
        z = rng.standard_normal((rows.size, m))
        expected = x.copy()
        expected[rows] += z * (1.96 * _sd(x) / math.sqrt(n) * share)
        return _close(y, expected, "outdect")
    z = rng.standard_normal((n, m))
    if method == "additive":
        return _close(y, x + z * (share * _sd(x)), "additive")
    if method == "correlated2":
        delta = float(p.get("delta", 0.1))
        d1 = math.sqrt(1.0 - delta**2)
        mean = np.nanmean(x, axis=0)
        draws = z * _sd(x) + (1.0 - d1) / delta * mean
        return _close(y, d1 * x + delta * draws, "correlated2")
    # correlated: y - x = z B for some B with B^T B = share Cov(x); both sides taken on
    # columns of extreme magnitude divided by a power of two (exact: B's column and the
    # covariance's row and column scale alike)
    exponents = _extreme_exponents(x)
    d = np.ldexp(y - x, -exponents)
    x = np.ldexp(x, -exponents)
    complete = ~np.isnan(d).any(axis=1)
    factor = np.linalg.lstsq(z[complete], d[complete], rcond=None)[0]
    problems = _close(d[complete], z[complete] @ factor, "correlated")
    cov = np.cov(x[~np.isnan(x).any(axis=1)], rowvar=False, ddof=1) * share
    if not problems and not np.allclose(factor.T @ factor, cov, rtol=1e-6, atol=1e-9):
        problems.append("correlated: the noise's covariance is not noise/100 times the data's")
    return problems


def _check_noise(
    original: pd.DataFrame,
    release: pd.DataFrame,
    columns: list[str],
    report: Mapping[str, Any],
    *,
    first_row: int = 0,
    tally: dict[str, Any] | None = None,
) -> list[str]:
    """``first_row`` and ``tally`` as :func:`_check_pram`'s: a piece of additive noise is
    redrawn with the report's SDs, and its columns' moments and its noise's are added up
    (:func:`_noise_tally`) for the caller to compare with the report."""
    section = report["masking"]
    method = str(section["noise_method"])
    p = report["parameters"]["parameters"]
    x, y = _block(original, columns), _block(release, columns)
    if not np.array_equal(np.isnan(x), np.isnan(y)):
        return ["noise: a missing value must stay missing, and only it"]
    n = x.shape[0]
    if n == 0:
        return []
    if method == "restr":  # deterministic: c x + (1 - c) mean
        w = float(p.get("noise", 50.0)) / 100.0
        c = (
            math.sqrt((n - 1 - w) / ((n + 1) * (1 + w)))
            if n < 500
            else math.sqrt((n - 1) / (n + n * w - 1))
        )
        return _close(y, c * x + (1 - c) * np.nanmean(x, axis=0), "restr")
    if method == "romm":  # orthogonal: x^T x kept (on columns scaled alike, exactly)
        exponents = _extreme_exponents(x)
        x, y = np.ldexp(x, -exponents), np.ldexp(y, -exponents)
        if not np.allclose(y.T @ y, x.T @ x, rtol=1e-8, atol=0.0):
            return ["romm: the columns' sums of squares and cross products changed"]
    elif method == "outdect":
        above = np.any(x > np.quantile(x, 0.99, axis=0), axis=1)
        unchanged = np.all(x == y, axis=1)
        if float(p.get("noise", 50.0)) > 0 and np.any(above & unchanged):
            r = int(np.flatnonzero(above & unchanged)[0])
            return [f"outdect: record {r + 1} lies above a 99 % quantile but got no noise"]
    elif tally is not None:  # a piece: the moments are the whole table's (the caller's)
        tally["noise"] = _noise_tally(x, y - x)
        seed = report.get("seed")
        if seed is None:
            return []
        sd = np.asarray([float(section["columns"][c]["sd"]) for c in columns])
        return _noise_redrawn(method, x, y, int(seed), p, section, first_row, sd)
    else:
        problems = _noise_moments(method, x, y, p)
        if problems:
            return problems
    seed = report.get("seed")
    return [] if seed is None else _noise_redrawn(method, x, y, int(seed), p, section)


def _noise_tally(x: NDArray[np.float64], d: NDArray[np.float64]) -> list[list[float]]:
    """Per column, count, sum and sum of squares about the piece's mean of ``x`` and of the
    noise ``d`` (values present): what :func:`_noise_whole` adds up."""
    out: list[list[float]] = []
    for values in (x, d):
        for j in range(values.shape[1]):
            present = values[~np.isnan(values[:, j]), j]
            mean = float(present.mean()) if present.size else 0.0
            out.append([float(present.size), mean, float(((present - mean) ** 2).sum())])
    return out


def _noise_whole(
    tallies: Sequence[list[list[float]]], columns: Sequence[str], report: Mapping[str, Any]
) -> list[str]:
    """The pieces' moments added up: each column's SD must be the report's (1e-9
    relative) and the noise's SD ``noise/100`` of it within sampling error."""
    m = len(columns)
    totals = [[0.0, 0.0, 0.0] for _ in range(2 * m)]
    for tally in tallies:
        for k, (n, mean, m2) in enumerate(tally):
            tn, tmean, tm2 = totals[k]
            if n == 0:
                continue
            both = tn + n
            delta = mean - tmean
            totals[k] = [both, tmean + delta * n / both, tm2 + m2 + delta**2 * tn * n / both]
    share = float(report["parameters"]["parameters"].get("noise", 50.0)) / 100.0
    section = report["masking"]["columns"]
    for j, name in enumerate(columns):
        n, _, m2 = totals[j]
        sd = math.sqrt(m2 / (n - 1)) if n > 1 else 0.0
        reported = float(section[name]["sd"])
        if abs(sd - reported) > 1e-9 * max(abs(sd), 1.0):
            return [f"noise: column '{name}': its SD is {sd!r}, the report says {reported!r}"]
        dn, _, dm2 = totals[m + j]
        if sd > 0 and dn > 1:
            ratio = math.sqrt(dm2 / (dn - 1)) / (share * sd) if share > 0 else 1.0
            if not _band(ratio, int(dn)):
                return [
                    f"noise: column '{name}': the noise's SD is {ratio:.3f} times the expected "
                    f"{share * sd:.6g}, beyond sampling error"
                ]
    return []


def _rank_range(sorted_desc: NDArray[np.float64], values: NDArray[np.float64]) -> Any:
    """First and last position of each value in a column sorted from high to low."""
    ascending = -sorted_desc
    return (
        np.searchsorted(ascending, -values, side="left"),
        np.searchsorted(ascending, -values, side="right") - 1,
    )


def _swap_column(
    name: str, x: NDArray[np.float64], y: NDArray[np.float64], entry: Mapping[str, Any], mode: str
) -> list[str]:
    present = np.flatnonzero(~np.isnan(x))
    if not np.array_equal(np.isnan(x), np.isnan(y)):
        return [f"rankswap: column '{name}': a missing value must stay missing, and only it"]
    order = present[np.argsort(-x[present], kind="stable")]  # ties in record order
    top, bottom = int(entry["top"]), int(entry["bottom"])
    n = order.size
    groups = {"top": order[:top], "bottom": order[n - bottom :]}
    for kind, rows in groups.items():
        if not rows.size:
            continue
        if mode == "mean":
            mean = float(np.mean(x[rows]))
            if not np.allclose(y[rows], mean, rtol=1e-12, atol=0.0):
                return [f"rankswap: column '{name}': the {kind} group is not its mean {mean!r}"]
        elif not np.array_equal(np.sort(y[rows]), np.sort(x[rows])):
            return [f"rankswap: column '{name}': the {kind} group's values are not its own"]
    middle = order[top : n - bottom]
    ranked = x[middle]
    if not np.array_equal(np.sort(y[middle]), np.sort(ranked)):
        return [f"rankswap: column '{name}': the middle values are not the original's"]
    share = float(entry["share"])
    if int(entry["max_distance"]) != int(np.floor(middle.size * share + 1e-9)) - 1:
        return [f"rankswap: column '{name}': max_distance does not match the window's share"]
    lo_x, hi_x = _rank_range(ranked, x[middle])
    lo_y, hi_y = _rank_range(ranked, y[middle])
    distance = np.maximum(0, np.maximum(lo_y - hi_x, lo_x - hi_y))
    worst = int(np.argmax(distance)) if distance.size else 0
    allowed = max(int(entry["max_distance"]), 0)
    if distance.size and distance[worst] > allowed:
        return [
            f"rankswap: column '{name}' record {int(middle[worst]) + 1} moved "
            f"{int(distance[worst])} ranks, beyond the window's {allowed}"
        ]
    return []


def _window_share(ranked: NDArray[np.float64], top: int, bottom: int, p: Mapping[str, Any]) -> Any:
    n = ranked.size
    if p.get("p") is not None:
        return float(p["p"]) / 100.0
    v_top = ranked[top - 1] if top else ranked[0]
    v_bottom = ranked[n - bottom] if bottom else ranked[n - 1]
    spread = abs(float(v_bottom) - float(v_top))
    middle = ranked[top : n - bottom]
    if spread == 0 or middle.size == 0:
        return 0.0
    if p.get("k0") is not None:
        return math.sqrt(8.0 / 3.0) * float(p["k0"]) * abs(float(np.mean(middle))) / spread
    r0 = 0.95 if p.get("r0") is None else float(p["r0"])
    return math.sqrt(2.0 * float(np.var(middle)) * (1.0 - r0)) / spread


def _check_rankswap(
    original: pd.DataFrame, release: pd.DataFrame, columns: list[str], report: Mapping[str, Any]
) -> list[str]:
    section = report["masking"]
    p = report["parameters"]["parameters"]
    mode = str(section["extremes"])
    for name in columns:
        x, y = _numbers(original[name]), _numbers(release[name])
        entry = section["columns"][name]
        ranked = -np.sort(-x[~np.isnan(x)])
        n = ranked.size
        top = math.floor(n * float(p.get("top_percent", 5.0)) / 100.0 + 1e-9)
        bottom = math.floor(n * float(p.get("bottom_percent", 5.0)) / 100.0 + 1e-9)
        if (top, bottom) != (int(entry["top"]), int(entry["bottom"])):
            return [f"rankswap: column '{name}': the top/bottom group sizes are not the percents'"]
        if n and not math.isclose(
            _window_share(ranked, top, bottom, p), float(entry["share"]), rel_tol=1e-9
        ):
            return [f"rankswap: column '{name}': the window does not follow p, r0 or k0"]
        problems = _swap_column(name, x, y, entry, mode)
        if problems:
            return problems
    return []


def _check_shuffle(
    original: pd.DataFrame, release: pd.DataFrame, columns: list[str], report: Mapping[str, Any]
) -> list[str]:
    for name in columns:
        x, y = _numbers(original[name]), _numbers(release[name])
        if not np.array_equal(np.sort(x), np.sort(y), equal_nan=True):
            return [f"shuffle: column '{name}' is not a permutation of the original"]
    section = report["masking"]
    if section.get("shuffle_method") != "mlm":
        return []
    # mlm draws nothing: the release is the original sorted into the order of the fitted
    # values of the least-squares regression on the predictors (ties in record order)
    s = _block(original, section["predictors"])
    x = _block(original, columns)
    design = np.column_stack([np.ones(len(x)), s])
    fitted = design @ np.linalg.lstsq(design, x, rcond=None)[0]
    for j, name in enumerate(columns):
        expected = np.empty(len(x))
        expected[np.argsort(fitted[:, j], kind="stable")] = np.sort(x[:, j])
        y = _numbers(release[name])
        if not np.array_equal(expected, y):
            return [f"shuffle: column '{name}' is not in the order of the regression's fit"]
    return []


CHECKS.update(
    {
        "noise": _check_noise,
        "rankswap": _check_rankswap,
        "shuffle": _check_shuffle,
    }
)


# ---------------------------------------------------------------------------
# A release written piece by piece (an engine's folder of parts)
# ---------------------------------------------------------------------------


def _piece_text(piece: Piece, names: Sequence[str], batch_rows: int) -> pd.DataFrame:
    """One piece of the input, ``names`` only, every value text (``""`` missing)."""
    import pyarrow as pa

    from anonlab.tabletext import text_array

    columns: dict[str, list[pa.Array]] = {name: [] for name in names}
    for batch in piece.batches(list(names), batch_rows):
        for name in names:
            column = batch.column(name)
            if pa.types.is_dictionary(column.type):
                column = column.cast(column.type.value_type)
            columns[name].append(text_array(column).cast(pa.string()))
    return pd.DataFrame(
        {
            name: pd.Series(
                pa.chunked_array(parts, pa.string()).to_pylist() if parts else [],
                dtype=object,
            )
            for name, parts in columns.items()
        }
    )


def check_piece(
    piece: Piece,
    first_row: int,
    folder: str,
    columns: Sequence[str],
    keep: Sequence[str],
    report: Mapping[str, Any],
    batch_rows: int,
) -> tuple[list[str], dict[str, Any]]:
    """The problems of one piece's part (module text), each naming the piece (its record
    numbers count from the piece's first record, record ``first_row + 1`` of the table),
    and PRAM's transitions counted in it."""
    import pyarrow.parquet as pq

    from anonlab.engine.kernels import part_name

    original = _piece_text(piece, keep, batch_rows)
    tally: dict[str, Any] = {}
    part = Path(folder) / part_name(piece.index)
    if not part.exists():
        if len(original):
            return [f"{piece.describe()}: its {len(original)} records have no part"], tally
        return [], tally
    release = pq.read_table(part).to_pandas()
    if list(release.columns) != list(keep):
        problem = f"{piece.describe()}: its part holds columns {list(release.columns)}, not {keep}"
        return [problem], tally
    problems = check_masking(original, release, columns, report, first_row=first_row, tally=tally)
    return [f"{piece.describe()}: {problem}" for problem in problems], tally


def check_masking_pieces(
    engine: EngineBase,
    table: Table,
    folder: Path,
    columns: Sequence[str],
    keep: Sequence[str],
    report: Mapping[str, Any],
    first_rows: Sequence[int],
    *,
    progress: ProgressFn | None = None,
) -> list[str]:
    """The problems of a release written as one Parquet part per piece of ``table`` into
    ``folder`` (module text); ``keep`` are the released columns, ``columns`` the masked,
    ``first_rows`` each piece's first record's position in the table. PRAM's transition
    counts and released marginals are the pieces' added up."""
    parts: list[tuple[list[str], dict[str, Any]]] = engine.map_pieces(
        table,
        _check_piece_at,
        list(first_rows),
        str(folder),
        list(columns),
        list(keep),
        dict(report),
        engine.batch_rows,
        progress=progress,
        step="mask: checking the release",
    )
    problems = [problem for found, _ in parts for problem in found]
    if problems:
        return problems
    if report.get("method") == "noise":
        return _noise_whole([t["noise"] for _, t in parts if "noise" in t], columns, report)
    if report.get("method") != "pram":
        return problems
    total: dict[str, Any] = {}
    for _, tally in parts:
        for name, (counted, released) in tally.items():
            _add_tally(total, name, counted, released)
    for name in columns:
        entry = report["masking"]["columns"][name]
        counted, released = total.get(name, ({}, {}))
        levels = [str(v) for v in entry["levels"]]
        released = {level: released.get(level, 0) for level in levels}
        problems.extend(_pram_compare(name, entry, counted, released))
    return problems


def _check_piece_at(
    piece: Piece,
    first_rows: Sequence[int],
    folder: str,
    columns: Sequence[str],
    keep: Sequence[str],
    report: Mapping[str, Any],
    batch_rows: int,
) -> tuple[list[str], dict[str, Any]]:
    """:func:`check_piece` at the piece's own first record."""
    return check_piece(piece, first_rows[piece.index], folder, columns, keep, report, batch_rows)
