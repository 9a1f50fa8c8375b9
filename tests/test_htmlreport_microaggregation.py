"""HTML reports of real microaggregation runs: ``microaggregate``, ``evaluate``, ``tradeoff``.

Each command runs on the bundled Tarragona table through the CLI with
``--report`` and ``--html``, as a user makes them (``microaggregate`` and
``tradeoff`` from the bundled example configs); the pages are checked
against the JSON: every number equal to its place in the report, every
EM4ADOM measure shown, the R-U map with the report's best k marked, and no
value of the original or masked records in the page.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.htmlreport import render_html
from test_htmlreport import Page, assert_numbers_match, leaked_values

runner = CliRunner()


@pytest.fixture(scope="module")
def runs(micro_runs: dict[str, Any]) -> dict[str, Any]:
    """The three commands' reports and pages (report_runs.micro_runs, made once)."""
    return micro_runs


@pytest.mark.parametrize("command", ["microaggregate", "evaluate", "tradeoff"])
def test_numbers_equal_the_json(runs: dict[str, Any], command: str) -> None:
    report, html = runs[command]
    assert_numbers_match(report, Page(html))
    # the page the command wrote is the page `anonlab report` renders
    assert html == render_html(report)


def test_evaluate_shows_every_measure(runs: dict[str, Any]) -> None:
    report, html = runs["evaluate"]
    page = Page(html)
    measures = report["measures"]
    for name, value in measures.items():
        if isinstance(value, dict):
            for part in value:
                assert f"measures.{name}.{part}" in page.values
        else:
            assert f"measures.{name}" in page.values, name
    summary = page.visible.split("Summary", 1)[1][:600]
    assert f"Information loss IL is {float(measures['IL']):.4g}" in summary
    assert f"Disclosure risk DR is {float(measures['DR']):.4g}" in summary
    assert "t3.csv" in summary and "Tarragona.csv" in summary
    # how the measures were computed is stated (weights, p, standardization)
    assert "How the measures were computed" in page.visible
    assert "standardization" in page.visible and "interval_p" in page.visible


def test_microaggregate_groups_and_columns(runs: dict[str, Any]) -> None:
    report, html = runs["microaggregate"]
    page = Page(html)
    assert page.values["k"][0] == "3" and page.values["groups"][0] == str(report["groups"])
    sizes = report["group_sizes"]["count_by_size"]
    assert sum(int(s) * c for s, c in sizes.items()) == report["records"]
    for size in sizes:
        assert f"group_sizes.count_by_size.{size}" in page.values
    assert f"numeric columns ({len(report['columns'])})" in page.visible
    assert all(c in page.visible for c in report["columns"])
    assert "at least 3 similar records" in page.visible


