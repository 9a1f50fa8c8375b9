"""Independent check of a cell-suppression release (``anonlab suppress``).

Written apart from :mod:`anonlab.suppression` (it imports none of it): it reads the
original and the released tables as text and checks that

- both hold the same number of records, and every released column that is not a
  key equals its original;
- every key cell the release holds equals its original (a suppression only blanks);
- every combination of keys the run had to protect is k-anonymous in every stratum,
  counting frequencies as sdcMicro's ``freqCalc`` does with its ``alpha``
  (docs/suppression.md, "Blanks": two records match when they agree wherever both
  have a value; a record with blanks counts ``alpha`` towards another, except that
  records without a blank count 1 towards one with blanks, a record of blanks only
  counts 0 towards one without, and a record of blanks only has the stratum's size);
- the blanked cells per key are as many as reported.

The frequencies are counted per pair of blank classes (the sets of blank keys) by
matching the distinct released key tuples on the keys both classes hold (sorted keys
and binary search).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

#: at most this many problems are listed
MAX_PROBLEMS = 20


def _text(column: pd.Series) -> pd.Series:
    """A column as text, missing values as ``None``; a number that is whole as an integer
    (``3.0`` and ``3`` read from two files are the same value). Each distinct value is
    turned into text once when the column holds numbers or text alone (their distinct
    values are told apart by equality); other columns (a mix of booleans and numbers, whose
    ``True`` equals ``1``) value by value."""
    kind = pd.api.types.infer_dtype(column, skipna=True)
    if kind in ("string", "empty", "integer", "floating", "mixed-integer-float", "boolean"):
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        texts = np.array([*(_one_text(v) for v in uniques), None], dtype=object)
        return pd.Series(texts[codes], index=column.index, dtype=object)  # -1: missing
    return pd.Series([_one_text(v) for v in column.tolist()], index=column.index, dtype=object)


def _one_text(value: Any) -> Any:
    """One value as :func:`_text` writes it."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, np.integer):
        return str(int(value))
    text = str(value)
    return None if text == "" else text


def frequencies(
    keys: pd.DataFrame, alpha: float, strata: pd.Series | None = None
) -> np.ndarray[Any, Any]:
    """Each record's frequency under sdcMicro's blank rule (module text), per stratum."""
    n = len(keys)
    out = np.zeros(n, dtype=np.float64)
    if n == 0:
        return out
    groups = (
        [np.arange(n)]
        if strata is None
        else [np.asarray(ix) for ix in strata.groupby(strata, dropna=False).indices.values()]
    )
    for rows in groups:
        out[rows] = _stratum_frequencies(keys.iloc[rows].reset_index(drop=True), alpha)
    return out


def _stratum_frequencies(keys: pd.DataFrame, alpha: float) -> np.ndarray[Any, Any]:
    """The frequencies of one stratum's records: its distinct tuples (text, ``None`` a
    blank) numbered column by column, then for each pair of blank classes the tuples'
    numbers on the keys both classes hold, as one integer each, matched by sorting."""
    n, m = keys.shape
    codes = np.empty((n, m), dtype=np.int64)
    for j in range(m):
        column = keys.iloc[:, j]
        numbers, _ = pd.factorize(column, use_na_sentinel=True)
        codes[:, j] = numbers
    tuples, inverse, sizes = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    blank = tuples < 0
    classes = blank @ (1 << np.arange(m, dtype=np.int64))
    radix = codes.max(axis=0) + 2 if n else np.ones(m, dtype=np.int64)
    total = float(n)
    every = (1 << m) - 1
    fk = np.zeros(len(tuples), dtype=np.float64)
    members = {int(c): np.flatnonzero(classes == c) for c in np.unique(classes)}
    for a, queries in members.items():
        if a == every:
            fk[queries] = total
            continue
        for b, others in members.items():
            if a == 0:
                weight = 1.0 if b == 0 else (0.0 if b == every else alpha)
            else:
                weight = 1.0 if b == 0 else alpha
            if weight == 0.0:
                continue
            on = [j for j in range(m) if not (a | b) >> j & 1]
            fk[queries] += weight * _summed_matches(tuples, sizes, queries, others, on, radix)
        if a != 0:  # the tuple's own records counted alpha above; they count 1
            fk[queries] += (1.0 - alpha) * sizes[queries]
    out: np.ndarray[Any, Any] = fk[inverse]
    return out


