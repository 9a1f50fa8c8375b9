"""Any JSON a user may hand to ``anonlab report`` renders or gets the one-line error.

Property: for a generalize report with one key replaced by an arbitrary JSON
value (or removed), rendering either succeeds or raises AnonlabError; it
never fails with another exception (a traceback for the user).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from anonlab.errors import AnonlabError
from anonlab.htmlreport import render_html
from anonlab.htmlreport.render import main_figure

# a release's risk section (docs/risk.md) and role keys, as generalize, apply and
# microaggregate write them
RISK: dict[str, Any] = {
    "attacker_columns": ["age"],
    "records": 8,
    "suppressed": 1,
    "classes": {"count": 3, "smallest": 2, "sizes": {"2": 2, "4": 1}},
    "prosecutor": {
        "highest": 0.5,
        "average": 0.375,
        "records_at_risk": {"0.2": 0.5, "0.1": 1.0, "0.05": 1.0},
    },
    "journalist": {
        "highest": 0.5,
        "average": 0.375,
        "records_at_risk": {"0.2": 0.5, "0.1": 1.0, "0.05": 1.0},
        "population": "sample",
    },
    "marketer": {"average": 0.375},
    "sample_uniques": 0.0,
    "population_uniques": None,
    "individual_risk": {
        "global_risk": 0.375,
        "expected_reidentifications": 3.0,
        "highest": 0.5,
        "weighted": False,
        "fk_1": 0,
        "fk_2": 4,
    },
    "suda2": None,
    "sensitive": {
        "s": {
            "distinct_l": 1.0,
            "entropy_l": 1.0,
            "t_equal": 0.5,
            "t_hierarchical": None,
            "single_value_classes": 1,
            "single_value_records": 2,
        }
    },
}
RELEASE: dict[str, Any] = {
    "roles": {"age": "quasi", "s": "sensitive", "x": "insensitive"},
    "other": "insensitive",
    "insensitive_by_other": ["x"],
    "released_unchanged": ["s", "x"],
    "risk": RISK,
    "attacker_knowledge": "every released column that is not sensitive and not the weights",
    "risk_warnings": ["highest prosecutor re-identification risk is 0.5, above the maximum 0.2"],
}

BASE: dict[str, Any] = {
    "command": "generalize",
    "anonlab_version": "0.1.0",
    "created": "2026-01-01T00:00:00+00:00",
    "python": "3.11.7",
    "inputs": {"data": {"name": "d.csv", "bytes": 10, "sha256": "ab" * 32}},
    "parameters": {"k": 2, "qi": {"age": "h_age.csv"}, "seed": None},
    "search": "flash",
    "metric": "precision",
    "k": 2,
    "suppression_limit": 0.1,
    "lattice_size": 3,
    "nodes_checked": 2,
    "k_minimal_nodes": 1,
    "transformation": {"age": 1},
    "optimum_loss": 0.5,
    "suppressed_records": 1,
    "records": 9,
    "equivalence_classes": 3,
    "class_sizes": {"2": 2, "4": 1},
    "information_loss": {"precision": 0.5, "discernibility": 25},
    "lattice_levels": [
        {"level": 0, "nodes": 1, "checked": 1, "anonymous": 0, "k_minimal": 0},
        {"level": 1, "nodes": 1, "checked": 1, "anonymous": 1, "k_minimal": 1, "optimum": True},
        {"level": 2, "nodes": 1, "checked": 0, "anonymous": 1, "k_minimal": 0},
    ],
    "search_seconds": 0.01,
    "verified": True,
    "runtime_seconds": 0.1,
    "distinct_values": {"age": {"original": 7, "released": 3}},
    **RELEASE,
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(min_size=1, max_size=5), inner, max_size=3)
    ),
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
    ["transformation", "age"],
    ["class_sizes", "2"],
    ["information_loss", "precision"],
    ["lattice_levels", "1"],
    ["lattice_levels", "1", "nodes"],
    ["lattice_levels", "0", "level"],
    ["inputs", "data"],
    ["inputs", "data", "bytes"],
    ["parameters", "qi"],
    ["parameters", "seed"],
    ["risk", "classes"],
    ["risk", "classes", "sizes"],
    ["risk", "classes", "sizes", "2"],
    ["risk", "prosecutor"],
    ["risk", "prosecutor", "highest"],
    ["risk", "prosecutor", "records_at_risk"],
    ["risk", "prosecutor", "records_at_risk", "0.2"],
    ["risk", "journalist", "population"],
    ["risk", "sensitive"],
    ["risk", "sensitive", "s"],
    ["risk", "sensitive", "s", "distinct_l"],
    ["risk", "attacker_columns"],
    ["risk", "suda2"],
    ["risk", "population_uniques"],
    ["risk_warnings", "0"],
    ["roles", "age"],
    ["distinct_values", "age"],
    ["distinct_values", "age", "original"],
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PATHS), value=json_values, remove=st.booleans(), internal=st.booleans())
def test_generalize_report_renders_or_one_line_error(
    path: list[str], value: Any, remove: bool, internal: bool
) -> None:
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


def _header(command: str) -> dict[str, Any]:
    return {
        "command": command,
        "anonlab_version": "0.1.0",
        "created": "2026-01-01T00:00:00+00:00",
        "python": "3.11.7",
        "inputs": {"data": {"name": "d.csv", "bytes": 10, "sha256": "ab" * 32}},
        "parameters": {"seed": 1, "min_privacy": 0.5},
    }


# reports in the key layout the family commands write (see the real-run tests)
FAMILIES: dict[str, dict[str, Any]] = {
    "evaluate": {
        **_header("evaluate"),
        "records": 10,
        "columns": ["a", "b"],
        "nominal": [],
        "ordinal": [],
        "measures": {
            "ILh": 0.1,
            "IL": 0.2,
            "DR": 0.3,
            "score": 0.25,
            "ID_by_p": {"1": 0.0, "2": 0.1},
        },
        "measure_parameters": {"lambda": [0.5, 0, 0.5], "standardization": "z"},
        "notes": ["a note"],
    },
    "microaggregate": {
        **_header("microaggregate"),
        "method": "MDAV",
        "k": 3,
        "records": 10,
        "columns": ["a"],
        "groups": 3,
        "group_sizes": {"min": 3, "max": 4, "count_by_size": {"3": 2, "4": 1}},
        "measures": {"ILh": 0.1},
        "block_size": None,
        **RELEASE,
    },
    "tradeoff": {
        **_header("tradeoff"),
        "records": 10,
        "k_values": [3, 4],
        "points": [
            {
                "k": 3,
                "IL": 0.1,
                "DR": 0.5,
                "score": 0.3,
                "prosecutor_highest": 0.5,
                "prosecutor_average": 0.375,
            },
            {
                "k": 4,
                "IL": 0.2,
                "DR": 0.3,
                "score": 0.25,
                "prosecutor_highest": 0.25,
                "prosecutor_average": 0.25,
            },
        ],
        "best_k": 4,
        "risk_by_k": {"3": RISK, "4": RISK},
        "attacker_knowledge": "every released column that is not sensitive",
        "roles": {"a": "quasi"},
        "released_unchanged": [],
        "insensitive_by_other": [],
    },
    "fuse": {
        **_header("fuse"),
        "providers": ["a", "b"],
        "records": 10,
        "score": "tds",
        "private": False,
        "rounds": 1,
        "time_seconds": 0.1,
        "templates": [{"qid": ["x", "y"], "k": 2, "smallest_group": 3, "groups": 2}],
        "dropped_templates": [],
        "cut": {"x": ["[1, 2)", "[2, 3]"], "y": ["*"]},
        "specializations": [
            {
                "round": 1,
                "party": "a",
                "attribute": "x",
                "value": "*",
                "children": ["[1, 2)", "[2, 3]"],
                "records": 10,
                "score": 0.5,
            }
        ],
        "bytes_sent": {"a": 10, "b": 0},
    },
    "party": {
        **_header("party"),
        "party": "h",
        "role": "helper",
        "private": True,
        "rounds": 2,
        "winners": ["a", "b"],
        "bytes_sent": {"a": 5, "h": 6},
        "bytes_sent_detail": {
            "a": {"mpc": 4, "channel": 1, "total": 5},
            "h": {"mpc": 6, "channel": 0, "total": 6},
        },
    },
    "perturb": {
        **_header("perturb"),
        "method": "obt",
        "records": 10,
        "columns": ["a", "b"],
        "blocks_count": 1,
        "blocks": [{"columns": ["a", "b"], "S": 2.0, "R": 0.3, "P": 0.6}],
        "overall": {"S": 2.0, "R": 0.3, "P": 0.6, "min_block_P": 0.6},
        "attacks": [
            {
                "attack": "naive",
                "known": 0,
                "median_relative_error": 1.0,
                "within_10": 0.0,
                "within_25": 0.1,
                "exact": 0.0,
            },
            {
                "attack": "ica",
                "known": 5,
                "median_relative_error": 0.5,
                "within_10": 0.2,
                "within_25": 0.4,
                "exact": 0.0,
            },
        ],
        "clustering": {"kmeans": 1.0, "dbscan": 0.9, "records": 10},
        "warnings": ["recoverable"],
    },
}


def _paths(node: Any, prefix: list[str], depth: int = 0) -> list[list[str]]:
    out = [prefix] if prefix else []
    if depth >= 3:
        return out
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, [*prefix, str(k)], depth + 1)
    elif isinstance(node, list):
        for i, v in enumerate(node[:2]):
            out += _paths(v, [*prefix, str(i)], depth + 1)
    return out


FAMILY_PATHS = [
    (command, path)
    for command, report in FAMILIES.items()
    for path in _paths(report, [])
    if path[0] not in ("command",)
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    where=st.sampled_from(FAMILY_PATHS),
    value=json_values,
    remove=st.booleans(),
    internal=st.booleans(),
)
# a value between '$' signs is text in a plot's labels, not mathtext for matplotlib to parse
@example(
    where=("tradeoff", ["points", "0", "k"]),
    value={"0": "$", "\x1f": "$"},
    remove=False,
    internal=False,
)
def test_family_report_renders_or_one_line_error(
    where: tuple[str, list[str]], value: Any, remove: bool, internal: bool
) -> None:
    command, path = where
    report = copy.deepcopy(FAMILIES[command])
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


@pytest.mark.parametrize("command", sorted(FAMILIES))
def test_family_base_reports_render(command: str) -> None:
    assert render_html(FAMILIES[command]).startswith("<!DOCTYPE html>")
