"""``anonlab risk``: the command, its report, its warnings and its one-line errors."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import ReleaseRiskWarning
from anonlab.risk import measure_risk
from anonlab.risk.release import KNOWLEDGE_GIVEN, KNOWLEDGE_QI
from anonlab.runs.risk import run_risk

runner = CliRunner()
TESTDATA_KEYS = "urbrur,water,sex,age"


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def test_risk_writes_the_report(data_dir: Path, tmp_path: Path) -> None:
    report = tmp_path / "risk.json"
    table = data_dir / "sdc" / "testdata.csv"
    code, out = _run(
        [
            "risk",
            str(table),
            "--qi",
            TESTDATA_KEYS,
            "--attacker-columns",
            TESTDATA_KEYS,
            "--sensitive",
            "roof,walls",
            "--other",
            "insensitive",
            "--weights",
            "sampling_weight",
            "--sampling-fraction",
            "0.01",
            "--risk-threshold",
            "0.09",
            "--report",
            str(report),
        ]
    )
    assert code == 0, out
    assert "prosecutor highest" in out and "ReleaseRiskWarning" in out
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["command"] == "risk" and data["paths"] == "relative to the report's folder"
    assert data["attacker_knowledge"] == KNOWLEDGE_GIVEN
    risk = data["risk"]
    assert set(risk) >= {
        "attacker_columns",
        "records",
        "suppressed",
        "classes",
        "prosecutor",
        "journalist",
        "marketer",
        "sample_uniques",
        "population_uniques",
        "individual_risk",
        "sensitive",
    }
    assert list(risk["prosecutor"]["records_at_risk"]) == ["0.2", "0.1", "0.05", "0.09"]
    assert set(risk["sensitive"]) == {"roof", "walls"}
    # the same figures as the library gives
    frame = pd.read_csv(table, dtype=str)
    direct = measure_risk(
        frame,
        TESTDATA_KEYS.split(","),
        sensitive=["roof", "walls"],
        weights="sampling_weight",
        sampling_fraction=0.01,
        thresholds=[0.2, 0.1, 0.05, 0.09],
    )
    assert json.loads(json.dumps(direct)) == risk
    assert len(data["warnings"]) >= 2


def test_the_attacker_knows_the_qi_and_nothing_else(data_dir: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    code, out = _run(
        [
            "risk",
            str(data_dir / "adult" / "adult.csv"),
            "--qi",
            "sex,age,race",
            "--sensitive",
            "salary-class",
            "--other",
            "insensitive",
            "--report",
            str(report),
            "--quiet",
        ]
    )
    assert code == 0, out
    assert out.strip() == "" or "ReleaseRiskWarning" in out
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["attacker_knowledge"] == KNOWLEDGE_QI
    assert data["risk"]["attacker_columns"] == ["sex", "age", "race"]
    assert data["roles"]["other"] == [
        "marital-status",
        "education",
        "native-country",
        "workclass",
        "occupation",
    ]


def test_hierarchy_flag_gives_hierarchical_t(data_dir: Path, tmp_path: Path) -> None:
    hierarchy = data_dir / "adult" / "hierarchy_salary-class.csv"
    report = tmp_path / "r.json"
    code, out = _run(
        [
            "risk",
            str(data_dir / "adult" / "adult.csv"),
            "--qi",
            "sex,race",
            "--sensitive",
            "salary-class",
            "--other",
            "insensitive",
            "--hierarchy",
            f"salary-class={hierarchy}",
            "--report",
            str(report),
            "--quiet",
        ]
    )
    assert code == 0, out
    figures = json.loads(report.read_text(encoding="utf-8"))["risk"]["sensitive"]["salary-class"]
    assert figures["t_hierarchical"] == pytest.approx(figures["t_equal"])  # height-1 hierarchy


def test_python_api_issues_release_risk_warnings(data_dir: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = run_risk(
            data_dir / "adult" / "adult.csv",
            ["sex", "age"],
            sensitive=["salary-class"],
            other="insensitive",
        )
    assert result.written == []
    risk_warnings = [w for w in caught if issubclass(w.category, ReleaseRiskWarning)]
    assert len(risk_warnings) == len(result.report["warnings"]) == 3


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--qi", "nope"], "Error: --qi names columns the table does not have: nope"),
        (["--qi", "sex", "--sensitive", "sex"], "Error: --qi and sensitive both name sex"),
        (["--qi", "sex", "--population", "10"], "Error: --population must be at least"),
        (
            ["--qi", "sex", "--population", "100000", "--sampling-fraction", "0.1"],
            "Error: --population and sampling_fraction are both given",
        ),
        (["--qi", "sex", "--risk-threshold", "2"], "Error: --risk-threshold must lie in (0, 1]"),
        (["--qi", "sex", "--hierarchy", "salary-class"], "Error: --hierarchy takes COLUMN=FILE"),
        (
            ["--qi", "sex", "--attacker-columns", "sex,race", "--weights", "race"],
            "Error: --weights column 'race' is also",
        ),
        (["--qi", "sex", "--weights", "race"], "Error: --weights column 'race' holds 'White'"),
    ],
)
def test_user_errors_are_one_line_with_exit_2(
    data_dir: Path, tmp_path: Path, extra: list[str], message: str
) -> None:
    report = tmp_path / "r.json"
    code, out = _run(
        [
            "risk",
            str(data_dir / "adult" / "adult.csv"),
            *extra,
            "--other",
            "insensitive",
            "--report",
            str(report),
        ]
    )
    assert code == 2
    assert out.strip().startswith(message), out
    assert len(out.strip().splitlines()) == 1
    assert not report.exists()


def test_a_folder_as_report_writes_nothing(data_dir: Path, tmp_path: Path) -> None:
    code, out = _run(
        ["risk", str(data_dir / "adult" / "adult.csv"), "--qi", "sex", "--report", str(tmp_path)]
    )
    assert code == 2 and "is a folder" in out
    assert list(tmp_path.iterdir()) == []


def test_suppressed_rows_are_counted_not_measured(tmp_path: Path) -> None:
    table = tmp_path / "t.csv"
    pd.DataFrame(
        {
            "a": ["x", "x", "*", "y", "y"],
            "b": ["1", "1", "*", "2", "2"],
            "s": ["u", "v", "u", "u", "v"],
        }
    ).to_csv(table, index=False)
    report = tmp_path / "r.json"
    code, out = _run(
        ["risk", str(table), "--qi", "a,b", "--sensitive", "s", "--report", str(report)]
    )
    assert code == 0, out
    risk = json.loads(report.read_text(encoding="utf-8"))["risk"]
    assert risk["suppressed"] == 1 and risk["records"] == 4
    assert risk["prosecutor"]["highest"] == 0.5