def _summed_matches(
    tuples: np.ndarray[Any, Any],
    sizes: np.ndarray[Any, Any],
    queries: np.ndarray[Any, Any],
    others: np.ndarray[Any, Any],
    on: list[int],
    radix: np.ndarray[Any, Any],
) -> np.ndarray[Any, Any]:
    """For each query tuple, the records of the ``others`` tuples equal to it on ``on``."""
    if not on:
        return np.full(queries.size, float(sizes[others].sum()))
    key_q = np.zeros(queries.size, dtype=object if _too_wide(radix, on) else np.int64)
    key_o = np.zeros(others.size, dtype=key_q.dtype)
    for j in on:
        key_q = key_q * int(radix[j]) + tuples[queries, j]
        key_o = key_o * int(radix[j]) + tuples[others, j]
    order = np.argsort(key_o, kind="stable")
    sorted_keys = key_o[order]
    cumulative = np.concatenate([[0.0], np.cumsum(sizes[others][order].astype(np.float64))])
    left = np.searchsorted(sorted_keys, key_q, side="left")
    right = np.searchsorted(sorted_keys, key_q, side="right")
    out: np.ndarray[Any, Any] = cumulative[right] - cumulative[left]
    return out


def _too_wide(radix: np.ndarray[Any, Any], on: list[int]) -> bool:
    """Whether the keys' product overflows int64 (then Python integers are used)."""
    space = 1
    for j in on:
        space *= int(radix[j])
    return space >= 2**62


def check_suppression(
    original: pd.DataFrame,
    release: pd.DataFrame,
    keys: Sequence[str],
    k: int,
    *,
    combs: Sequence[Sequence[int]] | None = None,
    strata: Sequence[str] = (),
    alpha: float = 1.0,
    suppressed: Mapping[str, int] | None = None,
    dropped: Sequence[str] = (),
) -> list[str]:
    """The problems of ``release`` as a suppression of ``original`` (module text); empty
    when it passes. ``combs`` lists ``(size, k)`` pairs (default: all keys with ``k``);
    ``dropped`` columns of the original are not expected in the release."""
    problems = _shape_problems(original, release, dropped)
    if problems:
        return problems
    texts: dict[str, pd.Series] = {}
    for col in release.columns:
        before, after = _text(original[col]), _text(release[col])
        texts[col] = after
        if col in keys:
            problems.extend(_key_problems(str(col), before, after, suppressed))
        else:
            differs = (before.fillna("\x00") != after.fillna("\x00")).to_numpy()
            if differs.any():
                row = int(np.flatnonzero(differs)[0])
                problems.append(f"column {col}, record {row}: not a key, yet changed")
    if problems:
        return problems[:MAX_PROBLEMS]
    stratum = None
    if strata:
        parts = [_text(release[s]).fillna("") for s in strata]
        stratum = pd.Series(["\x1f".join(row) for row in zip(*parts, strict=True)])
    pairs = [(len(keys), k)] if not combs else [(int(s), int(kk)) for s, kk in combs]
    for size, kk in pairs:
        for combination in itertools.combinations(list(keys), size):
            part = pd.DataFrame({c: texts[c] for c in combination})
            fk = frequencies(part, alpha, stratum)
            low = np.flatnonzero(fk < kk - 1e-9)
            if low.size:
                row = int(low[0])
                problems.append(
                    f"keys {', '.join(combination)}: record {row} has frequency "
                    f"{fk[row]:g} < k = {kk} ({low.size} records below k)"
                )
                if len(problems) >= MAX_PROBLEMS:
                    return problems
    return problems


def _shape_problems(
    original: pd.DataFrame, release: pd.DataFrame, dropped: Sequence[str]
) -> list[str]:
    """Records and columns: the same, but for the dropped columns."""
    if len(original) != len(release):
        return [f"the release holds {len(release)} records, the original {len(original)}"]
    problems = []
    absent = [str(c) for c in original.columns if c not in release.columns and c not in dropped]
    if absent:
        problems.append(f"the release lacks column(s) {', '.join(absent)}")
    extra = [str(c) for c in release.columns if c not in original.columns]
    if extra:
        problems.append(f"the release has column(s) not in the original: {', '.join(extra)}")
    return problems


def _key_problems(
    col: str, before: pd.Series, after: pd.Series, suppressed: Mapping[str, int] | None
) -> list[str]:
    """A key column: every released value its original, the blanks as many as reported."""
    problems = []
    wrong = after.notna() & ((after != before) | before.isna())
    if wrong.any():
        row = int(np.flatnonzero(wrong.to_numpy())[0])
        problems.append(
            f"key {col}, record {row}: released {after.iloc[row]!r}, original "
            f"{before.iloc[row]!r} (a suppression only blanks)"
        )
    if suppressed is not None:
        blanked = int((after.isna() & before.notna()).sum())
        if blanked != int(suppressed.get(col, -1)):
            problems.append(
                f"key {col}: {blanked} cells blanked, the report says {suppressed.get(col)}"
            )
    return problems
