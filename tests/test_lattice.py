"""The lattice and frequency-set roll-up, checked against direct computation."""

from __future__ import annotations

import dataclasses
import itertools
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray

from anonlab.dataset import Dataset
from anonlab.hierarchy import Hierarchy
from anonlab.lattice import STRATEGIES, SearchContext
from anonlab.lattice.degree import DegreeCounter
from anonlab.lattice.freqset import FrequencyCache, FrequencyEngine
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.metrics import LossContext, metric_by_name
from anonlab.lattice.search import ANONYMOUS
from anonlab.privacy import ClassStats, Criterion


def test_lattice_shape_and_degrees() -> None:
    lat = Lattice([1, 2])
    assert lat.size == 6
    assert lat.levels(lat.top) == (1, 2)
    node = lat.index((0, 1))
    assert sorted(lat.levels(s) for s in lat.successors(node)) == [(0, 2), (1, 1)]
    assert [lat.levels(p) for p in lat.predecessors(node)] == [(0, 0)]
    assert sorted(lat.levels(x) for x in lat.between(lat.bottom, lat.top, 2)) == [(0, 2), (1, 1)]


def test_degree_products_over_the_open_nodes() -> None:
    """Out-degree x in-degree within the untagged nodes (all open: the lattice's degrees)."""
    lat = Lattice([1, 2])
    ctx = SimpleNamespace(lattice=lat)
    counter = DegreeCounter(ctx)  # type: ignore[arg-type]
    everything = np.ones(lat.size, dtype=bool)
    products = counter.products(everything)
    assert products[lat.index((0, 1))] == 2 * 1
    assert products[lat.bottom] == 0 and products[lat.top] == 0
    for node in range(lat.size):
        assert products[node] == len(lat.successors(node)) * len(lat.predecessors(node))
    closed = everything.copy()
    closed[lat.index((0, 2))] = False  # tagged: no longer counts as a neighbour
    assert counter.products(closed)[lat.index((0, 1))] == 1 * 1


def test_adult_lattice_size(data_dir: object) -> None:
    assert Lattice([1, 4, 1, 2, 3, 2, 2, 2]).size == 6480


@pytest.mark.parametrize("heights", [[2, 1, 3], [0, 15, 1], [16, 1], [1] * 13])
def test_up_and_down_sets_match_definition(heights: list[int]) -> None:
    """Packed (SWAR) and plain comparisons (height > 15 or m > 12) agree with the definition."""
    lat = Lattice(heights)
    lv = lat.all_levels
    for node in np.random.default_rng(0).permutation(lat.size)[:300]:
        assert set(lat.above(node)) == set(np.flatnonzero((lv >= lv[node]).all(axis=1)))
        assert set(lat.below(node)) == set(np.flatnonzero((lv <= lv[node]).all(axis=1)))
        ups = {int(x) for x in np.flatnonzero((lv - lv[node]).sum(axis=1) == 1)} & set(
            lat.above(node).tolist()
        )
        assert set(lat.successors(int(node))) == ups
        assert all(node in lat.successors(p) for p in lat.predecessors(int(node)))


