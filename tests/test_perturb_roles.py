"""Roles and release risk for the perturbation family (issue 12, sections 1 and 3).

Every column of a table given to ``perturb`` or ``attack`` has a role: the
perturbed columns are the quasi-identifiers, the others identifying (dropped),
sensitive or insensitive (released unchanged), or insensitive by ``--other``.
The report carries the release's risk; the risk warnings judge the columns
released unchanged, and ``--fail-on-risk`` refuses a risky release (exit 3).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import ReleaseRiskError, ReleaseRiskWarning
from anonlab.perturbation import RecoverableReleaseWarning
from anonlab.runs.perturb import PerturbSettings, run_perturb

runner = CliRunner()


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture()
def table(tmp_path: Path) -> Path:
    """A name (unique), four numeric columns, a diagnosis (3 values) and a region (2)."""
    rng = np.random.default_rng(5)
    n = 80
    frame = pd.DataFrame(rng.gamma(2.0, 1.0, (n, 4)).round(3), columns=list("abcd"))
    frame.insert(0, "name", [f"person {i}" for i in range(n)])
    frame["diagnosis"] = [("flu", "cold", "asthma")[i % 3] for i in range(n)]
    frame["region"] = ["north" if i % 2 else "south" for i in range(n)]
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path


def _outputs(tmp_path: Path) -> list[str]:
    return [
        "--output",
        str(tmp_path / "rel.csv"),
        "--key",
        str(tmp_path / "key.json"),
        "--report",
        str(tmp_path / "rep.json"),
        "--html",
        str(tmp_path / "rep.html"),
    ]


def test_perturb_refuses_a_column_without_a_role(table: Path, tmp_path: Path) -> None:
    code, text = _run(
        [
            "perturb",
            str(table),
            "--columns",
            "a,b,c,d",
            "--identifying",
            "name",
            "--sensitive",
            "diagnosis",
            *_outputs(tmp_path),
        ]
    )
    assert code == 2
    assert text.strip() == (
        "Error: column region is given no role: name it in --columns, "
        "--identifying, --sensitive or --insensitive, or pass --other "
        "insensitive to release it unchanged"
    )
    assert _names(tmp_path) == ["people.csv"]


def test_attack_refuses_a_column_without_a_role(table: Path, tmp_path: Path) -> None:
    code, text = _run(
        [
            "attack",
            str(table),
            str(table),
            "--columns",
            "a,b,c,d",
            "--report",
            str(tmp_path / "att.json"),
            "--html",
            str(tmp_path / "att.html"),
        ]
    )
    assert code == 2 and len(text.strip().splitlines()) == 1
    assert text.startswith("Error: columns name, diagnosis, region are given no role")
    assert _names(tmp_path) == ["people.csv"]


def test_roles_drop_identify_and_release_the_rest(table: Path, tmp_path: Path) -> None:
    code, text = _run(
        [
            "perturb",
            str(table),
            "--identifying",
            "name",
            "--sensitive",
            "diagnosis",
            "--insensitive",
            "region",
            "--seed",
            "3",
            "--known",
            "2",
            *_outputs(tmp_path),
            "--quiet",
        ]
    )
    assert code == 0, text
    original = pd.read_csv(table)
    release = pd.read_csv(tmp_path / "rel.csv")
    # no --columns: every column no role names is perturbed
    assert list(release.columns) == ["a", "b", "c", "d", "diagnosis", "region"]
    assert release[["diagnosis", "region"]].equals(original[["diagnosis", "region"]])
    report = json.loads((tmp_path / "rep.json").read_text())
    assert report["columns"] == list("abcd")
    assert report["roles"] == {
        "name": "identifying",
        "a": "quasi",
        "b": "quasi",
        "c": "quasi",
        "d": "quasi",
        "diagnosis": "sensitive",
        "region": "insensitive",
    }
    assert report["released_unchanged"] == ["diagnosis", "region"]
    assert report["insensitive_by_other"] == []
    # the risk of the release as written: every released column but the sensitive one known
    risk = report["risk"]
    assert risk["attacker_columns"] == ["a", "b", "c", "d", "region"]
    assert risk["records"] == 80 and risk["sample_uniques"] == 1.0  # continuous values
    assert set(risk["sensitive"]) == {"diagnosis"}
    # judged on the column released unchanged: two regions of 40 records, 3 diagnoses each
    judged = report["risk_of_unchanged"]
    assert judged["attacker_columns"] == ["region"]
    assert judged["prosecutor"]["highest"] == pytest.approx(1 / 40)
    assert judged["sensitive"]["diagnosis"]["distinct_l"] == 3
    assert report["risk_warnings"] == []
    assert "person" not in (tmp_path / "rep.json").read_text()
    # the key says which columns are gone for good, and invert says so
    key = json.loads((tmp_path / "key.json").read_text())
    assert key["identifying"] == ["name"]
    code, text = _run(
        [
            "perturb",
            "--invert",
            str(tmp_path / "rel.csv"),
            "--key",
            str(tmp_path / "key.json"),
            "--output",
            str(tmp_path / "back.csv"),
        ]
    )
    assert code == 0, text
    assert "not restored: name (dropped as identifying" in text
    back = pd.read_csv(tmp_path / "back.csv")
    assert list(back.columns) == list(release.columns)
    assert np.allclose(back[list("abcd")], original[list("abcd")], rtol=1e-12, atol=1e-9)


def test_the_report_lists_the_columns_released_by_other(table: Path, tmp_path: Path) -> None:
    code, text = _run(
        [
            "perturb",
            str(table),
            "--columns",
            "a,b,c",
            "--identifying",
            "name",
            "--other",
            "insensitive",
            "--seed",
            "1",
            "--known",
            "2",
            "--output",
            str(tmp_path / "rel.csv"),
            "--report",
            str(tmp_path / "rep.json"),
        ]
    )
    assert code == 0, text
    report = json.loads((tmp_path / "rep.json").read_text())
    assert report["other"] == "insensitive"
    assert report["insensitive_by_other"] == ["d", "diagnosis", "region"]
    assert report["released_unchanged"] == ["d", "diagnosis", "region"]
    assert "released unchanged (--other" in text and "d, diagnosis, region" in text
    # d is released unchanged and continuous: every record is unique on it, and that warns
    assert report["risk_of_unchanged"]["attacker_columns"] == ["d", "diagnosis", "region"]
    assert any("unique on the attacker's columns" in w for w in report["risk_warnings"])
    assert "Warning: 80 record(s) are unique on the attacker's columns" in text


def test_fail_on_risk_exits_3_and_writes_nothing(table: Path, tmp_path: Path) -> None:
    # name released unchanged identifies every record
    code, text = _run(
        [
            "perturb",
            str(table),
            "--insensitive",
            "name,region",
            "--sensitive",
            "diagnosis",
            "--method",
            "gdp",
            "--noise",
            "1",
            "--seed",
            "2",
            "--fail-on-risk",
            *_outputs(tmp_path),
        ]
    )
    assert code == 3
    lines = text.strip().splitlines()
    assert lines[0].startswith("Warning: highest prosecutor re-identification risk is 1")
    assert lines[-1].startswith("Error: --fail-on-risk is set and the release drew")
    assert _names(tmp_path) == ["people.csv"]
    # a release the known-record attacks undo is refused as well
    code, text = _run(
        [
            "perturb",
            str(table),
            "--identifying",
            "name",
            "--insensitive",
            "region",
            "--sensitive",
            "diagnosis",
            "--known",
            "2",
            "--seed",
            "2",
            "--fail-on-risk",
            *_outputs(tmp_path),
        ]
    )
    assert code == 3 and "Warning: release is recoverable" in text
    assert (
        "Error: --fail-on-risk is set and the release drew a risk warning: release is "
        "recoverable" in text
    )
    assert _names(tmp_path) == ["people.csv"]


def test_the_python_run_warns_with_the_release_risk_class(table: Path, tmp_path: Path) -> None:
    settings = PerturbSettings(
        input=str(table),
        identifying=["name"],
        sensitive=["diagnosis"],
        insensitive=["region"],
        seed=4,
        known=[2],
        output=str(tmp_path / "rel.csv"),
        key=str(tmp_path / "key.json"),
    )
    with pytest.warns(ReleaseRiskWarning) as caught:
        run_perturb(settings)
    assert [type(w.message) for w in caught] == [RecoverableReleaseWarning]
    unique = settings.model_copy(
        update={
            "identifying": [],
            "insensitive": ["name", "region"],
            "method": "gdp",
            "noise": 1.0,
            "output": str(tmp_path / "rel2.csv"),
            "key": str(tmp_path / "key2.json"),
        }
    )
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", ReleaseRiskWarning)
        run_perturb(unique)
    messages = [str(w.message) for w in seen if issubclass(w.category, ReleaseRiskWarning)]
    assert "80 record(s) are unique on the attacker's columns (name, region)" in messages
    refused = unique.model_copy(
        update={
            "fail_on_risk": True,
            "output": str(tmp_path / "rel3.csv"),
            "key": str(tmp_path / "key3.json"),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        with pytest.raises(ReleaseRiskError) as error:
            run_perturb(refused)
    assert error.value.parameter == "fail_on_risk"
    assert not (tmp_path / "rel3.csv").exists()


def test_a_fully_perturbed_table_draws_no_uniqueness_warning(
    data_dir: Path, tmp_path: Path
) -> None:
    """Tarragona, every column perturbed: unique records by construction, reported not warned."""
    settings = PerturbSettings(
        input=str(data_dir / "sdc" / "Tarragona.csv"),
        method="gdp",
        noise=1.0,
        seed=1,
        known=[2],
        attack_records=200,
        report=str(tmp_path / "rep.json"),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReleaseRiskWarning)
        report: dict[str, Any] = run_perturb(settings).report
    assert report["risk"]["sample_uniques"] == 1.0
    assert report["risk_of_unchanged"] is None and report["risk_warnings"] == []
    assert report["released_unchanged"] == []


def test_verify_accepts_a_release_without_its_identifying_column(
    table: Path, tmp_path: Path
) -> None:
    assert (
        _run(
            [
                "perturb",
                str(table),
                "--identifying",
                "name",
                "--insensitive",
                "diagnosis,region",
                "--seed",
                "5",
                "--known",
                "2",
                *_outputs(tmp_path),
                "--quiet",
            ]
        )[0]
        == 0
    )
    code, text = _run(["verify", str(tmp_path / "rep.json"), "--key", str(tmp_path / "key.json")])
    assert code == 0, text
    assert "the key undoes it to the input" in text
