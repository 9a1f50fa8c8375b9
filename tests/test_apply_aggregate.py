"""``anonlab apply`` of a report with aggregated quasi-identifiers (``aggregate_qi``, issue
24): applied at the report's own transformation it writes the generalize run's release byte
for byte (clustered, unclustered, either rule for missing values); a node of the report's
alternatives gets its own classes' aggregates, those of a generalize run fixed at that node;
``anonlab verify`` re-checks the apply report; an engine run is refused in one line.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from anonlab.errors import AnonlabError
from anonlab.runs.apply import run_apply
from anonlab.runs.generalize import run_generalize
from anonlab.runs.generalize_settings import ApplySettings, GeneralizeSettings
from anonlab.verify.report import verify_report

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult"
# the levels of tests/test_aggregate_qi.py's LEVEL1 (age in 5-year bands)
LEVELS = {
    "sex": 0,
    "age": 1,
    "race": 1,
    "marital-status": 1,
    "education": 3,
    "native-country": 2,
    "workclass": 2,
    "occupation": 2,
}
# Adult's releases have classes of one salary class: the runs warn of it, as they should
pytestmark = pytest.mark.filterwarnings("ignore::anonlab.errors.ReleaseRiskWarning")


def _with_missing_ages(tmp_path: Path) -> Path:
    """Adult with every 7th age blank (a missing value), written as a CSV."""
    table = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str, keep_default_na=False)
    table.loc[table.index % 7 == 3, "age"] = ""
    path = tmp_path / "adult_missing.csv"
    table.to_csv(path, sep=";", index=False)
    return path


def _generalize(
    tmp_path: Path,
    name: str,
    table: Path,
    qi: dict[str, str],
    bounds: dict[str, int],
    aggregate_qi: dict[str, str],
    **extra: object,
) -> Path:
    """Run generalize on ``table`` with ``bounds`` as both level bounds; the report's path."""
    run_generalize(
        GeneralizeSettings(
            input=str(table),
            delimiter=";",
            qi=qi,
            sensitive=["salary-class"],
            k=5,
            suppression=0.01,
            metric="precision_with_suppression",
            min_level=bounds,
            max_level=bounds,
            aggregate_qi=aggregate_qi,
            output=str(tmp_path / f"{name}.csv"),
            report=str(tmp_path / f"{name}.json"),
            **extra,  # type: ignore[arg-type]
        )
    )
    return tmp_path / f"{name}.json"


def _apply(tmp_path: Path, report: Path, table: Path, name: str, **extra: object) -> Path:
    run_apply(
        ApplySettings(
            report_in=str(report),
            input=str(table),
            delimiter=";",
            output=str(tmp_path / f"{name}.csv"),
            report=str(tmp_path / f"{name}.json"),
            **extra,  # type: ignore[arg-type]
        )
    )
    return tmp_path / f"{name}.csv"


def _qi(clustered: bool) -> dict[str, str]:
    qi = {c: str(ADULT / f"hierarchy_{c}.csv") for c in LEVELS}
    if not clustered:
        qi["age"] = ""
    return qi


@pytest.mark.parametrize(
    ("clustered", "function", "missing"),
    [
        (True, "mean", "ignore"),
        (True, "median", "ignore"),
        (True, "mode", "ignore"),
        (False, "median", "ignore"),
        (False, "mean", "zero"),
    ],
)
def test_apply_at_the_report_transformation_is_the_generalize_release(
    tmp_path: Path, clustered: bool, function: str, missing: str
) -> None:
    # the age hierarchy has no missing value: blank ages only where age is not generalized
    table = ADULT / "adult.csv" if clustered else _with_missing_ages(tmp_path)
    bounds = dict(LEVELS) if clustered else {c: v for c, v in LEVELS.items() if c != "age"}
    report = _generalize(
        tmp_path,
        "gen",
        table,
        _qi(clustered),
        bounds,
        {"age": function},
        aggregate_missing=missing,
    )
    released = (tmp_path / "gen.csv").read_bytes()
    applied = _apply(tmp_path, report, table, "app")
    assert applied.read_bytes() == released
    written = pd.read_csv(applied, dtype=str, keep_default_na=False)
    labels = written["age"].tolist()
    assert all(a.isdigit() for a in labels if a not in ("*", ""))  # aggregates, not bands
    assert verify_report(tmp_path / "app.json").ok
    # a class's aggregate moved by one year is found from the apply report's files alone
    row = next(i for i, a in enumerate(labels) if a not in ("*", ""))
    shifted = str(round(float(labels[row])) + 1)
    written["age"] = [shifted if a == labels[row] else a for a in labels]
    written.to_csv(applied, index=False)
    assert not verify_report(tmp_path / "app.json").ok


def test_a_node_of_the_alternatives_gets_its_classes_aggregates(tmp_path: Path) -> None:
    table = ADULT / "adult.csv"
    others = {c: v for c, v in LEVELS.items() if c != "age"}
    qi = _qi(True)
    # age free: the alternatives differ in age's level
    report = _generalize(tmp_path, "gen", table, qi, others, {"age": "mean"}, alternatives=3)
    import json

    alternatives = json.loads(report.read_text(encoding="utf-8"))["alternatives"]
    assert len(alternatives) >= 2
    node = alternatives[1]
    applied = _apply(tmp_path, report, table, "node", node=node["node"])
    # the same as a generalize run fixed at that node's levels
    fixed = _generalize(tmp_path, "fixed", table, qi, node["levels"], {"age": "mean"})
    assert fixed.exists()
    assert applied.read_bytes() == (tmp_path / "fixed.csv").read_bytes()
    assert verify_report(tmp_path / "node.json").ok
    # and not the optimum's release when the two levels of age differ
    if node["levels"]["age"] != alternatives[0]["levels"]["age"]:
        assert applied.read_bytes() != (tmp_path / "gen.csv").read_bytes()


def test_an_engine_apply_of_an_aggregating_report_is_refused(tmp_path: Path) -> None:
    table = ADULT / "adult.csv"
    report = _generalize(tmp_path, "gen", table, _qi(True), dict(LEVELS), {"age": "mean"})
    with pytest.raises(AnonlabError, match="aggregate_qi") as caught:
        _apply(tmp_path, report, table, "dask", engine="dask")
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "dask.csv").exists()
