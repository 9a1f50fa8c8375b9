"""Cell suppression of a table: sdcMicro's ``localSuppression``/``kAnon`` on frequency sets.

:func:`suppress` encodes the key columns (a missing value is a blank from the start),
groups the records into their distinct (stratum, key tuple) groups, and runs
:func:`~anonlab.suppression.local.suppress_block` per stratum for each combination
of keys that must be k-anonymous: all keys, or with ``combs`` every combination of
each size given, each with its own k (sdcMicro's ``combs`` and ``k`` vectors). A
blank made for one combination can lower another's frequencies (with ``alpha < 1``,
or when a record's cells of a combination become all blank), so the combinations are
run again, round after round, until a whole round blanks nothing: every combination
is then k-anonymous at once, which sdcMicro's one pass does not ensure (sdcMicro#352).
Each round only adds blanks, so the rounds end.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.grouping import group_tuples
from anonlab.suppression.local import restore_across, suppress_block
from anonlab.suppression.patterns import pattern_kinds, wildcard_frequencies

#: sdcMicro's default ``alpha``: a blank matches every value and counts fully
DEFAULT_ALPHA = 1.0


@dataclass
class Requirement:
    """One combination of keys (column positions) that must be ``k``-anonymous."""

    keys: tuple[int, ...]
    k: int


@dataclass
class SuppressionResult:
    """A suppression's release and what was done to it."""

    release: pd.DataFrame
    keys: list[str]
    k: int
    combs: list[tuple[int, int]] | None
    alpha: float
    importance: dict[str, int]
    strata: list[str]
    suppressed: dict[str, int]
    blank_before: dict[str, int]
    records_touched: int
    rounds: int
    combinations: list[dict[str, Any]] = field(default_factory=list)
    #: records of the table (``None``: those of ``release``; an engine run holds no rows)
    records: int | None = None

    @property
    def cells_suppressed(self) -> int:
        """Cells blanked by the method (missing values of the input not counted)."""
        return sum(self.suppressed.values())

    def summary(self) -> dict[str, Any]:
        """The report's suppression keys."""
        return {
            "method": "local suppression (sdcMicro localSuppression/kAnon semantics)",
            "keys": self.keys,
            "k": self.k,
            "combs": None if self.combs is None else [list(c) for c in self.combs],
            "alpha": self.alpha,
            "importance": self.importance,
            "strata": self.strata,
            "records": len(self.release) if self.records is None else self.records,
            "cells_suppressed": self.cells_suppressed,
            "suppressed_per_key": self.suppressed,
            "blank_before_per_key": self.blank_before,
            "records_touched": self.records_touched,
            "rounds": self.rounds,
            "combinations": self.combinations,
        }


def default_importance(codes: NDArray[Any], keys: Sequence[str]) -> dict[str, int]:
    """sdcMicro's default importance: keys ranked by their number of distinct values, fewest
    first (rank 1, blanked last); ties in the keys' order."""
    distinct = [int(np.unique(codes[:, j][codes[:, j] >= 0]).size) for j in range(len(keys))]
    order = sorted(range(len(keys)), key=lambda j: distinct[j])
    ranks = {keys[j]: position + 1 for position, j in enumerate(order)}
    return {key: ranks[key] for key in keys}


def protection(importance: Mapping[str, int], keys: Sequence[str]) -> list[int]:
    """Each key's protection (0 = blanked first): by importance rank, the highest rank
    blanked first, ties blanked in the keys' order (sdcMicro's column order)."""
    first = sorted(range(len(keys)), key=lambda j: (-importance[keys[j]], j))
    out = [0] * len(keys)
    for position, j in enumerate(first):
        out[j] = position
    return out


def _check_importance(importance: Mapping[str, int], keys: Sequence[str]) -> dict[str, int]:
    missing = [key for key in keys if key not in importance]
    extra = [name for name in importance if name not in keys]
    if extra:
        raise AnonlabError(
            f"importance names {', '.join(extra)}, not a key: give KEY=RANK for the keys "
            f"{', '.join(keys)}",
            parameter="importance",
        )
    if missing:
        raise AnonlabError(
            f"importance gives no rank for {', '.join(missing)}: give every key a rank "
            f"(1 = blanked last) or none",
            parameter="importance",
        )
    bad = [f"{key}={rank}" for key, rank in importance.items() if not 1 <= rank <= len(keys)]
    if bad:
        raise AnonlabError(
            f"importance {', '.join(bad)} out of range: ranks are 1..{len(keys)} "
            "(1 = blanked last)",
            parameter="importance",
        )
    return {key: int(importance[key]) for key in keys}


