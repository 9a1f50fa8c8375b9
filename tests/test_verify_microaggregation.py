"""The microaggregation checker passes MDAV's releases and catches every tampering."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.microaggregation import microaggregate
from anonlab.verify import check_microaggregation, verify_report

runner = CliRunner()
TARRAGONA = Path(__file__).resolve().parents[1] / "data" / "sdc" / "Tarragona.csv"


def _text(frame: pd.DataFrame) -> pd.DataFrame:
    """A table as a CSV round trip reads it: every value as text."""
    return frame.astype(str)


@pytest.fixture(scope="module")
def tarragona_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``anonlab microaggregate`` on Tarragona, k = 3: (report, release)."""
    folder = tmp_path_factory.mktemp("mdav")
    release, report = folder / "release.csv", folder / "report.json"
    result = runner.invoke(
        app,
        [
            "microaggregate",
            str(TARRAGONA),
            "--k",
            "3",
            "--output",
            str(release),
            "--report",
            str(report),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    return report, release


def _verify_cli(report: Path, release: Path) -> tuple[int, str]:
    result = runner.invoke(app, ["verify", str(report), "--release", str(release)])
    return result.exit_code, result.output


def test_tarragona_release_holds(tarragona_run: tuple[Path, Path]) -> None:
    report, release = tarragona_run
    result = verify_report(report)
    assert result.ok, result.findings
    assert "278 groups of >= 3" in result.summary
    code, text = _verify_cli(report, release)
    assert code == 0 and "holds" in text and len(text.strip().splitlines()) == 1


def _tampered(release: Path, folder: Path, change: object) -> Path:
    frame = pd.read_csv(release, dtype=str, keep_default_na=False)
    # an edit changes the frame in place (returns None) or returns the edited frame
    edited = change(frame)  # type: ignore[operator]
    frame = frame if edited is None else edited
    out = folder / "tampered.csv"
    frame.to_csv(out, index=False)
    return out


def _one_value(frame: pd.DataFrame) -> None:
    """One record's value changes: it leaves its group and forms one of 1."""
    frame.at[10, "SALES"] = str(float(str(frame.at[10, "SALES"])) * 1.001)


def _group_value(frame: pd.DataFrame) -> None:
    """Every record of one group releases another value: no longer its mean."""
    value = str(frame.at[10, "SALES"])
    frame.loc[frame["SALES"] == value, "SALES"] = str(float(value) * 1.001)


def _move_record(frame: pd.DataFrame) -> None:
    """Record 0 takes the released values of the group record 500 is in."""
    frame.iloc[0] = frame.iloc[500]


def _unmasked(frame: pd.DataFrame) -> None:
    del frame["NET.PROFIT"]


@pytest.mark.parametrize(
    ("change", "finding"),
    [
        (_one_value, "the group of row 11 has 1 record"),
        (_group_value, "column 'SALES': the group of rows"),
        (_move_record, "have fewer than k = 3 records"),
        (_unmasked, "column 'NET.PROFIT' of the input is missing from the release"),
        (lambda f: f.drop(index=[5]), "release has 833 rows, the input 834"),
    ],
)
def test_tampered_tarragona_is_caught(
    tarragona_run: tuple[Path, Path], tmp_path: Path, change: object, finding: str
) -> None:
    report, release = tarragona_run
    bad = _tampered(release, tmp_path, change)
    result = verify_report(report, release=bad)
    assert not result.ok and any(finding in f for f in result.findings), result.findings
    code, text = _verify_cli(report, bad)
    assert code == 1 and "does not hold" in text and len(text.strip().splitlines()) == 1


def _mixed() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    n = 60
    return pd.DataFrame(
        {
            "x": rng.normal(50, 10, n).round(2),
            "y": rng.integers(0, 1000, n),
            "colour": rng.choice(["red", "green", "blue"], n),
            "grade": rng.choice(["low", "mid", "high", "top"], n),
            "size": rng.choice(["9", "10", "11", "100"], n),  # numeric order is not text order
            "note": [f"n{i}" for i in range(n)],
        }
    )


ORDERS = {"grade": ["low", "mid", "high", "top"]}


def _mixed_release(k: int = 4) -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = _mixed()
    result = microaggregate(
        frame, ["x", "y"], k, nominal=["colour"], ordinal=["grade", "size"], orders=ORDERS
    )
    return _text(frame), _text(result.masked)


def _check(original: pd.DataFrame, release: pd.DataFrame, k: int = 4) -> list[str]:
    return check_microaggregation(
        original,
        release,
        k,
        numeric=["x", "y"],
        nominal=["colour"],
        ordinal=["grade", "size"],
        orders=ORDERS,
    )


def test_mixed_release_holds() -> None:
    original, release = _mixed_release()
    assert _check(original, release) == []


def _group_rows(release: pd.DataFrame) -> list[int]:
    """The rows of the first released group."""
    key = release[["x", "y", "colour", "grade", "size"]].apply(tuple, axis=1)
    return [int(i) for i in np.flatnonzero(key == key.iloc[0])]


def test_wrong_mode_median_and_pass_through_are_caught() -> None:
    original, release = _mixed_release()
    rows = _group_rows(release)
    assert len(rows) >= 4
    counts = original.loc[rows, "colour"].value_counts()
    # the least held colour of a group of >= 4 records with 3 colours is no mode
    least = min(sorted(set(original["colour"])), key=lambda v: counts.get(v, 0))
    for column, value, finding in (
        ("colour", least, "not a mode"),
        (
            "grade",
            next(v for v in ORDERS["grade"] if v != release.loc[rows[0], "grade"]),
            "lower median",
        ),
        ("size", next(v for v in ("9", "10") if v != release.loc[rows[0], "size"]), "lower median"),
    ):
        wrong = release.copy()
        wrong.loc[rows, column] = value
        problems = _check(original, wrong)
        assert any(f"column '{column}'" in p and finding in p for p in problems), problems
    wrong = release.copy()
    wrong.loc[3, "note"] = "changed"
    assert any(
        "column 'note' is not masked but changed: row 4" in p for p in _check(original, wrong)
    )


def test_text_order_would_be_wrong_for_numbers() -> None:
    """'size' is ordered 9 < 10 < 11 < 100; in text order the median would often differ."""
    original = pd.DataFrame({"size": ["9", "10", "100", "11", "9", "100"]})
    release = pd.DataFrame({"size": ["10", "10", "10", "100", "100", "100"]})
    # groups {9, 10, 100} -> lower median 10; {11, 9, 100} -> lower median 11, not 100
    problems = check_microaggregation(original, release, 3, ordinal=["size"])
    assert len(problems) == 1 and "lower median of its 3 originals is '11'" in problems[0]
    release.loc[3:, "size"] = "11"
    assert check_microaggregation(original, release, 3, ordinal=["size"]) == []


def test_coinciding_groups_are_checked_as_their_union() -> None:
    """Two groups releasing the same values pass when each part is right."""
    original = pd.DataFrame(
        {
            "x": ["1", "2", "3", "0", "2", "4"],
            "c": ["a", "a", "b", "a", "c", "a"],
            "o": ["1", "2", "3", "2", "2", "5"],
        }
    )
    release = pd.DataFrame({"x": ["2.0"] * 6, "c": ["a"] * 6, "o": ["2"] * 6})
    assert (
        check_microaggregation(original, release, 3, numeric=["x"], nominal=["c"], ordinal=["o"])
        == []
    )
    # even-sized parts: {1, 2, 3, 4} and {2, 9} both have lower median 2, so has the union
    original = pd.DataFrame({"o": ["1", "2", "3", "4", "2", "9"]})
    release = pd.DataFrame({"o": ["2"] * 6})
    assert check_microaggregation(original, release, 2, ordinal=["o"]) == []


def test_tied_modes_are_all_accepted() -> None:
    original = pd.DataFrame({"c": ["x", "y", "y", "x"]})
    for value in ("x", "y"):
        assert (
            check_microaggregation(original, pd.DataFrame({"c": [value] * 4}), 2, nominal=["c"])
            == []
        )
    problems = check_microaggregation(original, pd.DataFrame({"c": ["z"] * 4}), 2, nominal=["c"])
    assert problems and "held by 0 of its originals" in problems[0]


def test_mean_tolerance_is_relative_to_the_group() -> None:
    """Cancellation: values 1e6 and -1e6 + 0.001 have a tiny mean, known only to ~1e-10."""
    original = pd.DataFrame({"x": ["1000000", "-999999.999"]})
    exact = (1e6 + -999999.999) / 2
    assert (
        check_microaggregation(original, pd.DataFrame({"x": [repr(exact)] * 2}), 2, numeric=["x"])
        == []
    )
    off = pd.DataFrame({"x": [repr(exact + 1e-2)] * 2})
    assert check_microaggregation(original, off, 2, numeric=["x"])


def test_report_of_a_mixed_run(tmp_path: Path) -> None:
    """Through the CLI with --nominal, --ordinal and --order; the report holds the order."""
    frame = _mixed()
    data = tmp_path / "mixed.csv"
    frame.to_csv(data, index=False)
    release, report = tmp_path / "rel.csv", tmp_path / "rep.json"
    result = runner.invoke(
        app,
        [
            "microaggregate",
            str(data),
            "--columns",
            "x,y",
            "--nominal",
            "colour",
            "--ordinal",
            "grade,size",
            "--order",
            "grade=low,mid,high,top",
            "--identifying",
            "note",
            "--k",
            "4",
            "--output",
            str(release),
            "--report",
            str(report),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert verify_report(report).ok
    saved = json.loads(report.read_text())
    assert saved["parameters"]["orders"] == ORDERS
    frame_out = pd.read_csv(release, dtype=str)
    assert "note" not in frame_out.columns  # identifying: dropped, and must stay out
    frame_out.assign(note=frame["note"]).to_csv(tmp_path / "with_id.csv", index=False)
    code, text = _verify_cli(report, tmp_path / "with_id.csv")
    assert code == 1 and "identifying column 'note' is in the release" in text
    rows = _group_rows(frame_out)
    frame_out.loc[rows, "grade"] = "top" if frame_out.loc[rows[0], "grade"] != "top" else "low"
    frame_out.to_csv(tmp_path / "bad.csv", index=False)
    code, text = _verify_cli(report, tmp_path / "bad.csv")
    assert code == 1 and "column 'grade'" in text


@settings(max_examples=25, deadline=None)
@given(st.integers(6, 40), st.integers(2, 4), st.integers(0, 2**31 - 1))
def test_every_mdav_release_holds(n: int, k: int, seed: int) -> None:
    """Random mixed tables with many ties: MDAV's release always passes."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "x": rng.integers(0, 4, n).astype(float) * 0.1,
            "y": rng.normal(0, 1e6, n),
            "c": rng.choice(["a", "b", "c"], n),
            "o": rng.choice(["1", "2", "3", "10"], n),
        }
    )
    if frame["x"].nunique() < 2:
        frame.loc[0, "x"] = 7.0
    result = microaggregate(frame, ["x", "y"], min(k, n), nominal=["c"], ordinal=["o"])
    problems = check_microaggregation(
        _text(frame),
        _text(result.masked),
        min(k, n),
        numeric=["x", "y"],
        nominal=["c"],
        ordinal=["o"],
    )
    assert problems == []