def test_tradeoff_ru_map_marks_the_best_k(runs: dict[str, Any], tmp_path: Path) -> None:
    report, html = runs["tradeoff"]
    page = Page(html)
    best = report["best_k"]
    scores = {p["k"]: p["score"] for p in report["points"]}
    assert best == min(scores, key=lambda k: scores[k])
    rows = re.findall(r"<tr>(?:(?!</tr>).)*</tr>", html, re.S)
    chosen = [r for r in rows if "◀ chosen" in r]
    assert len(chosen) == 1
    index = [p["k"] for p in report["points"]].index(best)
    assert f'data-key="points.{index}.k"' in chosen[0]
    assert f"k = {best}, balances" in page.visible
    svgs = [u for u in page.urls if u.startswith("data:image/svg+xml")]
    assert len(svgs) == 2  # the EM4ADOM R-U map and the one of the prosecutor risk
    svg = base64.b64decode(svgs[0].split(",", 1)[1]).decode()
    assert f"chosen k = {best}" in svg
    risk_svg = base64.b64decode(svgs[1].split(",", 1)[1]).decode()
    assert "highest prosecutor risk" in risk_svg and f"chosen k = {best}" in risk_svg
    # --plot from the report draws the same R-U map as PNG
    result = runner.invoke(
        app,
        [
            "report",
            str(runs["dir"] / "tradeoff.json"),
            "--plot",
            str(tmp_path / "ru.png"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ru.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("command", ["microaggregate", "evaluate", "tradeoff"])
def test_no_record_values_in_the_page(runs: dict[str, Any], command: str) -> None:
    report, html = runs[command]
    visible = Page(html).visible
    assert leaked_values(visible, runs["data"], report) == set()
    assert leaked_values(visible, runs["masked"], report) == set()
    # the check itself: a page showing a record's values is caught
    row = runs["data"].iloc[0]
    shown = f"{visible} {' '.join(str(v) for v in row)}"
    assert leaked_values(shown, runs["data"], report)


def test_categorical_evaluation(data_dir: Path, tmp_path: Path) -> None:
    """Adult with nominal columns: ZIL and ILR are shown and stated, no category leaks."""
    frame = pd.read_csv(data_dir / "adult" / "adult.csv", sep=";").sample(300, random_state=2)
    frame.to_csv(tmp_path / "ad.csv", index=False)
    common = ["--columns", "age", "--nominal", "workclass,race,sex"]
    result = runner.invoke(
        app,
        [
            "microaggregate",
            str(tmp_path / "ad.csv"),
            *common,
            "--k",
            "3",
            "--sensitive",
            "salary-class",
            "--insensitive",
            "marital-status,education,native-country,occupation",
            "--output",
            str(tmp_path / "ad3.csv"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        app,
        [
            "evaluate",
            str(tmp_path / "ad.csv"),
            str(tmp_path / "ad3.csv"),
            *common,
            "--report",
            str(tmp_path / "ev.json"),
            "--html",
            str(tmp_path / "ev.html"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "ev.json").read_text())
    page = Page((tmp_path / "ev.html").read_text())
    assert_numbers_match(report, page)
    for name in ("ZIL", "ILR"):
        assert float(page.values[f"measures.{name}"][0]) == report["measures"][name]
    assert "For the categorical columns, the distance ZIL is" in page.visible
    categories = {str(v) for c in ("workclass", "race", "sex") for v in frame[c].unique()}
    assert {v for v in categories if re.search(rf"\b{re.escape(v)}\b", page.visible)} == set()


def test_categorical_tradeoff_draws_dld_against_zil(data_dir: Path, tmp_path: Path) -> None:
    """Without numeric columns there is no IL or DR: the R-U map is DLD against ZIL."""
    frame = pd.read_csv(data_dir / "adult" / "adult.csv", sep=";").sample(200, random_state=3)
    frame[["workclass", "race", "sex", "education"]].to_csv(tmp_path / "cat.csv", index=False)
    result = runner.invoke(
        app,
        [
            "tradeoff",
            str(tmp_path / "cat.csv"),
            "--nominal",
            "workclass,race,sex",
            "--ordinal",
            "education",
            "--k",
            "3-5",
            "--report",
            str(tmp_path / "t.json"),
            "--html",
            str(tmp_path / "t.html"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "t.json").read_text())
    assert all(p.get("IL") is None and p["ZIL"] is not None for p in report["points"])
    page = Page((tmp_path / "t.html").read_text())
    assert_numbers_match(report, page)
    assert "scored for categorical loss (ZIL) and record linkage (DLD)" in page.visible
    svgs = [u for u in page.urls if u.startswith("data:image/svg+xml")]
    assert len(svgs) == 2
    svg = base64.b64decode(svgs[0].split(",", 1)[1]).decode()
    assert "record linkage DLD" in svg and "categorical loss ZIL" in svg
    risk_svg = base64.b64decode(svgs[1].split(",", 1)[1]).decode()
    assert "highest prosecutor risk" in risk_svg and "categorical loss ZIL" in risk_svg
