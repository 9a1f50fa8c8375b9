"""The population and risk privacy models: delta-presence, k-map, average risk, sample and
population uniqueness (ARX 3.9's definitions).

Three kinds of evidence:

* hand-made cases worked out on paper;
* random cases against plain references written here (Python loops over
  rows and classes, and a line-by-line port of ARX's binary search that keeps
  a flag per class, as ``HashGroupifyDistribution`` does);
* ARX itself: ``tests/data/arx_population/*.json`` hold ARX 3.9's verdict
  (anonymous or not, and the rows it suppresses) on every node of small
  random lattices, made by ``tests/data/arx_population/make_cases.py``.

The node evaluation used here (:func:`arx_node`) is ARX's
``HashGroupify.analyzeAll`` in terms of anonlab's criteria, built on
:class:`ClassStats` made from a :class:`Dataset` by :func:`node_stats`.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray

from anonlab.dataset import Dataset, Roles
from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.privacy.base import ClassStats, Criterion, KAnonymity, suppression_order
from anonlab.privacy.presence import (
    DeltaPresence,
    KMap,
    derived_k_poisson,
    derived_k_zero_truncated_poisson,
    kmap_dataset,
    match_rows,
    model_acceptable,
    population_dataset,
    presence_dataset,
)
from anonlab.privacy.riskbased import (
    AverageRisk,
    PopulationUniqueness,
    SampleUniqueness,
    SizeDistribution,
    java_round,
    suppression_prefix,
)
from anonlab.risk import population as pop

DATA = Path(__file__).parent / "data" / "arx_population"
HUGE = 2**62


# ---------------------------------------------------------------------------
# helpers: a node's classes, and ARX's evaluation of a node


def stats_of(
    counts: Sequence[int], population: Sequence[int] | None = None, **extra: Any
) -> ClassStats:
    """ClassStats of hand-made classes."""
    return ClassStats(
        levels=(0,),
        counts=np.asarray(counts, dtype=np.int64),
        population=None if population is None else np.asarray(population, dtype=np.int64),
        **extra,
    )


def node_stats(ds: Dataset, levels: Sequence[int]) -> tuple[ClassStats, NDArray[Any]]:
    """The classes of a node, built plainly from the codes, and each record's class.

    Classes are the distinct generalized tuples of the table and, if any, of
    the population; ``order`` ranks them by their first record (ARX's
    representative), ``completely_generalized`` marks those whose labels are
    all ``*``.
    """
    gen = np.column_stack(
        [q.level_codes[lv][q.codes] for q, lv in zip(ds.qis, levels, strict=True)]
    )
    n = gen.shape[0]
    rows = gen
    if ds.population is not None:
        pgen = np.column_stack(
            [
                q.level_codes[lv][ds.population[:, j]]
                for j, (q, lv) in enumerate(zip(ds.qis, levels, strict=True))
            ]
        )
        rows = np.vstack([gen, pgen])
    radix = [max(len(q.level_labels[lv]), 1) for q, lv in zip(ds.qis, levels, strict=True)]
    keys = np.zeros(rows.shape[0], dtype=np.int64)
    for j, r in enumerate(radix):  # one integer per tuple, in mixed radix
        keys = keys * r + rows[:, j]
    unique_keys, inverse = np.unique(keys, return_inverse=True)
    inverse = inverse.ravel()
    classes = unique_keys.shape[0]
    tuples = np.empty((classes, len(radix)), dtype=np.int64)
    rest = unique_keys.copy()
    for j in range(len(radix) - 1, -1, -1):
        tuples[:, j] = rest % radix[j]
        rest //= radix[j]
    counts = np.bincount(inverse[:n], minlength=classes)
    population = np.bincount(inverse[n:], minlength=classes) if ds.population is not None else None
    first = np.full(classes, HUGE, dtype=np.int64)
    np.minimum.at(first, inverse[:n], np.arange(n, dtype=np.int64))
    star = np.ones(classes, dtype=bool)
    for j, (q, lv) in enumerate(zip(ds.qis, levels, strict=True)):
        labels = np.asarray(q.level_labels[lv], dtype=object)
        star &= labels[tuples[:, j]] == "*"
    stats = ClassStats(
        levels=tuple(levels),
        counts=counts.astype(np.int64),
        population=population,
        order=suppression_order(first),
        completely_generalized=star,
    )
    return stats, inverse[:n]


def arx_node(
    criteria: Sequence[Criterion], stats: ClassStats, limit: int, enforce_limit: int | None = None
) -> tuple[bool, NDArray[Any]]:
    """ARX's ``analyzeAll``: outliers of the class-based criteria, then the sample-based ones.

    Acceptable when the records ARX counts as suppressed are at most ``limit``
    and :func:`model_acceptable` holds. ARX counts no completely generalized
    class once a sample-based criterion is present.
    """
    outliers = np.zeros(stats.classes, dtype=bool)
    for c in criteria:
        if not c.sample_based:
            outliers |= c.outliers(stats)
    outliers &= stats.counts > 0
    sample = [c for c in criteria if c.sample_based]
    for c in sample:
        outliers = c.enforce(stats, outliers, limit if enforce_limit is None else enforce_limit)
    counted = outliers.copy()
    if sample and stats.completely_generalized is not None:
        counted &= ~stats.completely_generalized
    ok = int(stats.counts[counted].sum()) <= limit and model_acceptable(criteria, stats, outliers)
    return ok, outliers


# ---------------------------------------------------------------------------
# delta-presence, by hand


def test_delta_presence_by_hand() -> None:
    # deltas: 2/4, 0 (population only), 1/10, 3/3
    stats = stats_of([2, 0, 1, 3], [4, 3, 10, 3])
    model = DeltaPresence(0.2, 0.9)
    assert np.allclose(model.delta(stats), [0.5, 0.0, 0.1, 1.0])
    assert model.outliers(stats).tolist() == [False, False, True, True]
    assert not model.acceptable(stats, model.outliers(stats))  # the population-only class
    assert DeltaPresence(0.0, 0.9).acceptable(stats, np.zeros(4, dtype=bool))
    outliers = model.outliers(stats)
    assert model.holds(stats, outliers)
    assert model.achieved(stats, outliers) == {
        "dmin": 0.0,
        "dmax": 0.5,
        "population_only_classes": 1,
    }


def test_a_population_only_class_fails_the_node_unless_a_class_size_is_declared() -> None:
    # ARX checks the minimal class size first: k-anonymity hides the failing empty class
    stats = stats_of([2, 0], [4, 3])
    presence = DeltaPresence(0.2, 0.9)
    none = np.zeros(2, dtype=bool)
    assert not model_acceptable([presence], stats, none)
    assert model_acceptable([presence, KAnonymity(2)], stats, none)
    assert model_acceptable([DeltaPresence(0.0, 0.9)], stats, none)


def test_delta_presence_boundaries_are_inclusive() -> None:
    stats = stats_of([1, 2], [5, 3])  # 0.2 and 2/3 exactly as doubles
    assert not DeltaPresence(0.2, 2 / 3).outliers(stats).any()
    assert DeltaPresence(0.21, 1.0).outliers(stats).tolist() == [True, False]


@pytest.mark.parametrize(
    ("dmin", "dmax"), [(-0.1, 0.5), (0.2, 1.5), (0.6, 0.5), (float("nan"), 0.5)]
)
def test_delta_presence_refuses_bad_bounds(dmin: float, dmax: float) -> None:
    with pytest.raises(AnonlabError, match="delta-presence"):
        DeltaPresence(dmin, dmax)


def test_monotonicity_is_declared_as_arx_does() -> None:
    assert DeltaPresence(0, 1).monotone(False) and not DeltaPresence(0, 1).monotone(True)
    kmap = KMap(3, population=pd.DataFrame())
    assert kmap.monotone(False) and kmap.monotone(True)
    for risk in (AverageRisk(0.1), SampleUniqueness(0.1)):
        assert risk.monotone(False) and risk.monotone(True)
    for model in ("pitman", "snb", "dankar"):
        crit = PopulationUniqueness(0.1, model, population_size=100)
        assert not crit.monotone(False) and not crit.monotone(True)
    zayatz = PopulationUniqueness(0.1, "zayatz", population_size=100)
    assert zayatz.monotone(False) and not zayatz.monotone(True)


# ---------------------------------------------------------------------------
# k-map


def test_kmap_with_a_population_by_hand() -> None:
    stats = stats_of([1, 0, 4, 2], [3, 1, 5, 2])
    model = KMap(3, population=pd.DataFrame())
    assert model.outliers(stats).tolist() == [False, False, False, True]
    assert model.achieved(stats, model.outliers(stats)) == {"k": 3}
    assert model.minimal_class_size() is None and model.needs_population


def test_derived_k_by_hand() -> None:
    # lambda = 0.5: P(X<=0) = .6065, P(X<=1) = .9098, P(X<=2) = .9856 >= .95 -> counter 3, k' = 4
    k, error = derived_k_poisson(5, 0.5, 0.05)
    assert k == 4 and error == pytest.approx(1 - math.exp(-0.5) * (1 + 0.5 + 0.125), rel=1e-9)
    # zero-truncated: P(1)/(1-P(0)) = .7707, + P(2)/(1-P(0)) = .9634 >= .95 -> counter 3
    k, error = derived_k_zero_truncated_poisson(5, 0.5, 0.05)
    norm = 1 - math.exp(-0.5)
    assert k == 3
    assert error == pytest.approx(1 - math.exp(-0.5) * (0.5 + 0.125) / norm, rel=1e-9)
    # the search stops when the counter reaches k: k' = k + 1 by ARX's return, capped later
    assert derived_k_poisson(2, 5.0, 0.01) == (3, 0.0)


def test_derived_k_against_a_plain_sum() -> None:
    # a significance of 0 stops only at a probability that rounds to 1: that case is left to
    # the ARX-made cases (kmapest.json), as plain sums round differently from Commons Math
    rng = np.random.default_rng(5)
    for _ in range(200):
        k = int(rng.integers(1, 30))
        mean = float(rng.choice([1e-4, 0.01, 0.3, 1.0, 4.0])) * k
        sig = float(rng.choice([0.01, 0.05, 0.3]))
        pmf = [math.exp(-mean) * mean**i / math.factorial(i) for i in range(40)]
        # Poisson: first c with sum(pmf[:c]) >= 1 - sig, capped at k, then + 1
        counter, total = 0, 0.0
        while total < 1 - sig:
            total = sum(pmf[: counter + 1])
            counter += 1
            if counter >= k:
                total = 1.0
                break
        assert derived_k_poisson(k, mean, sig)[0] == counter + 1
        counter, total = 1, 0.0
        while total < 1 - sig:
            total += pmf[counter] / (1 - pmf[0])
            counter += 1
            if counter >= k:
                break
        assert derived_k_zero_truncated_poisson(k, mean, sig)[0] == counter


def test_estimated_kmap_is_k_anonymity_with_the_derived_k() -> None:
    frame = pd.DataFrame({"a": ["x", "y"] * 50})
    hier = Hierarchy.from_rows([["x", "*"], ["y", "*"]])
    ds = Dataset.from_frame(frame, {"a": hier})
    model = KMap(5, estimator="poisson", significance=0.05, population_size=1000)
    model.bind(ds)  # lambda = 100/1000 * 5 = 0.5 -> k' = 4
    assert model.derived_k == 4 and model.minimal_class_size() == 4
    stats = stats_of([3, 4, 9])
    assert model.outliers(stats).tolist() == [True, False, False]
    big = KMap(10**6, estimator="zero-truncated-poisson", significance=0.0, population_size=10**9)
    big.bind(ds)
    assert big.derived_k is not None and big.derived_k <= ds.n


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"estimator": "poisson"},
        {"estimator": "binomial", "significance": 0.1, "population_size": 10},
        {"estimator": "poisson", "significance": 1.5, "population_size": 10},
        {"estimator": "poisson", "significance": 0.1, "population_size": 0},
        {"population": pd.DataFrame(), "estimator": "poisson"},
        {"population": pd.DataFrame(), "significance": 0.1},
    ],
)
def test_kmap_refuses_bad_parameters(kwargs: dict[str, Any]) -> None:
    with pytest.raises(AnonlabError, match="k-map"):
        KMap(3, **kwargs)


def test_kmap_population_size_smaller_than_the_table_is_refused() -> None:
    ds = Dataset.from_frame(
        pd.DataFrame({"a": ["x"] * 10}), {"a": Hierarchy.from_rows([["x", "*"]])}
    )
    with pytest.raises(AnonlabError, match="smaller than the table's 10 records"):
        KMap(3, estimator="poisson", significance=0.1, population_size=5).bind(ds)
    with pytest.raises(AnonlabError, match="give population"):
        KMap(3, population="p.csv").bind(ds)
    with pytest.raises(AnonlabError, match="research subset"):
        DeltaPresence(0, 1).bind(ds)


# ---------------------------------------------------------------------------
# datasets with a population


HIER = {
    "zip": Hierarchy.from_rows(
        [["4790", "479*", "*"], ["4791", "479*", "*"], ["4801", "480*", "*"], ["4802", "480*", "*"]]
    ),
    "age": Hierarchy.from_rows([["20", "<40", "*"], ["30", "<40", "*"], ["50", ">=40", "*"]]),
}


def population_table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "zip": ["4790", "4791", "4790", "4801", "4802", "4790", "4801"],
            "age": ["20", "30", "20", "50", "50", "20", "30"],
            "s": ["a", "b", "a", "c", "a", "a", "b"],
        }
    )


def test_presence_dataset_matches_the_subset_as_a_multiset() -> None:
    table = population_table()
    subset = table.iloc[[6, 0, 2]].reset_index(drop=True)  # rows 0 and 2 are equal
    ds = presence_dataset(table, subset, HIER, roles=Roles(sensitive=("s",)))
    assert ds.frame.to_dict("records") == table.iloc[[0, 2, 6]].to_dict("records")
    assert ds.population is not None and ds.population.shape == (7, 2)
    for j, q in enumerate(ds.qis):  # the population's codes decode to its values
        assert [q.values[c] for c in ds.population[:, j]] == table[q.name].tolist()
        assert [q.values[c] for c in q.codes] == ds.frame[q.name].tolist()
        assert q.frequencies.sum() == 3
    assert ds.qis[0].values == ("4790", "4791", "4801", "4802")  # the population's order
    # a value of the table appearing three times may be in the subset three times, not four
    ok = presence_dataset(table, table.iloc[[0, 2, 5]], HIER, roles=Roles(sensitive=("s",)))
    assert ok.n == 3
    with pytest.raises(AnonlabError, match=r"not a subset of the table: row 4 \(zip=4790"):
        presence_dataset(table, table.iloc[[0, 2, 5, 0]], HIER, roles=Roles(sensitive=("s",)))


def test_presence_dataset_errors() -> None:
    table = population_table()
    stranger = pd.DataFrame({"zip": ["4790", "4802"], "age": ["20", "20"], "s": ["a", "a"]})
    with pytest.raises(
        AnonlabError,
        match=r"^the delta-presence subset is not a subset of "
        r"the table: row 2 \(zip=4802, age=20, s=a\)",
    ):
        presence_dataset(table, stranger, HIER, roles=Roles(sensitive=("s",)))
    with pytest.raises(AnonlabError, match="lacks s"):
        presence_dataset(table, stranger[["zip", "age"]], HIER, roles=Roles(sensitive=("s",)))
    odd = table.assign(zip=["4790", "4791", "4790", "4801", "9999", "4790", "4801"])
    with pytest.raises(
        AnonlabError,
        match=r"value '9999' \(population row 5\) is not in "
        "hierarchy",
    ):
        presence_dataset(odd, odd.iloc[[0]], HIER, roles=Roles(sensitive=("s",)))


def test_kmap_dataset() -> None:
    population = population_table()
    sample = population.iloc[[3, 0]].assign(s=["x", "y"])  # other values outside the QIs
    ds = kmap_dataset(sample, population[["zip", "age"]], HIER, roles=Roles(sensitive=("s",)))
    assert ds.n == 2 and ds.frame["s"].tolist() == ["x", "y"]
    assert ds.population is not None and ds.population.shape == (7, 2)
    with pytest.raises(
        AnonlabError,
        match=r"does not contain every record of the table: "
        r"row 2 \(zip=4802, age=20\)",
    ):
        kmap_dataset(
            pd.DataFrame({"zip": ["4790", "4802"], "age": ["20", "20"], "s": "a"}),
            population,
            HIER,
            roles=Roles(sensitive=("s",)),
        )
    with pytest.raises(AnonlabError, match=r"lacks the quasi-identifier column\(s\) age"):
        kmap_dataset(sample, population[["zip"]], HIER, roles=Roles(sensitive=("s",)))
    many = population.iloc[[3, 3]]  # row 3's tuple appears once in the population
    with pytest.raises(AnonlabError, match="row 2"):
        kmap_dataset(many, population, HIER, roles=Roles(sensitive=("s",)))


def test_population_dataset_dispatches_on_the_criteria() -> None:
    table = population_table()
    subset = table.iloc[[1, 4]]
    ds = population_dataset(
        table, HIER, [DeltaPresence(0, 0.5, subset)], roles=Roles(sensitive=("s",))
    )
    assert ds.n == 2 and ds.population is not None and ds.population.shape[0] == 7
    ds = population_dataset(
        subset, HIER, [KMap(2, population=table)], roles=Roles(sensitive=("s",))
    )
    assert ds.n == 2 and ds.population is not None
    plain = population_dataset(table, HIER, [KAnonymity(2)], roles=Roles(sensitive=("s",)))
    assert plain.population is None and plain.n == 7
    with pytest.raises(AnonlabError, match="takes no population of its own"):
        population_dataset(
            table,
            HIER,
            [DeltaPresence(0, 0.5, subset), KMap(2, population=table)],
            roles=Roles.of(sensitive=["s"]),
        )
    with pytest.raises(AnonlabError, match="needs subset"):
        population_dataset(table, HIER, [DeltaPresence(0, 0.5)], roles=Roles(sensitive=("s",)))


def test_population_dataset_reads_files(tmp_path: Path) -> None:
    table = population_table()
    path = tmp_path / "subset.csv"
    table.iloc[[0, 3]].to_csv(path, index=False)
    ds = population_dataset(
        table, HIER, [DeltaPresence(0, 0.5, path)], roles=Roles(sensitive=("s",))
    )
    assert ds.frame["zip"].tolist() == ["4790", "4801"]


def test_match_rows_takes_the_first_unused_equal_row() -> None:
    table = pd.DataFrame({"a": ["x", "y", "x", "x"], "b": ["1", "2", "1", "3"]})
    part = pd.DataFrame({"a": ["x", "x", "y"], "b": ["1", "1", "2"]})
    rows, bad = match_rows(table, part, ["a", "b"])
    assert bad is None and rows.tolist() == [0, 2, 1]
    _, bad = match_rows(table, part.iloc[[0, 0, 0]].reset_index(drop=True), ["a", "b"])
    assert bad == 2


# ---------------------------------------------------------------------------
# risk thresholds, by hand


def test_average_risk_enforce_by_hand() -> None:
    # sizes 1,1,2,3,5: risk 5/12 > 0.34. ARX's search: p=3 holds (2/8), p=1 fails (4/11),
    # p=2 holds (3/10), loop ends at mid=0, the final check of p=1 fails -> p=2
    stats = stats_of([3, 1, 5, 2, 1])
    model = AverageRisk(0.34)
    out = model.enforce(stats, np.zeros(5, dtype=bool), HUGE)
    assert out.tolist() == [False, True, False, False, True]
    assert model.holds(stats, out)
    assert model.achieved(stats, out) == {"average_risk": pytest.approx(0.3)}
    assert not model.holds(stats, np.zeros(5, dtype=bool))
    # a limit of 1 record aborts the search with the first step (3 records suppressed)
    aborted = model.enforce(stats, np.zeros(5, dtype=bool), 1)
    assert int(stats.counts[aborted].sum()) > 1


def test_ties_follow_the_order_of_the_classes() -> None:
    stats = stats_of([1, 1, 4], order=np.array([2, 0, 1]))
    out = SampleUniqueness(0.2).enforce(stats, np.zeros(3, dtype=bool), HUGE)
    assert out.tolist() == [False, True, False]  # 1/5 <= 0.2 with the class ranked first gone
    plain = SampleUniqueness(0.2).enforce(stats_of([1, 1, 4]), np.zeros(3, dtype=bool), HUGE)
    assert plain.tolist() == [True, False, False]


def test_suppression_order_ranks_by_loss_then_first_record() -> None:
    rank = suppression_order(np.array([7, 3, 5, 1]), np.array([2.0, 1.0, 1.0, 2.0]))
    assert rank.tolist() == [3, 0, 1, 2]
    lexi = suppression_order(np.array([0, 1, 2]), np.array([[1.0, 5.0], [1.0, 2.0], [0.0, 9.0]]))
    assert lexi.tolist() == [2, 1, 0]


def test_completely_generalized_classes_are_left_out_of_the_risk() -> None:
    # ARX: a class whose QIs are all '*' is neither in the distribution nor suppressed
    stats = stats_of([1, 9], completely_generalized=np.array([False, True]))
    model = SampleUniqueness(0.0)
    out = model.enforce(stats, np.zeros(2, dtype=bool), HUGE)
    assert out.tolist() == [True, False]
    top = stats_of([5], completely_generalized=np.array([True]))
    assert AverageRisk(0.01).holds(top, np.zeros(1, dtype=bool))


def test_sample_uniqueness_and_empty_distributions() -> None:
    stats = stats_of([1, 2, 1, 6])
    model = SampleUniqueness(0.1)
    assert model.achieved(stats, np.zeros(4, dtype=bool)) == {"sample_uniqueness": 0.2}
    # 2/10 > 0.1; p=2 holds (0/8), p=1 fails (1/9), the final step suppresses the second
    out = model.enforce(stats, np.zeros(4, dtype=bool), HUGE)
    assert out.tolist() == [True, False, True, False]
    everything = np.ones(4, dtype=bool)
    for crit in (
        AverageRisk(0.0),
        SampleUniqueness(0.0),
        PopulationUniqueness(0.0, population_size=100),
    ):
        assert crit.holds(stats, everything)


@pytest.mark.parametrize("threshold", [-0.01, 1.01, float("nan")])
def test_risk_thresholds_must_be_fractions(threshold: float) -> None:
    for cls in (AverageRisk, SampleUniqueness):
        with pytest.raises(AnonlabError, match="threshold must be from 0 to 1"):
            cls(threshold)


def test_population_uniqueness_parameters() -> None:
    with pytest.raises(AnonlabError, match="estimator must be one of"):
        PopulationUniqueness(0.1, "chao", population_size=10)
    with pytest.raises(AnonlabError, match="either sampling_fraction or population_size"):
        PopulationUniqueness(0.1)
    with pytest.raises(AnonlabError, match="either sampling_fraction or population_size"):
        PopulationUniqueness(0.1, sampling_fraction=0.1, population_size=10)
    with pytest.raises(AnonlabError, match="sampling_fraction must be above 0"):
        PopulationUniqueness(0.1, sampling_fraction=0.0)
    crit = PopulationUniqueness(0.1, sampling_fraction=0.3)
    ds = Dataset.from_frame(
        pd.DataFrame({"a": ["x"] * 10}), {"a": Hierarchy.from_rows([["x", "*"]])}
    )
    crit.bind(ds)
    assert crit.size == java_round(10 / 0.3) == 33
    with pytest.raises(AnonlabError, match="smaller than the table's 10"):
        PopulationUniqueness(0.1, population_size=9).bind(ds)


def test_population_uniqueness_uses_the_risk_module_estimators() -> None:
    distribution = SizeDistribution(np.array([1] * 6 + [2] * 3 + [3, 3, 7]))
    histogram = {1: 6, 2: 3, 3: 2, 7: 1}
    table = pop.FrequencyTable.from_mapping(histogram)
    for model, fn in (("pitman", pop.pitman), ("zayatz", pop.zayatz), ("snb", pop.snb)):
        crit = PopulationUniqueness(0.5, model, population_size=200)
        fraction, used = crit.estimate(distribution)
        assert used == model
        expected = fn(table, 200)
        assert fraction == (expected / 200 if pop._valid(expected) else 0.0)
        assert crit.fulfilled(distribution) == (0 < fraction <= 0.5)
    dankar = PopulationUniqueness(0.5, population_size=200)
    fraction, used = dankar.estimate(distribution)  # f = 0.125 > 0.1: Zayatz or SNB
    reference = pop.population_uniques(histogram, 200)
    dankar_count = reference["dankar"]
    assert isinstance(dankar_count, float)
    assert used == reference["dankar_model"] and fraction == dankar_count / 200


def test_dankar_without_fallback_fails_when_pitman_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pop, "pitman", lambda *a, **k: math.nan)
    distribution = SizeDistribution(np.array([1, 1, 2, 3]))
    crit = PopulationUniqueness(1.0, population_size=10**6)
    assert crit.estimate(distribution)[0] < 0 and not crit.fulfilled(distribution)
    estimates = pop.UniquenessEstimates({1: 2, 2: 1, 3: 1}, 10**6)
    value, model = estimates.dankar(fallback=True)
    assert model == "zayatz" and value == pop.zayatz(estimates.table, 10**6)


def test_no_sample_uniques_fulfil_population_uniqueness() -> None:
    crit = PopulationUniqueness(0.0, "pitman", population_size=1000)
    assert crit.fulfilled(SizeDistribution(np.array([2, 3, 5])))
    assert not crit.fulfilled(SizeDistribution(np.array([1, 3, 5])))


# ---------------------------------------------------------------------------
# ARX's binary search: a literal port with per-class flags, against suppression_prefix


def binary_search_port(  # noqa: C901 (a literal port of ARX's method)
    fulfilled: Callable[[list[bool]], bool],
    sizes: list[int],
    already: int,
    limit: int,
) -> list[bool]:
    """``suppressWhileNotFulfilledBinary`` with ``RiskBasedCriterion``'s abort, line by line.

    ``fulfilled`` sees the per-class suppression flags; returns them.
    """
    flags = [False] * len(sizes)
    count = [already]

    def suppress(i: int) -> None:
        flags[i] = True
        count[0] += sizes[i]

    def unsuppress(i: int) -> None:
        flags[i] = False
        count[0] -= sizes[i]

    def state() -> str:
        ok = fulfilled(flags)
        if not ok and count[0] > limit:
            return "ABORT"
        return "FULFILLED" if ok else "NOT"

    if not sizes:
        return flags
    low, high = 0, len(sizes) - 1
    mid = (low + high) // 2
    result = "ABORT"
    for i in range(low, mid + 1):
        suppress(i)
    while low <= high:
        result = state()
        if result == "ABORT":
            break
        if result == "FULFILLED":
            high = mid - 1
            mid = int((low + high) / 2)
            i = mid + 1
            while i < len(sizes) and flags[i]:
                unsuppress(i)
                i += 1
        else:
            low = mid + 1
            mid = int((low + high) / 2)
            for i in range(low, mid + 1):
                suppress(i)
    if result != "ABORT":
        result = state()
        if result == "NOT" and mid + 1 < len(sizes) and not flags[mid + 1]:
            suppress(mid + 1)
    return flags


def test_binary_search_matches_a_literal_port() -> None:
    rng = np.random.default_rng(11)
    for _ in range(3000):
        length = int(rng.integers(1, 12))
        sizes = sorted(int(x) for x in rng.integers(1, 5, size=length))
        truth = rng.random(length + 1) < rng.random()  # any predicate, monotone or not
        already = int(rng.integers(0, 3))
        limit = int(rng.integers(0, sum(sizes) + 4))

        def by_prefix(p: int, truth: NDArray[Any] = truth) -> bool:
            return bool(truth[p])

        def by_flags(flags: list[bool], truth: NDArray[Any] = truth) -> bool:
            return bool(truth[sum(flags)])

        suppressed = already + np.concatenate([[0], np.cumsum(sizes)])
        p = suppression_prefix(by_prefix, suppressed, limit)
        flags = binary_search_port(by_flags, sizes, already, limit)
        assert flags == [i < p for i in range(length)]


def test_binary_search_finds_the_smallest_prefix_of_a_monotone_condition() -> None:
    for length in range(1, 40):
        for first in range(1, length + 1):  # fulfilled from `first` on (0 fails: early exit)
            p = suppression_prefix(lambda q, first=first: q >= first, np.arange(length + 1), HUGE)
            assert p == first


# ---------------------------------------------------------------------------
# random cases against plain references


def random_dataset(
    rng: np.random.Generator, with_subset: bool
) -> tuple[Dataset, pd.DataFrame, pd.DataFrame | None]:
    m = int(rng.integers(1, 4))
    n = int(rng.integers(5, 50))
    hierarchies = {}
    data = {}
    for j in range(m):
        d = int(rng.integers(1, 6))
        values = [f"v{j}{i}" for i in range(d)]
        hierarchies[f"q{j}"] = Hierarchy.from_rows(
            [[v, f"g{j}{i // 2}", "*"] for i, v in enumerate(values)]
        )
        data[f"q{j}"] = [values[i] for i in rng.integers(0, d, size=n)]
    data["s"] = [str(x) for x in rng.integers(0, 2, size=n)]
    table = pd.DataFrame(data)
    if not with_subset:
        return Dataset.from_frame(table, hierarchies, sensitive=["s"]), table, None
    picked = rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False)
    subset = table.iloc[picked].reset_index(drop=True)
    return (
        presence_dataset(table, subset, hierarchies, roles=Roles.of(sensitive=["s"])),
        table,
        subset,
    )


def plain_presence(
    table: pd.DataFrame, subset: pd.DataFrame, ds: Dataset, levels: Sequence[int]
) -> dict[tuple[str, ...], tuple[int, int]]:
    """Per generalized tuple: (subset records, population records), by a loop over rows."""
    qis = [q.name for q in ds.qis]
    hier = {q.name: q.hierarchy for q in ds.qis}

    def key(row: pd.Series) -> tuple[str, ...]:
        return tuple(hier[c].label(str(row[c]), lv) for c, lv in zip(qis, levels, strict=True))

    pcount = Counter(key(r) for _, r in table.iterrows())
    count = Counter(key(r) for _, r in subset.iterrows())
    return {k: (count.get(k, 0), v) for k, v in pcount.items()}


def test_presence_models_against_a_plain_loop() -> None:
    rng = np.random.default_rng(3)
    for _ in range(40):
        ds, table, subset = random_dataset(rng, with_subset=True)
        assert subset is not None
        levels = [int(rng.integers(0, 3)) for _ in ds.qis]
        stats, _ = node_stats(ds, levels)
        assert stats.population is not None
        reference = plain_presence(table, subset, ds, levels)
        assert sorted(zip(stats.counts.tolist(), stats.population.tolist(), strict=True)) == sorted(
            reference.values()
        )
        dmin, dmax = sorted(float(x) for x in rng.choice([0.0, 0.2, 0.5, 0.8, 1.0], size=2))
        model = DeltaPresence(dmin, dmax)
        kmap = KMap(int(rng.integers(1, 5)), population=table)
        out = model.outliers(stats)
        kout = kmap.outliers(stats)
        fails_empty = False
        for i, (c, p) in enumerate(zip(stats.counts, stats.population, strict=True)):
            delta = c / p if c else 0.0
            inside = dmin <= delta <= dmax
            assert out[i] == (c > 0 and not inside)
            assert kout[i] == (c > 0 and p < kmap.k)
            fails_empty |= c == 0 and not inside
        assert model.acceptable(stats, out) == (not fails_empty)


def literal_risk(kind: str, threshold: float, sizes: list[int]) -> bool:
    """The risk conditions from their definitions, on a list of class sizes."""
    n = sum(sizes)
    if n == 0:
        return True
    if kind == "average":
        return 1.0 / (n / len(sizes)) <= threshold
    return sizes.count(1) / n <= threshold


def literal_risk_after(kind: str, threshold: float, sizes: list[int], flags: list[bool]) -> bool:
    """:func:`literal_risk` of the classes whose flag is off (the ones still released)."""
    return literal_risk(kind, threshold, [s for s, x in zip(sizes, flags, strict=True) if not x])


def test_risk_enforce_against_the_literal_port() -> None:
    rng = np.random.default_rng(8)
    for _ in range(300):
        classes = int(rng.integers(1, 15))
        counts = rng.integers(1, 6, size=classes)
        outliers = rng.random(classes) < 0.2
        order = rng.permutation(classes)
        stats = stats_of(counts.tolist(), order=order)
        kind = str(rng.choice(["average", "unique"]))
        threshold = float(rng.choice([0.0, 0.1, 0.25, 0.4, 0.6]))
        model = AverageRisk(threshold) if kind == "average" else SampleUniqueness(threshold)
        limit = int(rng.integers(0, counts.sum() + 1))
        out = model.enforce(stats, outliers, limit)
        # the port: released classes sorted by (size, order)
        released = [i for i in range(classes) if not outliers[i]]
        released.sort(key=lambda i: (counts[i], order[i]))
        sizes = [int(counts[i]) for i in released]
        already = int(counts[outliers].sum())
        if literal_risk(kind, threshold, sizes):
            flags = [False] * len(sizes)
        else:
            flags = binary_search_port(
                partial(literal_risk_after, kind, threshold, sizes), sizes, already, limit
            )
        expected = outliers.copy()
        for i, flag in zip(released, flags, strict=True):
            expected[i] |= flag
        assert out.tolist() == expected.tolist()
        assert model.holds(stats, out) == literal_risk(
            kind, threshold, [int(c) for c, x in zip(counts, out, strict=True) if not x]
        )


# ---------------------------------------------------------------------------
# ARX 3.9 on every node of small lattices


def _case_criteria(
    case: dict[str, Any], table: pd.DataFrame, subset: pd.DataFrame | None
) -> list[Criterion]:
    out: list[Criterion] = []
    for spec in case["models"]:
        p = spec.split(":")
        if p[0] == "kanon":
            out.append(KAnonymity(int(p[1])))
        elif p[0] == "dpresence":
            out.append(DeltaPresence(float(p[1]), float(p[2]), subset))
        elif p[0] == "kmap":
            out.append(KMap(int(p[1]), population=table))
        elif p[0] == "kmapest":
            estimator = "poisson" if p[2] == "poisson" else "zero-truncated-poisson"
            out.append(
                KMap(
                    int(p[1]),
                    estimator=estimator,
                    significance=float(p[3]),
                    population_size=int(p[4]),
                )
            )
        elif p[0] == "avgrisk":
            out.append(AverageRisk(float(p[1])))
        elif p[0] == "sampleuniq":
            out.append(SampleUniqueness(float(p[1])))
        else:
            out.append(PopulationUniqueness(float(p[1]), p[2], population_size=int(p[3])))
    return out


def _arx_cases() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for path in sorted(DATA.glob("*.json")):
        if path.name == "adult.json":
            continue
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            cases.append((f"{path.stem}-{case['seed']}", case))
    return cases


def bound_dataset(
    table: pd.DataFrame,
    subset: pd.DataFrame | None,
    hierarchies: Mapping[str, Hierarchy | Path],
    criteria: Sequence[Criterion],
    sensitive: list[str],
) -> Dataset:
    """The dataset ARX judges, with every criterion bound to it.

    ``table`` is the input; with k-map on a population the released sample is
    ``subset`` (``table`` being the population), with delta-presence
    :func:`population_dataset` takes the subset from the criterion.
    """
    sample = subset if any(isinstance(c, KMap) and c.needs_population for c in criteria) else table
    assert sample is not None
    ds = population_dataset(sample, hierarchies, criteria, roles=Roles.of(sensitive=sensitive))
    for c in criteria:
        c.bind(ds)
    return ds


def arx_suppressed(
    criteria: Sequence[Criterion], stats: ClassStats, row_class: NDArray[Any], limit: int
) -> tuple[bool, NDArray[np.int64]]:
    """ARX's verdict on a node and the rows its release suppresses, in table order.

    ARX suppresses only with a suppression limit above 0 or on a failing node
    (``TransformationApplicator``): then the outliers and the non-empty
    completely generalized classes.
    """
    ok, outliers = arx_node(criteria, stats, limit, enforce_limit=HUGE)
    if limit == 0 and ok:
        return ok, np.zeros(0, dtype=np.int64)
    assert stats.completely_generalized is not None
    marked = outliers | (stats.completely_generalized & (stats.counts > 0))
    return ok, np.flatnonzero(marked[row_class]).astype(np.int64)


@pytest.mark.parametrize(("name", "case"), _arx_cases(), ids=[n for n, _ in _arx_cases()])
def test_every_node_as_arx_judges_it(name: str, case: dict[str, Any]) -> None:
    columns = case["columns"]
    table = pd.DataFrame(case["rows"], columns=columns)
    subset = None if case["subset"] is None else pd.DataFrame(case["subset"], columns=columns)
    hierarchies = {c: Hierarchy.from_rows(rows) for c, rows in case["hierarchies"].items()}
    criteria = _case_criteria(case, table, subset)
    ds = bound_dataset(table, subset, hierarchies, criteria, ["s"])
    local = np.arange(ds.n)
    if case["kind"] == "kmap":  # the table is the sample; ARX numbers it in the population's order
        assert subset is not None
        rows, _ = match_rows(table, subset, columns)
        local = np.argsort(np.argsort(rows))
    limit = math.floor(case["suppression"] * ds.n + 1e-9)
    for node in case["nodes"]:
        stats, row_class = node_stats(ds, node["levels"])
        ok, suppressed = arx_suppressed(criteria, stats, row_class, limit)
        ok_abort, _ = arx_node(criteria, stats, limit)
        assert ok == ok_abort == node["anonymous"], (name, node["levels"])
        assert sorted(local[suppressed].tolist()) == node["suppressed"], (name, node["levels"])


# ---------------------------------------------------------------------------
# ARX 3.9 on Adult: the settings of ARX's own tests, on a sample of nodes


ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"


def _adult_cases() -> list[dict[str, Any]]:
    path = DATA / "adult.json"
    if not path.exists():
        return []
    return list(json.loads(path.read_text(encoding="utf-8"))["cases"])


@pytest.fixture(scope="module")
def adult() -> pd.DataFrame:
    return pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str, keep_default_na=False)


@pytest.mark.parametrize("case", _adult_cases(), ids=[c["name"] for c in _adult_cases()])
def test_adult_nodes_as_arx_judges_them(case: dict[str, Any], adult: pd.DataFrame) -> None:
    hierarchies = {q: ADULT / f"hierarchy_{q}.csv" for q in case["qis"]}
    sensitive = [c for c in adult.columns if c not in case["qis"]]
    rows = case["subset_rows"]
    subset = None if rows is None else adult.iloc[rows].reset_index(drop=True)
    criteria = _case_criteria(case, adult, subset)
    for c in criteria:
        if isinstance(c, PopulationUniqueness):
            c.iterations_per_try = 15  # ARX's TestAnonymizationRiskBased solver setting
    ds = bound_dataset(adult, subset, hierarchies, criteria, sensitive)
    limit = math.floor(case["suppression"] * ds.n + 1e-9)
    for node in case["nodes"]:
        stats, row_class = node_stats(ds, node["levels"])
        ok, suppressed = arx_suppressed(criteria, stats, row_class, limit)
        assert ok == node["anonymous"], (case["name"], node["levels"])
        assert (suppressed.size, int(suppressed.sum()), int((suppressed**2).sum())) == (
            node["suppressed"],
            node["sum"],
            node["squares"],
        ), (case["name"], node["levels"])


def test_the_delta_presence_paper_example_as_arx_tests_it() -> None:
    # ARX TestAnonymization.testDPresenceWithoutOutliers: k = 2 and (1/2, 2/3)-presence, no
    # suppression; ARX releases zip at level 3 (47*, 48*), age at 3 (*), nationality at 2
    people = [
        ("a", "Alice", "47906", "35", "USA", "0"),
        ("b", "Bob", "47903", "59", "Canada", "1"),
        ("c", "Christine", "47906", "42", "USA", "1"),
        ("d", "Dirk", "47630", "18", "Brazil", "0"),
        ("e", "Eunice", "47630", "22", "Brazil", "0"),
        ("f", "Frank", "47633", "63", "Peru", "1"),
        ("g", "Gail", "48973", "33", "Spain", "0"),
        ("h", "Harry", "48972", "47", "Bulgaria", "1"),
        ("i", "Iris", "48970", "52", "France", "1"),
    ]
    table = pd.DataFrame(people, columns=["identifier", "name", "zip", "age", "nationality", "sen"])
    ages = {
        "18": "1*",
        "22": "2*",
        "33": "3*",
        "35": "3*",
        "42": "4*",
        "47": "4*",
        "52": "5*",
        "59": "5*",
        "63": "6*",
    }
    nations = {
        "Canada": ("N. America", "America"),
        "USA": ("N. America", "America"),
        "Peru": ("S. America", "America"),
        "Brazil": ("S. America", "America"),
        "Bulgaria": ("E. Europe", "Europe"),
        "France": ("W. Europe", "Europe"),
        "Spain": ("W. Europe", "Europe"),
    }
    hierarchies = {
        "zip": Hierarchy.from_rows(
            [
                [z, z[:4] + "*", z[:3] + "*", z[:2] + "*", z[:1] + "*", "*"]
                for z in sorted(set(table["zip"]))
            ]
        ),
        "age": Hierarchy.from_rows(
            [[a, g, "<=40" if int(a) <= 40 else ">40", "*"] for a, g in ages.items()]
        ),
        "nationality": Hierarchy.from_rows([[c, *groups, "*"] for c, groups in nations.items()]),
    }
    subset = table.iloc[[1, 2, 5, 7, 8]]
    criteria: list[Criterion] = [KAnonymity(2), DeltaPresence(0.5, 2 / 3, subset)]
    ds = population_dataset(
        table,
        hierarchies,
        criteria,
        roles=Roles.of(identifying=["identifier", "name"], insensitive=["sen"]),
    )
    assert ds.frame["name"].tolist() == ["Bob", "Christine", "Frank", "Harry", "Iris"]
    stats, _ = node_stats(ds, [3, 3, 2])
    assert stats.population is not None
    ok, outliers = arx_node(criteria, stats, 0)
    assert ok and not outliers.any()
    assert sorted(zip(stats.counts.tolist(), stats.population.tolist(), strict=True)) == [
        (2, 3),
        (3, 6),
    ]  # deltas 2/3 and 1/2
    below, _ = node_stats(ds, [3, 3, 1])  # N./S. America apart: S. America has delta 1/3
    assert not arx_node(criteria, below, 0)[0]
