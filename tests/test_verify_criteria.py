"""The independent checker of privacy models (anonlab.verify.criteria) against loops written
from ARX 3.9's Java code, and against the definitions written out class by class."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import reference_models as reference
from anonlab.hierarchy import Hierarchy
from anonlab.verify.criteria import (
    SENSITIVE_CHECKS,
    check_criteria,
    grassberger,
    histograms,
    natural_order,
    poisson_k,
    released_classes,
)

VALUES = ["a", "b", "c", "d", "e"]
HIERARCHY_ROWS = [
    ["a", "ab", "*"],
    ["b", "ab", "*"],
    ["c", "cde", "*"],
    ["d", "cde", "*"],
    ["e", "cde", "*"],
]


def _table(seed: int, rows: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    skew = rng.dirichlet(np.ones(len(VALUES)) * 0.7)
    return pd.DataFrame(
        {
            "q1": rng.choice(["x", "y", "z"], rows),
            "q2": rng.choice(["1", "2"], rows, p=[0.7, 0.3]),
            "s": rng.choice(VALUES, rows, p=skew),
        }
    )


def _classes(frame: pd.DataFrame) -> list[list[str]]:
    """Each class's sensitive values, in the order released_classes numbers the classes."""
    released = released_classes(frame, ["q1", "q2"])
    return [list(frame["s"][released.class_of == c]) for c in range(released.classes)]


# ----------------------------------------------------------------- ARX's loops, per class


def _p(frame: pd.DataFrame) -> dict[str, float]:
    counts = Counter(frame["s"])
    return {v: c / len(frame) for v, c in counts.items()}


def arx_entropy(values: list[str], l_value: float, psi: Callable[[float], float]) -> bool:
    counts = Counter(values)
    if len(counts) < math.ceil(l_value):
        return False
    total = len(values)
    bound = total * (psi(total) - math.log(l_value))
    return sum(f * psi(f) for f in counts.values()) <= bound


def arx_recursive(values: list[str], c: float, l_value: int) -> bool:
    freqs = sorted(Counter(values).values())
    if len(freqs) < l_value:
        return False
    threshold = sum(freqs[: len(freqs) - l_value + 1]) * c
    return freqs[-1] < threshold


def arx_equal_t(values: list[str], p: dict[str, float], t: float) -> bool:
    q = Counter(values)
    return 0.5 * sum(abs(p[v] - q.get(v, 0) / len(values)) for v in p) <= t + 1e-12


def arx_ordered_t(values: list[str], p: dict[str, float], t: float, order: list[str]) -> bool:
    q = Counter(values)
    cumulative, distance = 0.0, 0.0
    for v in order:
        cumulative += q.get(v, 0) / len(values) - p.get(v, 0.0)
        distance += abs(cumulative)
    return distance / (len(order) - 1) <= t + 1e-12


def arx_hierarchical_t(values: list[str], p: dict[str, float], t: float) -> bool:
    """Li et al.'s hierarchical EMD on the two-level tree of HIERARCHY_ROWS."""
    q = Counter(values)
    extra = {v: p.get(v, 0.0) - q.get(v, 0) / len(values) for v in VALUES}
    cost = 0.0
    groups: dict[str, list[str]] = {"ab": ["a", "b"], "cde": ["c", "d", "e"]}
    net = {}
    for g, members in groups.items():
        pos = sum(max(extra[v], 0) for v in members)
        neg = sum(max(-extra[v], 0) for v in members)
        cost += 1 / 2 * min(pos, neg)
        net[g] = pos - neg
    pos = sum(max(x, 0) for x in net.values())
    neg = sum(max(-x, 0) for x in net.values())
    cost += 2 / 2 * min(pos, neg)
    return cost <= t + 1e-12


def arx_beta(values: list[str], p: dict[str, float], beta: float, enhanced: bool) -> bool:
    q = Counter(values)
    for v, count in q.items():
        gain = (count / len(values) - p[v]) / p[v]
        if gain > (min(beta, -math.log(p[v])) if enhanced else beta) + 1e-12:
            return False
    return True


