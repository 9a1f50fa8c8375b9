"""HTML reports of real fusion runs: ``fuse`` on the bundled example, ``party`` on loopback.

``anonlab fuse examples/fusion/fusion.toml`` (Adult split 7 + 7 between two
providers) and a small real multi-process run (two providers and a helper,
one ``anonlab party`` process each, on 300 Adult records) write their JSON
and HTML reports; the pages are checked against the JSON: every number equal
to its place in the report, each template's smallest group, the final cut of
every attribute, the specializations in order, the bytes sent, and no
original value that the fused table does not itself release.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.htmlreport import render_html
from test_htmlreport import Page, assert_numbers_match, leaked_values

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]


def released_labels(report: dict[str, Any]) -> set[str]:
    """Every value the fused table or the specializations name (they are released labels)."""
    labels = {str(v) for values in report.get("cut", {}).values() for v in values}
    for step in report.get("specializations", []):
        labels.add(str(step["value"]))
        labels |= {str(c) for c in step["children"]}
    return labels


def hidden_values(visible: str, frames: list[pd.DataFrame], report: dict[str, Any]) -> set[str]:
    """Original categorical values shown on the page that the release does not publish."""
    raw: set[str] = set()
    for frame in frames:
        for column in frame.columns:
            raw |= {
                str(v)
                for v in frame[column].unique()
                if len(str(v)) > 3 and not str(v).lstrip("-").isdigit()
            }
    raw -= released_labels(report)
    raw -= {str(p) for p in report.get("providers", [])}
    raw -= set(re.findall(r"[\w.-]+", json.dumps(report["parameters"])))
    return {v for v in raw if re.search(rf"(?<![\w-]){re.escape(v)}(?![\w-])", visible)}


def test_fuse_numbers_equal_the_json(fuse_run: dict[str, Any]) -> None:
    assert_numbers_match(fuse_run["report"], Page(fuse_run["html"]))
    assert fuse_run["html"] == render_html(fuse_run["report"])


def test_fuse_templates_cut_and_specializations(fuse_run: dict[str, Any]) -> None:
    report, html = fuse_run["report"], fuse_run["html"]
    page = Page(html)
    for i, template in enumerate(report["templates"]):
        assert page.values[f"templates.{i}.smallest_group"][0] == str(template["smallest_group"])
        assert page.values[f"templates.{i}.k"][0] == str(template["k"])
        assert ", ".join(template["qid"]) in page.visible
    holds = re.findall(
        r"data-key=\"templates\.\d+\.groups\"[^<]*</span></td>"
        r"<td class=\"\">(yes|NO)</td>",
        html,
    )  # the templates table's column
    assert holds == ["yes" if t["smallest_group"] >= t["k"] else "NO" for t in report["templates"]]
    for attribute, values in report["cut"].items():
        # the cut table's row of the attribute (a template of this one attribute has a row too)
        rows = re.findall(
            rf"<tr><td class=\"\">{re.escape(attribute)}</td>(<td class=\"num\">"
            r".*?)</tr>",
            html,
            re.S,
        )
        cut_rows = [r for r in rows if 'data-key="templates.' not in r]
        assert len(cut_rows) == 1, attribute
        assert f">{len(values)}<" in cut_rows[0]
        if values != ["*"]:
            assert all(v.replace("<", "&lt;") in cut_rows[0] for v in values)
    steps = report["specializations"]
    assert len(steps) == report["rounds"]
    for i, step in enumerate(steps):
        assert page.values[f"specializations.{i}.round"][0] == str(step["round"])
        assert float(page.values[f"specializations.{i}.score"][0]) == step["score"]
    for party, sent in report["bytes_sent"].items():
        assert page.values[f"bytes_sent.{party}"][0] == str(sent)
    summary = page.visible.split("Summary", 1)[1][:3000]  # the risk warnings come first
    assert f"{report['rounds']} rounds of specialization" in summary
    smallest = report["templates"][0]["smallest_group"]
    assert f"has {smallest:,} records (k = {report['templates'][0]['k']})" in summary
    assert "not private" in summary
    # the specializations chart is inlined (`report --plot` draws it), and the risk section's
    # class-size histogram and records-at-risk bars
    assert sum(u.startswith("data:image/svg+xml") for u in page.urls) == 3
    assert "#risk" in page.urls and "#roles" in page.urls


def test_fuse_page_shows_no_unreleased_value(fuse_run: dict[str, Any]) -> None:
    report = fuse_run["report"]
    folder = REPO / "examples" / "fusion"
    frames = [pd.read_csv(folder / f, dtype=str) for f in ("provider_a.csv", "provider_b.csv")]
    visible = Page(fuse_run["html"]).visible
    assert hidden_values(visible, frames, report) == set()
    numeric = [pd.read_csv(folder / f) for f in ("provider_a.csv", "provider_b.csv")]
    for frame in numeric:
        leaks = leaked_values(visible, frame.drop(columns=["age"], errors="ignore"), report)
        where = [
            visible[max(0, m.start() - 80) : m.end() + 20]
            for x in leaks
            for m in re.finditer(f"{x:g}", visible)
        ]
        assert leaks == set(), where
    # the check itself catches an original value the release does not publish
    assert hidden_values(visible + " Married-civ-spouse", frames, report) == {"Married-civ-spouse"}


@pytest.mark.parametrize("party", ["provider-a", "recipient"])
def test_party_numbers_equal_the_json(party_runs: dict[str, Any], party: str) -> None:
    report, html = party_runs[party]
    assert_numbers_match(report, Page(html))
    assert html == render_html(report)


def test_provider_page(party_runs: dict[str, Any]) -> None:
    report, html = party_runs["provider-a"]
    page = Page(html)
    text = page.visible
    assert "secure maximum (private) yes" in text
    assert page.values["secure_max_ms_per_call"][0] == str(report["secure_max_ms_per_call"])
    for party, detail in report["bytes_sent_detail"].items():
        for part, value in detail.items():
            if part != "total":
                assert page.values[f"bytes_sent_detail.{party}.{part}"][0] == str(value)
    assert page.values["templates.0.smallest_group"][0] == str(
        report["templates"][0]["smallest_group"]
    )
    assert "This is the report of party provider-a (provider)" in text
    assert "no party saw another's scores" in text
    frames = [
        pd.read_csv(party_runs["dir"] / f"{p}.csv", dtype=str) for p in ("provider-a", "provider-b")
    ]
    assert hidden_values(text, frames, report) == set()


def test_helper_page_shows_winners_only(party_runs: dict[str, Any]) -> None:
    report, html = party_runs["recipient"]
    page = Page(html)
    assert "cut" not in report and "The fused table" not in page.visible
    assert "Winner of each round" in page.visible
    winners = report["winners"]
    for party in set(winners):
        row = re.search(
            rf"<td class=\"\">{party}</td><td class=\"num\">"
            r"<span data-value=\"(\d+)\">",
            html,
        )
        assert row is not None and int(row.group(1)) == winners.count(party)


def test_fuse_attributes_from_the_config(fuse_run: dict[str, Any]) -> None:
    import copy
    import tomllib

    report, html = fuse_run["report"], fuse_run["html"]
    config = tomllib.loads((REPO / "examples" / "fusion" / "fusion.toml").read_text())
    older = copy.deepcopy(report)  # a report from before the columns key: the config is read
    del older["columns"]
    beside = [fuse_run["dir"]]  # the report's paths are relative to its folder
    for page_html in (html, render_html(older, base_dirs=beside)):
        for party in config["parties"]:
            for column in party.get("columns", []):
                row = re.search(
                    rf"<tr><td class=\"\">{re.escape(column)}</td><td class=\"\">"
                    rf"{re.escape(party['id'])}</td><td class=\"\">([^<]*)</td>",
                    page_html,
                )
                assert row is not None, column
                expected = (
                    "as it is"
                    if column not in report["cut"]
                    else (
                        "fully generalized"
                        if report["cut"][column] == ["*"]
                        else f"generalized to the final cut ({len(report['cut'][column])} values)"
                    )
                )
                assert row.group(1).startswith(expected), (column, row.group(1))
        assert "dropped (record id)" in page_html and "(the class attribute)" in page_html
    assert "from the config file" in render_html(older, base_dirs=beside)
    assert "from the config file" not in html
    # the report's own columns key is used first: the config file is not needed
    changed = copy.deepcopy(report)
    changed["inputs"]["config"]["sha256"] = "0" * 64
    own = Page(render_html(changed))
    assert "held by" in own.visible and "not listed" not in own.visible
    for column in report["columns"]:
        assert re.search(
            rf"<tr><td class=\"\">{re.escape(column['name'])}</td>", render_html(changed)
        ), column
    # an older report without it falls back to the config, which must be the one the run read
    del changed["columns"]
    page = Page(render_html(changed, base_dirs=beside))
    assert (
        "The providers' columns are not listed: the config file has changed since the "
        "run." in page.visible
    )
    assert "held by" not in page.visible
