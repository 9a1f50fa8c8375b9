"""Aggregated quasi-identifiers (``generalize --aggregate-qi``, issue 24): the released cells
against ARX 3.9.2's (``tests/data/arx_aggregate_qi``, made with
``benchmarks/arx/ArxAggregate.java``), missing values as ARX treats them, the three
recodings, the independent checker against tampered releases, ``anonlab verify``, the
settings and their refusals.
"""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.generalize import Generalizer
from anonlab.generalize_aggregate import (
    aggregate_classes,
    arx_bucket_order,
    java_double_text,
    java_round,
)
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import GeneralizeSettings, parse_aggregate_flags
from anonlab.verify.aggregation import check_aggregates, check_within_classes
from anonlab.verify.report import verify_report

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult"
REFERENCE = ROOT / "tests" / "data" / "arx_aggregate_qi"
QIS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
]
FUNCTIONS = ["mean", "geometric", "median", "mode", "interval"]
# Adult's release at k = 5 has classes of one salary class: the run warns of it, as it should
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")


def _hierarchies() -> dict[str, str]:
    return {c: str(ADULT / f"hierarchy_{c}.csv") for c in QIS}


@lru_cache(maxsize=1)
def _adult() -> pd.DataFrame:
    return pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str, keep_default_na=False)


@lru_cache(maxsize=1)
def _adult_release() -> pd.DataFrame:
    """Adult at k = 5, 1 % suppression: the release before any aggregate."""
    g = Generalizer(k=5, suppression=0.01, metric="precision_with_suppression")
    release = g.fit_transform(_adult(), _hierarchies(), sensitive=["salary-class"])
    assert g.transformation_ == {
        "sex": 0,
        "age": 4,
        "race": 0,
        "marital-status": 1,
        "education": 3,
        "native-country": 2,
        "workclass": 0,
        "occupation": 1,
    }
    out: pd.DataFrame = release.reset_index(drop=True)
    return out


@lru_cache(maxsize=1)
def _arx_adult() -> pd.DataFrame:
    with gzip.open(REFERENCE / "adult_k5_age.csv.gz", "rt", encoding="utf-8") as fh:
        return pd.read_csv(fh, sep=";", dtype=str, keep_default_na=False)


@pytest.mark.parametrize("function", FUNCTIONS)
def test_adult_release_is_arx_output_cell_for_cell(function: str) -> None:
    released = aggregate_classes(_adult_release(), _adult(), QIS, {"age": function})
    arx = _arx_adult()[function]
    assert len(released) == len(arx) == 30162
    assert released["age"].astype(str).tolist() == arx.tolist()
    # the other columns are the generalized release's
    for column in QIS:
        if column != "age":
            assert released[column].astype(str).tolist() == (
                _adult_release()[column].astype(str).tolist()
            )


@pytest.mark.parametrize("table", ["data", "data2"])
def test_missing_values_as_arx(table: str) -> None:
    reference = json.loads((REFERENCE / "missing.json").read_text(encoding="utf-8"))["tables"]
    entry = reference[table]
    original = pd.DataFrame(
        {"age": ["" if a == "NULL" else a for a in entry["age"]], "sex": entry["sex"]}
    )
    labelled = original.assign(age="*")
    for key, expected in entry["arx"].items():
        function, missing = key.split(":")
        out = aggregate_classes(
            labelled, original, ["age", "sex"], {"age": function}, missing=missing
        )
        got = ["NULL" if v == "" else v for v in out["age"].astype(str)]
        problems = check_aggregates(
            original, out, labelled, ["age", "sex"], {"age": function}, missing
        )
        assert problems == []
        if expected == "NullPointerException":  # ARX stops: the class is released missing
            assert got[0] == "NULL"
        else:
            assert got == expected, key


def test_functions_on_a_small_table() -> None:
    labelled = pd.DataFrame(
        {"age": ["[20, 30[", "[20, 30[", "[20, 30[", "[20, 30[", "*"], "sex": ["M"] * 4 + ["*"]}
    )
    original = pd.DataFrame({"age": ["21", "22", "22", "28", "50"], "sex": ["M"] * 5})
    want = {
        "mean": "23",  # 93 / 4 = 23.25
        "geometric": "23",  # exp(mean(log(x + 1))) - 1 = 23.07...
        "median": "22",
        "mode": "22",
        "interval": "[21, 28]",
    }
    for function, value in want.items():
        out = aggregate_classes(labelled, original, ["age", "sex"], {"age": function})
        assert out["age"].astype(str).tolist() == [value] * 4 + ["*"], function
    decimals = original.assign(age=["21.5", "22", "22", "28", "50"])
    out = aggregate_classes(labelled, decimals, ["age", "sex"], {"age": "mean"})
    assert out["age"].astype(str).tolist()[0] == "23.375"
    out = aggregate_classes(labelled, decimals, ["age", "sex"], {"age": "interval"})
    assert out["age"].astype(str).tolist()[0] == "[21.5, 28.0]"


