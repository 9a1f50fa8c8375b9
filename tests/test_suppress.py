"""Cell suppression (issue 24): random tables against a brute-force count, the checker
against tampered releases, the figures of a report."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.suppression import suppress
from anonlab.suppression.local import subset_order, suppress_block
from anonlab.suppression.patterns import wildcard_frequencies
from anonlab.verify.suppression import check_suppression, frequencies


def brute_frequencies(values: np.ndarray, alpha: float) -> np.ndarray:
    """Each record's frequency by its definition, record against record (NaN = blank):
    records compatible when equal wherever both have a value; own pattern 1; without a
    blank: others with some blanks alpha, all blank 0; with blanks: complete 1, others
    alpha; all blank: every record."""
    n = values.shape[0]
    blank = np.isnan(values)
    out = np.zeros(n)
    for i in range(n):
        if blank[i].all():
            out[i] = n
            continue
        compatible = np.all((values == values[i]) | blank | blank[i], axis=1)
        same = np.all(blank == blank[i], axis=1) & np.all((values == values[i]) | blank, axis=1)
        complete = ~blank.any(axis=1)
        empty = blank.all(axis=1)
        if not blank[i].any():
            weight = np.where(complete, 1.0, np.where(empty, 0.0, alpha))
        else:
            weight = np.where(complete, 1.0, alpha)
        weight[same] = 1.0
        out[i] = float((weight * compatible).sum())
    return out


def _random_table(rng: np.random.Generator, n: int, m: int, holes: bool) -> pd.DataFrame:
    data = {}
    for j in range(m):
        card = int(rng.integers(2, 5))
        p = rng.dirichlet(np.ones(card))
        column = rng.choice(card, size=n, p=p).astype(float)
        if holes:
            column[rng.random(n) < 0.05] = np.nan
        data[f"q{j}"] = column
    data["s"] = rng.integers(0, 2, size=n)
    return pd.DataFrame(data)


@pytest.mark.parametrize("seed", range(30))
def test_random_tables_are_k_anonymous_by_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 6))
    n = int(rng.integers(20, 120))
    table = _random_table(rng, n, m, holes=seed % 3 == 0)
    keys = [f"q{j}" for j in range(m)]
    k = int(rng.integers(2, 5))
    alpha = [1.0, 0.0, 0.5][seed % 3]
    combs = None
    if seed % 4 == 1 and m >= 3:
        combs = [(m - 1, k), (2, k + 1)]
    strata = "s" if seed % 5 == 2 else None
    result = suppress(table, keys, k, combs=combs, strata=strata, alpha=alpha)
    release = result.release
    before = table[keys].to_numpy(dtype=float)
    after = release[keys].to_numpy(dtype=float)
    kept = ~np.isnan(after)
    assert np.array_equal(after[kept], before[kept])  # only blanks
    assert np.isnan(after[np.isnan(before)]).all()
    pd.testing.assert_series_equal(release["s"], table["s"])
    pairs: list[tuple[int, int]] = [(m, k)] if combs is None else combs
    groups = [np.arange(n)] if strata is None else [np.flatnonzero(table["s"] == v) for v in (0, 1)]
    for size, kk in pairs:
        for combination in itertools.combinations(range(m), size):
            for rows in groups:
                if rows.size == 0:
                    continue
                fk = brute_frequencies(after[np.ix_(rows, np.array(combination))], alpha)
                assert fk.min() >= kk - 1e-9, (combination, fk.min())
    new = np.isnan(after) & ~np.isnan(before)
    assert result.cells_suppressed == int(new.sum())
    assert result.records_touched == int(new.any(axis=1).sum())
    assert result.suppressed == {key: int(new[:, j].sum()) for j, key in enumerate(keys)}
    problems = check_suppression(
        table,
        release,
        keys,
        k,
        combs=combs,
        strata=[strata] if strata else (),
        alpha=alpha,
        suppressed=result.suppressed,
    )
    assert problems == []


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_frequencies_of_the_method_and_the_checker_equal_brute_force(alpha: float) -> None:
    rng = np.random.default_rng(7)
    values = rng.integers(0, 3, size=(80, 3)).astype(float)
    values[rng.random(values.shape) < 0.2] = np.nan
    values[5] = np.nan  # a record of blanks only
    expected = brute_frequencies(values, alpha)
    checker = frequencies(pd.DataFrame(values).astype(object).where(~np.isnan(values)), alpha)
    np.testing.assert_allclose(checker, expected)
    codes = np.where(np.isnan(values), -1, values).astype(np.int64)
    uniq, inverse = np.unique(codes, axis=0, return_inverse=True)
    counts = np.bincount(inverse.ravel()).astype(float)
    method = wildcard_frequencies(uniq, counts, alpha)[inverse.ravel()]
    np.testing.assert_allclose(method, expected)


def test_the_smallest_set_of_cells_and_the_importance_order() -> None:
    rows = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 2], [1, 0, 0]])
    counts = np.array([1.0, 1.0, 1.0, 1.0])
    out = suppress_block(rows, counts, 2.0, 1.0, [2, 1, 0])
    # the first pattern (all at f_k 1; ties: the first) loses key 2, the least protected,
    # and then matches (0, 0, 1) and (0, 0, 2); the lone (1, 0, 0) reaches 2 only by
    # blanking key 0 (then it matches (0, 0, blank)): 2 cells, where one per record
    # (4) is what a blank per record at risk would cost
    expected = np.array([[0, 0, -1], [0, 0, 1], [0, 0, 2], [-1, 0, 0]])
    np.testing.assert_array_equal(out, expected)
    fk = brute_frequencies(np.where(out < 0, np.nan, out).astype(float), 1.0)
    assert fk.min() >= 2
    order = subset_order([2, 1, 0])
    assert list(order[:4]) == [0, 0b100, 0b010, 0b001]


def test_a_needless_blank_is_restored() -> None:
    # (a, b) and (a, c), k = 2: blanking the second key of one of them suffices
    table = pd.DataFrame({"x": ["a", "a", "d", "d"], "y": ["b", "c", "e", "e"]})
    result = suppress(table, ["x", "y"], 2)
    assert result.cells_suppressed == 1
    assert result.records_touched == 1


def test_combinations_all_reach_k_together() -> None:
    # sdcMicro#352's table: combs = 2, k = 3, alpha = 0 left province x activity below k
    table = pd.DataFrame(
        {
            "province": [2, 3, 3, 2, 4, 2, 4, 2, 2, 3],
            "activity": list("AAAABBBBAA"),
            "sex": ["F", "F", "F", "M", "F", "F", "F", "F", "M", "M"],
            "income": [
                "high",
                "low",
                "low",
                "low",
                "high",
                "medium",
                "high",
                "low",
                "high",
                "medium",
            ],
        }
    )
    keys = list(table.columns)
    result = suppress(table, keys, 3, combs=[2], alpha=0.0)
    assert check_suppression(table, result.release, keys, 3, combs=[(2, 3)], alpha=0.0) == []
    assert all(c["smallest_frequency"] >= 3 for c in result.combinations)
    assert len(result.combinations) == 6


def test_integer_keys_stay_integers_and_other_columns_unchanged() -> None:
    table = pd.DataFrame({"a": [1, 1, 2, 2, 3], "b": [5, 5, 6, 6, 7], "w": [0.5] * 5})
    result = suppress(table, ["a", "b"], 2)
    assert str(result.release["a"].dtype) == "Int64"
    assert result.release["w"].tolist() == [0.5] * 5
    assert result.release["a"].isna().sum() + result.release["b"].isna().sum() == 2


def test_the_checker_catches_tampering() -> None:
    table = pd.read_csv("data/sdc/testdata.csv")
    keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]
    result = suppress(table, keys, 3)
    release = result.release
    assert check_suppression(table, release, keys, 3, suppressed=result.suppressed) == []
    # a blank given back: a record below k
    back = release.copy()
    row = int(np.flatnonzero(back["relat"].isna())[0])
    back.loc[row, "relat"] = int(table["relat"].iloc[row])
    assert any("< k = 3" in p for p in check_suppression(table, back, keys, 3))
    # a key value changed instead of blanked
    changed = release.copy()
    changed.loc[0, "roof"] = 9
    assert "a suppression only blanks" in check_suppression(table, changed, keys, 3)[0]
    # a non-key column changed
    other = release.copy()
    other.loc[3, "age"] = 999
    assert "not a key" in check_suppression(table, other, keys, 3)[0]
    # a record dropped
    assert "records" in check_suppression(table, release.iloc[1:], keys, 3)[0]
    # the counts misreported
    wrong = dict(result.suppressed, relat=result.suppressed["relat"] + 1)
    assert "the report says" in check_suppression(table, release, keys, 3, suppressed=wrong)[0]
    # a stricter combination than was made
    assert check_suppression(table, release, keys, 3, combs=[(2, 200)])


def test_errors_are_one_line() -> None:
    table = pd.DataFrame({"a": [1, 2, 3], "b": [1, 2, 3], "s": [0, 0, 1]})
    cases = [
        (dict(qi=["a", "z"], k=2), "no column z"),
        (dict(qi=["a", "b"], k=2, importance={"a": 1}), "no rank for b"),
        (dict(qi=["a", "b"], k=2, importance={"a": 1, "b": 3}), "out of range"),
        (dict(qi=["a", "b"], k=2, combs=[3]), "combs size 3"),
        (dict(qi=["a", "b"], k=2, alpha=2.0), "alpha"),
        (dict(qi=["a", "b"], k=2, strata="s"), "fewer than k"),
        (dict(qi=["a", "b"], k=4), "fewer than k"),
    ]
    for kwargs, text in cases:
        with pytest.raises(AnonlabError) as info:
            suppress(table, **kwargs)  # type: ignore[arg-type]
        assert text in str(info.value)
        assert "\n" not in str(info.value)


def test_more_keys_than_the_subset_search_takes() -> None:
    # above MAX_SUBSET_KEYS keys a pattern loses one cell at a time
    from anonlab.suppression.local import MAX_SUBSET_KEYS

    rng = np.random.default_rng(3)
    m = MAX_SUBSET_KEYS + 2
    table = pd.DataFrame({f"q{j}": rng.integers(0, 2, size=60) for j in range(m)})
    keys = list(table.columns)
    result = suppress(table, keys, 3)
    after = result.release[keys].to_numpy(dtype=float)
    assert brute_frequencies(after, 1.0).min() >= 3
    assert check_suppression(table, result.release, keys, 3, suppressed=result.suppressed) == []


@pytest.mark.parametrize(
    "values",
    [
        ["a", "", None, "b", "a"],
        [1.0, 2.5, float("nan"), 3.0, -0.0],
        [1, 2, 3, 2],
        [True, False, True],
        [True, 1, 2.0, "x", None, ""],  # True equals 1: a mixed column value by value
    ],
)
def test_the_checker_reads_each_distinct_value_as_text_as_it_reads_each_record(
    values: list[object],
) -> None:
    from anonlab.verify.suppression import _one_text, _text

    column = pd.Series(values, dtype=object if any(isinstance(v, str) for v in values) else None)
    assert _text(column).tolist() == [_one_text(v) for v in column.tolist()]