def arx_delta(values: list[str], p: dict[str, float], delta: float) -> bool:
    q = Counter(values)
    return all(
        abs(math.log(c / len(values) / p[v]) / math.log(2)) < delta + 1e-12 for v, c in q.items()
    )


def _hierarchy_file(tmp_path: Path) -> Path:
    path = tmp_path / "h_s.csv"
    Hierarchy.from_rows(HIERARCHY_ROWS).write(path)
    return path


@pytest.mark.parametrize("seed", range(12))
def test_each_model_matches_arx_loops(seed: int, tmp_path: Path) -> None:
    frame = _table(seed)
    released = released_classes(frame, ["q1", "q2"])
    h = histograms(released, frame["s"], frame["s"])
    p = _p(frame)
    classes = _classes(frame)
    rng = np.random.default_rng(100 + seed)
    order = list(rng.permutation(sorted(p)))
    cases: list[tuple[dict[str, Any], Any]] = [
        ({"model": "distinct-l-diversity", "l": 3}, lambda v: len(set(v)) >= 3),
        ({"model": "entropy-l-diversity", "l": 2.2}, lambda v: arx_entropy(v, 2.2, math.log)),
        (
            {"model": "entropy-l-diversity", "l": 2.0, "estimator": "grassberger"},
            lambda v: arx_entropy(v, 2.0, lambda n: float(grassberger(np.array([n]))[0])),
        ),
        ({"model": "recursive-cl-diversity", "c": 2.0, "l": 2}, lambda v: arx_recursive(v, 2.0, 2)),
        ({"model": "equal-distance-t-closeness", "t": 0.25}, lambda v: arx_equal_t(v, p, 0.25)),
        (
            {"model": "ordered-distance-t-closeness", "t": 0.15, "order": order},
            lambda v: arx_ordered_t(v, p, 0.15, order),
        ),
        (
            {
                "model": "hierarchical-distance-t-closeness",
                "t": 0.12,
                "hierarchy": str(_hierarchy_file(tmp_path)),
            },
            lambda v: arx_hierarchical_t(v, p, 0.12),
        ),
        ({"model": "basic-beta-likeness", "beta": 0.8}, lambda v: arx_beta(v, p, 0.8, False)),
        ({"model": "enhanced-beta-likeness", "beta": 2.0}, lambda v: arx_beta(v, p, 2.0, True)),
        ({"model": "delta-disclosure", "delta": 1.1}, lambda v: arx_delta(v, p, 1.1)),
    ]
    for spec, holds in cases:
        fails, _, _ = SENSITIVE_CHECKS[spec["model"]](h, {"attribute": "s", **spec})
        expected = np.array([not holds(values) for values in classes])
        assert np.array_equal(fails, expected), spec


def test_grassberger_matches_arx_table() -> None:
    # ARX's G_PRECOMPUTED: G_1, G_2, G_4, ..., and the expansion above 100
    assert grassberger(np.array([1, 2, 3, 4, 100, 101]))[:5] == pytest.approx(
        [
            -1.2703628454614782,
            0.7296371545385218,
            0.7296371545385218,
            1.3963038212051886,
            4.605186851488337,
        ],
        abs=1e-13,
    )
    m = 1 / 50**2
    assert grassberger(np.array([101]))[0] == pytest.approx(
        math.log(100) + m * (1 / 24 - m * (7 / 960 - m * 31 / 8064))
    )
    # Java's int square wraps: (n/2)^2 for n = 100000 is 2500000000 - 2^32
    wrapped = 1 / (2_500_000_000 - 2**32)
    assert grassberger(np.array([100_000]))[0] == pytest.approx(
        math.log(100_000) + wrapped * (1 / 24 - wrapped * (7 / 960 - wrapped * 31 / 8064))
    )


