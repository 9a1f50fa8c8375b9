"""HTML reports of real perturbation runs: ``perturb`` (the bundled OBT example) and ``attack``.

Both commands run through the CLI with ``--report`` and ``--html`` as a user
makes them, and ``perturb --internal`` for the custodian's secret copy; the
pages are checked against the JSON: every number equal to its place in the
report, S, R and P of every block (secret copy only; the shareable page
names no block), every attack row with its shares recovered, the clustering
agreement, the command's warnings shown, and no value of the original
records, of the release or of the secret key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.htmlreport import render_html
from anonlab.htmlreport.blocks import format_number, format_percent
from test_htmlreport import Page, assert_numbers_match, leaked_values

runner = CliRunner()


@pytest.fixture(scope="module")
def runs(perturb_runs: dict[str, Any]) -> dict[str, Any]:
    """``perturb``, ``attack`` and the internal copy (report_runs.perturb_runs, made once)."""
    return perturb_runs


@pytest.mark.parametrize("command", ["perturb", "attack", "internal"])
def test_numbers_equal_the_json(runs: dict[str, Any], command: str) -> None:
    report, html = runs[command]
    assert_numbers_match(report, Page(html))
    assert html == render_html(report, internal=command == "internal")


def test_the_shareable_page_names_no_block(runs: dict[str, Any]) -> None:
    """Only the figures over all blocks; a secret report shown shareable hides its blocks."""
    report, html = runs["perturb"]
    page = Page(html)
    summary = report["privacy_summary"]
    for name in ("min_S", "min_P", "blocks"):
        assert float(page.values[f"privacy_summary.{name}"][0]) == summary[name]
    secret = runs["internal"][0]
    pairs = [", ".join(b["columns"]) for b in secret["blocks"]]
    assert not [p for p in pairs if p in page.visible]
    hidden = Page(render_html(secret))  # the secret report rendered without --internal
    assert not [p for p in pairs if p in hidden.visible]
    assert not any(k.startswith(("blocks.", "overall.")) for k in hidden.values)
    assert "Render it with --internal" in hidden.visible


def test_blocks_overall_and_clustering(runs: dict[str, Any]) -> None:
    report, html = runs["internal"]
    assert report["secret"] is True and "INTERNAL REPORT" in html
    page = Page(html)
    for i, block in enumerate(report["blocks"]):
        for measure in ("S", "R", "P"):
            assert float(page.values[f"blocks.{i}.{measure}"][0]) == block[measure]
        assert ", ".join(block["columns"]) in page.visible
    for name, value in report["overall"].items():
        assert float(page.values[f"overall.{name}"][0]) == value
    for name, value in report["clustering"].items():
        assert float(page.values[f"clustering.{name}"][0]) == value
    assert "adjusted Rand index, k-means" in page.visible
    # the P bars are the one figure the shareable page (attack bars, risk figures) lacks
    shared = Page(runs["perturb"][1])
    assert sum(u.startswith("data:image/svg+xml") for u in page.urls) == 1 + sum(
        u.startswith("data:image/svg+xml") for u in shared.urls
    )
    assert "Privacy level P of each block" in page.visible
    assert "Privacy level P of each block" not in shared.visible


def test_attack_table_and_warning(runs: dict[str, Any]) -> None:
    for command in ("perturb", "attack"):
        report, html = runs[command]
        page = Page(html)
        for i, row in enumerate(report["attacks"]):
            for share in ("within_10", "within_25"):
                value, shown = page.values[f"attacks.{i}.{share}"]
                assert float(value) == row[share]
                assert shown == format_percent(row[share])
        for warning in report["warnings"]:
            assert f'<p class="note warning">Warning: {warning}</p>' in html


def test_summary_states_the_weakest_block_and_strongest_attack(runs: dict[str, Any]) -> None:
    report, html = runs["internal"]
    summary = Page(html).visible.split("Summary", 1)[1][:900]
    weakest = min(b["P"] for b in report["blocks"])
    assert (
        f"is {format_number(weakest)} in the weakest of {len(report['blocks'])} blocks" in summary
    )
    best = max(report["attacks"], key=lambda r: (r["within_10"], r["within_25"]))
    assert f"recovers {format_percent(best['within_10'])} of the records to within 10 %" in summary
    assert f"({best['attack']}, {best['known']} known records)" in summary
    if all(v == 1.0 for k, v in report["clustering"].items() if k in ("kmeans", "dbscan", "ward")):
        assert "gives the same clusters as the original" in summary


def test_plot_of_the_attacks(runs: dict[str, Any], tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "report",
            str(runs["dir"] / "attack.json"),
            "--plot",
            str(tmp_path / "attacks.png"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "attacks.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("command", ["perturb", "attack"])
def test_no_record_or_key_value_in_the_page(runs: dict[str, Any], command: str) -> None:
    report, html = runs[command]
    visible = Page(html).visible
    assert leaked_values(visible, runs["data"], report) == set()
    assert leaked_values(visible, runs["release"], report, smallest=0.01) == set()
    key = runs["key"]
    secrets = [x for block in key["blocks"] for row in block["matrix"] for x in row]
    secrets += key["means"] + key["stds"]
    assert not [x for x in secrets if repr(x) in html or f"{x:.4g}" in visible]
    assert "key.json" not in html
    # the check itself: a released value shown on the page is caught
    value = runs["release"].iloc[3, 2]
    assert leaked_values(f"{visible} {value}", runs["release"], report, smallest=0.01)


def test_python_api_writes_the_same_page(runs: dict[str, Any], tmp_path: Path) -> None:
    from anonlab.htmlreport import load_report, write_html, write_plot

    report = load_report(runs["dir"] / "attack.json")
    write_html(report, tmp_path / "a.html")
    write_plot(report, tmp_path / "a.png")
    assert (tmp_path / "a.html").read_text() == runs["attack"][1]
    assert (tmp_path / "a.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("given", [True, False])
def test_settings_say_how_the_seed_was_chosen_without_showing_it(
    runs: dict[str, Any], given: bool
) -> None:
    report = json.loads(json.dumps(runs["perturb"][0]))
    assert "seed" not in report["parameters"]
    report["parameters"]["seed_given"] = given
    page = render_html(report)
    expected = "kept out of the report" if given else "fresh from the operating system"
    assert expected in page
    assert "no seed was given" not in page
