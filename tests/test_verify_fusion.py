"""`anonlab verify` on a fused table: the example passes, tampering is caught."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.verify import check_fusion, verify_report

runner = CliRunner()
CONFIG = Path(__file__).resolve().parents[1] / "examples" / "fusion" / "fusion.toml"
QID = ["age", "workclass", "marital-status", "race", "sex", "native-country"]


@pytest.fixture(scope="module")
def fused(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``anonlab fuse`` of the bundled two-provider Adult example: (report, release)."""
    folder = tmp_path_factory.mktemp("fusion")
    release, report = folder / "fused.csv", folder / "fused.json"
    result = runner.invoke(
        app, ["fuse", str(CONFIG), "--output", str(release), "--report", str(report), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    return report, release


def test_fused_example_holds(fused: tuple[Path, Path]) -> None:
    report, release = fused
    result = verify_report(report)
    assert result.ok, result.findings
    assert "k=100" in result.summary
    code = runner.invoke(app, ["verify", str(report), "--release", str(release)]).exit_code
    assert code == 0


def _split_a_group(frame: pd.DataFrame) -> None:
    """Three records of one group get an age label of their own: a group of 3 < 100."""
    rows = frame.index[(frame[QID] == frame.loc[0, QID]).all(axis=1)][:3]
    frame.loc[rows, "age"] = "[0, 1)"


@pytest.mark.parametrize(
    ("edit", "finding"),
    [
        (_split_a_group, "groups have fewer than 100 records (smallest 3)"),
        (
            lambda f: f.drop(index=range(10)),
            "the release has 30152 records, the fusion released 30162",
        ),
        (lambda f: f.drop(columns=["race"]), "has no column 'race'"),
    ],
)
def test_tampered_fusion_is_caught(
    fused: tuple[Path, Path], tmp_path: Path, edit: Any, finding: str
) -> None:
    report, release = fused
    frame = pd.read_csv(release, dtype=str, keep_default_na=False)
    # an edit changes the frame in place (returns None) or returns the edited frame
    edited = edit(frame)
    frame = frame if edited is None else edited
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False)
    result = verify_report(report, release=bad)
    assert not result.ok and any(finding in f for f in result.findings), result.findings
    out = runner.invoke(app, ["verify", str(report), "--release", str(bad)])
    assert out.exit_code == 1 and "does not hold" in out.output


def test_check_fusion_counts_records_and_templates() -> None:
    table = pd.DataFrame({"a": ["x", "x", "y", "y"], "b": ["1", "1", "1", "2"]})
    assert check_fusion(table, [(["a"], 2)], records=4) == []
    assert check_fusion(table, [(["a"], 2)], records=5) == [
        "the release has 4 records, the fusion released 5"
    ]
    problems = check_fusion(table, [(["a", "b"], 2)])
    assert len(problems) == 1 and "smallest 1" in problems[0]