def key_ranks(
    importance: Mapping[str, int] | None, codes: NDArray[Any], keys: Sequence[str]
) -> dict[str, int]:
    """Each key's importance rank: those given (checked), else sdcMicro's default from the
    key codes ``codes`` (rows of the table or its distinct groups: the same values)."""
    if importance is None:
        return default_importance(codes, keys)
    return _check_importance(importance, keys)


def requirements(m: int, k: int, combs: Sequence[tuple[int, int]] | None) -> list[Requirement]:
    """The combinations to make k-anonymous: all ``m`` keys, or each size of ``combs`` (each
    ``(size, k)``, in the order given) with every combination of that many keys."""
    if not combs:
        return [Requirement(tuple(range(m)), k)]
    out: list[Requirement] = []
    for size, kk in combs:
        if not 1 <= size <= m:
            raise AnonlabError(
                f"combs size {size} out of range: give sizes 1..{m} (the number of keys)",
                parameter="combs",
            )
        if kk < 1:
            raise AnonlabError(f"combs k {kk} must be at least 1", parameter="combs")
        out.extend(Requirement(c, kk) for c in itertools.combinations(range(m), size))
    return out


def encode_keys(frame: pd.DataFrame, keys: Sequence[str]) -> tuple[NDArray[np.int64], list[Any]]:
    """The key columns as codes (-1 for a missing value or an empty text, which is how the
    one reader gives a missing cell) and each column's values."""
    codes = np.empty((len(frame), len(keys)), dtype=np.int64)
    uniques: list[Any] = []
    for j, key in enumerate(keys):
        c, u = pd.factorize(frame[key], use_na_sentinel=True)
        empty = [i for i, value in enumerate(u) if isinstance(value, str) and value == ""]
        if empty:
            c = np.where(c == empty[0], -1, c)
        codes[:, j] = c
        uniques.append(u)
    return codes, uniques


def suppress(
    table: Any,
    qi: Sequence[str],
    k: int = 2,
    *,
    importance: Mapping[str, int] | None = None,
    combs: Sequence[tuple[int, int]] | Sequence[int] | None = None,
    strata: Sequence[str] | str | None = None,
    alpha: float = DEFAULT_ALPHA,
) -> SuppressionResult:
    """Blank single key cells of ``table`` until every combination of ``qi`` is k-anonymous.

    ``table`` is a DataFrame or anything :func:`anonlab.io.read_table` reads;
    ``importance`` maps every key to a rank 1..n (1 = blanked last; default sdcMicro's:
    the fewer distinct values, the more important); ``combs`` lists combination sizes,
    each ``size`` or ``(size, k)`` (default: all keys together); ``strata`` columns make
    each stratum k-anonymous on its own; ``alpha`` in [0, 1] weights the records with
    blanks when frequencies are counted (1: a blank matches every value; module
    :mod:`anonlab.suppression.patterns`). Returns the release (blanks as missing values)
    and its figures (:meth:`SuppressionResult.summary`).
    """
    if not isinstance(table, pd.DataFrame):
        from anonlab.io import read_table

        table = read_table(table)
    keys, strata_cols, pairs, needs = checked_parameters(
        [str(c) for c in table.columns], qi, k, combs, strata, alpha
    )
    codes, _ = encode_keys(table, keys)
    ranks = key_ranks(importance, codes, keys)
    priority = protection(ranks, keys)
    strata_codes = _strata_codes(table, strata_cols)
    released, rounds, reached = _suppress_codes(codes, strata_codes, needs, priority, alpha)
    release = _release_frame(table, keys, codes, released)
    new = (released < 0) & (codes >= 0)
    combinations = [
        {"keys": [keys[j] for j in need.keys], "k": need.k, "smallest_frequency": low}
        for need, low in zip(needs, reached, strict=True)
    ]
    return SuppressionResult(
        release=release,
        keys=keys,
        k=k,
        combs=pairs,
        alpha=alpha,
        importance=ranks,
        strata=strata_cols,
        suppressed={key: int(new[:, j].sum()) for j, key in enumerate(keys)},
        blank_before={key: int((codes[:, j] < 0).sum()) for j, key in enumerate(keys)},
        records_touched=int(new.any(axis=1).sum()),
        rounds=rounds,
        combinations=combinations,
    )


