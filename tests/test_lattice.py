"""The lattice and frequency-set roll-up, checked against direct computation."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray

from anonlab.dataset import Dataset
from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy
from anonlab.lattice import STRATEGIES, SearchContext
from anonlab.lattice.degree import DegreeCounter
from anonlab.lattice.freqset import FrequencyCache, FrequencyEngine
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.metrics import LossContext, Precision
from anonlab.privacy import Criterion


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
            lat.above(node).tolist())
        assert set(lat.successors(int(node))) == ups
        assert all(node in lat.successors(p) for p in lat.predecessors(int(node)))


def test_roll_up_equals_grouping_rows() -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.integers(0, 6, 200).astype(str),
                          "b": rng.integers(0, 4, 200).astype(str)})
    ha = Hierarchy.from_rows([[str(v), str(v // 2), str(v // 4), "*"] for v in range(6)])
    hb = Hierarchy.from_rows([[str(v), str(v % 2), "*"] for v in range(4)])
    ds = Dataset.from_frame(frame, {"a": ha, "b": hb})
    engine = FrequencyEngine(ds)
    lat = Lattice(ds.heights)
    for levels in itertools.product(range(4), range(3)):
        direct = frame.assign(a=[ha.label(v, levels[0]) for v in frame["a"]],
                              b=[hb.label(v, levels[1]) for v in frame["b"]]).value_counts()
        for source in range(lat.size):
            src = lat.levels(source)
            if all(s <= t for s, t in zip(src, levels, strict=True)):
                fs = engine.roll_up(engine.roll_up(engine.bottom, src), levels)
                assert sorted(fs.counts.tolist()) == sorted(direct.tolist())


class _AtMostThree(Criterion):
    """A toy criterion that is not monotone: classes may hold at most 3 records."""

    monotone = False

    def outliers(self, counts: NDArray[Any]) -> NDArray[Any]:
        return counts > 3


def test_tagging_strategies_refuse_a_non_monotone_criterion() -> None:
    frame = pd.DataFrame({"a": [str(v % 4) for v in range(12)]})
    ha = Hierarchy.from_rows([[str(v), str(v // 2), "*"] for v in range(4)])
    ds = Dataset.from_frame(frame, {"a": ha})
    engine = FrequencyEngine(ds)
    loss = LossContext(ds, engine.base_tuples, engine.bottom.counts)

    def context() -> SearchContext:
        return SearchContext(Lattice(ds.heights), FrequencyEngine(ds), _AtMostThree(), 0,
                             Precision(loss))

    for name in ("ola", "degree", "flash"):
        with pytest.raises(AnonlabError, match=f"'{name}' search relies on predictive tagging"):
            STRATEGIES[name](context())
    # exhaustive checks every node directly: level 0 (classes of 3) is the only valid node
    assert STRATEGIES["exhaustive"](context()).levels == (0,)


def test_cache_sources_and_snapshots_give_the_direct_roll_up() -> None:
    """Through a tiny cache (axis and chain snapshots in play) every frequency set is exact."""
    rng = np.random.default_rng(5)
    cols, hiers = {}, {}
    for name, size in (("a", 30), ("b", 12), ("c", 8), ("d", 5), ("e", 20)):
        cols[name] = rng.integers(0, size, 3000).astype(str)
        hiers[name] = Hierarchy.from_rows(
            [[str(v), str(v // 2), str(v // 4), "*"] for v in range(size)])
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
    frame = pd.DataFrame({"a": rng.integers(0, 40, 4000).astype(str),
                          "b": rng.integers(0, 40, 4000).astype(str)})
    h = Hierarchy.from_rows([[str(v), str(v // 2), str(v // 8), "*"] for v in range(40)])
    ds = Dataset.from_frame(frame, {"a": h, "b": h})
    engine = FrequencyEngine(ds)
    budget = 3 * engine.bottom.nbytes
    cache = FrequencyCache(engine, capacity=64, budget=budget)
    lat = Lattice(ds.heights)
    for node in range(lat.size):
        fs = cache.compute(lat.levels(node))
        assert sorted(fs.counts.tolist()) == sorted(
            engine.roll_up(engine.bottom, lat.levels(node)).counts.tolist())
        held = sum(e.nbytes for e in cache._entries if e is not None)
        assert held == cache._bytes <= budget
