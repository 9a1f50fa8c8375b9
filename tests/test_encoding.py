"""The shared column encodings: a core module that the measures use without a method family."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from anonlab.encoding import (
    category_distance,
    encode_all,
    encode_categorical,
    encode_like,
    is_numeric_column,
    natural_order,
    numeric_columns,
    numeric_matrix,
    ordinal_distance_table,
    select_columns,
    standardize,
)
from anonlab.errors import AnonlabError

FAMILIES = (
    "anonlab.microaggregation",
    "anonlab.fusion",
    "anonlab.perturbation",
    "anonlab.generalize",
    "anonlab.lattice",
    "anonlab.cli",
)


@pytest.mark.parametrize("module", ["anonlab.encoding", "anonlab.metrics"])
def test_import_loads_no_method_family(module: str) -> None:
    code = f"import sys, {module}; print([m for m in sys.modules if m.startswith({FAMILIES!r})])"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_natural_order_is_numeric_when_every_value_is_a_number() -> None:
    assert natural_order(["10", "2", "1.5"]) == ["1.5", "2", "10"]
    assert natural_order(["b", "10", "a"]) == ["10", "a", "b"]  # text order otherwise


def test_ordinal_distances_agree_with_their_table() -> None:
    frame = pd.DataFrame({"e": ["lo", "mid", "hi", "mid", "lo"]})
    col = encode_categorical(frame, "e", ordinal=True, order=["lo", "mid", "hi"])
    table = ordinal_distance_table(col.size)
    a, b = np.meshgrid(np.arange(3), np.arange(3), indexing="ij")
    np.testing.assert_allclose(category_distance(col, a.ravel(), b.ravel()), table.ravel())
    assert table[0, 2] == 1.0 and table[0, 1] == pytest.approx(2 / 3) and table[1, 1] == 0.0
    nominal = encode_all(frame, ["e"], [])[0]
    assert category_distance(nominal, nominal.codes, 0).tolist() == [
        float(c != 0) for c in nominal.codes
    ]


def test_encode_like_reads_numbers_in_another_spelling_and_appends_new_nominals() -> None:
    original = encode_all(pd.DataFrame({"u": ["13", "7", "x"]}), ["u"], [])[0]
    masked = encode_like(original, pd.DataFrame({"u": ["13.0", "*", "x"]}))
    assert masked.domain == ("13", "7", "x", "*")
    assert masked.codes.tolist() == [0, 3, 2]
    ordinal = encode_all(pd.DataFrame({"o": ["1", "2"]}), [], ["o"])[0]
    with pytest.raises(AnonlabError, match="value '\\*' of ordinal column 'o'"):
        encode_like(ordinal, pd.DataFrame({"o": ["1", "*"]}))


def test_numeric_columns_and_standardization() -> None:
    frame = pd.DataFrame({"a": ["1", "2", " 3 "], "b": [1.0, np.nan, 2.0], "t": ["x", "1", "2"]})
    assert is_numeric_column(frame["b"]) and not is_numeric_column(frame["t"])
    assert numeric_columns(frame) == ["a", "b"]
    assert select_columns(frame, "all-numeric", exclude=["b"]) == ["a"]
    x = numeric_matrix(frame, ["a"])
    z, mean, std = standardize(x, ["a"])
    assert mean.tolist() == [2.0] and std[0] == pytest.approx(np.sqrt(2 / 3))  # ddof = 0
    np.testing.assert_allclose(z[:, 0], [-np.sqrt(1.5), 0.0, np.sqrt(1.5)])
    with pytest.raises(AnonlabError, match="has a missing value"):
        numeric_matrix(frame, ["b"])


def test_numbers_are_parsed_to_the_nearest_double(tmp_path: Path) -> None:
    """17-digit decimals, as doubles are written out, read back to the same double: pandas'
    own parsers miss some by a unit in the last place ("27.400000000000002" gave 27.4)."""
    from anonlab.io import read_table
    from anonlab.textnumbers import parse_numbers

    rng = np.random.default_rng(7)
    doubles = np.concatenate(
        [rng.normal(30.0, 10.0, 500), [27.400000000000002, 0.30000000000000004]]
    )
    text = [repr(float(x)) for x in doubles]
    assert parse_numbers(pd.Series(text)).tolist() == doubles.tolist()
    padded = [f" {t} " for t in text] + ["n/a"]
    parsed = parse_numbers(pd.Series(padded))
    assert parsed.iloc[:-1].tolist() == doubles.tolist() and np.isnan(parsed.iloc[-1])
    path = tmp_path / "doubles.csv"
    path.write_text("x\n" + "\n".join(text) + "\n")
    assert read_table(path, dtype=None)["x"].tolist() == doubles.tolist()
