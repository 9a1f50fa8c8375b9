"""Risk figures derived by hand on tables small enough to write out every class."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from anonlab.errors import AnonlabError, ReleaseRiskWarning
from anonlab.hierarchy import Hierarchy
from anonlab.risk import equivalence_classes, measure_risk, risk_warnings, warn_release_risk
from anonlab.risk import population as pop
from anonlab.risk.individual import frequencies, global_risk, individual_risk
from anonlab.risk.suda import suda2_scores, suda2_summary


def _small() -> pd.DataFrame:
    """14 rows: classes of 1, 1, 2, 3 and 5 records, and 2 suppressed records."""
    rows = (
        [("F", "30", "x")]
        + [("M", "30", "y")]
        + [("F", "40", "x")] * 2
        + [("M", "40", "y")] * 3
        + [("F", "50", "x")] * 5
        + [("*", "*", "z")] * 2
    )
    return pd.DataFrame(rows, columns=["sex", "age", "s"])


def test_prosecutor_journalist_marketer_by_hand() -> None:
    risk = measure_risk(_small(), ["sex", "age"])
    # 12 records kept in 5 classes: risks 1, 1, 1/2, 1/3, 1/5
    assert risk["records"] == 12 and risk["suppressed"] == 2
    assert risk["classes"] == {"count": 5, "smallest": 1, "sizes": {"1": 2, "2": 1, "3": 1, "5": 1}}
    assert risk["prosecutor"]["highest"] == 1.0
    assert risk["prosecutor"]["average"] == pytest.approx(5 / 12)
    # above 0.2: the classes of 1, 1, 2 and 3 records (1/5 = 0.2 is not above 0.2)
    assert risk["prosecutor"]["records_at_risk"] == pytest.approx(
        {"0.2": 7 / 12, "0.1": 12 / 12, "0.05": 12 / 12}
    )
    assert risk["sample_uniques"] == pytest.approx(2 / 12)
    assert risk["marketer"]["average"] == pytest.approx(5 / 12)
    # a population of 120: 12 records are a 10 % sample, each class stands for 10 times as many
    risk = measure_risk(_small(), ["sex", "age"], population_size=120)
    journalist = risk["journalist"]
    assert journalist["highest"] == pytest.approx(1 / 10)
    # max(C / sum F, sum(f / F) / n) = max(5 / 120, (5 * 1/10) / 12), both 5/120
    assert journalist["average"] == pytest.approx(5 / 120)
    # 1/F: 1/10, 1/10, 1/20, 1/30, 1/50: only the two single records are above 0.05
    assert journalist["records_at_risk"] == pytest.approx({"0.2": 0.0, "0.1": 0.0, "0.05": 2 / 12})
    assert risk["marketer"]["average"] == pytest.approx(5 / 120)
    assert risk["population_uniques"]["sampling_fraction"] == pytest.approx(0.1)


def test_sampling_fraction_sets_population_as_arx_does() -> None:
    # ARXPopulationModel.create(rows, f): population round(rows / f), rows with suppressed ones
    risk = measure_risk(_small(), ["sex", "age"], sampling_fraction=0.25)
    assert risk["population_uniques"]["population_size"] == 56
    assert risk["population_uniques"]["sampling_fraction"] == pytest.approx(12 / 56)


def test_individual_risk_by_hand() -> None:
    frame = pd.DataFrame(
        {
            "k": ["a", "b", "b", "c", "c", "c", "d", "d"],
            "w": [4, 3, 3, 2, 2, 2, 1, 1],
        }
    )
    classes = equivalence_classes(frame, ["k"])
    fk, big_fk = frequencies(classes, frame["w"].to_numpy(dtype=float))
    risk = individual_risk(fk, big_fk, weighted=True)
    keys = classes.encoded.values[0][classes.tuples[:, 0]]
    by_key = dict(zip(keys, risk, strict=True))
    p1, p2, p3 = 1 / 4, 1 / 3, 1 / 2
    assert by_key["a"] == pytest.approx(p1 / (1 - p1) * math.log(1 / p1))  # fk = 1
    assert by_key["b"] == pytest.approx(p2 / (1 - p2) - (p2 / (1 - p2)) ** 2 * math.log(1 / p2))
    assert by_key["c"] == pytest.approx(p3 / (3 - (1 - p3)))  # fk > 2
    assert by_key["d"] == pytest.approx(1 / 2)  # fk = Fk
    summary = global_risk(classes, frame["w"].to_numpy(dtype=float))
    expected = by_key["a"] + 2 * by_key["b"] + 3 * by_key["c"] + 2 * by_key["d"]
    assert summary["expected_reidentifications"] == pytest.approx(expected)
    assert summary["global_risk"] == pytest.approx(expected / 8)


def test_suda2_by_hand() -> None:
    frame = pd.DataFrame(
        [("x", "p", "u"), ("x", "p", "v"), ("x", "q", "u"), ("y", "q", "v"), ("y", "q", "v")],
        columns=["a", "b", "c"],
    )
    classes = equivalence_classes(frame, ["a", "b", "c"])
    scores = suda2_scores(classes).scores[classes.row_class]
    # row 1: MSU {b,c}; row 2: {a,c}, {b,c}; row 3: {a,b}, {b,c}; size-2 MSUs weigh (3-2)! = 1
    assert scores.tolist() == [1.0, 2.0, 2.0, 0.0, 0.0]
    msu = suda2_scores(classes).msu_counts[classes.row_class]
    assert msu[:, 1].tolist() == [1, 2, 2, 0, 0] and msu[:, [0, 2]].sum() == 0


def test_suda2_of_numbers_beyond_an_int64() -> None:
    """Numbers such as 1e300 (a release's huge values) have no int64: their distinct values
    get level numbers, so SUDA sees them apart (the cast warned and gave one code to all)."""
    from anonlab.risk.suda import r_numeric_codes

    codes = r_numeric_codes(np.array([1e300, -1e300, 2e300, 1e300]))
    assert len(set(codes[:3].tolist())) == 3 and codes[0] == codes[3]
    assert r_numeric_codes(np.array([3.0, -2.0])).tolist() == [3, -2]


def test_suda2_budget_counts_work_not_time() -> None:
    frame = pd.DataFrame(
        [("x", "p", "u"), ("x", "p", "v"), ("x", "q", "u"), ("y", "q", "v"), ("y", "q", "v")],
        columns=["a", "b", "c"],
    )
    classes = equivalence_classes(frame, ["a", "b", "c"])
    # 4 distinct combinations; the pairs {a,b}, {a,c} and {b,c} are grouped: 12 in all
    assert suda2_summary(classes, budget=12) == suda2_summary(classes)
    assert suda2_summary(classes, budget=11) is None
    section = measure_risk(frame, ["a", "b", "c"], suda_budget=11)
    assert section["suda2"] is None


def _t_table() -> tuple[pd.DataFrame, Hierarchy]:
    hierarchy = Hierarchy.from_rows(
        [("a1", "A", "*"), ("a2", "A", "*"), ("b1", "B", "*"), ("b2", "B", "*")]
    )
    frame = pd.DataFrame(
        {"q": ["X"] * 4 + ["Y"] * 4, "s": ["a1", "b1", "a1", "b1", "a2", "b2", "a2", "b2"]}
    )
    return frame, hierarchy


def test_t_closeness_equal_and_hierarchical_by_hand() -> None:
    frame, hierarchy = _t_table()
    risk = measure_risk(frame, ["q"], sensitive=["s"], hierarchies={"s": hierarchy})
    figures = risk["sensitive"]["s"]
    # overall every value is 1/4; class X holds a1, b1 at 1/2 each.
    # equal distance: 1/2 (1/4 + 1/4 + 1/4 + 1/4) = 1/2.
    # hierarchical (height 2): node A gets +1/4 (a1) and -1/4 (a2): cost (1/2) * 1/4;
    # node B the same; the root's children A and B are balanced: cost 0. Total 1/4.
    assert figures["t_equal"] == pytest.approx(0.5)
    assert figures["t_hierarchical"] == pytest.approx(0.25)
    assert figures["distinct_l"] == 2 and figures["entropy_l"] == pytest.approx(2.0)


def test_hierarchical_t_when_a_class_keeps_one_branch() -> None:
    hierarchy = Hierarchy.from_rows(
        [("a1", "A", "*"), ("a2", "A", "*"), ("b1", "B", "*"), ("b2", "B", "*")]
    )
    frame = pd.DataFrame(
        {"q": ["X"] * 4 + ["Y"] * 4, "s": ["a1", "a2", "a1", "a2", "b1", "b2", "b1", "b2"]}
    )
    figures = measure_risk(frame, ["q"], sensitive=["s"], hierarchies={"s": hierarchy})[
        "sensitive"
    ]["s"]
    # class X: A's children +1/4, +1/4 (cost 0), B's -1/4, -1/4 (cost 0); root: A +1/2,
    # B -1/2: cost (2/2) * 1/2
    assert figures["t_hierarchical"] == pytest.approx(0.5)
    assert figures["t_equal"] == pytest.approx(0.5)


def test_a_hierarchy_missing_a_value_is_refused() -> None:
    frame, _ = _t_table()
    short = Hierarchy.from_rows([("a1", "*"), ("a2", "*"), ("b1", "*")])
    with pytest.raises(AnonlabError, match=r"^hierarchies: .*'b2'"):
        measure_risk(frame, ["q"], sensitive=["s"], hierarchies={"s": short})


def test_zayatz_by_the_published_formula() -> None:
    # classes {1: 2, 2: 1}: n = 4, u = 3, N = 8, f = 1/2
    # h(1; 8, 1, 4) = 1/2; h(1; 8, 2, 4) = C(2,1) C(6,3) / C(8,4) = 4/7
    # P = (2/3 * 1/2) / (2/3 * 1/2 + 1/3 * 4/7) = 7/11; uniques = 2 * 7/11 / (1/2) = 28/11
    table = pop.FrequencyTable.from_mapping({1: 2, 2: 1})
    assert pop.zayatz(table, 8) == pytest.approx(28 / 11, rel=1e-12)


def test_pitman_root_solves_the_published_equations() -> None:
    table = pop.FrequencyTable.from_mapping({1: 50, 2: 20, 3: 10, 4: 5, 5: 2})
    theta, alpha = pop.newton_raphson(
        pop._pitman_sums(table), pop.pitman_start(table), lambda p: p[0] >= 0
    )
    u, n = 87, 50 + 40 + 30 + 20 + 10
    lhs1 = sum(1 / (theta + i * alpha) for i in range(1, u))
    rhs1 = sum(1 / (theta + i) for i in range(1, n))
    lhs2 = sum(i / (theta + i * alpha) for i in range(1, u))
    rhs2 = sum(
        c * sum(1 / (k - alpha) for k in range(1, j)) for j, c in {2: 20, 3: 10, 4: 5, 5: 2}.items()
    )
    assert abs(lhs1 - rhs1) <= 1e-6 and abs(lhs2 - rhs2) <= 1e-6
    expected = math.exp(math.lgamma(theta + 1) - math.lgamma(theta + alpha)) * 5000**alpha
    assert pop.pitman(table, 5000) == pytest.approx(expected, rel=1e-9)


def test_no_sample_uniques_means_no_population_uniques() -> None:
    assert pop.population_uniques({2: 3, 5: 1}, 1000) == {
        "pitman": 0.0,
        "zayatz": 0.0,
        "snb": 0.0,
        "dankar": 0.0,
        "dankar_model": "none",
    }


def test_arx_start_values() -> None:
    assert len(pop.START_VALUES) == 16
    assert pop.START_VALUES[0] == (0.0, 0.0) and pop.START_VALUES[-1][0] == pytest.approx(0.99)


def test_warnings_name_each_problem() -> None:
    risk = measure_risk(_small(), ["sex", "age"], sensitive=["s"])
    messages = risk_warnings(risk)
    assert len(messages) == 3
    assert "highest prosecutor re-identification risk is 1, above the maximum 0.2" in messages[0]
    assert messages[1].startswith("2 record(s) are unique on the attacker's columns (sex, age)")
    assert "'s'" in messages[2] and "5 class(es), 12 records" in messages[2]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert warn_release_risk(risk) == messages
    assert [w.category for w in caught] == [ReleaseRiskWarning] * 3
    safe = pd.DataFrame({"a": ["x"] * 6 + ["y"] * 6, "s": ["u", "v"] * 6})
    assert risk_warnings(measure_risk(safe, ["a"], sensitive=["s"])) == []
    assert len(risk_warnings(measure_risk(safe, ["a"]), max_risk=0.1)) == 1


@pytest.mark.parametrize(
    ("kwargs", "start"),
    [
        ({"attacker_columns": []}, "attacker_columns is empty"),
        ({"attacker_columns": ["nope"]}, "attacker_columns names columns"),
        ({"sensitive": ["sex"]}, "sensitive columns sex are also attacker columns"),
        (
            {"population_size": 100, "sampling_fraction": 0.1},
            "population_size and sampling_fraction",
        ),
        ({"population_size": 5}, "population_size must be at least"),
        ({"sampling_fraction": 1.5}, "sampling_fraction must lie in (0, 1]"),
        ({"thresholds": [0.0]}, "thresholds must lie in (0, 1]"),
        ({"weights": "s"}, "weights column 's' holds 'x'"),
    ],
)
def test_user_errors_name_the_parameter(kwargs: dict[str, object], start: str) -> None:
    args: dict[str, object] = {"attacker_columns": ["sex", "age"], **kwargs}
    columns = args.pop("attacker_columns")
    with pytest.raises(AnonlabError) as info:
        measure_risk(_small(), columns, **args)  # type: ignore[arg-type]
    assert str(info.value).startswith(start)
    assert info.value.parameter is not None and str(info.value).startswith(info.value.parameter)


def test_a_table_with_every_record_suppressed_has_no_figures() -> None:
    frame = pd.DataFrame({"a": ["*"] * 3, "b": ["*"] * 3, "s": ["x", "y", "x"]})
    risk = measure_risk(frame, ["a", "b"], sensitive=["s"], population_size=10)
    assert (risk["suppressed"], risk["records"], risk["classes"]["count"]) == (3, 0, 0)
    assert risk["prosecutor"]["highest"] == 0.0 and risk["population_uniques"] is None
    assert risk["sensitive"]["s"]["distinct_l"] is None
    assert risk_warnings(risk) == []