def checked_parameters(
    columns: Sequence[str],
    qi: Sequence[str],
    k: int,
    combs: Sequence[tuple[int, int]] | Sequence[int] | None,
    strata: Sequence[str] | str | None,
    alpha: float,
) -> tuple[list[str], list[str], list[tuple[int, int]] | None, list[Requirement]]:
    """The keys, the strata columns, the ``(size, k)`` pairs of ``combs`` and the
    requirements of a suppression of a table with ``columns``; a bad parameter is one line."""
    keys = [str(q) for q in qi]
    strata_cols = [strata] if isinstance(strata, str) else [str(s) for s in (strata or [])]
    _check_columns(columns, keys, strata_cols)
    if not 0.0 <= alpha <= 1.0:
        raise AnonlabError(f"alpha {alpha} must be between 0 and 1", parameter="alpha")
    if k < 1:
        raise AnonlabError(f"k {k} must be at least 1", parameter="k")
    pairs = None if combs is None else [_pair(c, k) for c in combs]
    return keys, strata_cols, pairs, requirements(len(keys), k, pairs)


def _pair(item: Any, k: int) -> tuple[int, int]:
    if isinstance(item, tuple | list):
        size, kk = item
        return int(size), int(kk)
    return int(item), k


def _check_columns(columns: Sequence[str], keys: list[str], strata: list[str]) -> None:
    if not keys:
        raise AnonlabError("qi is empty: give at least one key", parameter="qi")
    absent = [c for c in [*keys, *strata] if c not in columns]
    if absent:
        raise AnonlabError(
            f"no column {', '.join(absent)} in the table (it has {', '.join(columns)})",
            parameter="qi",
        )
    if len(set(keys)) != len(keys):
        raise AnonlabError("a key is named twice in qi", parameter="qi")
    both = [c for c in strata if c in keys]
    if both:
        raise AnonlabError(
            f"{', '.join(both)} is both a key and a stratum: a stratum column is not suppressed",
            parameter="strata",
        )


def _strata_codes(table: pd.DataFrame, strata: list[str]) -> NDArray[np.int64]:
    if not strata:
        return np.zeros(len(table), dtype=np.int64)
    parts = np.empty((len(table), len(strata)), dtype=np.int64)
    for j, col in enumerate(strata):
        # a missing value and an empty text are one stratum (the one reader's missing cell)
        column = table[col].astype(object).where(table[col].notna(), "")
        parts[:, j] = pd.factorize(column, use_na_sentinel=False)[0]
    cards = [int(parts[:, j].max()) + 1 if len(table) else 1 for j in range(len(strata))]
    inverse, _ = group_tuples(parts, cards)
    return inverse.astype(np.int64)


def _suppress_codes(
    codes: NDArray[np.int64],
    strata: NDArray[np.int64],
    needs: list[Requirement],
    priority: list[int],
    alpha: float,
) -> tuple[NDArray[np.int64], int, list[float | None]]:
    """Released codes per record, the rounds run and each requirement's smallest frequency:
    the records grouped into their distinct (stratum, key tuple) groups in order of first
    appearance, then :func:`suppress_groups`."""
    n, m = codes.shape
    if n == 0:
        return codes.copy(), 0, [None] * len(needs)
    both = np.concatenate([strata[:, None], codes + 1], axis=1)
    cards = [int(both[:, j].max()) + 1 for j in range(m + 1)]
    inverse, firsts = group_tuples(both, cards)
    counts = np.bincount(inverse, minlength=firsts.size).astype(np.float64)
    released, rounds, reached = suppress_groups(
        codes[firsts], counts, strata[firsts], needs, priority, alpha
    )
    return released[inverse], rounds, reached