def test_java_number_rules() -> None:
    assert [java_round(x) for x in (2.5, -2.5, 2.4999, 3.5)] == [3, -2, 2, 4]
    assert java_double_text(38.0) == "38.0"
    assert java_double_text(0.001) == "0.001"
    assert java_double_text(1.5e-4) == "1.5E-4"
    assert java_double_text(1e7) == "1.0E7"
    assert java_double_text(1234567.5) == "1234567.5"
    assert java_double_text(-0.25) == "-0.25"


def test_arx_bucket_order() -> None:
    # home slot code mod 8, the next free slot on a collision
    assert arx_bucket_order([9, 1, 3]) == [9, 1, 3]
    assert arx_bucket_order([3, 1, 9]) == [1, 9, 3]
    # a seventh code grows the table to 16 slots, every code placed again in slot order
    assert arx_bucket_order([15, 7, 0, 1, 2, 3, 4]) == [0, 1, 2, 3, 4, 7, 15]


def test_checker_catches_tampering() -> None:
    original = _adult()
    labelled = _adult_release()
    for function in FUNCTIONS:
        released = aggregate_classes(labelled, original, QIS, {"age": function})
        assert check_aggregates(original, released, labelled, QIS, {"age": function}) == []
        assert check_within_classes(original, released, QIS, {"age": function}) == []
    released = aggregate_classes(labelled, original, QIS, {"age": "mean"})
    ages = released["age"].astype(str).tolist()
    row = next(i for i, a in enumerate(ages) if a != "*")
    one_cell = released.assign(age=[*ages[:row], str(int(ages[row]) + 1), *ages[row + 1 :]])
    problems = check_aggregates(original, one_cell, labelled, QIS, {"age": "mean"})
    assert "holds several values" in problems[0]
    # the whole class moved by one: one value per class, but not its mean
    same_class = (labelled[QIS].astype(str) == labelled[QIS].astype(str).iloc[row]).all(axis=1)
    moved = released.assign(
        age=[str(int(a) + 1) if same_class.iloc[i] else a for i, a in enumerate(ages)]
    )
    problems = check_aggregates(original, moved, labelled, QIS, {"age": "mean"})
    assert f"row {row + 1}: released '{int(ages[row]) + 1}', expected {ages[row]}" in problems[0]
    star = next(i for i, a in enumerate(ages) if a == "*")
    unsuppressed = released.assign(age=[*ages[:star], "40", *ages[star + 1 :]])
    problems = check_aggregates(original, unsuppressed, labelled, QIS, {"age": "mean"})
    assert "suppressed" in problems[0]
    far = released.assign(age=["200" if a != "*" else a for a in ages])
    assert check_within_classes(original, far, QIS, {"age": "mean"})


def _settings(tmp_path: Path, **extra: object) -> GeneralizeSettings:
    return GeneralizeSettings(
        input=str(ADULT / "adult.csv"),
        delimiter=";",
        qi=_hierarchies(),
        sensitive=["salary-class"],
        k=5,
        suppression=0.01,
        metric="precision_with_suppression",
        output=str(tmp_path / "release.csv"),
        report=str(tmp_path / "report.json"),
        **extra,  # type: ignore[arg-type]
    )


def test_run_full_domain_writes_arx_values_and_verify_rechecks(tmp_path: Path) -> None:
    settings = _settings(tmp_path, aggregate_qi={"age": "median"})
    result = run_generalize(settings)
    written = pd.read_csv(tmp_path / "release.csv", dtype=str, keep_default_na=False)
    assert written["age"].tolist() == _arx_adult()["median"].tolist()
    assert result.report["verified"] is True
    assert result.report["parameters"]["aggregate_qi"] == {"age": "median"}
    assert verify_report(tmp_path / "report.json").ok
    # a tampered aggregate is found by `anonlab verify`
    ages = written["age"].tolist()
    row = next(i for i, a in enumerate(ages) if a != "*")
    written.loc[row, "age"] = str(int(ages[row]) + 3)
    written.to_csv(tmp_path / "release.csv", index=False)
    found = verify_report(tmp_path / "report.json")
    assert not found.ok
    assert "age" in found.findings[0]


def test_report_of_a_run_without_aggregates_is_unchanged(tmp_path: Path) -> None:
    params = _settings(tmp_path).model_dump()
    assert "aggregate_qi" not in params
    assert "aggregate_missing" not in params


