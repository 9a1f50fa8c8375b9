"""Family sections from hand-made reports: the cases real runs do not reach.

Real runs of every command are rendered in test_htmlreport.py (generalize,
apply), test_htmlreport_microaggregation.py, test_htmlreport_fusion.py and
test_htmlreport_perturbation.py; here reports are written by hand to reach
what those runs do not: a trade-off whose report names no best k, a report
without a picture for --plot, family reports lacking their keys, and any
JSON shape under a family's command.
"""

from __future__ import annotations

import base64
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from anonlab.htmlreport import render_html
from anonlab.io import write_json

runner = CliRunner()


def header(command: str, **params: Any) -> dict[str, Any]:
    return {
        "command": command,
        "anonlab_version": "0.1.0",
        "created": "2026-01-01T00:00:00+00:00",
        "inputs": {"data": {"name": "Tarragona.csv", "bytes": 1, "sha256": "ab" * 32}},
        "parameters": params,
    }


def values(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-key="([^"]+)" data-value="([^"]+)"', html))


def test_evaluate_measures_table() -> None:
    report = header("evaluate", lambdas=[0.5, 0, 0.5])
    report["measures"] = {
        "ILh": 0.169326,
        "IL1": 0.21,
        "IL2": 0.0,
        "IL3": 0.05,
        "ILs": 0.12,
        "IL": 0.144663,
        "DLD": 0.31,
        "ID": 0.42,
        "DR": 0.365,
        "score": 0.25,
    }
    html = render_html(report)
    got = values(html)
    for name, value in report["measures"].items():
        assert float(got[f"measures.{name}"]) == value
    assert "EM4ADOM measures" in html
    assert "Information loss IL is 0.1447" in html and "Disclosure risk DR is 0.365" in html


def test_tradeoff_ru_map_marks_lowest_score(tmp_path: Path) -> None:
    report = header("tradeoff", k="3-6")
    report["points"] = [
        {"k": k, "IL": il, "DR": dr, "score": (il + dr) / 2}
        for k, il, dr in [(3, 0.10, 0.60), (4, 0.15, 0.35), (5, 0.30, 0.30), (6, 0.45, 0.28)]
    ]
    html = render_html(report)
    got = values(html)
    assert float(got["points.2.IL"]) == 0.30 and float(got["points.1.score"]) == 0.25
    # the chosen row is k = 4 (lowest score 0.25)
    row = re.search(r"<tr>(?:(?!</tr>).)*◀ chosen(?:(?!</tr>).)*</tr>", html, re.S)
    assert row is not None and 'data-key="points.1.k"' in row.group(0)
    assert "k = 4, balances the two best" in html
    svgs = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', html)
    assert len(svgs) == 1 and "<svg" in base64.b64decode(svgs[0]).decode()
    # the report's own choice wins over the lowest score
    report["best_k"] = 5
    assert "k = 5, balances" in render_html(report)
    # and --plot draws the R-U map
    write_json(report, tmp_path / "ru.json")
    result = runner.invoke(
        app, ["report", str(tmp_path / "ru.json"), "--plot", str(tmp_path / "ru.png"), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "ru.png").read_bytes().startswith(b"\x89PNG")


def test_plot_refused_without_a_picture(tmp_path: Path) -> None:
    write_json({**header("evaluate"), "measures": {"IL": 0.1}}, tmp_path / "e.json")
    result = runner.invoke(
        app, ["report", str(tmp_path / "e.json"), "--plot", str(tmp_path / "e.png")]
    )
    assert result.exit_code == 2 and "no plot to draw" in result.output
    assert not (tmp_path / "e.png").exists()


@pytest.mark.parametrize(
    ("command", "missing"),
    [
        ("microaggregate", "k"),
        ("evaluate", "measures"),
        ("tradeoff", "points"),
        ("fuse", "rounds"),
        ("party", "party"),
        ("perturb", "method"),
        ("attack", "attacks"),
    ],
)
def test_a_family_report_without_its_keys_is_refused(
    command: str, missing: str, tmp_path: Path
) -> None:
    write_json(header(command), tmp_path / "r.json")
    result = runner.invoke(
        app, ["report", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"Error: '{tmp_path / 'r.json'}' ({command} report) is "
        f"missing key '{missing}': the file is truncated or "
        "edited; write it again with the command's --report"
    )
    assert not (tmp_path / "r.html").exists()


# the keys a family's report cannot do without, so that random extra keys reach its builder
VALID_KEYS: dict[str, dict[str, Any]] = {
    "fuse": {
        "rounds": 2,
        "templates": [{"qid": ["a"], "k": 2, "smallest_group": 3}],
        "cut": {"a": ["x", "y"]},
    },
    "party": {"party": "p", "role": "provider", "rounds": 2},
    "microaggregate": {"k": 3, "records": 10},
    "evaluate": {"measures": {"IL": 0.1, "DR": 0.2}},
    "tradeoff": {"points": [{"k": 3, "IL": 0.1, "DR": 0.2}]},
    "perturb": {"method": "obt", "records": 10},
    "attack": {"attacks": [{"attack": "naive", "known": 0, "within_10": 0.5, "within_25": 1.0}]},
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _at(report: Any, key: str) -> Any:
    node = report
    for part in key.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    command=st.sampled_from(
        ["newthing", "fuse", "party", "perturb", "attack", "evaluate", "tradeoff", "microaggregate"]
    ),
    extra=st.dictionaries(st.from_regex(r"[a-z_]{1,10}", fullmatch=True), json_values, max_size=6),
)
def test_any_json_shape_renders_and_numbers_match(command: str, extra: dict[str, Any]) -> None:
    report = {**VALID_KEYS.get(command, {}), **extra, **header(command, seed=3)}
    try:
        html = render_html(report)
    except AnonlabError as exc:  # a family's required key missing or mistyped
        assert "\n" not in str(exc) and "key '" in str(exc)
        return
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html
    for key, exact in values(html).items():
        if "." in key and any(p not in report for p in [key.split(".")[0]]):
            continue
        try:
            expected = _at(report, key)
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # dotted names that are themselves keys with dots
        got = json.loads(exact)
        assert got == expected or (
            isinstance(got, float) and math.isnan(got) and math.isnan(expected)
        )
