"""The report dispatcher: where it finds files, what it refuses, and database inputs."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.microaggregation import microaggregate
from anonlab.verify import VerifyResult, verify_report

runner = CliRunner()


def _table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "a": [1.0, 2.0, 3.0, 10.0, 11.0, 12.5],
            "b": [5, 3, 4, 9, 8, 7],
            "id": ["p", "q", "r", "s", "t", "u"],
        }
    )


def _report(**parameters: Any) -> dict[str, Any]:
    return {
        "command": "microaggregate",
        "parameters": parameters,
        "k": 3,
        "columns": ["a", "b"],
        "nominal": [],
        "ordinal": [],
    }


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    """An input and its k = 3 release in ``tmp_path/data``."""
    folder = tmp_path / "data"
    folder.mkdir()
    frame = _table()
    frame.to_csv(folder / "in.csv", index=False)
    microaggregate(frame, ["a", "b"], 3).masked.to_csv(folder / "out.csv", index=False)
    return folder / "in.csv", folder / "out.csv"


def test_paths_beside_the_report(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = files[0].parent / "r.json"
    report.write_text(json.dumps(_report(input="in.csv", output="out.csv")))
    monkeypatch.chdir(tmp_path)
    result = verify_report(report)
    assert isinstance(result, VerifyResult) and result.ok and "2 groups of >= 3" in result.summary


def test_paths_as_given_where_the_run_was(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reports of earlier versions hold paths relative to where the command ran."""
    (tmp_path / "reports").mkdir()
    report = tmp_path / "reports" / "r.json"
    report.write_text(json.dumps(_report(input="data/in.csv", output="data/out.csv")))
    monkeypatch.chdir(tmp_path)
    assert verify_report(report).ok
    monkeypatch.chdir(tmp_path / "reports")
    with pytest.raises(AnonlabError, match=r"input is needed: the report names 'data/in.csv'"):
        verify_report(report)
    assert verify_report(report, input=files[0], release=files[1]).ok


def test_absolute_paths(files: tuple[Path, Path], tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    report.write_text(json.dumps(_report(input=str(files[0]), output=str(files[1]))))
    assert verify_report(report).ok


def test_a_report_key_that_is_missing_is_named(files: tuple[Path, Path], tmp_path: Path) -> None:
    data = _report(input=str(files[0]), output=str(files[1]))
    del data["k"]
    report = tmp_path / "r.json"
    report.write_text(json.dumps(data))
    with pytest.raises(AnonlabError, match="has no 'k'"):
        verify_report(report)


def test_database_input(files: tuple[Path, Path], tmp_path: Path) -> None:
    """A run that read a table from a database: the URL and table name come from the report."""
    import sqlalchemy

    url = f"sqlite:///{tmp_path / 'in.db'}"
    _table().to_sql("people", sqlalchemy.create_engine(url), index=False)
    report = tmp_path / "r.json"
    report.write_text(json.dumps(_report(input=url, table="people", output=str(files[1]))))
    assert verify_report(report).ok
    result = runner.invoke(app, ["verify", str(report), "--input", url])
    assert result.exit_code == 0, result.output


def test_a_changed_input_is_refused(files: tuple[Path, Path], tmp_path: Path) -> None:
    data = _report(input=str(files[0]), output=str(files[1]))
    data["inputs"] = {"data": {"name": "in.csv", "sha256": "0" * 64}}
    report = tmp_path / "r.json"
    report.write_text(json.dumps(data))
    result = runner.invoke(app, ["verify", str(report)])
    assert result.exit_code == 2
    assert result.output.startswith("Error: --input '") and "SHA-256 differs" in result.output


def test_failing_line_counts_the_other_findings() -> None:
    result = VerifyResult("perturb", "r.csv", ("first", "second", "third"), "")
    assert result.line() == "perturb release 'r.csv' does not hold: first (and 2 more findings)"
    assert VerifyResult("fuse", "f.csv", (), "holds").line() == "holds"


def test_a_gdp_report_with_a_key_in_its_parameters(tmp_path: Path) -> None:
    """A report that names its key (relative to itself) needs no key argument."""
    from anonlab.perturbation import perturb

    frame = pd.DataFrame({"x": [1.0, 4.0, 2.0, 8.0], "y": [3.0, 1.0, 0.5, 2.0]})
    frame.to_csv(tmp_path / "in.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # four records are recoverable, which is not tested here
        p = perturb(frame, ["x", "y"], "gdp", seed=1)
    p.release.to_csv(tmp_path / "out.csv", index=False)
    p.key.save(tmp_path / "key.json")
    report = tmp_path / "r.json"
    report.write_text(
        json.dumps(
            {
                "command": "perturb",
                "method": "gdp",
                "columns": ["x", "y"],
                "parameters": {"input": "in.csv", "output": "out.csv", "key": "key.json"},
            }
        )
    )
    result = verify_report(report)
    assert result.ok, result.findings


def test_the_checkers_import_no_method_code() -> None:
    """Independence: importing the checkers loads no method family's code."""
    import subprocess
    import sys

    code = (
        "import sys, anonlab.verify.fusion, anonlab.verify.generalization, "
        "anonlab.verify.microaggregation, anonlab.verify.perturbation, "
        "anonlab.verify.report, anonlab.cli.verify\n"
        "print(sorted(m for m in sys.modules if m.startswith(('anonlab.microaggregation', "
        "'anonlab.perturbation', 'anonlab.lattice', 'anonlab.generalize', "
        "'anonlab.fusion'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.__setitem__("k", "three"), r"is malformed \(ValueError"),
        (lambda d: d.__setitem__("columns", 5), r"is malformed \(TypeError"),
        (lambda d: d["parameters"].__setitem__("orders", [1]), "is malformed"),
    ],
)
def test_a_malformed_report_is_one_line(
    files: tuple[Path, Path], tmp_path: Path, change: Any, message: str
) -> None:
    data = _report(input=str(files[0]), output=str(files[1]))
    change(data)
    report = tmp_path / "r.json"
    report.write_text(json.dumps(data))
    with pytest.raises(AnonlabError, match=message):
        verify_report(report)
