"""``--report`` of the hierarchy commands: what was built or shown, written all or nothing.

Runs on the generated Wage-like table (:mod:`wage_like`). The JSON is checked
against the files on disk (the hierarchy written, the table read) and
against what the command printed, not against the code that writes it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.hierarchy import Hierarchy
from anonlab.runs.hierarchy import IntervalHierarchySettings, run_hierarchy
from wage_like import EDUCATION, RACE, wage_like, write_wage_like

REPO = Path(__file__).resolve().parents[1]
CENSUS = REPO / "examples" / "census"
runner = CliRunner()


def _run(args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args)
    return result.exit_code, result.output


def _json(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _groups_per_level(path: Path) -> list[int]:
    """The number of distinct labels of each level of a hierarchy file."""
    hierarchy = Hierarchy.from_csv(path)
    return [
        len(set(hierarchy.labels(hierarchy.values, level))) for level in range(hierarchy.height + 1)
    ]


@pytest.fixture()
def wage(tmp_path: Path) -> Path:
    """The Wage-like table as a CSV file in a fresh folder."""
    return write_wage_like(tmp_path / "wage.csv")


def test_taxonomy_report_describes_the_files_and_levels(wage: Path) -> None:
    out, report = wage.parent / "race_h.csv", wage.parent / "race_h.json"
    code, text = _run(
        [
            "hierarchy",
            "taxonomy",
            str(wage),
            "--column",
            "race",
            "--mapping",
            str(CENSUS / "race.csv"),
            "--output",
            str(out),
            "--report",
            str(report),
        ]
    )
    assert code == 0, text
    r = _json(report)
    assert r["command"] == "hierarchy taxonomy" and r["builder"] == "taxonomy"
    assert r["column"] == "race" and r["values"] == len(RACE)
    assert r["paths"] == "relative to the report's folder"
    assert r["parameters"]["input"] == "wage.csv" and r["output"] == "race_h.csv"
    assert r["outputs"] == {"output": "race_h.csv", "report": "race_h.json"}
    assert r["inputs"]["data"]["sha256"] == hashlib.sha256(wage.read_bytes()).hexdigest()
    assert r["inputs"]["mapping"]["name"] == "race.csv"
    levels = r["view"]["levels"]
    assert r["levels"] == len(levels) == Hierarchy.from_csv(out).height + 1
    assert [lv["groups"] for lv in levels] == _groups_per_level(out)
    assert levels[-1]["largest"] == [{"group": "*", "count": len(wage_like())}]
    counts = wage_like()["race"].value_counts()
    shown = levels[0]["largest"]
    assert all(g["count"] == counts[g["group"]] for g in shown)
    assert [g["count"] for g in shown] == sorted(counts, reverse=True)[: len(shown)]
    assert r["view"]["warnings"] == [] and r["view"]["uncovered"] == []


def test_the_warnings_printed_are_in_the_report(wage: Path) -> None:
    report = wage.parent / "e.json"
    code, text = _run(
        [
            "hierarchy",
            "grouping",
            str(wage),
            "--column",
            "education",
            "--order",
            ",".join(EDUCATION),
            "--sizes",
            "1,5",
            "--output",
            str(wage.parent / "e.csv"),
            "--report",
            str(report),
            "--quiet",
        ]
    )
    assert code == 0, text
    warnings = _json(report)["view"]["warnings"]
    assert warnings and text.splitlines() == [f"Warning: {' '.join(w.split())}" for w in warnings]
    assert warnings[0].startswith("level 1 repeats level 0 (5 groups each)")


def test_show_report_lists_the_uncovered_values(wage: Path) -> None:
    partial = wage.parent / "partial.csv"
    partial.write_text("1. White;*\n2. Black;*\n", encoding="utf-8")
    report = wage.parent / "show.json"
    code, text = _run(
        [
            "hierarchy",
            "show",
            str(partial),
            "--data",
            str(wage),
            "--column",
            "race",
            "--report",
            str(report),
            "--quiet",
        ]
    )
    assert code == 0 and text == "", text
    r = _json(report)
    assert r["command"] == "hierarchy show" and r["hierarchy"] == "partial.csv"
    assert sorted(r["view"]["uncovered"]) == ["3. Asian", "4. Other"]
    assert r["view"]["counted"] == "records" and r["levels"] == 2
    assert set(r["inputs"]) == {"hierarchy", "data"}
    assert r["outputs"] == {"report": "show.json"}
    assert sorted(p.name for p in wage.parent.iterdir()) == ["partial.csv", "show.json", "wage.csv"]


def test_show_prints_the_uncovered_values_it_reports(wage: Path) -> None:
    partial = wage.parent / "partial.csv"
    partial.write_text("1. White;*\n2. Black;*\n3. Asian;*\n", encoding="utf-8")
    report = wage.parent / "show.json"
    code, text = _run(
        [
            "hierarchy",
            "show",
            str(partial),
            "--data",
            str(wage),
            "--column",
            "race",
            "--report",
            str(report),
        ]
    )
    assert code == 0, text
    assert _json(report)["view"]["uncovered"] == ["4. Other"]
    assert "1 values of 'race' are not in the hierarchy" in text and "'4. Other'" in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--column", "nowhere"], "column 'nowhere' is not in the table"),
        (["--column", "race", "--report", "{output}"], "is given as both output and report"),
        (["--column", "race", "--report", "{input}"], "inputs are never overwritten"),
    ],
)
def test_a_refused_build_writes_neither_file(wage: Path, extra: list[str], message: str) -> None:
    out = wage.parent / "h.csv"
    args = [a.format(output=out, input=wage) for a in extra]
    if "--report" not in args:
        args += ["--report", str(wage.parent / "h.json")]
    before = wage.read_bytes()
    code, text = _run(["hierarchy", "redaction", str(wage), *args, "--output", str(out)])
    assert code == 2, text
    assert text.startswith("Error: ") and len(text.strip().splitlines()) == 1, text
    assert message in text, text
    assert sorted(p.name for p in wage.parent.iterdir()) == ["wage.csv"]
    assert wage.read_bytes() == before


def test_a_refused_show_writes_no_report(wage: Path) -> None:
    code, text = _run(
        [
            "hierarchy",
            "show",
            str(CENSUS / "race.csv"),
            "--data",
            str(wage),
            "--column",
            "nowhere",
            "--report",
            str(wage.parent / "s.json"),
        ]
    )
    assert code == 2 and text.startswith("Error: "), text
    assert not (wage.parent / "s.json").exists()


def test_without_report_no_json_is_written(wage: Path) -> None:
    code, text = _run(
        [
            "hierarchy",
            "interval",
            str(wage),
            "--column",
            "age",
            "--widths",
            "5,10",
            "--output",
            str(wage.parent / "a.csv"),
        ]
    )
    assert code == 0, text
    assert text.startswith(f"wrote {wage.parent / 'a.csv'}: interval hierarchy of 'age'")
    assert sorted(p.name for p in wage.parent.iterdir()) == ["a.csv", "wage.csv"]


def test_python_run_writes_the_report_it_returns(wage: Path) -> None:
    settings = IntervalHierarchySettings(
        input=str(wage),
        column="age",
        widths=[5, 10],
        output=str(wage.parent / "a.csv"),
        report=str(wage.parent / "a.json"),
    )
    result = run_hierarchy(settings)
    assert sorted(p.name for p in result.written) == ["a.csv", "a.json"]
    assert _json(wage.parent / "a.json") == json.loads(json.dumps(result.report))
    assert result.report["parameters"]["widths"] == [5, 10]
    assert [lv["groups"] for lv in result.report["view"]["levels"]] == _groups_per_level(
        wage.parent / "a.csv"
    )
