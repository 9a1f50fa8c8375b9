"""The HTML report of a steered generalization: level bounds and the next-best transformations.

Reports come from real CLI runs on a small seeded table (as in
``test_steering``): one with ``--max-level age=2 --alternatives 3``, one
without either, and an ``apply --node 2`` of the first. The checks read the
page with the standard library's HTML parser and compare it with the JSON.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from test_htmlreport import Page, assert_numbers_match
from test_steering import write_toy

runner = CliRunner()
APPLY_SENTENCE = "anonlab apply REPORT TABLE --node N --output RELEASE"


def _generalize(folder: Path, name: str, *extra: str) -> dict[str, Any]:
    """A generalize run with --html; its JSON report, page and folder."""
    qi = write_toy(folder)
    result = runner.invoke(
        app,
        [
            "generalize",
            str(folder / "toy.csv"),
            "--qi",
            f"age={qi['age']}",
            "--qi",
            f"sex={qi['sex']}",
            "--sensitive",
            "s",
            "--k",
            "8",
            "--metric",
            "loss",
            *extra,
            "--output",
            str(folder / f"{name}.csv"),
            "--report",
            str(folder / f"{name}.json"),
            "--html",
            str(folder / f"{name}.html"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    return {
        "dir": folder,
        "report": json.loads((folder / f"{name}.json").read_text()),
        "html": (folder / f"{name}.html").read_text(),
    }


@pytest.fixture(scope="module")
def steered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _generalize(
        tmp_path_factory.mktemp("steered"), "g", "--max-level", "age=2", "--alternatives", "3"
    )


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _generalize(tmp_path_factory.mktemp("plain"), "p")


def section(html: str, anchor: str) -> Page:
    """The page of one section (``<section ... id="anchor">``)."""
    found = re.search(rf'<section class="report-section" id="{anchor}">(.*?)</section>', html, re.S)
    assert found, f"no section {anchor!r}"
    return Page(found.group(1))


def test_the_run_recorded_bounds_and_three_alternatives(steered: dict[str, Any]) -> None:
    report = steered["report"]
    assert report["parameters"]["max_level"] == {"age": 2}
    assert [a["node"] for a in report["alternatives"]] == [1, 2, 3]


def test_bounds_are_shown_in_the_generalization_section(steered: dict[str, Any]) -> None:
    page = section(steered["html"], "generalization")
    assert "Level bounds (--min-level, --max-level)" in page.visible
    low, high = steered["report"]["level_bounds"]["age"]
    assert f"lowest allowed level highest allowed level age {low} {high}" in page.visible
    assert page.values["level_bounds.age.0"] == (str(low), str(low))
    assert page.values["level_bounds.age.1"] == (str(high), str(high))
    assert not any(key.startswith("level_bounds.sex") for key in page.values)  # unbounded


def test_alternatives_table_lists_every_transformation(steered: dict[str, Any]) -> None:
    report = steered["report"]
    page = section(steered["html"], "alternatives")
    assert "node levels loss (loss) suppressed records highest prosecutor risk" in page.visible
    for i, entry in enumerate(report["alternatives"]):
        levels = ", ".join(f"{c}={level}" for c, level in entry["levels"].items())
        assert f"{entry['node']} {levels} " in page.visible
        for key in ("node", "loss", "suppressed_records", "highest_prosecutor_risk"):
            assert float(page.values[f"alternatives.{i}.{key}"][0]) == float(entry[key])
    assert APPLY_SENTENCE in page.visible


def test_every_number_of_the_page_equals_the_json(steered: dict[str, Any]) -> None:
    assert_numbers_match(steered["report"], Page(steered["html"]))


def test_the_alternatives_section_shows_no_record(steered: dict[str, Any]) -> None:
    """Its only numbers are the list's figures: no value of the table reaches the page."""
    report = steered["report"]
    page = section(steered["html"], "alternatives")
    allowed = {str(len(report["alternatives"]))}
    for i, entry in enumerate(report["alternatives"]):
        allowed |= {
            page.values[f"alternatives.{i}.{k}"][1]
            for k in ("node", "loss", "suppressed_records", "highest_prosecutor_risk")
        }
        allowed |= {f"{c}={level}" for c, level in entry["levels"].items()}
    shown = {t for t in page.tokens() if re.search(r"\d", t)}
    assert shown <= allowed | {"1/|class|"}, shown - allowed
    ages = set(pd.read_csv(steered["dir"] / "toy.csv", dtype=str)["age"])
    assert not ages & page.tokens()


def test_the_raw_keys_no_longer_fall_to_further_results(steered: dict[str, Any]) -> None:
    visible = Page(steered["html"]).visible
    assert "alternatives ›" not in visible and "level_bounds ›" not in visible


def test_report_command_renders_the_same_sections(steered: dict[str, Any]) -> None:
    folder: Path = steered["dir"]
    result = runner.invoke(
        app, ["report", str(folder / "g.json"), "--html", str(folder / "again.html"), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    html = (folder / "again.html").read_text()
    assert APPLY_SENTENCE in section(html, "alternatives").visible
    assert "level_bounds.age.1" in section(html, "generalization").values


def test_a_run_without_steering_shows_neither(plain: dict[str, Any]) -> None:
    report, html = plain["report"], plain["html"]
    assert report["parameters"]["min_level"] == {} == report["parameters"]["max_level"]
    assert not report.get("alternatives")
    assert 'id="alternatives"' not in html
    visible = Page(html).visible
    assert "Next-best transformations" not in visible and "Level bounds" not in visible
    assert APPLY_SENTENCE not in visible and "level_bounds ›" not in visible


def test_an_applied_node_shows_the_bounds_it_lies_within(steered: dict[str, Any]) -> None:
    folder: Path = steered["dir"]
    result = runner.invoke(
        app,
        [
            "apply",
            str(folder / "g.json"),
            str(folder / "toy.csv"),
            "--node",
            "2",
            "--output",
            str(folder / "n2.csv"),
            "--report",
            str(folder / "n2.json"),
            "--html",
            str(folder / "n2.html"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    page = section((folder / "n2.html").read_text(), "generalization")
    assert "lowest allowed level highest allowed level age 0 2" in page.visible
    assert page.values["parameters.max_level.age"] == ("2", "2")
