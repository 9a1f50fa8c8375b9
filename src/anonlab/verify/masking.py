"""The independent check of a masking release (``anonlab mask``; docs/masking.md).

Written apart from the masking family (it imports none of it): it reads the
original, the release as written and the run's report, and returns the problems it
finds (none: the release is what the report says):

- every column the run did not mask is released unchanged, value for value;
- ``pram``: every released value is a level of its column (a missing value stays
  missing), every matrix of the report has entries in [0, 1] and rows summing to 1,
  an invariant matrix keeps its stratum's level shares (``p R = p``), the report's
  transition counts and marginals are those of the original and the release; and
  when the report holds the seed, the records' uniforms are drawn again
  (``default_rng([seed, column position, 1])``, one per record) and each record's
  released level must be the first whose cumulative row sum exceeds its uniform;
- ``topbot``: every value above the top limit (below the bottom one) is the
  replacement, every other value its original text;
- ``recode``: the labels are R's ``cut`` labels of the reported breaks (``%.{d}g``
  with the least ``d`` from 8 to 12 that keeps adjacent breaks apart, ``[`` for a
  closed first interval), the breaks rise, and every released value is the label
  of the interval that holds its original value.

A method with no check here gets the first check only (:data:`CHECKS`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

#: how far a matrix row's sum may be from 1
TOLERANCE = 1e-9


def _text(column: pd.Series) -> NDArray[np.object_]:
    values = column.to_numpy(dtype=object)
    return np.asarray(["" if v is None or pd.isna(v) else str(v) for v in values], dtype=object)


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
) -> list[str]:
    """The problems of ``release`` against ``original`` and the run's ``report`` (module
    text); ``columns`` are the masked ones."""
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
    if check is not None:
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


def _check_pram(
    original: pd.DataFrame, release: pd.DataFrame, columns: list[str], report: Mapping[str, Any]
) -> list[str]:
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
        problems.extend(_pram_counts(name, entry, levels, a, b))
        stratum_of = np.asarray([list(matrices).index(k) if k in matrices else -1 for k in keys])
        if np.any(stratum_of < 0):
            problems.append(f"pram: column '{name}': a stratum of the data has no matrix")
            continue
        if entry.get("matrix_source") == "invariant":
            problems.extend(_invariance(name, matrices, stratum_of, a, len(levels)))
        if seed is not None:
            problems.extend(
                _redrawn(
                    name, int(seed), position, list(matrices.values()), stratum_of, a, b, levels
                )
            )
    return problems


def _redrawn(
    name: str,
    seed: int,
    position: int,
    stack: list[NDArray[np.float64]],
    stratum_of: NDArray[np.int64],
    a: NDArray[np.int64],
    b: NDArray[np.int64],
    levels: list[str],
) -> list[str]:
    """Each record's level drawn again from the seed's uniforms and its stratum's matrix."""
    u = np.random.default_rng([seed, position, 1]).random(len(a))
    for r in range(len(a)):
        if a[r] < 0:
            continue
        row = np.cumsum(stack[stratum_of[r]][a[r]])
        expected = min(int(np.searchsorted(row, u[r], side="right")), len(levels) - 1)
        if expected != b[r]:
            return [
                f"pram: column '{name}' record {r + 1} is '{levels[b[r]]}', the seed's draw "
                f"gives '{levels[expected]}'"
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


def _pram_counts(
    name: str,
    entry: Mapping[str, Any],
    levels: list[str],
    a: NDArray[np.int64],
    b: NDArray[np.int64],
) -> list[str]:
    """The report's transition counts and marginals against the original and release."""
    present = a >= 0
    counted: dict[tuple[str, str], int] = {}
    for i, j in zip(a[present], b[present], strict=True):
        counted[(levels[i], levels[j])] = counted.get((levels[i], levels[j]), 0) + 1
    reported = {(t["from"], t["to"]): int(t["count"]) for t in entry["transitions"]}
    if reported != counted:
        return [f"pram: column '{name}': the report's transition counts are not the release's"]
    released = {lv: 0 for lv in levels}
    for j in b[present]:
        released[levels[j]] += 1
    if dict(entry["marginals"]["released"]) != released:
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