def test_natural_order() -> None:
    assert natural_order(["10", "9", "", "1e2", "NULL", "-3.5"]) == [
        "-3.5",
        "9",
        "10",
        "1e2",
        "",
        "NULL",
    ]
    assert natural_order(["10", "9.0", "9"]) == ["9.0", "9", "10"]  # ties keep their order
    assert natural_order(["b", "10", "a", "B", "\u00e9"]) == ["10", "B", "a", "b", "\u00e9"]


def test_poisson_k_as_arx() -> None:
    # ARX's loop: P(X <= c) >= 1 - significance at the first c, k' = c + 1, capped at k
    from scipy.stats import poisson

    lam, k = 0.5, 10
    counter = next(c for c in range(k) if poisson.cdf(c, lam) >= 0.99)
    assert poisson_k(k, 0.01, lam, False) == counter + 2
    assert poisson_k(3, 0.01, 50.0, False) == 3


# ----------------------------------------------------------------- check_criteria


def test_findings_name_the_model_and_the_class() -> None:
    frame = pd.DataFrame({"q": ["x"] * 4 + ["y"] * 4, "s": list("aaab") + list("abcd")})
    problems = check_criteria(
        frame, frame, [{"model": "distinct-l-diversity", "attribute": "s", "l": 3}], ["q"], 0
    )
    assert problems[0].startswith(
        "model 'distinct-l-diversity' on 's': class q=x (4 records, "
        "rows 1, 2, 3, 4) has fewer than l = 3 distinct values"
    )
    assert (
        check_criteria(
            frame, frame, [{"model": "distinct-l-diversity", "attribute": "s", "l": 2}], ["q"], 0
        )
        == []
    )


def test_suppressed_rows_leave_the_classes_but_not_the_distribution() -> None:
    original = pd.DataFrame(
        {"q": ["x"] * 4 + ["y"] * 4 + ["z"] * 2, "s": list("abab") + list("abab") + ["c", "c"]}
    )
    release = original.copy()
    release.loc[8:, "q"] = "*"  # the z class is suppressed
    spec = {"model": "equal-distance-t-closeness", "attribute": "s", "t": 0.2}
    # p over the whole original: a .4, b .4, c .2; each class has a .5, b .5: distance .2
    assert check_criteria(original, release, [spec], ["q"], 2) == []
    assert check_criteria(original, release, [{**spec, "t": 0.19}], ["q"], 2)[0].startswith(
        "model 'equal-distance-t-closeness' on 's': class q=x"
    )
    assert check_criteria(original, release, [spec], ["q"], 1) == [
        "2 records are suppressed but the limit is 1"
    ]


def test_fully_generalized_class_counts_as_suppressed_only_when_it_fails() -> None:
    original = pd.DataFrame({"q": list("xxyy"), "s": list("aaab")})
    release = original.assign(q="*")
    stars = np.ones(4, dtype=bool)
    spec = [{"model": "distinct-l-diversity", "attribute": "s", "l": 2}]
    assert check_criteria(original, release, spec, ["q"], 0, expected_star=stars) == []
    spec3 = [{"model": "distinct-l-diversity", "attribute": "s", "l": 3}]
    assert check_criteria(original, release, spec3, ["q"], 4, expected_star=stars) == []
    assert (
        "fails a privacy model, so it must be suppressed"
        in check_criteria(original, release, spec3, ["q"], 3, expected_star=stars)[0]
    )


def test_risk_thresholds() -> None:
    frame = pd.DataFrame({"q": ["a", "b", "b", "c", "c", "c", "d", "d", "d", "d"]})
    # 4 classes of 10 records: average risk .4; one unique record of 10: .1
    assert (
        check_criteria(frame, frame, [{"model": "average-risk", "threshold": 0.4}], ["q"], 0) == []
    )
    assert (
        "average re-identification risk 0.4"
        in check_criteria(frame, frame, [{"model": "average-risk", "threshold": 0.3}], ["q"], 0)[0]
    )
    assert (
        check_criteria(frame, frame, [{"model": "sample-uniqueness", "threshold": 0.1}], ["q"], 0)
        == []
    )
    assert check_criteria(
        frame, frame, [{"model": "sample-uniqueness", "threshold": 0.05}], ["q"], 0
    )


