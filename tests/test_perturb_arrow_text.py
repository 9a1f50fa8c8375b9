"""Arrow-backed text and doubles read straight from the file: the same numbers, faster.

The perturb run reads its tables with ``strings="arrow"`` and re-reads its
release with ``doubles=``; the method and the independent checker cast text
with Arrow. Every path must give exactly the doubles Python's ``float`` gives
(bit for bit: ``-0.0``, subnormals, halfway cases), keep the rule that an
integer-spelled column is an integer column, and refuse what was refused.
"""

from __future__ import annotations

import decimal
import json
import math
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from numpy.typing import NDArray

from anonlab.errors import AnonlabError, ReleaseRiskWarning
from anonlab.io import read_table
from anonlab.perturbation import perturb
from anonlab.perturbation.table import numeric_columns, replaced_columns
from anonlab.runs.perturb import PerturbSettings, reread_table, run_perturb
from anonlab.verify import perturbation as checker

pytestmark = pytest.mark.filterwarnings("ignore::anonlab.perturbation.RecoverableReleaseWarning")
ARROW_TEXT = pd.ArrowDtype(pa.string())
TRICKY = [
    "0.1",
    "1e-320",
    "5e-324",
    "4.9e-324",
    "2.4703282292062328e-324",
    "2.2250738585072011e-308",
    "2.2250738585072014e-308",
    "-0.0",
    "1e308",
    "1.7976931348623157e308",
    "9007199254740993",
    "9007199254740993.0000000001",
    "0.30000000000000004",
    "123456789012345678901234567890",
    "+.5",
    "5.",
    "1E+5",
    "1.00000000000000011102230246251565404236316680908203125",  # halfway: to even
    "1.00000000000000011102230246251565404236316680908203126",
]  # just above: up


def _bits(values: Any) -> NDArray[np.int64]:
    """The doubles' bit patterns, so that ``-0.0`` and ``0.0`` differ."""
    return np.asarray(values, dtype=np.float64).view(np.int64)


def _valid_spellings(rng: np.random.Generator, count: int) -> list[str]:
    """Random plain decimal numbers: sign, digits, point, exponent (many near the limits)."""
    out = []
    for _ in range(count):
        whole = "".join(rng.choice(list("0123456789"), rng.integers(0, 22)))
        frac = "".join(rng.choice(list("0123456789"), rng.integers(0, 22)))
        if not whole and not frac:
            whole = "7"
        text = (
            rng.choice(["", "-", "+"]) + whole + ("." + frac if frac or rng.random() < 0.3 else "")
        )
        if rng.random() < 0.7:
            text += rng.choice(["e", "E"]) + rng.choice(["", "-", "+"]) + str(rng.integers(0, 345))
        out.append(text)
    return out


def _halfway(rng: np.random.Generator, count: int) -> list[str]:
    """The exact midpoints between random doubles and their successors, and a hair off each."""
    decimal.getcontext().prec = 800
    out = []
    for x in rng.standard_normal(count) * 10.0 ** rng.integers(-300, 300, count):
        mid = (decimal.Decimal(float(x)) + decimal.Decimal(float(np.nextafter(x, np.inf)))) / 2
        tiny = abs(mid) * decimal.Decimal("1e-40")
        out += [str(mid), str(mid + tiny), str(mid - tiny)]
    return out


# ------------------------------------------------------------------- Arrow's parser vs float


def test_arrow_parses_decimal_text_as_python_does() -> None:
    """Arrow's cast (method and checker) and its CSV parser (re-read) are correctly rounded."""
    import io

    import pyarrow.csv as pacsv

    rng = np.random.default_rng(11)
    texts = TRICKY + _valid_spellings(rng, 20_000) + _halfway(rng, 2_000)
    want = _bits([float(t) for t in texts])
    cast = pa.array(texts, pa.string()).cast(pa.float64()).to_numpy(zero_copy_only=False)
    assert np.array_equal(_bits(cast), want)
    body = ("x\n" + "\n".join(texts) + "\n").encode()
    parsed = (
        pacsv.read_csv(
            io.BytesIO(body),
            convert_options=pacsv.ConvertOptions(column_types={"x": pa.float64()}, null_values=[]),
        )
        .column("x")
        .to_numpy()
    )
    assert np.array_equal(_bits(parsed), want)


@pytest.mark.parametrize(
    "text",
    [
        " 1.5",
        "1.5 ",
        "1_000",
        "\u0661\u0662",
        "0x10",
        "1e",
        ".",
        "-",
        "1.5f",
        "",
        "1,5",
        "--1",
        "true",
    ],
)
def test_what_arrow_refuses_python_may_take_but_never_reads_otherwise(text: str) -> None:
    """Arrow's cast takes a subset of Python's spellings: where it refuses, ``float`` decides."""
    with pytest.raises(pa.ArrowInvalid):
        pa.array([text], pa.string()).cast(pa.float64())


