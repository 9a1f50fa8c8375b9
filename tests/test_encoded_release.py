"""Tables read as categoricals (``strings="dictionary"``) give what text columns give.

``generalize`` reads its input and its written release back with text columns as
categoricals; the reader, the CSV writer, the checker, the risk section and the
report's distinct values must then give exactly what they give on text columns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.io import read_table, write_table
from anonlab.risk.classes import encode_columns, equivalence_classes
from anonlab.runs.generalize_steps import distinct_values
from anonlab.verify.generalization import check_generalization, expected_stars

ROWS = [("a,b", "x", ""), ("", 'q"z', "1"), ("a,b", "x", "2"), ("c", "y", "1")]


def _csv(tmp_path: Path) -> Path:
    frame = pd.DataFrame(ROWS, columns=["one", "two", "three"], dtype=object)
    path = tmp_path / "t.csv"
    write_table(frame, path)
    return path


def test_dictionary_read_gives_the_same_texts(tmp_path: Path) -> None:
    path = _csv(tmp_path)
    text = read_table(path)
    coded = read_table(path, strings="dictionary")
    assert list(coded.columns) == list(text.columns)
    for column in text.columns:
        assert isinstance(coded[column].dtype, pd.CategoricalDtype)
        assert coded[column].astype(str).tolist() == text[column].tolist()
        # the header row is skipped, not read as a value of the dictionary
        assert column not in list(coded[column].cat.categories)


def test_dictionary_read_of_parquet_and_frames(tmp_path: Path) -> None:
    frame = pd.DataFrame({"n": [1, 2, 1], "s": ["u", None, "u"]})
    path = tmp_path / "t.parquet"
    write_table(frame, path)
    coded = read_table(path, strings="dictionary")
    assert coded["n"].astype(str).tolist() == ["1", "2", "1"]
    assert coded["s"].astype(str).tolist() == ["u", "", "u"]
    assert read_table(frame, strings="dictionary")["s"].astype(str).tolist() == ["u", "", "u"]


def test_dictionary_strings_need_text() -> None:
    with pytest.raises(AnonlabError, match="strings 'dictionary' applies to a table read as text"):
        read_table(pd.DataFrame({"a": [1]}), dtype=None, strings="dictionary")


@pytest.mark.parametrize("columns", [["one", "two", "three"], ["one"]])
def test_categorical_columns_write_the_same_bytes(tmp_path: Path, columns: list[str]) -> None:
    text = pd.DataFrame(ROWS, columns=["one", "two", "three"], dtype=object)[columns]
    write_table(text, tmp_path / "text.csv")
    write_table(text.astype("category"), tmp_path / "coded.csv")
    assert (tmp_path / "coded.csv").read_bytes() == (tmp_path / "text.csv").read_bytes()


def _hierarchy(tmp_path: Path) -> Hierarchy:
    path = tmp_path / "h.csv"
    path.write_text("a;ab;*\nb;ab;*\nc;c;*\n", encoding="utf-8")
    return Hierarchy.from_csv(path)


def test_checker_gives_the_same_findings_on_categoricals(tmp_path: Path) -> None:
    hierarchy = _hierarchy(tmp_path)
    original = pd.DataFrame({"q": ["a", "b", "c", "a"], "s": ["1", "2", "3", "4"]})
    good = pd.DataFrame({"q": ["ab", "ab", "c", "ab"], "s": ["1", "2", "3", "4"]})
    bad = pd.DataFrame({"q": ["ab", "c", "*", "ab"], "s": ["1", "2", "3", "5"]})
    for release in (good, bad):
        text = check_generalization(original, release, {"q": hierarchy}, {"q": 1}, max_suppressed=0)
        coded = check_generalization(
            original.astype("category"),
            release.astype("category"),
            {"q": hierarchy},
            {"q": 1},
            max_suppressed=0,
        )
        assert coded == text
    assert check_generalization(original, good, {"q": hierarchy}, {"q": 1}) == []
    assert check_generalization(
        original.astype("category"),
        bad.astype("category"),
        {"q": hierarchy},
        {"q": 1},
        max_suppressed=0,
    ) == [
        "column 's' was changed",
        "column 'q' row 2: released 'c', expected 'ab'",
        "1 records are suppressed but the limit is 0",
    ]
    stars = expected_stars(original.astype("category"), {"q": hierarchy}, {"q": 2})
    assert stars.tolist() == [True] * 4


def test_risk_classes_and_distinct_values_on_categoricals() -> None:
    release = pd.DataFrame(
        {
            "q": ["ab", "*", "c", "ab", "*"],
            "r": ["x", "*", "y", "x", "*"],
            "s": ["1", "2", "3", None, "2"],
        }
    )
    coded = release.astype({"q": "category", "r": "category"})
    for frame in (release, coded, release.astype(object)):
        encoded = encode_columns(frame, ["q", "r", "s"])
        assert encoded.codes.tolist() == encode_columns(release, ["q", "r", "s"]).codes.tolist()
        assert [list(map(str, v)) for v in encoded.values] == [
            ["ab", "*", "c"],
            ["x", "*", "y"],
            ["1", "2", "3", "nan"],
        ]
        classes = equivalence_classes(frame, ["q", "r"], ["s"])
        assert classes.sizes.tolist() == [2, 1] and classes.suppressed == 2
    original = pd.DataFrame({"q": ["a", "b", "c", "a", "b"], "r": ["x", "z", "y", "x", "w"]})
    want = {"q": {"original": 3, "released": 2}, "r": {"original": 4, "released": 2}}
    levels = {"q": 1, "r": 0}
    assert distinct_values(original, release, levels) == want
    assert distinct_values(original.astype("category"), coded, levels) == want
    assert np.array_equal(coded["q"].cat.codes.to_numpy() >= 0, np.ones(5, dtype=bool))
