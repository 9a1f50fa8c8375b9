"""``--columns all-numeric`` means one thing in every command (issue 20): every column whose
present values all parse as numbers, less the columns other options name
(:func:`anonlab.encoding.select_columns`; piece by piece on an engine)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.encoding import select_columns
from anonlab.errors import AnonlabError, AnonlabWarning
from anonlab.runs.perturb import PerturbSettings, run_perturb

runner = CliRunner()


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


@pytest.fixture
def tarragona(data_dir: Path) -> Path:
    return data_dir / "sdc" / "Tarragona.csv"


@pytest.fixture
def numeric(tarragona: Path) -> list[str]:
    """The one definition, applied to Tarragona: its 13 columns."""
    names = select_columns(pd.read_csv(tarragona), "all-numeric")
    assert len(names) == 13
    return names


@pytest.fixture
def mixed(tarragona: Path, tmp_path: Path) -> Path:
    """Tarragona's first 120 records with a text column and a numeric record id."""
    frame = pd.read_csv(tarragona).head(120)
    frame.insert(0, "id", range(1000, 1120))
    frame["region"] = ["north", "south", "east"] * 40
    path = tmp_path / "mixed.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("engine", [[], ["--output", "OUT/"]], ids=["memory", "engine"])
def test_perturb_all_numeric_takes_the_13_columns(
    tarragona: Path, numeric: list[str], tmp_path: Path, engine: list[str]
) -> None:
    report = tmp_path / "p.json"
    extra = [a.replace("OUT", str(tmp_path / "rel")) for a in engine]
    if extra:
        extra += ["--key", str(tmp_path / "key.json")]
    code, text = _run(
        [
            "perturb",
            str(tarragona),
            "--columns",
            "all-numeric",
            "--seed",
            "3",
            "--report",
            str(report),
            *extra,
            "--quiet",
        ]
    )
    assert code == 0, text
    assert json.loads(report.read_text())["columns"] == numeric


@pytest.mark.parametrize("command", ["microaggregate", "evaluate", "tradeoff", "perturb"])
def test_every_command_picks_the_same_columns(
    command: str, tarragona: Path, numeric: list[str], tmp_path: Path
) -> None:
    report = tmp_path / "r.json"
    args = {
        "microaggregate": ["--k", "3"],
        "evaluate": [str(tarragona)],
        "tradeoff": ["--k", "3"],
        "perturb": ["--seed", "1"],
    }[command]
    code, text = _run(
        [
            command,
            str(tarragona),
            *args,
            "--columns",
            "all-numeric",
            "--report",
            str(report),
            "--quiet",
        ]
    )
    assert code == 0, text
    roles = json.loads(report.read_text())["roles"]
    assert [c for c, role in roles.items() if role == "quasi"] == numeric


@pytest.mark.parametrize("command", ["microaggregate", "perturb", "evaluate"])
def test_other_roles_and_text_are_left_out(command: str, mixed: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    args = {"microaggregate": ["--k", "3"], "evaluate": [str(mixed)], "perturb": ["--seed", "1"]}[
        command
    ]
    code, text = _run(
        [
            command,
            str(mixed),
            *args,
            "--columns",
            "all-numeric",
            "--identifying",
            "id",
            "--insensitive",
            "region",
            "--max-risk",
            "1",
            "--report",
            str(report),
            "--quiet",
        ]
        if command != "evaluate"
        else [
            command,
            str(mixed),
            *args,
            "--columns",
            "all-numeric",
            "--identifying",
            "id",
            "--insensitive",
            "region",
            "--report",
            str(report),
            "--quiet",
        ]
    )
    assert code == 0, text
    columns = json.loads(report.read_text())["columns"]
    assert "id" not in columns and "region" not in columns and len(columns) == 13


def test_python_api_all_numeric(tarragona: Path, numeric: list[str]) -> None:
    with warnings.catch_warnings():  # recoverable, no key: not what is tested here
        warnings.simplefilter("ignore", AnonlabWarning)
        result = run_perturb(
            PerturbSettings(input=str(tarragona), columns=["all-numeric"], seed=2, known=[2])
        )
    assert result.report["columns"] == numeric


def test_all_numeric_mixed_with_names_is_refused(tarragona: Path, tmp_path: Path) -> None:
    code, text = _run(
        [
            "perturb",
            str(tarragona),
            "--columns",
            "all-numeric,SALES",
            "--report",
            str(tmp_path / "r.json"),
        ]
    )
    assert code == 2
    assert text.strip() == (
        "Error: --columns 'all-numeric' cannot be mixed with column "
        "names: give all-numeric alone or names only"
    )
    with pytest.raises(AnonlabError, match="cannot be mixed"):
        run_perturb(
            PerturbSettings(
                input=str(tarragona),
                columns=["all-numeric", "SALES"],
                report=str(tmp_path / "r.json"),
            )
        )