def test_roll_up_equals_grouping_rows() -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {"a": rng.integers(0, 6, 200).astype(str), "b": rng.integers(0, 4, 200).astype(str)}
    )
    ha = Hierarchy.from_rows([[str(v), str(v // 2), str(v // 4), "*"] for v in range(6)])
    hb = Hierarchy.from_rows([[str(v), str(v % 2), "*"] for v in range(4)])
    ds = Dataset.from_frame(frame, {"a": ha, "b": hb})
    engine = FrequencyEngine(ds)
    lat = Lattice(ds.heights)
    for levels in itertools.product(range(4), range(3)):
        direct = frame.assign(
            a=[ha.label(v, levels[0]) for v in frame["a"]],
            b=[hb.label(v, levels[1]) for v in frame["b"]],
        ).value_counts()
        for source in range(lat.size):
            src = lat.levels(source)
            if all(s <= t for s, t in zip(src, levels, strict=True)):
                fs = engine.roll_up(engine.roll_up(engine.bottom, src), levels)
                assert sorted(fs.counts.tolist()) == sorted(direct.tolist())


class _AtMostThree(Criterion):
    """A toy criterion that is not monotone: classes may hold at most 3 records."""

    name = "at-most-three"
    monotone_with_generalization = False
    monotone_with_suppression = False

    def parameters(self) -> dict[str, Any]:
        return {}

    def outliers(self, stats: ClassStats) -> NDArray[Any]:
        return np.asarray(stats.counts > 3)


def test_every_strategy_searches_a_non_monotone_criterion() -> None:
    """No refusal: the tagging strategies run their linear phase and find the only valid node."""
    frame = pd.DataFrame({"a": [str(v % 4) for v in range(12)]})
    ha = Hierarchy.from_rows([[str(v), str(v // 2), "*"] for v in range(4)])
    ds = Dataset.from_frame(frame, {"a": ha})
    engine = FrequencyEngine(ds)
    loss = LossContext(ds, engine.base_tuples, engine.bottom.counts)

    def context() -> SearchContext:
        return SearchContext(
            Lattice(ds.heights),
            FrequencyEngine(ds),
            [_AtMostThree()],
            0,
            metric_by_name("precision", loss),
        )

    for name in ("exhaustive", "ola", "degree", "flash"):
        result = STRATEGIES[name](context())
        assert result.levels == (0,)  # level 0 (classes of 3) is the only valid node
        assert result.sub_tags is not None  # searched as a non-monotone model
        assert result.tags[result.optimum] == ANONYMOUS


def _direct_histograms(
    frame: pd.DataFrame, hiers: dict[str, Hierarchy], levels: tuple[int, ...], attribute: str
) -> dict[tuple[str, ...], dict[str, int]]:
    """Per class (by labels): the sensitive values' counts, computed from the rows."""
    labels = frame.assign(
        **{
            c: [h.label(v, lv) for v in frame[c]]
            for (c, h), lv in zip(hiers.items(), levels, strict=True)
        }
    )
    out: dict[tuple[str, ...], dict[str, int]] = {}
    for key, group in labels.groupby(list(hiers), sort=False):
        out[tuple(str(x) for x in key)] = {
            str(v): int(c) for v, c in group[attribute].value_counts().items()
        }
    return out


def _engine_histograms(
    ds: Dataset, fs: Any, attribute: str
) -> dict[tuple[str, ...], dict[str, int]]:
    """The same from a frequency set: class labels from ``group_codes``, values by dictionary."""
    hist = fs.sensitive[attribute]
    values = ds.sensitive_attribute(attribute).values
    labels = [
        [q.level_labels[lv][code] for code in fs.group_codes(i)]
        for i, (q, lv) in enumerate(zip(ds.qis, fs.levels, strict=True))
    ]
    out: dict[tuple[str, ...], dict[str, int]] = {}
    for c, v, n in zip(hist.classes, hist.values, hist.counts, strict=True):
        key = tuple(col[int(c)] for col in labels)
        out.setdefault(key, {})[values[int(v)]] = int(n)
    return out


def test_sensitive_histograms_roll_up_like_counts() -> None:
    """Every node, from every source below it: histograms equal grouping the rows directly,
    sorted by class then value, with the table's global distribution; group codes name the
    classes."""
    rng = np.random.default_rng(4)
    n = 300
    frame = pd.DataFrame(
        {
            "a": rng.integers(0, 6, n).astype(str),
            "b": rng.integers(0, 4, n).astype(str),
            "s": rng.choice(["x", "y", "z", "w"], n, p=[0.6, 0.2, 0.15, 0.05]),
            "t": rng.integers(0, 30, n).astype(str),
        }
    )
    hiers = {
        "a": Hierarchy.from_rows([[str(v), str(v // 2), str(v // 4), "*"] for v in range(6)]),
        "b": Hierarchy.from_rows([[str(v), str(v % 2), "*"] for v in range(4)]),
    }
    ds = Dataset.from_frame(frame, hiers, sensitive=["s", "t"])
    engine = FrequencyEngine(ds, sensitive=["s", "t"])
    lat = Lattice(ds.heights)
    for node in range(lat.size):
        levels = lat.levels(node)
        for source in lat.below(node):
            fs = engine.roll_up(engine.roll_up(engine.bottom, lat.levels(int(source))), levels)
            for attribute in ("s", "t"):
                hist = fs.sensitive[attribute]
                assert np.all(np.diff(hist.classes * 1000 + hist.values) > 0)  # sorted, unique
                assert hist.counts.min() > 0
                assert np.array_equal(
                    np.bincount(hist.classes, weights=hist.counts, minlength=fs.classes), fs.counts
                )
                assert _engine_histograms(ds, fs, attribute) == _direct_histograms(
                    frame, hiers, levels, attribute
                )
                assert np.array_equal(
                    hist.global_counts, ds.sensitive_attribute(attribute).frequencies
                )
    assert FrequencyEngine(ds).bottom.sensitive == {}  # only what is asked for is carried


def test_population_counts_and_classes_of_the_population_only() -> None:
    """With a population, base tuples come from both tables; population-only classes count 0."""
    rng = np.random.default_rng(9)
    population = pd.DataFrame(
        {"a": rng.integers(0, 6, 200).astype(str), "b": rng.integers(0, 4, 200).astype(str)}
    )
    sample = population.iloc[rng.choice(200, 40, replace=False)].reset_index(drop=True)
    hiers = {
        "a": Hierarchy.from_rows([[str(v), str(v // 2), str(v // 4), "*"] for v in range(6)]),
        "b": Hierarchy.from_rows([[str(v), str(v % 2), "*"] for v in range(4)]),
    }
    base = Dataset.from_frame(sample, hiers)
    codes = np.column_stack(
        [pd.Index(q.values).get_indexer(pd.Index(population[q.name])) for q in base.qis]
    ).astype(np.int32)
    assert (codes >= 0).all()  # every population value is in the sample's dictionary here
    ds = dataclasses.replace(base, population=codes)
    engine = FrequencyEngine(ds)
    assert engine.bottom.classes == len(population.drop_duplicates())
    assert (engine.bottom.counts == 0).any()
    assert engine.row_index.shape == (40,)
    lat = Lattice(ds.heights)
    for node in range(lat.size):
        levels = lat.levels(node)
        fs = engine.roll_up(engine.bottom, levels)

        def labelled(frame: pd.DataFrame, lv: tuple[int, ...] = levels) -> pd.Series:
            return frame.assign(
                **{
                    c: [h.label(v, x) for v in frame[c]]
                    for (c, h), x in zip(hiers.items(), lv, strict=True)
                }
            ).value_counts()

        assert fs.population is not None
        got = {
            tuple(
                q.level_labels[lv][c]
                for q, lv, c in zip(
                    ds.qis, levels, [fs.group_codes(i)[j] for i in range(2)], strict=True
                )
            ): (int(fs.counts[j]), int(fs.population[j]))
            for j in range(fs.classes)
        }
        pop, smp = labelled(population), labelled(sample)
        assert got == {k: (int(smp.get(k, 0)), int(v)) for k, v in pop.items()}


def test_nbytes_counts_the_carried_arrays() -> None:
    frame = pd.DataFrame(
        {"a": [str(v % 5) for v in range(50)], "s": [str(v % 3) for v in range(50)]}
    )
    ha = Hierarchy.from_rows([[str(v), str(v // 2), "*"] for v in range(5)])
    ds = Dataset.from_frame(frame, {"a": ha}, sensitive=["s"])
    plain = FrequencyEngine(ds).roll_up(FrequencyEngine(ds).bottom, (1,))
    engine = FrequencyEngine(ds, sensitive=["s"], keep_representatives=True)
    fs = engine.roll_up(engine.bottom, (1,))
    h = fs.sensitive["s"]
    assert fs.representatives is not None
    assert fs.nbytes == (
        plain.nbytes
        + h.classes.nbytes
        + h.values.nbytes
        + h.counts.nbytes
        + fs.representatives.nbytes
    )
    # representatives: the first row of each class
    first: dict[str, int] = {}
    for row, value in enumerate(frame["a"]):
        first.setdefault(ha.label(value, 1), row)
    labels = [ds.qis[0].level_labels[1][c] for c in fs.group_codes(0)]
    assert [first[x] for x in labels] == fs.representatives.tolist()


def test_cache_sources_and_snapshots_give_the_direct_roll_up() -> None:
    """Through a tiny cache (axis and chain snapshots in play) every frequency set is exact."""
    rng = np.random.default_rng(5)
    cols, hiers = {}, {}
    for name, size in (("a", 30), ("b", 12), ("c", 8), ("d", 5), ("e", 20)):
        cols[name] = rng.integers(0, size, 3000).astype(str)
        hiers[name] = Hierarchy.from_rows(
            [[str(v), str(v // 2), str(v // 4), "*"] for v in range(size)]
        )
    ds = Dataset.from_frame(pd.DataFrame(cols), hiers)
    engine = FrequencyEngine(ds)
    cache = FrequencyCache(engine, capacity=2)
    lat = Lattice(ds.heights)
    for node in rng.integers(0, lat.size, 400):
        levels = lat.levels(int(node))
        got = cache.compute(levels)
        direct = engine.roll_up(engine.bottom, levels)
        assert got.levels == levels
        assert sorted(got.counts.tolist()) == sorted(direct.counts.tolist())
        assert sorted(map(tuple, got.keys.tolist())) == sorted(map(tuple, direct.keys.tolist()))
    assert cache._axes and cache._chain  # both kinds of snapshot were made and used


def test_cache_respects_its_byte_budget() -> None:
    rng = np.random.default_rng(8)
    frame = pd.DataFrame(
        {"a": rng.integers(0, 40, 4000).astype(str), "b": rng.integers(0, 40, 4000).astype(str)}
    )
    h = Hierarchy.from_rows([[str(v), str(v // 2), str(v // 8), "*"] for v in range(40)])
    ds = Dataset.from_frame(frame, {"a": h, "b": h})
    engine = FrequencyEngine(ds)
    budget = 3 * engine.bottom.nbytes
    cache = FrequencyCache(engine, capacity=64, budget=budget)
    lat = Lattice(ds.heights)
    for node in range(lat.size):
        fs = cache.compute(lat.levels(node))
        assert sorted(fs.counts.tolist()) == sorted(
            engine.roll_up(engine.bottom, lat.levels(node)).counts.tolist()
        )
        held = sum(e.nbytes for e in cache._entries if e is not None)
        assert held == cache._bytes <= budget
