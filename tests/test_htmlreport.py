"""The HTML report of a generalization run: numbers equal the JSON, nothing record-level leaks.

Reports come from real runs on the bundled Adult table (via the CLI, as a user
makes them). The page is parsed with the standard library's HTML parser; the
checks are written against the JSON, not against the renderer's code.
"""

from __future__ import annotations

import base64
import copy
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.htmlreport import render_html, validate_report
from anonlab.htmlreport.blocks import format_number, format_percent

runner = CliRunner()


class Page(HTMLParser):
    """Visible text, numbers with data-key/data-value, tags and URLs of a page."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.text: list[str] = []
        self.values: dict[str, tuple[str, str]] = {}
        self.tags: list[str] = []
        self.urls: list[str] = []
        self._skip = 0
        self._open: list[tuple[str, str]] = []
        self._span_text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        a = dict(attrs)
        for name in ("src", "href", "action", "data", "poster"):
            if a.get(name):
                self.urls.append(str(a[name]))
        if tag in ("style", "script"):
            self._skip += 1
        if tag == "span" and a.get("data-key"):
            self._open.append((str(a["data-key"]), str(a["data-value"])))
            self._span_text = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "script"):
            self._skip -= 1
        if tag == "span" and self._open:
            key, value = self._open.pop()
            self.values[key] = (value, "".join(self._span_text).strip())

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        self.text.append(data)
        if self._open:
            self._span_text.append(data)

    @property
    def visible(self) -> str:
        return " ".join(" ".join(self.text).split())

    def tokens(self) -> set[str]:
        return {t for t in re.split(r"[\s,;()→:]+", self.visible) if t}


def json_at(report: dict[str, Any], key: str) -> Any:
    node: Any = report
    for part in key.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def shown_number(text: str) -> float:
    """The number a cell shows ('1,234', '0.5034', '207 (0.69 %)', '1.82 s', '1 %')."""
    m = re.match(r"^-?[\d,]*\.?\d+(e[+-]?\d+)?", text)
    assert m, f"no number in {text!r}"
    number = float(m.group(0).replace(",", ""))
    return number / 100 if text[m.end() :].strip() == "%" else number


def assert_numbers_match(report: dict[str, Any], page: Page) -> None:
    """Every number tied to the JSON equals it exactly, and its text to 4 digits."""
    assert page.values, "no numbers tied to the JSON"
    for key, (exact, shown) in page.values.items():
        expected = json_at(report, key)
        assert float(exact) == float(expected), key
        if not math.isfinite(float(expected)) or expected == 0:
            continue
        assert math.isclose(shown_number(shown), float(expected), rel_tol=6e-4, abs_tol=0.006), (
            key,
            shown,
            expected,
        )


def _json_numbers(node: Any) -> set[float]:
    if isinstance(node, bool):
        return set()
    if isinstance(node, int | float):  # the value and the roundings a page shows of it
        x = float(node)
        if not math.isfinite(x):
            return {x}
        shown = {x, float(f"{x:.4g}"), round(x, 2), round(x, 1)}
        if abs(x) <= 1:  # a share shown as a percentage
            shown |= {round(100 * x, 2), float(round(100 * x))}
        return shown
    if isinstance(node, dict):
        return set().union(
            *map(_json_numbers, node.values()),
            *({float(k)} for k in node if re.fullmatch(r"-?\d+(\.\d+)?", str(k))),
        )
    if isinstance(node, list):
        return set().union(*map(_json_numbers, node)) if node else set()
    if isinstance(node, str):  # numbers inside the report's own text (dates, intervals)
        return {float(t) for t in re.findall(r"\d+(?:\.\d+)?", node)}
    return set()


def leaked_values(
    visible: str, frame: pd.DataFrame, report: dict[str, Any], smallest: float = 100.0
) -> set[float]:
    """Numbers of ``frame`` (|x| >= smallest) that the page's text shows, unless the JSON has them.

    A number on the page that equals a cell of the data but is one of the
    report's own figures (a count, a size in bytes) is not a leak.
    """
    cells = {
        float(x)
        for x in frame.select_dtypes("number").to_numpy().ravel()
        if math.isfinite(float(x)) and abs(float(x)) >= smallest
    }
    shown = {
        float(t.replace(",", ""))
        for t in re.findall(r"(?<![\w.-])-?\d[\d,]*(?:\.\d+)?(?![\w.]\w)", visible)
    }
    return (cells & shown) - _json_numbers(report)


@pytest.fixture(scope="module")
def run(generalize_run: dict[str, Any]) -> dict[str, Any]:
    """``generalize`` on Adult with --report, --html and --plot (report_runs, made once)."""
    return generalize_run


@pytest.fixture(scope="module")
def page(run: dict[str, Any]) -> Page:
    return Page(run["html"])


@pytest.fixture(scope="module")
def internal_html(run: dict[str, Any]) -> str:
    out: Path = run["dir"]
    result = runner.invoke(
        app,
        [
            "report",
            str(out / "a.json"),
            "--html",
            str(out / "internal.html"),
            "--internal",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    return (out / "internal.html").read_text()


def test_every_number_equals_the_json(run: dict[str, Any], page: Page) -> None:
    assert_numbers_match(run["report"], page)


def test_the_method_figures_are_all_shown(run: dict[str, Any], page: Page) -> None:
    report = run["report"]
    expected = {
        "k",
        "records",
        "suppressed_records",
        "equivalence_classes",
        "lattice_size",
        "nodes_checked",
        "k_minimal_nodes",
        "optimum_loss",
        "suppression_limit",
    }
    losses = report["information_loss"]
    expected |= {f"information_loss.{m}" for m, v in losses.items() if v is not None}
    expected |= {f"transformation.{c}" for c in report["transformation"]}
    for i, _ in enumerate(report["lattice_levels"]):
        expected |= {
            f"lattice_levels.{i}.{x}" for x in ("nodes", "checked", "anonymous", "k_minimal")
        }
    assert expected <= set(page.values), sorted(expected - set(page.values))
    # a measure the run could not take (no targets, no static losses) is a row with a dash
    unmeasured = [m for m, v in losses.items() if v is None]
    assert unmeasured == ["classification", "static"]
    text = " ".join(page.text)
    assert all(f"{m} —" in text for m in unmeasured), text


def test_class_size_figures_follow_from_the_json(run: dict[str, Any], page: Page) -> None:
    report = run["report"]
    sizes = {int(s): c for s, c in report["class_sizes"].items()}
    released = sum(s * c for s, c in sizes.items())
    assert released == report["records"] - report["suppressed_records"]
    text = page.visible
    assert f"records in released classes {released:,}" in text
    assert f"smallest class {min(sizes)}" in text
    assert f"largest class {max(sizes):,}" in text
    assert f"classes of exactly k = 5 records {sizes.get(5, 0)}" in text


def test_summary_paragraph(run: dict[str, Any], page: Page) -> None:
    r = run["report"]
    summary = page.visible.split("Summary", 1)[1][:1500]
    assert f"{r['records']:,} records of adult.csv" in summary
    assert "Every combination of the 8 quasi-identifiers is shared by at least 5 records" in summary
    pct = format_percent(r["suppressed_records"] / r["records"])
    assert f"{r['suppressed_records']:,} records ({pct}) were suppressed" in summary
    assert "within the allowed 1 %." in summary
    assert f"{r['equivalence_classes']:,} groups" in summary


def test_settings_show_file_hash_version_and_parameters(run: dict[str, Any], page: Page) -> None:
    r = run["report"]
    text = page.visible
    assert r["inputs"]["data"]["sha256"] in text
    assert "adult.csv" in text and r["anonlab_version"] in text
    assert "precision_with_suppression" in text and "flash" in text
    # external version: file names only, not the folders they were read from
    assert "examples/../data" not in text


def test_page_is_self_contained(run: dict[str, Any], page: Page) -> None:
    assert "script" not in page.tags and "link" not in page.tags and "iframe" not in page.tags
    assert page.urls, "no figures"
    for url in page.urls:
        assert url.startswith(("#", "data:image/svg+xml;base64,")), url[:80]
        if url.startswith("data:"):
            svg = base64.b64decode(url.split(",", 1)[1]).decode()
            assert "<svg" in svg and "<script" not in svg and 'href="http' not in svg
    # class sizes and lattice (generalization), class sizes and records at risk (risk section)
    assert sum(u.startswith("data:") for u in page.urls) == 4
    assert "@media print" in run["html"]


def _adult(data_dir: Path) -> pd.DataFrame:
    return pd.read_csv(data_dir / "adult" / "adult.csv", sep=";", dtype=str)


def test_external_page_shows_no_record(run: dict[str, Any], page: Page, data_dir: Path) -> None:
    frame = _adult(data_dir)
    tokens = page.tokens()
    rows = frame.drop_duplicates().itertuples(index=False)
    leaked = [row for row in rows if all(str(v) in tokens for v in row)]
    assert leaked == []
    # no original value of any quasi-identifier appears, unless it is itself a released label
    # (e.g. 'Other' of race is also an occupation group) or a bare number (counts)
    from anonlab.hierarchy import Hierarchy

    released: set[str] = set()
    for col, level in run["report"]["transformation"].items():
        h = Hierarchy.from_csv(data_dir / "adult" / f"hierarchy_{col}.csv")
        if level > 0:
            released |= set(h.labels(h.values, level))
    raw = {v for col in run["report"]["transformation"] for v in frame[col].unique()}
    shown = {v for v in raw - released if not v.isdigit() and v in tokens}
    assert shown == set()


def test_internal_page_says_so_and_shows_examples(
    internal_html: str, run: dict[str, Any], page: Page
) -> None:
    internal = Page(internal_html)
    assert internal_html.index("INTERNAL REPORT") < internal_html.index("<h1>")
    assert "INTERNAL" in internal_html.split("</title>", maxsplit=1)[0]
    assert "Married-civ-spouse → spouse present" in internal.visible
    assert "INTERNAL" not in run["html"] and "Married-civ-spouse" not in page.visible
    # the same numbers in both versions
    assert internal.values == page.values


def test_risk_section_shows_the_reports_risk(run: dict[str, Any], page: Page) -> None:
    risk = run["report"]["risk"]
    for key in (
        "risk.records",
        "risk.suppressed",
        "risk.classes.count",
        "risk.classes.smallest",
        "risk.prosecutor.highest",
        "risk.prosecutor.average",
        "risk.journalist.highest",
        "risk.marketer.average",
        "risk.sample_uniques",
        "risk.sensitive.salary-class.distinct_l",
        "risk.sensitive.salary-class.t_equal",
        "risk.sensitive.salary-class.single_value_records",
    ):
        assert key in page.values, key
    section = page.visible.split("Re-identification risk", 1)[1]
    assert "the attacker knows " + ", ".join(risk["attacker_columns"]) in section
    assert "1 risk warning: see the top of the summary" in section
    # records at risk: a share per threshold, as the JSON has it
    for threshold, share in risk["prosecutor"]["records_at_risk"].items():
        assert f"{threshold} {format_percent(share)}" in section
    summary = page.visible.split("Summary", 1)[1][:2000]
    assert summary.startswith(" Warning: sensitive attribute 'salary-class'")
    assert "picks out a record with a probability of at most 20 %" in summary
    # the roles of the columns
    roles = page.visible.split("Columns and their roles", 2)[2]
    assert "salary-class sensitive: released as it is" in roles


def test_distinct_values_count_the_data_not_the_hierarchy(
    run: dict[str, Any], page: Page, data_dir: Path
) -> None:
    from anonlab.hierarchy import Hierarchy

    frame = _adult(data_dir)
    counts = run["report"]["distinct_values"]
    for column in run["report"]["transformation"]:
        assert counts[column]["original"] == frame[column].nunique(), column
        assert page.values[f"distinct_values.{column}.original"][0] == str(
            counts[column]["original"]
        )
    # age: 72 values in the data, 100 rows in its hierarchy
    assert counts["age"]["original"] == 72
    assert len(Hierarchy.from_csv(data_dir / "adult" / "hierarchy_age.csv").values) == 100
    # released: the release's distinct values among records not suppressed
    release = pd.read_csv(run["dir"] / "a.csv", dtype=str, keep_default_na=False)
    qis = list(run["report"]["transformation"])
    kept = release.loc[~(release[qis] == "*").all(axis=1)]
    assert {c: counts[c]["released"] for c in qis} == {c: kept[c].nunique() for c in qis}


def test_internal_examples_come_from_the_data(tmp_path: Path) -> None:
    """The hierarchy lists ages 20-99; the data holds 31-34: only those are shown."""
    import warnings

    from anonlab.runs.generalize import run_generalize
    from anonlab.runs.generalize_settings import GeneralizeSettings

    (tmp_path / "t.csv").write_text("age,s\n31,a\n32,b\n33,a\n34,b\n")
    (tmp_path / "age.csv").write_text(
        "".join(f"{a};{a // 5 * 5}-{a // 5 * 5 + 4};*\n" for a in range(20, 100))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = run_generalize(
            GeneralizeSettings.load(
                None,
                input=tmp_path / "t.csv",
                qi={"age": tmp_path / "age.csv"},
                sensitive="s",
                k=2,
                report=tmp_path / "r.json",
            )
        ).report
    internal = Page(render_html(report, internal=True, base_dirs=[tmp_path]))
    shown = re.findall(r"(\d+) → \d+-\d+", internal.visible)
    assert shown and set(shown) <= {"31", "32", "33", "34"}
    assert internal.values["distinct_values.age.original"][0] == "4"
    # a data file changed since the run gives no examples
    (tmp_path / "t.csv").write_text("age,s\n35,a\n36,b\n37,a\n38,b\n")
    changed = Page(render_html(report, internal=True, base_dirs=[tmp_path])).visible
    assert "data file changed since the run" in changed
    assert re.findall(r"(\d+) → \d+-\d+", changed) == []


def test_plot_file_is_a_png(run: dict[str, Any]) -> None:
    data = (run["dir"] / "a.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000


def test_report_command_plot_and_html(run: dict[str, Any]) -> None:
    out = run["dir"]
    result = runner.invoke(
        app,
        [
            "report",
            str(out / "a.json"),
            "--html",
            str(out / "b.html"),
            "--plot",
            str(out / "b.png"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "shareable" in result.output
    assert (out / "b.png").read_bytes().startswith(b"\x89PNG")
    assert Page((out / "b.html").read_text()).values == Page(run["html"]).values


def test_missing_optional_keys_leave_their_parts_out(run: dict[str, Any]) -> None:
    report = copy.deepcopy(run["report"])
    for key in (
        "class_sizes",
        "information_loss",
        "lattice_levels",
        "roles",
        "created",
        "equivalence_classes",
        "search_seconds",
        "inputs",
    ):
        report.pop(key)
    page = Page(render_html(report))
    assert "Information loss of the release" not in page.visible
    assert "Lattice nodes per level" not in page.visible
    assert "no class size distribution" in page.visible
    assert page.values["records"][0] == str(report["records"])


def test_changed_hierarchy_is_not_used(run: dict[str, Any]) -> None:
    report = copy.deepcopy(run["report"])
    report["inputs"]["hierarchy:marital-status"]["sha256"] = "0" * 64
    html = render_html(report, internal=True, base_dirs=[run["dir"]])  # paths: beside it
    assert "hierarchy file changed since the run" in html
    assert "Married-civ-spouse" not in html


def test_apply_report_renders(run: dict[str, Any], data_dir: Path) -> None:
    out = run["dir"]
    result = runner.invoke(
        app,
        [
            "apply",
            str(out / "a.json"),
            str(data_dir / "adult" / "adult.csv"),
            "--delimiter",
            ";",
            "--output",
            str(out / "applied.csv"),
            "--report",
            str(out / "applied.json"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        app, ["report", str(out / "applied.json"), "--html", str(out / "applied.html"), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    applied = json.loads((out / "applied.json").read_text())
    page = Page((out / "applied.html").read_text())
    assert page.values["suppressed_records"][0] == str(applied["suppressed_records"])
    assert f"{applied['records']:,} records" in page.visible


def test_a_later_family_renders_generically_and_hides_samples(run: dict[str, Any]) -> None:
    report = {
        "command": "newmethod",
        "anonlab_version": "9.9",
        "parameters": {"seed": 7, "m": 3},
        "inputs": {"data": None},
        "records": 1234,
        "risk": 0.125,
        "per_block": [{"block": "a", "s": 0.5}, {"block": "b", "s": 0.25}],
        "samples": [{"age": "39", "zip": "43210"}],
    }
    external = Page(render_html(report))
    assert external.values["risk"][0] == "0.125"
    assert external.values["per_block.1.s"][0] == "0.25"
    assert external.values["parameters.seed"][0] == "7"
    assert "43210" not in external.visible and "samples" in external.visible
    internal = Page(render_html(report, internal=True))
    assert "43210" in internal.visible


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([1, 2], "expected a JSON object"),
        ({"anonlab_version": "0.1", "parameters": {}}, "key 'command' is missing"),
        ({"command": "generalize", "parameters": {}}, "key 'anonlab_version' is missing"),
        ({"command": "generalize", "anonlab_version": "0.1"}, "key 'parameters' is missing"),
        (
            {
                "command": "generalize",
                "anonlab_version": "0.1",
                "parameters": {},
                "k": 5,
                "records": 10,
                "suppressed_records": 0,
            },
            "missing key 'transformation'",
        ),
        (
            {
                "command": "generalize",
                "anonlab_version": "0.1",
                "parameters": {},
                "k": 5,
                "records": 10,
                "suppressed_records": 0,
                "transformation": [1],
            },
            "key 'transformation' must be an object",
        ),
        (
            {
                "command": "generalize",
                "anonlab_version": "0.1",
                "parameters": {},
                "k": 5,
                "records": 10,
                "suppressed_records": 0,
                "transformation": {},
                "class_sizes": [3],
            },
            "key 'class_sizes' must be an object",
        ),
        (
            {
                "command": "generalize",
                "anonlab_version": "0.1",
                "parameters": {},
                "k": 5,
                "records": 10,
                "suppressed_records": 0,
                "transformation": {"age": "two"},
            },
            "transformation of 'age' must be a whole number",
        ),
        (
            {
                "command": "generalize",
                "anonlab_version": "0.1",
                "parameters": {},
                "k": 5,
                "records": 10,
                "suppressed_records": 0,
                "transformation": {},
                "class_sizes": {"5": "x"},
            },
            "class_sizes must map a size (>= 1) to a count",
        ),
        (
            {
                "command": "apply",
                "anonlab_version": "0.1",
                "parameters": {},
                "records": 10,
                "transformation": {},
            },
            "missing key 'suppressed_records'",
        ),
        (
            {
                "command": "generalize",
                "anonlab_version": "0.1",
                "parameters": {},
                "k": 5,
                "records": 10,
                "suppressed_records": 0,
                "transformation": {"age": -1},
            },
            "transformation of 'age' must be a whole number >= 0",
        ),
        (
            {
                "command": "generalize",
                "anonlab_version": "0.1",
                "parameters": {},
                "k": 5,
                "records": 10,
                "suppressed_records": 0,
                "transformation": {},
                "class_sizes": {"0": 3},
            },
            "class_sizes must map a size (>= 1)",
        ),
        (
            {
                "command": "generalize",
                "anonlab_version": "0.1",
                "parameters": {},
                "k": 5,
                "records": 10,
                "suppressed_records": 0,
                "transformation": {},
                "lattice_levels": [{"level": 0, "nodes": "many"}],
            },
            "lattice_levels[0].nodes must be a whole number",
        ),
    ],
)
def test_malformed_or_foreign_json_one_line_error(tmp_path: Path, doc: Any, message: str) -> None:
    with pytest.raises(AnonlabError, match=re.escape(message)):
        validate_report(doc, "x.json")
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    result = runner.invoke(app, ["report", str(path), "--html", str(tmp_path / "x.html")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0]
    assert not (tmp_path / "x.html").exists()


def test_report_command_errors(run: dict[str, Any], tmp_path: Path) -> None:
    out = run["dir"]
    cases = [
        (["report", str(out / "a.json")], "nothing to write"),
        (["report", str(out / "a.json"), "--html", str(out / "a.json")], "overwrit"),
        (["report", str(out / "a.json"), "--html", str(tmp_path / "x.txt")], "should end in"),
        (["report", str(out / "a.csv"), "--html", str(tmp_path / "x.html")], "not valid JSON"),
        (
            ["report", str(tmp_path / "none.json"), "--html", str(tmp_path / "x.html")],
            "does not exist",
        ),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, args
        assert message in result.output, (args, result.output)
    assert not (tmp_path / "x.html").exists() and not (tmp_path / "x.txt").exists()


def test_generalize_html_alone_and_refuses_overwriting_input(
    data_dir: Path, tmp_path: Path
) -> None:
    adult = data_dir / "adult"
    result = runner.invoke(
        app,
        [
            "generalize",
            str(adult / "adult.csv"),
            "--delimiter",
            ";",
            "--qi",
            f"sex={adult / 'hierarchy_sex.csv'}",
            "--qi",
            f"age={adult / 'hierarchy_age.csv'}",
            "--k",
            "3",
            "--identifying",
            "race,marital-status,education,native-country,workclass,occupation",
            "--sensitive",
            "salary-class",
            "--html",
            str(tmp_path / "only.html"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["only.html"]
    only = Page((tmp_path / "only.html").read_text())
    assert only.values["k"][0] == "3"
    config = data_dir.parent / "examples" / "adult.toml"
    hierarchy = data_dir / "adult" / "hierarchy_sex.csv"
    before = hierarchy.read_bytes()
    result = runner.invoke(
        app,
        [
            "generalize",
            "--config",
            str(config),
            "--output",
            str(tmp_path / "o.csv"),
            "--report",
            str(tmp_path / "o.json"),
            "--html",
            str(hierarchy),
            "--quiet",
        ],
    )
    assert result.exit_code == 2 and hierarchy.read_bytes() == before


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (30162, "30,162"),
        (0.5, "0.5"),
        (0.503431470061667, "0.5034"),
        (50447489.0, "50,447,489"),
        (164.81967213114754, "164.8"),
        (365638.51218437834, "365,638.5"),
        (0, "0"),
        (float("nan"), "n/a"),
        (1.5e-7, "1.500e-07"),
        (True, "yes"),
    ],
)
def test_format_number(value: float, text: str) -> None:
    assert format_number(value) == text


def test_same_report_same_page(run: dict[str, Any]) -> None:
    assert render_html(run["report"]) == render_html(run["report"])
