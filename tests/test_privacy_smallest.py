"""The class sizes and value coverage the sensitive-attribute models imply
(anonlab.privacy.smallest), checked by enumerating every histogram of a size and judging it
with the model itself."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given

from anonlab.dataset import EncodedSensitive, Roles
from anonlab.generalize import model_dataset, resolve_criteria
from anonlab.hierarchy import Hierarchy
from anonlab.io import read_table
from anonlab.lattice.freqset import FrequencyEngine
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.metrics import LossContext, metric_by_name
from anonlab.lattice.search import SearchContext, sensitive_attributes
from anonlab.privacy.base import ClassStats, SensitiveHistograms
from anonlab.privacy.closeness import (
    EqualDistanceTCloseness,
    HierarchicalDistanceTCloseness,
    OrderedDistanceTCloseness,
    TClosenessModel,
)
from anonlab.privacy.diversity import EntropyLDiversity, RecursiveCLDiversity
from anonlab.privacy.likeness import BasicBetaLikeness, DeltaDisclosure, EnhancedBetaLikeness
from anonlab.privacy.sensitive import SensitiveCriterion
from anonlab.privacy.smallest import SIZE_CAP, ordered_minimum, tree_minimum
from anonlab.privacy.spec import bind_criteria
from test_search_models import PROFILE, Case, assert_short_verdicts_are_full, model_case

ADULT = Path(__file__).resolve().parents[1] / "data" / "adult"
ATTRIBUTE = "s"


def encoded(frequencies: list[int]) -> EncodedSensitive:
    """An attribute with values ``v0, v1, ...`` of these table counts."""
    values = tuple(f"v{i}" for i in range(len(frequencies)))
    codes = np.repeat(np.arange(len(values), dtype=np.int32), frequencies)
    return EncodedSensitive(
        name=ATTRIBUTE,
        values=values,
        codes=codes,
        frequencies=np.asarray(frequencies, dtype=np.int64),
    )


def every_class(size: int, frequencies: list[int]) -> ClassStats:
    """One class per histogram of ``size`` records over the attribute's values."""
    n_values = len(frequencies)
    classes, values, counts = [], [], []
    for c, combo in enumerate(itertools.combinations_with_replacement(range(n_values), size)):
        hist = np.bincount(combo, minlength=n_values)
        for v in np.flatnonzero(hist):
            classes.append(c)
            values.append(int(v))
            counts.append(int(hist[v]))
    n_classes = classes[-1] + 1
    h = SensitiveHistograms(
        classes=np.asarray(classes, dtype=np.int64),
        values=np.asarray(values, dtype=np.int64),
        counts=np.asarray(counts, dtype=np.int64),
        global_counts=np.asarray(frequencies, dtype=np.int64),
    )
    return ClassStats(
        levels=(0,), counts=np.full(n_classes, size, dtype=np.int64), sensitive={ATTRIBUTE: h}
    )


def first_passing(model: SensitiveCriterion, frequencies: list[int], largest: int) -> int | None:
    """The smallest size at which some histogram satisfies the model, by enumeration."""
    for size in range(1, largest + 1):
        if not every_class(size, frequencies).counts.size:
            continue
        if not np.all(model.outliers(every_class(size, frequencies))):
            return size
    return None


