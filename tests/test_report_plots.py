"""Every plot of every family's HTML report reads as plain text, with no tick label overprinted.

The reports come from the real runs of the other HTML report tests (the
session fixtures of ``report_runs``: ``generalize`` on Adult, ``microaggregate``, ``evaluate``
and ``tradeoff`` on Tarragona, ``perturb`` and ``attack``, ``fuse`` and
three ``party`` processes), from ``apply`` and ``risk`` on that Adult run,
and from the hand-made reports of every family in
``test_htmlreport_robust``. Each page is rendered (shareable and internal)
and every figure it inlines is caught on its way to SVG; the command's
``--plot`` figure is drawn as PNG too. Two views of each figure are checked:

- the SVG text (the ``<!-- text -->`` matplotlib writes before each text it
  draws as paths, and any ``<text>``): no ``\\mathdefault`` (raw mathtext of
  a tick formatter), and no ``$`` but those of a string of the report
  (column names, labels), which must stay literal characters;
- the tick labels as matplotlib's Agg renderer draws them (those whose tick
  lies in the axis's view): the same two rules, and no two labels of one
  axis whose bounding boxes (``get_window_extent``) overlap by more than
  half a pixel each way.
"""

from __future__ import annotations

import base64
import copy
import html
import io
import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.htmlreport import plots, render_html
from anonlab.htmlreport.render import main_figure
from test_htmlreport_robust import BASE, FAMILIES

runner = CliRunner()

REAL = [
    "generalize",
    "apply",
    "risk",
    "microaggregate",
    "evaluate",
    "tradeoff",
    "perturb",
    "attack",
    "perturb_internal",
    "fuse",
    "party_provider-a",
    "party_provider-b",
    "party_recipient",
]
HAND_MADE = {f"hand_{name}": report for name, report in {**FAMILIES, "generalize": BASE}.items()}
# '$' in the data: labels of a fusion and of an R-U map that mathtext would eat
DOLLARS = "$x$ in US$"


# --- what a figure shows ----------------------------------------------------------------


def svg_texts(uri: str) -> list[str]:
    """The texts of an SVG data URI: matplotlib's comment before each text drawn as paths."""
    svg = base64.b64decode(uri.split(",", 1)[1]).decode("utf-8")
    found = re.findall(r"<!-- (.*?) -->", svg, flags=re.S)
    found += re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.S)
    return [html.unescape(text) for text in found]


def strings_of(node: Any) -> set[str]:
    """Every string in a JSON value, keys included, and the str() of its scalars."""
    if isinstance(node, dict):
        return {str(k) for k in node} | {s for v in node.values() for s in strings_of(v)}
    if isinstance(node, list):
        return {s for v in node for s in strings_of(v)}
    return {str(node)}


def stray_dollar(text: str, sources: set[str]) -> bool:
    """True when ``text`` holds a '$' that no string of the report (in it) accounts for."""
    for source in sorted((s for s in sources if "$" in s), key=len, reverse=True):
        text = text.replace(source, "")
    return "$" in text


def text_problems(texts: list[str], sources: set[str]) -> list[str]:
    """Texts that show mathtext source or a '$' the report does not hold."""
    return [t for t in texts if "\\mathdefault" in t or stray_dollar(t, sources)]


def drawn_tick_labels(ax: Any, axis: Any) -> list[Any]:
    """Tick labels drawn on ``axis``: visible, not blank, their tick inside the axes."""
    to_axes = ax.transData + ax.transAxes.inverted()
    x = axis is ax.xaxis
    labels = []
    for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
        loc = float(tick.get_loc())
        fraction = to_axes.transform([(loc, 0.0) if x else (0.0, loc)])[0][0 if x else 1]
        inside = -1e-6 <= fraction <= 1 + 1e-6
        for label in (tick.label1, tick.label2):
            if inside and label.get_visible() and label.get_text().strip():
                labels.append(label)
    return labels


def overlaps(labels: list[Any], renderer: Any) -> list[tuple[str, str]]:
    """Pairs of labels whose drawn boxes share more than 0.5 px in both directions."""
    boxes = [label.get_window_extent(renderer) for label in labels]
    pairs = []
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            a, b = boxes[i], boxes[j]
            if min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5 and min(a.y1, b.y1) - max(a.y0, b.y0) > 0.5:
                pairs.append((labels[i].get_text(), labels[j].get_text()))
    return pairs


def figure_problems(fig: Any, sources: set[str]) -> list[str]:
    """What is wrong with the tick labels of a drawn figure, one line per problem."""
    canvas: Any = FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    problems = []
    for n, ax in enumerate(fig.axes):
        for axis in (ax.xaxis, ax.yaxis):
            labels = drawn_tick_labels(ax, axis)
            where = f"axes {n} {axis.axis_name}"
            problems += [
                f"{where}: {t!r}" for t in text_problems([x.get_text() for x in labels], sources)
            ]
            problems += [f"{where}: {a!r} overlaps {b!r}" for a, b in overlaps(labels, renderer)]
    return problems