# ------------------------------------------------------------------------- the reader


def _sources(tmp_path: Path) -> dict[str, Any]:
    frame = pd.DataFrame(
        {
            "zip": ["01234", "99999", "00000"],
            "x": [0.1, -0.0, 1e-320],
            "n": [9007199254740993, 1, -5],
            "town": ["a, b", 'say "hi"', ""],
        }
    )
    frame.to_csv(tmp_path / "t.csv", index=False)
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    with sqlite3.connect(tmp_path / "t.db") as db:
        frame.to_sql("t", db, index=False)
    return {
        "csv": tmp_path / "t.csv",
        "parquet": tmp_path / "t.parquet",
        "sqlite": f"sqlite:///{tmp_path / 't.db'}",
        "frame": frame,
    }


@pytest.mark.parametrize("kind", ["csv", "parquet", "sqlite", "frame"])
def test_arrow_strings_hold_the_same_text(tmp_path: Path, kind: str) -> None:
    source = _sources(tmp_path)[kind]
    options: dict[str, Any] = {"table": "t"} if kind == "sqlite" else {}
    plain = read_table(source, **options)
    arrow = read_table(source, strings="arrow", **options)
    assert list(arrow.dtypes) == [ARROW_TEXT] * 4
    # pandas' own text dtype: object before pandas 3, its 'str' dtype from 3 on; every value
    # a Python str either way
    assert list(plain.dtypes) == [pd.Series(["a"], dtype=str).dtype] * 4
    assert all(isinstance(v, str) for v in plain.to_numpy().ravel())
    assert arrow.astype(object).equals(plain.astype(object))
    assert arrow["zip"].tolist() == ["01234", "99999", "00000"]


@pytest.mark.parametrize("kind", ["csv", "parquet", "sqlite", "frame"])
def test_doubles_are_the_text_cast(tmp_path: Path, kind: str) -> None:
    source = _sources(tmp_path)[kind]
    options: dict[str, Any] = {"table": "t"} if kind == "sqlite" else {}
    text = read_table(source, strings="arrow", **options)
    typed = read_table(source, strings="arrow", doubles=["x", "n"], **options)
    arrow_doubles = pd.ArrowDtype(pa.float64())
    assert typed.dtypes.tolist() == [ARROW_TEXT, arrow_doubles, arrow_doubles, ARROW_TEXT]
    assert read_table(source, doubles=["x"], **options)["x"].dtype == np.float64
    for name in ("x", "n"):
        want = pa.array(text[name]).cast(pa.float64()).to_numpy(zero_copy_only=False)
        assert np.array_equal(_bits(typed[name]), _bits(want))
    assert typed["n"][0] == 2.0**53
    if kind != "sqlite":  # SQLite stores -0.0 as 0
        assert math.copysign(1.0, typed["x"][1]) == -1.0
    assert typed["zip"].tolist() == text["zip"].tolist()


