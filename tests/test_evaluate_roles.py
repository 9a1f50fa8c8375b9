"""``evaluate`` takes microaggregate's roles (issue 20): a release that dropped an identifying
column is scored with the same options, in memory and on an engine, from the CLI and Python."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError, ReleaseRiskWarning
from anonlab.metrics.em4adom import MissingColumnError
from anonlab.runs.microaggregate import (
    EvaluateSettings,
    MicroaggregateSettings,
    run_evaluate,
    run_microaggregate,
)

runner = CliRunner()
ROLES = ["--identifying", "rownames", "--insensitive", "maritl"]


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


@pytest.fixture
def census(tmp_path: Path) -> Path:
    """A Wage-like table: a numeric row id, four numeric QIs, a text column."""
    rng = np.random.default_rng(20)
    n = 300
    wage = np.round(np.exp(rng.normal(4.6, 0.35, n)), 4)
    frame = pd.DataFrame(
        {
            "rownames": np.arange(1, n + 1) * 7,
            "year": rng.integers(2003, 2010, n),
            "age": rng.integers(18, 81, n),
            "wage": wage,
            "logwage": np.round(np.log(wage), 6),
            "maritl": rng.choice(["1. Never Married", "2. Married"], n),
        }
    )
    path = tmp_path / "wage.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture
def masked(census: Path, tmp_path: Path) -> Path:
    """Its microaggregated release, which drops the identifying ``rownames``."""
    out = tmp_path / "wage_k3.csv"
    code, text = _run(
        [
            "microaggregate",
            str(census),
            "--columns",
            "all-numeric",
            *ROLES,
            "--k",
            "3",
            "--output",
            str(out),
            "--quiet",
            "--max-risk",
            "1",
        ]
    )
    assert code == 0, text
    assert "rownames" not in pd.read_csv(out).columns
    return out


def test_evaluate_without_roles_names_both_fixes(
    census: Path, masked: Path, tmp_path: Path
) -> None:
    report = tmp_path / "e.json"
    code, text = _run(["evaluate", str(census), str(masked), "--report", str(report)])
    assert code == 2 and not report.exists()
    assert text.strip() == (
        "Error: column 'rownames' of the original is missing from the masked table: if the "
        "release dropped it, leave it out with --identifying rownames, or name the measured "
        "columns with --columns"
    )


@pytest.mark.parametrize("engine", [[], ["--block-rows", "100"]], ids=["memory", "engine"])
def test_evaluate_takes_the_microaggregate_roles(
    census: Path, masked: Path, tmp_path: Path, engine: list[str]
) -> None:
    report = tmp_path / "e.json"
    code, text = _run(
        ["evaluate", str(census), str(masked), *ROLES, *engine, "--report", str(report), "--quiet"]
    )
    assert code == 0, text
    out = json.loads(report.read_text())
    assert out["columns"] == ["year", "age", "wage", "logwage"]
    assert out["roles"] == {
        "rownames": "identifying",
        "year": "quasi",
        "age": "quasi",
        "wage": "quasi",
        "logwage": "quasi",
        "maritl": "insensitive",
    }
    assert out["insensitive_by_other"] == [] and out["other"] == "insensitive"
    assert 0 < out["measures"]["IL"] < 1 and 0 < out["measures"]["DLD"] <= 1


@pytest.mark.parametrize("engine", [[], ["--block-rows", "100"]], ids=["memory", "engine"])
def test_a_column_no_role_names_is_not_measured(
    census: Path, masked: Path, tmp_path: Path, engine: list[str]
) -> None:
    report = tmp_path / "e.json"
    code, text = _run(
        [
            "evaluate",
            str(census),
            str(masked),
            "--identifying",
            "rownames",
            *engine,
            "--report",
            str(report),
            "--quiet",
        ]
    )
    assert code == 0, text
    out = json.loads(report.read_text())
    assert out["insensitive_by_other"] == ["maritl"]
    assert "maritl" not in out["columns"]


def test_engine_refuses_an_unknown_role_name_before_any_pass(
    census: Path, masked: Path, tmp_path: Path
) -> None:
    report = tmp_path / "e.json"
    code, text = _run(
        [
            "evaluate",
            str(census),
            str(masked),
            "--identifying",
            "row_names",
            "--block-rows",
            "100",
            "--report",
            str(report),
        ]
    )
    assert code == 2 and not report.exists()
    assert text.startswith("Error: unknown column 'row_names' (given as identifying)"), text


def test_python_api_takes_the_same_roles(census: Path, tmp_path: Path) -> None:
    settings = MicroaggregateSettings(
        input=str(census),
        identifying=["rownames"],
        insensitive=["maritl"],
        k=3,
        output=str(tmp_path / "m.csv"),
        max_risk=1.0,
    )
    with warnings.catch_warnings():  # its risk warnings are not what is tested here
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        run_microaggregate(settings)
    common = {"original": str(census), "masked": str(tmp_path / "m.csv")}
    with pytest.raises(MissingColumnError) as missing:
        run_evaluate(EvaluateSettings.model_validate(common))
    assert missing.value.column == "rownames"
    assert "leave it out with identifying=['rownames']" in str(missing.value)
    result = run_evaluate(EvaluateSettings.model_validate({**common, "identifying": "rownames"}))
    assert result.report["columns"] == ["year", "age", "wage", "logwage"]
    with pytest.raises(AnonlabError, match="maritl"):  # other=None: refused, as a release is
        run_evaluate(
            EvaluateSettings.model_validate({**common, "identifying": ["rownames"], "other": None})
        )
