"""The independent checker catches every kind of wrong release (so it can fail)."""

from __future__ import annotations

import pandas as pd
import pytest

from anonlab.checker import check_generalization, check_k_anonymity
from anonlab.hierarchy import Hierarchy

AGE = Hierarchy.from_rows(
    [
        ["31", "30-34", "*"],
        ["32", "30-34", "*"],
        ["36", "35-39", "*"],
        ["37", "35-39", "*"],
        ["41", "40-44", "*"],
    ]
)
ORIGINAL = pd.DataFrame(
    {
        "name": ["a", "b", "c", "d", "e"],
        "age": ["31", "32", "36", "37", "41"],
        "s": ["x", "y", "x", "y", "x"],
    }
)


def _release() -> pd.DataFrame:
    """Age at level 1, the lone 40-44 record suppressed, name dropped."""
    return pd.DataFrame(
        {"age": ["30-34", "30-34", "35-39", "35-39", "*"], "s": ["x", "y", "x", "y", "x"]}
    )


def test_a_right_release_passes() -> None:
    release = _release()
    assert check_k_anonymity(release, ["age"], 2, 1) == []
    assert check_generalization(ORIGINAL, release, {"age": AGE}, {"age": 1}, ["name"], 1) == []


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (
            lambda r: r.assign(age=["30-34", "30-34", "35-39", "40-44", "*"]),
            "column 'age' row 4: released '40-44', expected '35-39'",
        ),
        (lambda r: r.assign(s=["x", "y", "x", "x", "x"]), "column 's' was changed"),
        (lambda r: r.drop(columns="s"), "column 's' is missing"),
        (lambda r: r.assign(name=list("abcde")), "identifying column 'name' is in the release"),
        (lambda r: r.iloc[:4], "release has 4 rows, original 5"),
        (
            lambda r: r.assign(age=["30-34", "30-34", "35-39", "*", "*"]),
            "2 records are suppressed but the limit is 1",
        ),
    ],
)
def test_generalization_problems_are_found(tamper: object, message: str) -> None:
    release = tamper(_release())  # type: ignore[operator]
    problems = check_generalization(ORIGINAL, release, {"age": AGE}, {"age": 1}, ["name"], 1)
    assert any(message in p for p in problems), problems


def test_small_classes_and_excess_suppression_are_found() -> None:
    release = _release()
    assert check_k_anonymity(release, ["age"], 3, 1) == [
        "2 equivalence classes have fewer than 3 records (smallest: 2)"
    ]
    assert check_k_anonymity(release, ["age"], 2, 0) == [
        "1 suppressed records exceed the limit of 0"
    ]


def test_missing_values_read_as_empty_text() -> None:
    """A null in the original (Parquet input) equals the empty field a CSV release holds."""
    hier = Hierarchy.from_rows([["", "?", "*"], ["a", "ab", "*"], ["b", "ab", "*"]])
    original = pd.DataFrame({"q": ["a", None, "b", None], "note": ["x", None, "y", "z"]})
    release = pd.DataFrame({"q": ["ab", "?", "ab", "?"], "note": ["x", "", "y", "z"]})
    assert check_generalization(original, release, {"q": hier}, {"q": 1}) == []
    wrong = release.assign(q=["ab", "ab", "ab", "?"])
    assert check_generalization(original, wrong, {"q": hier}, {"q": 1}) == [
        "column 'q' row 2: released 'ab', expected '?'"
    ]


def _categorical(frame: pd.DataFrame, unused: str | None = None) -> pd.DataFrame:
    """Every column a categorical (as a table read back with strings="dictionary"), in the
    categories' reverse order, with an ``unused`` category where given."""
    out = {}
    for name, column in frame.items():
        categories = sorted(set(column), reverse=True) + ([unused] if unused else [])
        out[name] = pd.Categorical(column, categories=categories)
    return pd.DataFrame(out)


@pytest.mark.parametrize("unused", [None, "99"])
def test_categorical_tables_are_checked_as_their_text(unused: str | None) -> None:
    """Categoricals compared on their own codes (any category order) or, with a category
    no row uses (not in the hierarchy), as text: the same findings as plain text."""
    from anonlab.verify.criteria import check_criteria

    original, release = _categorical(ORIGINAL, unused), _categorical(_release(), unused)
    assert check_generalization(original, release, {"age": AGE}, {"age": 1}, ["name"], 1) == []
    wrong = _categorical(_release().assign(age=["30-34", "30-34", "35-39", "40-44", "*"]))
    assert check_generalization(original, wrong, {"age": AGE}, {"age": 1}, ["name"], 1) == [
        "column 'age' row 4: released '40-44', expected '35-39'"
    ]
    changed = _categorical(_release().assign(s=["x", "y", "x", "x", "x"]))
    assert check_generalization(original, changed, {"age": AGE}, {"age": 1}, ["name"], 1) == [
        "column 's' was changed"
    ]
    k = [{"model": "k-anonymity", "k": 2}]
    assert (
        check_criteria(original, release, k, ["age"], 1)
        == check_criteria(ORIGINAL, _release(), k, ["age"], 1)
        == []
    )
    assert check_criteria(
        original, release, [{"model": "k-anonymity", "k": 3}], ["age"], 1
    ) == check_criteria(ORIGINAL, _release(), [{"model": "k-anonymity", "k": 3}], ["age"], 1)
    assert check_criteria(original, release, [{"model": "k-anonymity", "k": 3}], ["age"], 1)
