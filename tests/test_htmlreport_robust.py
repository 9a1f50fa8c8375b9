"""Any JSON a user may hand to ``anonlab report`` renders or gets the one-line error.

Property: for a generalize report with one key replaced by an arbitrary JSON
value (or removed), rendering either succeeds or raises AnonlabError; it
never fails with another exception (a traceback for the user).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anonlab.errors import AnonlabError
from anonlab.htmlreport import render_html
from anonlab.htmlreport.render import main_figure

BASE: dict[str, Any] = {
    "command": "generalize", "anonlab_version": "0.1.0",
    "created": "2026-01-01T00:00:00+00:00", "python": "3.11.7",
    "inputs": {"data": {"name": "d.csv", "bytes": 10, "sha256": "ab" * 32}},
    "parameters": {"k": 2, "qi": {"age": "h_age.csv"}, "seed": None},
    "search": "flash", "metric": "precision", "k": 2, "suppression_limit": 0.1,
    "lattice_size": 3, "nodes_checked": 2, "k_minimal_nodes": 1,
    "transformation": {"age": 1}, "optimum_loss": 0.5, "suppressed_records": 1,
    "records": 9, "equivalence_classes": 3, "class_sizes": {"2": 2, "4": 1},
    "information_loss": {"precision": 0.5, "discernibility": 25},
    "lattice_levels": [{"level": 0, "nodes": 1, "checked": 1, "anonymous": 0, "k_minimal": 0},
                       {"level": 1, "nodes": 1, "checked": 1, "anonymous": 1, "k_minimal": 1,
                        "optimum": True},
                       {"level": 2, "nodes": 1, "checked": 0, "anonymous": 1, "k_minimal": 0}],
    "search_seconds": 0.01, "roles": {"age": "quasi"}, "verified": True,
    "runtime_seconds": 0.1,
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(min_size=1, max_size=5), inner, max_size=3),
    max_leaves=8,
)


def _set(report: dict[str, Any], path: list[str], value: Any) -> None:
    node: Any = report
    for part in path[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(path[-1])] = value
    else:
        node[path[-1]] = value


PATHS = [[k] for k in BASE] + [
    ["transformation", "age"], ["class_sizes", "2"], ["information_loss", "precision"],
    ["lattice_levels", "1"], ["lattice_levels", "1", "nodes"], ["lattice_levels", "0", "level"],
    ["inputs", "data"], ["inputs", "data", "bytes"], ["parameters", "qi"],
    ["parameters", "seed"],
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PATHS), value=json_values, remove=st.booleans(),
       internal=st.booleans())
def test_generalize_report_renders_or_one_line_error(path: list[str], value: Any,
                                                     remove: bool, internal: bool) -> None:
    report = copy.deepcopy(BASE)
    if remove and len(path) == 1:
        report.pop(path[0])
    else:
        _set(report, path, value)
    try:
        html = render_html(report, internal)
    except AnonlabError as exc:
        assert "\n" not in str(exc)
        return
    assert html.startswith("<!DOCTYPE html>")
    try:
        main_figure(report)
    except AnonlabError as exc:
        assert "\n" not in str(exc)