def test_presence_against_a_population(tmp_path: Path) -> None:
    hier = {"q": Hierarchy.from_rows([["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3", "*"]])}
    population = pd.DataFrame({"q": ["1", "1", "2", "2", "3", "3", "3", "3"]})
    subset = pd.DataFrame({"q": ["1", "2", "3"]})
    release = pd.DataFrame({"q": ["1-2", "1-2", "3"]})
    levels = {"q": 1}
    ok = check_criteria(
        subset,
        release,
        [{"model": "delta-presence", "dmin": 0.2, "dmax": 0.5, "subset": "s.csv"}],
        ["q"],
        0,
        population=population,
        hierarchies=hier,
        levels=levels,
    )
    assert ok == []  # 2/4 and 1/4
    bad = check_criteria(
        subset,
        release,
        [{"model": "delta-presence", "dmin": 0.3, "dmax": 0.5, "subset": "s.csv"}],
        ["q"],
        0,
        population=population,
        hierarchies=hier,
        levels=levels,
    )
    assert "class q=3 (1 record, row 3) has delta outside [0.3, 0.5]" in bad[0]
    kmap = check_criteria(
        subset,
        release,
        [{"model": "k-map", "k": 4, "population": "p.csv"}],
        ["q"],
        0,
        population=population,
        hierarchies=hier,
        levels=levels,
    )
    assert kmap == []
    assert check_criteria(
        subset,
        release,
        [{"model": "k-map", "k": 5, "population": "p.csv"}],
        ["q"],
        0,
        population=population,
        hierarchies=hier,
        levels=levels,
    )


# ------------------------------------------------------- the definitions written out


def _holds(frame: pd.DataFrame, spec: dict[str, Any]) -> bool:
    """Whether ``spec`` holds by tests/reference_models.py's class-by-class definitions."""
    args = (frame, ["q1", "q2"], "s")
    model = spec["model"]
    checks: dict[str, Callable[[], bool]] = {
        "k-anonymity": lambda: reference.smallest_class(*args) >= spec["k"],
        "distinct-l-diversity": lambda: reference.distinct_l(*args) >= spec["l"],
        "entropy-l-diversity": lambda: reference.entropy_l(*args) >= spec["l"] - 1e-9,
        "recursive-cl-diversity": lambda: reference.recursive_cl_holds(*args, spec["c"], spec["l"]),
        "equal-distance-t-closeness": lambda: reference.equal_t(*args) <= spec["t"] + 1e-9,
        "basic-beta-likeness": lambda: reference.basic_beta(*args) <= spec["beta"] + 1e-9,
        "enhanced-beta-likeness": lambda: reference.enhanced_beta_holds(*args, spec["beta"]),
        "delta-disclosure": lambda: reference.delta_disclosure(*args) < spec["delta"] + 1e-9,
    }
    return checks[model]()


@pytest.mark.parametrize("seed", range(12))
def test_the_checker_agrees_with_the_definitions_written_out(seed: int) -> None:
    """With nothing suppressed, every verdict equals the class-by-class definition."""
    frame = _table(seed, rows=40)
    specs = [
        {"model": "k-anonymity", "k": 3},
        {"model": "distinct-l-diversity", "attribute": "s", "l": 2},
        {"model": "entropy-l-diversity", "attribute": "s", "l": 1.8},
        {"model": "recursive-cl-diversity", "attribute": "s", "c": 3.0, "l": 2},
        {"model": "equal-distance-t-closeness", "attribute": "s", "t": 0.3},
        {"model": "basic-beta-likeness", "attribute": "s", "beta": 3.5},
        {"model": "enhanced-beta-likeness", "attribute": "s", "beta": 2.0},
        {"model": "delta-disclosure", "attribute": "s", "delta": 2.2},
    ]
    for spec in specs:
        own = check_criteria(frame, frame, [spec], ["q1", "q2"], 0)
        assert (own == []) == _holds(frame, spec), (spec, own)