def random_hierarchy(rng: np.random.Generator, n_values: int) -> Hierarchy:
    """A hierarchy of the values ``v0, ...`` of height 1 to 3 ending in ``*``."""
    height = int(rng.integers(1, 4))
    rows = []
    groups = [int(g) for g in rng.integers(0, max(1, n_values // 2), size=n_values)]
    for v in range(n_values):
        row = [f"v{v}"]
        if height >= 2:
            row.append(f"g{groups[v]}")
        if height >= 3:
            row.append(f"h{groups[v] % 2}")
        row.append("*")
        rows.append(row)
    return Hierarchy.from_rows(rows)


def random_model(rng: np.random.Generator, kind: str, n_values: int) -> SensitiveCriterion:
    """A model of this kind with a random parameter."""
    if kind == "equal":
        return EqualDistanceTCloseness(ATTRIBUTE, float(rng.uniform(0.02, 0.6)))
    if kind == "ordered":
        return OrderedDistanceTCloseness(ATTRIBUTE, float(rng.uniform(0.02, 0.6)))
    if kind == "hierarchical":
        return HierarchicalDistanceTCloseness(
            ATTRIBUTE, float(rng.uniform(0.02, 0.6)), random_hierarchy(rng, n_values)
        )
    if kind == "basic":
        return BasicBetaLikeness(ATTRIBUTE, float(rng.uniform(0.1, 4.0)))
    if kind == "enhanced":
        return EnhancedBetaLikeness(ATTRIBUTE, float(rng.uniform(0.1, 4.0)))
    if kind == "delta":
        return DeltaDisclosure(ATTRIBUTE, float(rng.uniform(0.3, 3.0)))
    l = int(rng.integers(2, n_values + 1))  # noqa: E741
    if kind == "recursive":
        return RecursiveCLDiversity(ATTRIBUTE, float(rng.uniform(0.5, 4.0)), l)
    return EntropyLDiversity(ATTRIBUTE, float(l) - float(rng.uniform(0.0, 0.9)), kind)


KINDS = ["equal", "ordered", "hierarchical", "basic", "enhanced", "delta"]
#: models whose monotone part is distinct l-diversity
DIVERSITY = ["shannon", "grassberger", "recursive"]


def random_cases(
    kind: str, seed: int, count: int
) -> Iterator[tuple[list[int], SensitiveCriterion]]:
    """``count`` random tables of 2 to 5 values (their counts) with a bound model of this
    kind."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n_values = int(rng.integers(2, 6))
        frequencies = [int(x) for x in rng.integers(1, 40, size=n_values)]
        model = random_model(rng, kind, n_values)
        model.bind_values(encoded(frequencies))
        yield frequencies, model


@pytest.mark.parametrize("kind", KINDS)
def test_implied_size_is_the_first_size_some_histogram_passes(kind: str) -> None:
    """Every class below the implied size fails the model; one of that size passes."""
    largest = 7
    for frequencies, model in random_cases(kind, KINDS.index(kind), 40):
        implied = model.implied_class_size(every_class(1, frequencies))
        truth = first_passing(model, frequencies, largest)
        if truth is None:
            assert implied > largest, (kind, frequencies, model)
        else:
            assert implied == truth, (kind, frequencies, model, implied, truth)


@pytest.mark.parametrize("kind", ["equal", "ordered", "hierarchical"])
def test_least_distance_equals_the_smallest_emd(kind: str) -> None:
    """The minima over every histogram of a size equal the models' own smallest distance."""
    for frequencies, model in random_cases(kind, 100 + KINDS.index(kind), 30):
        n_values = len(frequencies)
        q = np.asarray(frequencies, dtype=np.float64) / sum(frequencies)
        for size in range(1, 6):
            stats = every_class(size, frequencies)
            h = stats.sensitive[ATTRIBUTE]
            if isinstance(model, OrderedDistanceTCloseness):
                truth = float(model.sums(stats, h).min())
                rank = model.bound_rank(h)
                ordered = np.empty(n_values)
                ordered[rank] = q
                got = ordered_minimum(size, np.cumsum(ordered))
            else:
                assert isinstance(model, TClosenessModel)
                truth = float(model.emd(stats, h).min())
                if isinstance(model, HierarchicalDistanceTCloseness):
                    parents = [level.parent for level in model.bound_levels()]
                    tree = model.tree_shares(h)
                    assert tree is not None
                    shares = tree
                else:
                    parents, shares = [np.zeros(n_values, dtype=np.int64)], [np.ones(1)]
                got = tree_minimum(size, q, parents, shares)
            assert got == pytest.approx(truth, rel=1e-12, abs=1e-12), (kind, frequencies, size)


def test_adult_occupation_sizes_by_enumeration() -> None:
    """Occupation on Adult (14 values): t = 0.2 implies 7 records with the equal distance and
    6 with ARX's hierarchy; every histogram one record smaller fails, one of the size
    passes."""
    frame = read_table(ADULT / "adult.csv", delimiter=";")
    frequencies = [int(x) for x in frame["occupation"].value_counts(sort=False)]
    values = tuple(str(v) for v in frame["occupation"].value_counts(sort=False).index)
    attr = EncodedSensitive(
        name=ATTRIBUTE,
        values=values,
        codes=np.zeros(0, dtype=np.int32),
        frequencies=np.asarray(frequencies, dtype=np.int64),
    )
    models: list[tuple[SensitiveCriterion, int]] = [
        (EqualDistanceTCloseness(ATTRIBUTE, 0.2), 7),
        (HierarchicalDistanceTCloseness(ATTRIBUTE, 0.2, ADULT / "hierarchy_occupation.csv"), 6),
    ]
    for model, expected in models:
        model.bind_values(attr)
        assert model.implied_class_size(every_class(1, frequencies)) == expected
        assert np.all(model.outliers(every_class(expected - 1, frequencies)))
        assert not np.all(model.outliers(every_class(expected, frequencies)))


def test_no_passing_size_gives_the_cap() -> None:
    """A t no class can reach below the cap: the cap, and every smaller class fails."""
    model = EqualDistanceTCloseness(ATTRIBUTE, 0.0)
    frequencies = [1, 1000]  # shares 1/1001 and 1000/1001: no class of fewer than 1001 fits
    model.bind_values(encoded(frequencies))
    assert model.implied_class_size(every_class(1, frequencies)) == SIZE_CAP
    assert np.all(model.outliers(every_class(SIZE_CAP - 1, frequencies)))


@PROFILE
@given(case=model_case())
def test_search_sub_model_only_drops_failing_classes(case: Case) -> None:
    """On random problems, at every node: each class smaller than a criterion's implied size
    is its outlier, and the search's short-circuited verdict is the full one."""
    problem, ds, criteria, metric = case
    engine = FrequencyEngine(ds, sensitive=sensitive_attributes(criteria))
    lattice = Lattice(ds.heights)
    bottom = engine.bottom.stats()
    implied = [c.implied_class_size(bottom) for c in criteria]
    parts = [c.monotone_part(bottom) for c in criteria]
    for node in range(lattice.size):
        fs = engine.roll_up(engine.bottom, lattice.levels(node))
        # as the search gives them: with the classes' values to criteria that read them
        stats = dataclasses.replace(fs.stats(), codes=fs.codes)
        for criterion, size, part in zip(criteria, implied, parts, strict=True):
            if criterion.sample_based:
                continue
            failing = np.asarray(criterion.outliers(stats))
            small = (stats.counts > 0) & (stats.counts < size)
            assert np.all(failing[small]), criterion
            if part is not None:
                assert np.all(failing[np.asarray(part.outliers(stats))]), (criterion, part)
    assert_short_verdicts_are_full(ds, criteria, problem.suppression, metric)


def test_benchmark_models_imply_sizes_on_adult() -> None:
    """The search's sub-model takes the implied size: 6 for hierarchical t = 0.2 on Adult."""
    frame = read_table(ADULT / "adult.csv", delimiter=";")
    qis = ["sex", "age", "race"]
    hierarchies = {q: Hierarchy.from_csv(ADULT / f"hierarchy_{q}.csv") for q in qis}
    model = resolve_criteria(
        [
            {
                "model": "hierarchical-distance-t-closeness",
                "attribute": "occupation",
                "t": 0.2,
                "hierarchy": str(ADULT / "hierarchy_occupation.csv"),
            }
        ]
    )
    ds = model_dataset(
        frame,
        hierarchies,
        model,
        roles=Roles.of(sensitive=["occupation"], other="insensitive"),
        read_options={"delimiter": ";"},
    )
    bind_criteria(model, ds)
    engine = FrequencyEngine(ds, sensitive=["occupation"])
    chosen = metric_by_name("precision", LossContext(ds, engine.base_tuples, engine.bottom.counts))
    with_suppression = SearchContext(Lattice(ds.heights), engine, model, 100, chosen)
    assert with_suppression.implied_class_size() == 6
    assert with_suppression._sub_min_size == 6


@pytest.mark.parametrize("kind", KINDS + DIVERSITY)
def test_coverage_flags_only_failing_classes_and_is_monotone(kind: str) -> None:
    """Every class the model's value coverage flags fails the model; a merged class flagged
    has both parts flagged; and the coverage flags some class on most random problems."""
    flagged_any = 0
    for frequencies, model in random_cases(kind, 200 + (KINDS + DIVERSITY).index(kind), 30):
        part = model.monotone_part(every_class(1, frequencies))
        if part is None:
            continue
        for size in range(1, 6):
            stats = every_class(size, frequencies)
            flags = np.asarray(part.outliers(stats))
            assert np.all(np.asarray(model.outliers(stats))[flags]), (kind, frequencies, size)
            flagged_any += int(flags.any())
        h1, h2 = every_class(2, frequencies), every_class(3, frequencies)
        first, second = part.outliers(h1), part.outliers(h2)
        for a, b in itertools.product(range(h1.classes), range(h2.classes)):
            merged = merge(h1, a, h2, b, frequencies)
            if part.outliers(merged)[0]:
                assert first[a] and second[b], (kind, frequencies, a, b)
    assert flagged_any > 0, kind


def merge(one: ClassStats, a: int, two: ClassStats, b: int, frequencies: list[int]) -> ClassStats:
    """The class made of class ``a`` of ``one`` and class ``b`` of ``two``."""
    hist = np.zeros(len(frequencies), dtype=np.int64)
    for stats, c in ((one, a), (two, b)):
        h = stats.sensitive[ATTRIBUTE]
        rows = h.classes == c
        np.add.at(hist, h.values[rows], h.counts[rows])
    values = np.flatnonzero(hist)
    merged = SensitiveHistograms(
        classes=np.zeros(values.shape[0], dtype=np.int64),
        values=values.astype(np.int64),
        counts=hist[values],
        global_counts=np.asarray(frequencies, dtype=np.int64),
    )
    return ClassStats(
        levels=(0,),
        counts=np.asarray([int(hist.sum())], dtype=np.int64),
        sensitive={ATTRIBUTE: merged},
    )