def log_scales(fig: Any) -> set[str]:
    """The non-linear scales of a figure's axes."""
    return {scale for ax in fig.axes for scale in (ax.get_xscale(), ax.get_yscale())} - {"linear"}


# --- the reports ------------------------------------------------------------------------


def _risk_report(adult: dict[str, Any]) -> dict[str, Any]:
    """``anonlab risk`` on the Adult release, the attacker knowing sex, age and race."""
    out: Path = adult["dir"]
    result = runner.invoke(
        app,
        [
            "risk",
            str(out / "a.csv"),
            "--qi",
            "sex,age,race",
            "--sensitive",
            "salary-class",
            "--other",
            "insensitive",
            "--report",
            str(out / "risk.json"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    return dict(json.loads((out / "risk.json").read_text()))


def _apply_report(adult: dict[str, Any], data_dir: Path) -> dict[str, Any]:
    """``anonlab apply`` of the Adult run's levels to the Adult table."""
    out: Path = adult["dir"]
    result = runner.invoke(
        app,
        [
            "apply",
            str(out / "a.json"),
            str(data_dir / "adult" / "adult.csv"),
            "--delimiter",
            ";",
            "--output",
            str(out / "plots_applied.csv"),
            "--report",
            str(out / "plots_applied.json"),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    return dict(json.loads((out / "plots_applied.json").read_text()))


@pytest.fixture(scope="module")
def reports(request: pytest.FixtureRequest, data_dir: Path) -> dict[str, dict[str, Any]]:
    """The JSON report of every real run, by name (see ``REAL``)."""
    adult = request.getfixturevalue("generalize_run")
    micro = request.getfixturevalue("micro_runs")
    perturb = request.getfixturevalue("perturb_runs")
    party = request.getfixturevalue("party_runs")
    found = {
        "generalize": adult["report"],
        "risk": _risk_report(adult),
        "apply": _apply_report(adult, data_dir),
        "fuse": request.getfixturevalue("fuse_run")["report"],
        "perturb_internal": perturb["internal"][0],
    }
    for name in ("microaggregate", "evaluate", "tradeoff"):
        found[name] = micro[name][0]
    for name in ("perturb", "attack"):
        found[name] = perturb[name][0]
    for name in ("provider-a", "provider-b", "recipient"):
        found[f"party_{name}"] = party[name][0]
    return found


def page_figures(report: dict[str, Any]) -> list[tuple[Any, str]]:
    """The figures of the shareable and the internal page (with their SVG data URIs), and
    the ``--plot`` figure (drawn as PNG; no URI)."""
    figures: list[tuple[Any, str]] = []
    inline = plots.svg_data_uri

    def catch(fig: Any) -> str:
        uri = inline(fig)
        figures.append((fig, uri))
        return uri

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "svg_data_uri", catch)
        render_html(report)
        render_html(report, internal=True)
    try:
        fig = main_figure(report)
    except AnonlabError:
        return figures
    plots.png_bytes(fig, dpi=72)
    return [*figures, (fig, "")]


@pytest.fixture(scope="module")
def real_figures(reports: dict[str, dict[str, Any]]) -> dict[str, list[tuple[Any, str]]]:
    """Every figure of every real run's pages, by run name."""
    return {name: page_figures(report) for name, report in reports.items()}


def assert_readable(figures: list[tuple[Any, str]], sources: set[str]) -> None:
    """No mathtext, no stray '$' in any SVG text or tick label; no overlapping tick labels."""
    problems = []
    for i, (fig, uri) in enumerate(figures):
        texts = svg_texts(uri) if uri else []
        problems += [f"figure {i} SVG text {t!r}" for t in text_problems(texts, sources)]
        problems += [f"figure {i} {p}" for p in figure_problems(fig, sources)]
    assert problems == []


# --- the tests --------------------------------------------------------------------------


@pytest.mark.parametrize("name", REAL)
def test_every_plot_of_a_real_run_is_readable(
    reports: dict[str, dict[str, Any]], real_figures: dict[str, list[tuple[Any, str]]], name: str
) -> None:
    figures = real_figures[name]
    if name not in ("evaluate", "party_recipient"):
        assert figures, f"the {name} report drew no figure"
    assert_readable(figures, strings_of(reports[name]))


def test_the_generalize_report_has_its_log_axes(
    real_figures: dict[str, list[tuple[Any, str]]],
) -> None:
    """The lattice (symlog) and Adult's class sizes (log) are among the figures checked."""
    figures = real_figures["generalize"]
    scales = set().union(*(log_scales(fig) for fig, _ in figures))
    assert {"log", "symlog"} <= scales
    ticks = {
        label.get_text()
        for fig, _ in figures
        for ax in fig.axes
        if ax.get_xscale() == "log"
        for label in drawn_tick_labels(ax, ax.xaxis)
    }
    assert {"10", "100", "1,000"} <= ticks


@pytest.mark.parametrize("name", sorted(HAND_MADE))
def test_every_plot_of_a_hand_made_report_is_readable(name: str) -> None:
    report = HAND_MADE[name]
    assert_readable(page_figures(report), strings_of(report))


def _with_dollars(report: dict[str, Any], old: str) -> dict[str, Any]:
    """The report with every string equal to ``old`` (a label) replaced by ``DOLLARS``."""
    text = json.dumps(report).replace(json.dumps(old), json.dumps(DOLLARS))
    return dict(json.loads(text))


@pytest.mark.parametrize(("command", "label"), [("fuse", "x"), ("fuse", "a")])
def test_a_dollar_in_the_data_is_drawn_as_a_character(command: str, label: str) -> None:
    report = _with_dollars(copy.deepcopy(FAMILIES[command]), label)
    figures = page_figures(report)
    assert any(DOLLARS in svg_texts(uri) for _, uri in figures if uri)
    assert_readable(figures, strings_of(report))


def test_a_dollar_label_on_an_r_u_map_stays_literal() -> None:
    report = copy.deepcopy(FAMILIES["tradeoff"])
    report["points"][0]["k"] = DOLLARS
    figures = page_figures(report)
    assert any(DOLLARS in svg_texts(uri) for _, uri in figures if uri)
    assert_readable(figures, strings_of(report))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (1, "1"),
        (10, "10"),
        (100, "100"),
        (1000, "1,000"),
        (10_000, "10,000"),
        (99_999, "99,999"),
        (100_000, "1e5"),
        (250_000, "2.5e5"),
        (1e9, "1e9"),
        (-1000, "-1,000"),
        (0.5, "0.5"),
        (0.01, "0.01"),
        (0.0001, "1e-4"),
        (2.5, "2.5"),
    ],
)
def test_plain_number(value: float, text: str) -> None:
    assert plots.plain_number(value) == text


def test_log_axes_read_as_plain_numbers_over_many_decades() -> None:
    fig = plots.class_size_figure({2: 40, 30: 5, 4_000: 2, 3_000_000: 1}, k=2)
    uri = plots.svg_data_uri(fig)
    labels = [t.get_text() for ax in fig.axes for t in drawn_tick_labels(ax, ax.xaxis)]
    assert set(labels) >= {"10", "1,000", "1e5"} or set(labels) >= {"100", "10,000", "1e6"}
    assert not any("\\mathdefault" in t or "$" in t for t in svg_texts(uri))
    assert_readable([(fig, uri)], set())


def _crowded() -> Any:
    """Forty long category names across a narrow chart."""
    return plots.bar_figure(
        [f"category number {i}" for i in range(40)], list(range(40)), ylabel="records"
    )


def test_the_checks_can_fail() -> None:
    """matplotlib's own log labels (mathtext) and unthinned labels are caught."""
    fig = Figure(figsize=(4, 3))
    ax = fig.subplots()
    ax.plot([1, 10_000], [1, 2])
    ax.set_xscale("log")
    fig.savefig(io.BytesIO(), format="svg")
    assert any("mathdefault" in p for p in figure_problems(fig, set()))
    crowded = _crowded()
    crowded.savefig(io.BytesIO(), format="svg")
    assert any("overlaps" in p for p in figure_problems(crowded, set()))
    assert stray_dollar("$\\mathdefault{10^{1}}$", {"a$b"})
    assert not stray_dollar("chosen k = a$b", {"a$b"})


def test_crowded_labels_are_stood_upright_or_thinned() -> None:
    fig = _crowded()
    uri = plots.svg_data_uri(fig)
    assert_readable([(fig, uri)], set())
    shown = drawn_tick_labels(fig.axes[0], fig.axes[0].xaxis)
    assert {t.get_rotation() for t in shown} == {90.0}
    assert 10 <= len(shown) <= 40


def test_a_long_lattice_is_thinned_not_overprinted() -> None:
    levels = [{"level": i, "nodes": i + 1} for i in range(70)]
    fig = plots.lattice_figure(levels)
    png = plots.png_bytes(fig, dpi=72)
    assert png.startswith(b"\x89PNG")
    assert_readable([(fig, "")], set())
    shown = [t.get_text() for t in drawn_tick_labels(fig.axes[0], fig.axes[0].xaxis)]
    assert shown[0] == "0" and 5 <= len(shown) < 70
    steps = {int(b) - int(a) for a, b in pairwise(shown)}
    assert len(steps) == 1 and steps <= {2, 5, 10}  # every s-th level, s a round step