@pytest.mark.parametrize("recoding", ["mondrian", "local"])
def test_other_recodings(tmp_path: Path, recoding: str) -> None:
    qi = _hierarchies()
    values: dict[str, object] = {
        "input": str(ADULT / "adult.csv"),
        "delimiter": ";",
        "sensitive": ["salary-class"],
        "recoding": recoding,
        "aggregate_qi": {"age": "mean"},
        "output": str(tmp_path / "release.csv"),
        "report": str(tmp_path / "report.json"),
    }
    if recoding == "mondrian":
        values.update(qi={**qi, "age": ""}, k=10)
    else:
        values.update(qi=qi, k=5, suppression=0.01, metric="loss")
    result = run_generalize(GeneralizeSettings(**values))  # type: ignore[arg-type]
    assert result.report["verified"] is True
    assert verify_report(tmp_path / "report.json").ok
    written = pd.read_csv(tmp_path / "release.csv", dtype=str, keep_default_na=False)
    assert all(a == "*" or a.isdigit() for a in written["age"])
    # within the classes of the other labels and the released mean, the mean lies between
    # the smallest and the largest original age
    written["original"] = _adult()["age"].astype(int)
    kept = written[written["age"] != "*"]
    others = [c for c in QIS if c != "age"]
    for (*_, age), group in kept.groupby([*others, "age"]):
        assert group["original"].min() <= int(str(age)) <= group["original"].max()
    # a tampered mean outside its class's values is found from the files alone
    first = kept.index[0]
    written.loc[first, "age"] = "500"
    written.drop(columns="original").to_csv(tmp_path / "release.csv", index=False)
    assert not verify_report(tmp_path / "report.json").ok


def test_mondrian_interval_is_the_partition_range(tmp_path: Path) -> None:
    frame = _adult()
    hierarchies: dict[str, object] = dict(_hierarchies())
    hierarchies["age"] = None
    plain = Generalizer(k=10, recoding="mondrian").fit_transform(
        frame,
        hierarchies,  # type: ignore[arg-type]
        sensitive=["salary-class"],
    )
    interval = Generalizer(k=10, recoding="mondrian", aggregate_qi={"age": "interval"})
    aggregated = interval.fit_transform(
        frame,
        hierarchies,  # type: ignore[arg-type]
        sensitive=["salary-class"],
    )
    # Mondrian releases a partition's [lo, hi] (the value itself when lo = hi), ARX's
    # interval always [lo, hi]
    for before, after in zip(plain["age"].astype(str), aggregated["age"].astype(str), strict=True):
        assert after in (before, f"[{before}, {before}]")


def test_settings_and_refusals(tmp_path: Path) -> None:
    assert parse_aggregate_flags(["age=mean", "education=mode,sex=mode"]) == {
        "age": "mean",
        "education": "mode",
        "sex": "mode",
    }
    with pytest.raises(AnonlabError, match="COLUMN=FUNCTION"):
        parse_aggregate_flags(["age"])
    with pytest.raises(AnonlabError, match="choose one of mean, geometric"):
        _settings(tmp_path, aggregate_qi={"age": "average"})
    with pytest.raises(AnonlabError, match="not a quasi-identifier"):
        _settings(tmp_path, aggregate_qi={"salary-class": "mode"})
    with pytest.raises(AnonlabError, match="the engines do not write them"):
        run_generalize(  # full-domain runs there (tests/test_aggregate_engines.py)
            _settings(tmp_path, aggregate_qi={"age": "mean"}).model_copy(
                update={"output": str(tmp_path / "folder") + "/", "recoding": "mondrian"}
            )
        )
    with pytest.raises(AnonlabError, match="needs numbers"):
        run_generalize(_settings(tmp_path, aggregate_qi={"education": "mean"}))
    assert not (tmp_path / "release.csv").exists()
    # mode takes any text
    run_generalize(_settings(tmp_path, aggregate_qi={"education": "mode"}))
    written = pd.read_csv(tmp_path / "release.csv", dtype=str, keep_default_na=False)
    assert set(written["education"]) <= set(_adult()["education"]) | {"*"}