def test_doubles_from_csv_take_names_as_the_header_spells_them(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes('\ufeff"a,b","line\nbreak",c\n1.5,2,x\n-0.0,1e-320,y\n'.encode())
    frame = read_table(path, delimiter=",", doubles=["a,b", "line\nbreak"])
    assert list(frame.columns) == ["a,b", "line\nbreak", "c"]
    assert _bits(frame["a,b"]).tolist() == _bits([1.5, -0.0]).tolist()
    assert frame["line\nbreak"].tolist() == [2.0, 1e-320] and frame["c"].tolist() == ["x", "y"]
    with pytest.raises(
        AnonlabError,
        match="column '0' of file .* holds a field that is not "
        r"one \(invalid value 'a,b'\)",
    ):
        read_table(path, delimiter=",", header=False, doubles=["0"])  # the header is a record


@pytest.mark.parametrize(
    ("body", "column"),
    [("a,b\n1,x\n2,3\n", "b"), ("a,b\n1,2\n,3\n", "a"), ("a,b\n1,nope\n2,3\n", "b")],
)
def test_doubles_refuse_what_is_not_a_number(tmp_path: Path, body: str, column: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(
        AnonlabError,
        match=f"column '{column}' of file .* is read as numbers but holds a field that is not one",
    ):
        read_table(path, doubles=["a", "b"])
    parquet = tmp_path / "t.parquet"
    pd.read_csv(path, dtype=str, keep_default_na=False).to_parquet(parquet)
    with pytest.raises(AnonlabError, match=f"column '{column}' of file .* is read as numbers"):
        read_table(parquet, doubles=["a", "b"])


def test_strings_and_doubles_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n", encoding="utf-8")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"strings": "rust"}, "strings 'rust' is not a choice"),
        ({"strings": "arrow", "dtype": None}, "strings 'arrow' applies to"),
        ({"doubles": ["a"], "dtype": None}, "doubles applies to a table"),
        ({"doubles": "a"}, "doubles 'a' must be a list"),
        ({"doubles": ["c"]}, "doubles names the column 'c'"),
    ]
    for kwargs, start in cases:
        with pytest.raises(AnonlabError) as caught:
            read_table(path, **kwargs)
        assert str(caught.value).startswith(start), caught.value


# ------------------------------------------------------------------- the method's parse


def test_arrow_backed_columns_give_the_method_the_same_numbers() -> None:
    tricky = TRICKY[: len(TRICKY) - len(TRICKY) % 2]
    frame = pd.DataFrame(
        {
            "x": tricky,
            "y": tricky[::-1],
            "i": ["7", "+5"] * (len(tricky) // 2),
            "big": ["9007199254740993", "-9223372036854775808"] * (len(tricky) // 2),
        }
    )
    plain = numeric_columns(frame, None)
    arrow = numeric_columns(frame.astype(ARROW_TEXT), None)
    assert np.array_equal(_bits(arrow.values), _bits(plain.values))
    assert np.array_equal(_bits(plain.values[:, 0]), _bits([float(t) for t in tricky]))
    # an integer-spelled column is an integer column, even beyond 2**53 (rounded to a double)
    assert arrow.integer == plain.integer == [False, False, True, True]
    assert arrow.values[0, 3] == 2.0**53 and arrow.values[1, 3] == -(2.0**63)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nan", "missing or infinite value (record 2)"),
        ("-inf", "missing or infinite value"),
        ("1e309", "missing or infinite value (record 2)"),
        ("", "missing or infinite value"),
        (" 1.5", "is not numeric (record 2: ' 1.5')"),
        ("1_0", "is not numeric (record 2: '1_0')"),
    ],
)
def test_arrow_backed_columns_refuse_what_was_refused(value: str, message: str) -> None:
    frame = pd.DataFrame({"a": ["1", "2", "3"], "b": ["0.5", value, "4"]}).astype(ARROW_TEXT)
    with pytest.raises(AnonlabError) as caught:
        numeric_columns(frame, None)
    assert message in str(caught.value) and str(caught.value).startswith("column 'b'")


def test_replaced_columns_copy_nothing_and_keep_the_input() -> None:
    frame = pd.DataFrame(
        {"zip": ["01", "02"], "a": ["1", "2"], 3: ["5", "6"]}, index=[10, 11]
    ).astype(ARROW_TEXT)
    values = np.asfortranarray([[1.5, 2.5], [3.5, 4.5]])
    out = replaced_columns(frame, ["a", "3"], [values[:, 0], values[:, 1]])
    assert list(out.columns) == ["zip", "a", 3] and list(out.index) == [10, 11]
    assert np.shares_memory(out["a"].to_numpy(), values) and out[3].tolist() == [2.5, 4.5]
    assert frame["a"].tolist() == ["1", "2"] and out["zip"].dtype == ARROW_TEXT


# ------------------------------------------------------------------------- the checker


def test_the_checker_reads_every_column_kind_alike() -> None:
    texts = pd.Series(TRICKY)
    want = _bits([float(t) for t in TRICKY])
    for column in (texts, texts.astype(ARROW_TEXT), pd.Series([float(t) for t in TRICKY])):
        frame = pd.DataFrame({"x": column, "y": column})
        values, problem = checker.numeric_matrix(frame, ["x", "y"], "release")
        assert problem is None and np.array_equal(_bits(values[:, 1]), want)
    # what Arrow refuses but Python's float takes is read as before; gaps and nan are findings
    frame = pd.DataFrame({"x": [" 1.5", "2"], "y": ["1", "2"]}).astype(ARROW_TEXT)
    assert checker.numeric_matrix(frame, ["x", "y"], "release")[0][:, 0].tolist() == [1.5, 2.0]
    for bad, row, shown in (([None, "2"], 1, ""), (["1", "nan"], 2, "nan"), (["1", "x"], 2, "x")):
        frame = pd.DataFrame({"x": ["1", "2"], "y": pd.Series(bad, dtype=ARROW_TEXT)})
        assert checker.numeric_matrix(frame, ["x", "y"], "release")[1] == (
            f"column 'y' of the release holds '{shown}' at row {row}, not a finite number"
        )


def test_unchanged_columns_compare_alike_in_every_kind() -> None:
    before = pd.DataFrame({"zip": ["01", "02", "03"], "x": ["1", "2", "3"]})
    after = before.copy()
    after.loc[2, "zip"] = "04"
    want = ["column 'zip' is not masked but changed: row 3 holds '04', the input '03'"]
    for old, new in (
        (before, after),
        (before.astype(ARROW_TEXT), after.astype(ARROW_TEXT)),
        (before, after.astype(ARROW_TEXT)),
    ):
        assert checker.unchanged_findings(old, new, ["x"]) == want
        assert checker.unchanged_findings(old, old, ["x"]) == []


def _gdp_case(n: int = 700) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(rng.lognormal(size=(n, 3)) * [1, 50, 1e3], columns=["a", "b", "c"])
    p = perturb(frame, ["a", "b", "c"], "gdp", seed=8, noise=0.2)
    return (
        frame.astype(str).astype(ARROW_TEXT),
        p.release.astype(str).astype(ARROW_TEXT),
        json.loads(json.dumps(p.key.to_dict())),
    )


@pytest.mark.parametrize("block", [64, 700, 65_536])
def test_block_size_changes_no_finding(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """Rows, pairs and noise are handled a block at a time: any block size gives the same."""
    monkeypatch.setattr(checker, "BLOCK_ROWS", block)
    monkeypatch.setattr(checker, "NOISE_ROWS", block)
    original, release, key = _gdp_case()
    assert checker.check_perturbation(original, release, ["a", "b", "c"], "gdp", key=key) == []
    wrong = release.astype(object)
    wrong.iat[650, 1] = repr(float(str(wrong.iat[650, 1])) + 1e-3)
    problems = checker.check_perturbation(original, wrong, ["a", "b", "c"], "gdp", key=key)
    assert problems == [problems[0]] and "of record 651, but the input holds" in problems[0]
    assert "(3 values differ)" in problems[0]  # the rotation mixes b into every column
    ortho = perturb(original.astype(float), ["a", "b", "c"], "obt", seed=2).release
    shifted = ortho.astype(str).astype(ARROW_TEXT)
    shifted.iat[600, 0] = repr(float(str(shifted.iat[600, 0])) * (1 + 1e-6))
    found = checker.check_perturbation(
        original, shifted, ["a", "b", "c"], "obt", all_pairs_limit=100, pairs=50
    )
    assert found and ("records 601 and" in found[0] or "and 601 is" in found[0])


# ------------------------------------------------------------------------------- the run


def test_a_tsv_release_is_reread_at_its_tabs(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    data = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"]).round(5)
    data["zip"] = [f"0{i:03d}" for i in range(40)]
    data.to_csv(tmp_path / "in.csv", index=False)
    settings = PerturbSettings(
        input=str(tmp_path / "in.csv"),
        columns=["a", "b", "c"],
        seed=4,
        insensitive=["zip"],
        output=str(tmp_path / "out.tsv"),
        key=str(tmp_path / "k.json"),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)  # every record is unique on zip
        result = run_perturb(settings)
    assert result.report["verified"] is True
    lines = (tmp_path / "out.tsv").read_text().splitlines()
    assert lines[0] == "a\tb\tc\tzip" and lines[1].endswith("\t0000")


def test_the_reread_falls_back_to_text_for_the_checker_to_name_a_bad_value(tmp_path: Path) -> None:
    staged = tmp_path / ".rel.csv.anonlab-1-ab.tmp"
    staged.write_text("a,b\n1.5,2\nx,3\n", encoding="utf-8")
    numbers = reread_table(staged, None, ["b"])
    assert numbers["b"].tolist() == [2.0, 3.0] and numbers["a"].tolist() == ["1.5", "x"]
    text = reread_table(staged, tmp_path / "rel.csv", ["a", "b"])
    assert text.dtypes.tolist() == [ARROW_TEXT, ARROW_TEXT]
    assert checker.numeric_matrix(text, ["a", "b"], "release")[1] == (
        "column 'a' of the release holds 'x' at row 2, not a finite number"
    )


def test_an_integer_column_beyond_two_to_the_53_stays_integer(tmp_path: Path) -> None:
    rows = 30
    ids = np.random.default_rng(6).integers(2**53, 2**62, rows)
    ids[0] = 2**53 + 1  # 9007199254740993: no double holds it
    data = pd.DataFrame({"a": np.arange(rows) * 1.5, "id": [str(i) for i in ids]})
    data.to_csv(tmp_path / "in.csv", index=False)
    key = tmp_path / "k.json"
    run_perturb(
        PerturbSettings(
            input=str(tmp_path / "in.csv"), seed=1, output=str(tmp_path / "out.csv"), key=str(key)
        )
    )
    assert json.loads(key.read_text())["integer"] == [False, True]
