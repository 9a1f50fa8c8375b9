"""MDAV on records mixing numeric, nominal and ordinal attributes (the paper's Adult run).

One record distance over all types (NOTES §2; Domingo-Ferrer and Torra 2005):

    d(x, y)^2 = sum_numeric ((x_j - y_j) / S_j)^2
              + sum_nominal [x_j != y_j]
              + sum_ordinal o_j(x_j, y_j)^2

with numeric attributes standardized (population S_j), nominal attributes
compared 0/1 and the ordinal distance o_j(c, c') = |{c'' : min(c, c') <= c''
<= max(c, c')}| / |D_j| (the domain values between the two, inclusive, over
the domain size D_j) for c != c' and 0 for c = c' (a distance must vanish on
equal values; see docs/em4adom.md).

The centroid of a set of records is its numeric mean, the mode of each
nominal attribute (ties: the first value in the domain's order) and the lower
median of each ordinal attribute. Groups are aggregated the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.microaggregation.columns import check_present
from anonlab.microaggregation.mdav import TIE_TOL


@dataclass(frozen=True)
class CategoricalColumn:
    """A nominal or ordinal column as integer codes into its ordered domain."""

    name: str
    codes: np.ndarray  # (n,) int64
    domain: tuple[str, ...]  # code -> value (ordinal: in order)
    ordinal: bool

    @property
    def size(self) -> int:
        """|D_j|: the number of distinct values."""
        return len(self.domain)


def _natural_order(values: Sequence[str]) -> list[str]:
    """Values sorted as numbers when they all are finite numbers, else as text."""
    numbers = [_as_number(v) for v in values]
    if all(v is not None for v in numbers):
        return sorted(values, key=float)
    return sorted(values)


def category_text(series: pd.Series) -> pd.Series:
    """A categorical column as stripped text; a missing value (null, NaN) is '' (as in CSV)."""
    text = series.astype(object).where(series.notna().to_numpy(), "")
    return text.astype(str).str.strip()


def _check_present_values(text: pd.Series, name: str, what: str) -> None:
    """Refuse a missing value in an ordinal column: it has no place in an order."""
    missing = np.flatnonzero((text == "").to_numpy())
    if missing.size:
        raise AnonlabError(
            f"ordinal column '{name}' of the {what} has a missing value at row "
            f"{missing[0] + 1}: fill it or drop the row"
        )


def _check_orderable(text: pd.Series, name: str, what: str) -> None:
    """Refuse what a natural order cannot place: numbers mixed with text."""
    present = [str(v) for v in pd.unique(text)]
    words = [v for v in present if _as_number(v) is None]
    if words and len(words) < len(present):
        row = int(np.flatnonzero(text.isin(words).to_numpy())[0])
        raise AnonlabError(
            f"ordinal column '{name}' of the {what} mixes numbers and text "
            f"('{text.iloc[row]}' at row {row + 1}): give its order with --order {name}=v1,v2,..."
        )


def encode_categorical(
    frame: pd.DataFrame,
    name: str,
    ordinal: bool,
    order: Sequence[str] | None = None,
    what: str = "table",
) -> CategoricalColumn:
    """Codes of a categorical column; an ordinal domain follows ``order`` or natural order."""
    check_present(frame, [name], what)
    text = category_text(frame[name])
    if ordinal:
        _check_present_values(text, name, what)
    present = [str(v) for v in pd.unique(text)]
    if order is not None:
        domain = [str(v).strip() for v in order]
        twice = [v for i, v in enumerate(domain) if v in domain[:i]]
        if twice:
            raise AnonlabError(
                f"value '{twice[0]}' is named twice in the order of ordinal column '{name}': "
                "list each value once"
            )
        missing = sorted(set(present) - set(domain))
        if missing:
            raise AnonlabError(
                f"value '{missing[0]}' of ordinal column '{name}' is not in its order: "
                "list every value"
            )
    elif ordinal:
        _check_orderable(text, name, what)
        domain = _natural_order(present)
    else:
        domain = sorted(present)
    lookup = {v: i for i, v in enumerate(domain)}
    codes = text.map(lookup).to_numpy(dtype=np.int64)
    return CategoricalColumn(name, codes, tuple(domain), ordinal)


def encode_all(
    frame: pd.DataFrame,
    nominal: Sequence[str],
    ordinal: Sequence[str],
    orders: Mapping[str, Sequence[str]] | None = None,
    what: str = "table",
) -> list[CategoricalColumn]:
    """Nominal then ordinal columns, encoded."""
    orders = orders or {}
    stray = [c for c in orders if c not in set(ordinal)]
    if stray:
        raise AnonlabError(f"--order names column '{stray[0]}', which is not an --ordinal "
                           "column: list it with --ordinal or drop its order")
    out = [encode_categorical(frame, c, False, None, what) for c in nominal]
    out += [encode_categorical(frame, c, True, orders.get(c), what) for c in ordinal]
    return out


def encode_like(
    original: CategoricalColumn, frame: pd.DataFrame, what: str = "masked table"
) -> CategoricalColumn:
    """Encode the same column of another (masked) table with the original's domain.

    A value spelling the same number as a value of the original (``13.0``
    for ``13``, as a float column is written) takes that value's code. A
    nominal value the original never had (e.g. another tool's ``*``) is
    appended to the domain; an ordinal one cannot be placed in the order and is
    refused. Ordinal distances keep the original's domain size |D_j|.
    """
    check_present(frame, [original.name], what)
    text = category_text(frame[original.name])
    lookup = {v: i for i, v in enumerate(original.domain)}
    by_number = _numeric_lookup(original.domain)
    for v in set(pd.unique(text)) - set(lookup):
        number = _as_number(v)
        if number is not None and number in by_number:  # e.g. 13.0 written for 13
            lookup[v] = by_number[number]
    extra = sorted(set(pd.unique(text)) - set(lookup))
    if extra and original.ordinal:
        raise AnonlabError(
            f"value '{extra[0]}' of ordinal column '{original.name}' in the {what} is not "
            "a value of the original: an ordinal value must come from its domain"
        )
    domain = (*original.domain, *extra)
    for i, v in enumerate(extra):
        lookup[v] = len(original.domain) + i
    codes = text.map(lookup).to_numpy(dtype=np.int64)
    return CategoricalColumn(original.name, codes, domain, original.ordinal)


def _as_number(value: str) -> float | None:
    """The finite number a category's text spells, or None."""
    try:
        number = float(value)
    except ValueError:
        return None
    return number if np.isfinite(number) else None


def _numeric_lookup(domain: Sequence[str]) -> dict[float, int]:
    """Code of each domain value that spells a number, keyed by that number (first wins)."""
    out: dict[float, int] = {}
    for i, v in enumerate(domain):
        number = _as_number(v)
        if number is not None:
            out.setdefault(number, i)
    return out


def ordinal_distance_table(size: int) -> np.ndarray:
    """o(c, c') for all code pairs of a domain of ``size`` ordered values (0 on the diagonal)."""
    i = np.arange(size)
    table = (np.abs(i[:, None] - i[None, :]) + 1) / size
    np.fill_diagonal(table, 0.0)
    return np.asarray(table)


def category_distance(col: CategoricalColumn, a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """Per-record distance of codes ``a`` to codes ``b``: 0/1 (nominal) or o_j (ordinal)."""
    if col.ordinal:
        return np.asarray((np.abs(a - b) + 1) / col.size * (a != b))
    return np.asarray((a != b).astype(np.float64))


def mode_code(counts: np.ndarray) -> int:
    """The most frequent code (the lowest code among ties)."""
    return int(np.argmax(counts))


def lower_median_code(counts: np.ndarray) -> int:
    """The lower median code of a frequency vector over ordered codes."""
    total = int(counts.sum())
    return int(np.searchsorted(np.cumsum(counts), (total + 1) // 2))


class MixedSpace:
    """Working set of mixed records for :func:`anonlab.microaggregation.mdav.mdav_partition`."""

    def __init__(self, z: np.ndarray, cats: Sequence[CategoricalColumn]) -> None:
        n = z.shape[0] if z.size else (cats[0].codes.size if cats else 0)
        self.z = np.asarray(z, dtype=np.float64).reshape(n, -1)
        self.cats = list(cats)
        self.codes = (np.stack([c.codes for c in cats], axis=1) if cats
                      else np.zeros((n, 0), dtype=np.int64))
        self.ids = np.arange(n)
        self.alive = np.ones(n, dtype=bool)
        self.total = self.z.sum(axis=0)
        self.count = n
        self.counts = [np.bincount(c.codes, minlength=c.size) for c in cats]
        sq = np.einsum("ij,ij->i", self.z, self.z)
        self.tol = TIE_TOL * (1.0 + (float(sq.max()) if n else 0.0) + len(self.cats))

    def _distance(self, num: np.ndarray, codes: Sequence[int]) -> np.ndarray:
        diff = self.z - num
        d = np.einsum("ij,ij->i", diff, diff)
        for j, col in enumerate(self.cats):
            part = category_distance(col, self.codes[:, j], codes[j])
            d += part * part
        return np.asarray(d)

    def _centroid(self) -> tuple[np.ndarray, list[int]]:
        num = self.total / self.count
        codes = [lower_median_code(cnt) if col.ordinal else mode_code(cnt)
                 for col, cnt in zip(self.cats, self.counts, strict=True)]
        return num, codes

    def far_from_centroid(self) -> np.ndarray:
        num, codes = self._centroid()
        return np.where(self.alive, self._distance(num, codes), -np.inf)

    def from_row(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        d = self._distance(self.z[i], [int(v) for v in self.codes[i]])
        return np.where(self.alive, d, -np.inf), np.where(self.alive, d, np.inf)

    def near_row(self, i: int) -> np.ndarray:
        return self.from_row(i)[1]

    def remove(self, rows: np.ndarray) -> None:
        self.alive[rows] = False
        self.count -= rows.size
        self.total = self.total - self.z[rows].sum(axis=0)
        for j, col in enumerate(self.cats):
            self.counts[j] = self.counts[j] - np.bincount(self.codes[rows, j],
                                                          minlength=col.size)

    def compact(self) -> None:
        keep = self.alive
        self.z = self.z[keep]
        self.codes = self.codes[keep]
        self.ids = self.ids[keep]
        self.alive = np.ones(self.z.shape[0], dtype=bool)
        self.total = self.z.sum(axis=0)


def group_modes(codes: np.ndarray, labels: np.ndarray, size: int) -> np.ndarray:
    """Each record's group mode code (ties: lowest code), vectorized over groups."""
    groups = int(labels.max()) + 1
    table = np.bincount(labels * size + codes, minlength=groups * size).reshape(groups, size)
    return np.asarray(np.argmax(table, axis=1)[labels])


def group_lower_medians(codes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Each record's group lower-median code, vectorized over groups."""
    order = np.lexsort((codes, labels))
    sizes = np.bincount(labels)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    med = codes[order][starts + (sizes - 1) // 2]
    return np.asarray(med[labels])