def test_toml_and_cli(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    config = tmp_path / "adult.toml"
    config.write_text(
        (ROOT / "examples" / "adult.toml")
        .read_text(encoding="utf-8")
        .replace('"../data/', f'"{ADULT.parent.as_posix()}/')
        .replace('"../out/adult_k5.csv"', f'"{(tmp_path / "r.csv").as_posix()}"')
        .replace('"../out/adult_k5.json"', f'"{(tmp_path / "r.json").as_posix()}"')
        .replace("verify = true", 'verify = true\naggregate_qi = {age = "interval"}'),
        encoding="utf-8",
    )
    settings = GeneralizeSettings.load(config)
    assert settings.aggregate_qi == {"age": "interval"}
    out = CliRunner().invoke(
        app,
        [
            "generalize",
            "--config",
            str(config),
            "--aggregate-qi",
            "age=geometric",
            "--aggregate-missing",
            "zero",
            "--overwrite",
            "--quiet",
        ],
    )
    assert out.exit_code == 0, out.output
    written = pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False)
    assert written["age"].tolist() == _arx_adult()["geometric"].tolist()  # no age is missing
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["parameters"]["aggregate_qi"] == {"age": "geometric"}
    assert report["parameters"]["aggregate_missing"] == "zero"
    bad = CliRunner().invoke(
        app, ["generalize", "--config", str(config), "--aggregate-qi", "age=avg", "--overwrite"]
    )
    assert bad.exit_code != 0
    assert "Error: " in bad.output and "--aggregate-qi" in bad.output


LEVEL1 = {
    "sex": 0,
    "age": 1,
    "race": 1,
    "marital-status": 1,
    "education": 3,
    "native-country": 2,
    "workclass": 2,
    "occupation": 2,
}


@pytest.mark.parametrize("clustering", [True, False], ids=["clustered", "unclustered"])
@pytest.mark.parametrize("function", ["mean", "median", "mode"])
def test_clustered_and_unclustered_as_arx(tmp_path: Path, clustering: bool, function: str) -> None:
    """ARX's two forms on the levels of LEVEL1 (age in 5-year bands): clustered, age is
    generalized and aggregated in the classes of all eight; unclustered (``qi`` age with no
    hierarchy file), age is not generalized and is aggregated in the classes of the other
    seven, which here are far fewer."""
    qi = {c: str(ADULT / f"hierarchy_{c}.csv") for c in LEVEL1}
    levels = dict(LEVEL1)
    if not clustering:
        qi["age"] = ""
        levels.pop("age")
    settings = GeneralizeSettings(
        input=str(ADULT / "adult.csv"),
        delimiter=";",
        qi=qi,
        sensitive=["salary-class"],
        k=5,
        suppression=0.01,
        metric="precision_with_suppression",
        min_level=levels,
        max_level=levels,
        aggregate_qi={"age": function},
        output=str(tmp_path / "release.csv"),
        report=str(tmp_path / "report.json"),
    )
    result = run_generalize(settings)
    assert result.report["transformation"] == levels
    assert result.report["roles"]["age"] == "quasi"
    written = pd.read_csv(tmp_path / "release.csv", dtype=str, keep_default_na=False)
    with gzip.open(REFERENCE / "adult_k5_age_level1.csv.gz", "rt", encoding="utf-8") as fh:
        arx = pd.read_csv(fh, sep=";", dtype=str, keep_default_na=False)
    form = "clustered" if clustering else "unclustered"
    assert written["age"].tolist() == arx[f"{form}_{function}"].tolist()
    assert verify_report(tmp_path / "report.json").ok
    # a class moved by one year is found again from the files
    ages = written["age"].tolist()
    row = next(i for i, a in enumerate(ages) if a != "*")
    written["age"] = [str(int(a) + 1) if a == ages[row] else a for a in ages]
    written.to_csv(tmp_path / "release.csv", index=False)
    assert not verify_report(tmp_path / "report.json").ok


def test_unclustered_from_python_and_refusals() -> None:
    hierarchies: dict[str, object] = dict(_hierarchies())
    hierarchies["age"] = None
    g = Generalizer(
        k=5, suppression=0.01, metric="precision_with_suppression", aggregate_qi={"age": "mean"}
    )
    release = g.fit_transform(
        _adult(),
        hierarchies,  # type: ignore[arg-type]
        sensitive=["salary-class"],
    )
    assert "age" not in g.transformation_
    labelled = _adult_release()  # age at its top level '*': the same classes either way
    assert release["age"].astype(str).tolist() == _arx_adult()["mean"].tolist()
    assert release["sex"].astype(str).tolist() == labelled["sex"].astype(str).tolist()
    with pytest.raises(AnonlabError, match="has no hierarchy"):
        Generalizer(k=5).fit(_adult(), hierarchies, sensitive=["salary-class"])  # type: ignore[arg-type]
    with pytest.raises(AnonlabError, match="aggregate_qi age=mean"):
        GeneralizeSettings(
            input=str(ADULT / "adult.csv"), qi={**_hierarchies(), "age": ""}, k=5, output="o.csv"
        )