def suppress_groups(
    group_codes: NDArray[np.int64],
    counts: NDArray[np.float64],
    group_stratum: NDArray[np.int64],
    needs: list[Requirement],
    priority: list[int],
    alpha: float,
) -> tuple[NDArray[np.int64], int, list[float | None]]:
    """The method on a frequency set: each group's released codes, the rounds run and each
    requirement's smallest frequency.

    ``group_codes`` (groups x keys, -1 blank) are the distinct (stratum, key tuple) groups of
    the table in order of their first record, the key codes numbered by first appearance
    (missing values -1); ``counts`` their records and ``group_stratum`` their stratum. All
    records of a group are treated alike and the result depends on nothing but these arrays
    (the order of the groups breaks ties), so an engine that counts the same groups in the
    same order gets the release the in-memory run gets (docs/suppression.md, "Engines").
    """
    group_codes = np.array(group_codes, dtype=np.int64, copy=True)
    counts = np.asarray(counts, dtype=np.float64)
    if group_codes.shape[0] == 0:
        return group_codes, 0, [None] * len(needs)
    largest_k = max(need.k for need in needs)
    rounds = 0
    reached: list[float | None] = [None] * len(needs)
    for stratum in np.unique(group_stratum):
        members = np.flatnonzero(group_stratum == stratum)
        size = float(counts[members].sum())
        if size < largest_k:
            raise AnonlabError(
                f"a stratum holds {int(size)} records, fewer than k = {largest_k}: no "
                "suppression makes it k-anonymous (merge strata or lower k)",
                parameter="k",
            )
        block = group_codes[members]
        block_counts = counts[members]
        rounds = max(rounds, _fixpoint(block, block_counts, needs, priority, alpha))
        group_codes[members] = block
        for i, need in enumerate(needs):
            cols = list(need.keys)
            low = float(wildcard_frequencies(*_distinct(block[:, cols], block_counts), alpha).min())
            reached[i] = low if reached[i] is None else min(low, reached[i])  # type: ignore[type-var]
    return group_codes, rounds, reached


def _distinct(
    rows: NDArray[np.int64], counts: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
    totals = np.bincount(inverse.ravel(), weights=counts, minlength=uniq.shape[0])
    return uniq, totals.astype(np.float64)


def _fixpoint(
    block: NDArray[np.int64],
    counts: NDArray[np.float64],
    needs: list[Requirement],
    priority: list[int],
    alpha: float,
) -> int:
    """Run every requirement on ``block`` (in place) until a round changes nothing."""
    start = block.copy()
    rounds = 0
    while True:
        rounds += 1
        changed = False
        for need in needs:
            cols = list(need.keys)
            sub = block[:, cols]
            ranks = np.argsort(np.argsort([priority[j] for j in cols])).tolist()
            new = suppress_block(sub, counts, float(need.k), alpha, ranks, original=sub)
            if not np.array_equal(new, sub):
                block[:, cols] = new
                changed = True
        if len(needs) == 1:
            return rounds
        if not changed:
            break
    # a cell blanked for one combination may have been made needless by a later one
    pairs = [(need.keys, float(need.k)) for need in needs]
    restore_across(block, start, counts, pairs, alpha, priority)
    return rounds


def _release_frame(
    table: pd.DataFrame, keys: list[str], codes: NDArray[np.int64], released: NDArray[np.int64]
) -> pd.DataFrame:
    """``table`` with the new blanks as missing values (integer keys stay integers)."""
    out = table.copy()
    for j, key in enumerate(keys):
        blank = (released[:, j] < 0) & (codes[:, j] >= 0)
        if not blank.any():
            continue
        column = out[key]
        if pd.api.types.is_integer_dtype(column.dtype) and not isinstance(
            column.dtype, pd.CategoricalDtype
        ):
            column = column.astype("Int64")
        elif pd.api.types.is_bool_dtype(column.dtype):
            column = column.astype("boolean")
        out[key] = column.mask(blank)
    return out


__all__ = ["SuppressionResult", "pattern_kinds", "suppress"]
