"""The fast paths of the lattice search give exactly what the plain computations give.

Issue 13's performance work replaced sequential loss sums by interval checks
(:func:`anonlab.lattice.metrics.base.finished_sum`), the hierarchical EMD's
sparse walk by a dense one for small hierarchies, the roll-up's code
unpacking by codes carried from node to node, its key arithmetic by cached key
deltas and ``pd.factorize`` by pandas' hash table, and the logarithms of
delta-disclosure and enhanced beta-likeness by bounds on ratios and per-value
bounds; a node that fails the monotone sub-model's suppression limit is judged
without the other criteria, and a roll-up sums its histograms only when read.
These tests compare each with the straightforward computation it
replaces, bit for bit.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray

from anonlab.dataset import Dataset, EncodedSensitive
from anonlab.grouping import factorize_int64
from anonlab.hierarchy import Hierarchy
from anonlab.lattice import STRATEGIES
from anonlab.lattice.freqset import (
    FrequencyEngine,
    LevelPacker,
    RolledHistograms,
    aggregate_histograms,
    first_members,
    histogram_bytes,
)
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.metrics import METRICS, LossContext, NodeClasses, metric_by_name
from anonlab.lattice.metrics.base import finished_sum, sequential_sum
from anonlab.lattice.metrics.multidim import LossMetric
from anonlab.lattice.search import SearchContext, SearchResult, Verdict
from anonlab.privacy import Criterion, DistinctLDiversity, KAnonymity, closeness
from anonlab.privacy.base import ClassStats, SensitiveHistograms
from anonlab.privacy.closeness import HierarchicalDistanceTCloseness
from anonlab.privacy.likeness import DeltaDisclosure, EnhancedBetaLikeness, shares
from anonlab.privacy.spec import bind_criteria


def random_table(rng: np.random.Generator, rows: int) -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    """A table of three QIs with nested hierarchies of 2-3 levels and skewed values."""
    frame = pd.DataFrame(
        {
            "a": rng.integers(0, 40, rows).astype(str),
            "b": rng.choice(list("pqrstuvw"), rows, p=[0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05]),
            "c": rng.integers(0, 7, rows).astype(str),
        }
    )
    hierarchies = {
        "a": Hierarchy.from_rows([[str(v), str(v // 5), str(v // 20), "*"] for v in range(40)]),
        "b": Hierarchy.from_rows([[v, "x" if v in "pqr" else "y", "*"] for v in "pqrstuvw"]),
        "c": Hierarchy.from_rows([[str(v), str(v % 2), "*"] for v in range(7)]),
    }
    return frame, hierarchies


def plain_loss(metric: LossMetric, node: NodeClasses) -> tuple[list[float], list[float]]:
    """ARX's loss and bound per attribute: one sequential sum per attribute, as ARX adds."""
    fs = node.fs
    counts = fs.counts.astype(np.float64)
    released = ~np.asarray(node.outliers, dtype=bool)
    values, bounds = [], []
    for dim, level in enumerate(fs.levels):
        share = counts * metric.ctx.shares(dim)[level][metric.ctx.group_codes(fs, dim)]
        bounds.append(metric._normalize(sequential_sum(share * metric.g_factor), dim))
        suppressed = (
            counts if metric.s_factor == 1.0 else share + metric.s_factor * (counts - share)
        )
        terms = np.where(released, share * metric.g_factor, suppressed)
        values.append(metric._normalize(sequential_sum(terms), dim))
    return values, bounds


@pytest.mark.parametrize("gs_factor", [0.0, 0.3, 0.5, 0.8, 1.0])
def test_loss_sums_equal_sequential_sums(gs_factor: float) -> None:
    rng = np.random.default_rng(int(gs_factor * 10))
    frame, hierarchies = random_table(rng, 3000)
    dataset = Dataset.from_frame(frame, hierarchies, other="insensitive")
    engine = FrequencyEngine(dataset)
    ctx = LossContext(dataset, engine.base_tuples, engine.bottom.counts)
    metric = metric_by_name("loss", ctx, gs_factor=gs_factor)
    assert isinstance(metric, LossMetric)
    heights = [q.height for q in dataset.qis]
    for levels in itertools.product(*(range(h + 1) for h in heights)):
        fs = engine.roll_up(engine.bottom, levels)
        outliers = fs.counts < int(rng.integers(1, 6))
        node = NodeClasses(fs=fs, outliers=outliers)
        assert metric._sums(node, bound_only=False) == plain_loss(metric, node)
        assert metric.bound_vector(node) == plain_loss(metric, node)[1]


def test_finished_sum_sums_exactly_where_the_rounding_step_is_near() -> None:
    calls: list[int] = []

    def exact() -> float:
        calls.append(1)
        return 0.30000000000000004

    def step(x: float) -> float:
        return 1.0 if x > 0.3 else 0.0

    assert finished_sum(0.3, 1e-12, step, exact) == 1.0  # ambiguous: summed exactly
    assert calls == [1]
    assert finished_sum(0.5, 1e-12, step, exact) == 1.0  # clear: not summed
    assert calls == [1]


def test_first_members() -> None:
    inverse = np.array([0, 1, 0, 2, 1, 3, 3, 2])
    assert first_members(inverse, 4).tolist() == [0, 1, 3, 5]
    assert first_members(np.zeros(0, dtype=np.int64), 0).shape == (0,)


def test_codes_carried_by_roll_ups_equal_unpacked_keys() -> None:
    frame, hierarchies = random_table(np.random.default_rng(3), 500)
    engine = FrequencyEngine(Dataset.from_frame(frame, hierarchies, other="insensitive"))
    source = engine.roll_up(engine.bottom, (1, 0, 1))
    for target in [(1, 1, 1), (2, 1, 2), (3, 2, 2)]:
        fs = engine.roll_up(source, target)
        assert fs.known_codes is not None
        assert np.array_equal(fs.codes, engine.layout.digits(fs.keys))
        for dim in range(3):
            assert np.array_equal(fs.group_codes(dim), engine.layout.digit(fs.keys, dim))


def random_stats(rng: np.random.Generator, classes: int, values: int) -> ClassStats:
    """Sparse histograms of random classes (some empty), every value in the table."""
    matrix = rng.multinomial(
        rng.integers(1, 40), rng.dirichlet(np.full(values, 0.5)), size=classes
    ).astype(np.int64)
    matrix[rng.random(classes) < 0.1] = 0  # classes of population records only
    matrix[0, matrix.sum(axis=0) == 0] += 1
    rows, cols = np.nonzero(matrix)
    h = SensitiveHistograms(
        rows.astype(np.int64), cols.astype(np.int64), matrix[rows, cols], matrix.sum(axis=0)
    )
    return ClassStats((0,), matrix.sum(axis=1), {"s": h})


def tree(rng: np.random.Generator, values: int, height: int) -> Hierarchy:
    """A random nested hierarchy of the given height over values v0, v1, ..."""
    rows: list[list[str]] = [[f"v{i}"] for i in range(values)]
    groups = np.arange(values)  # each value's group at the level below
    for level in range(1, height):
        merge = rng.integers(0, max(1, int(groups.max()) // 2 + 1), size=int(groups.max()) + 1)
        groups = merge[groups]  # groups of the level below merge: the hierarchy stays nested
        for i in range(values):
            rows[i].append(f"L{level}:{groups[i]}")
    for row in rows:
        row.append("*")
    return Hierarchy.from_rows(rows)


@pytest.mark.parametrize("block_cells", [closeness._BLOCK_CELLS, 7])
def test_dense_hierarchical_costs_equal_sparse(
    block_cells: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(closeness, "_BLOCK_CELLS", block_cells)
    rng = np.random.default_rng(block_cells)
    for values, height in [(1, 1), (5, 1), (9, 2), (14, 3), (30, 4)]:
        stats = random_stats(rng, 25, values)
        h = stats.sensitive["s"]
        model = HierarchicalDistanceTCloseness("s", 0.2, tree(rng, values, height))
        model.bind_values(
            EncodedSensitive(
                "s",
                tuple(f"v{i}" for i in range(values)),
                np.zeros(0, dtype=np.int32),
                h.global_counts,
            )
        )
        levels = model.bound_levels()
        total = int(h.global_counts.sum())
        dense: NDArray[Any] = model._dense_costs(stats, h, levels, total)
        sparse: NDArray[Any] = model._sparse_costs(stats, h, levels, total)
        assert np.array_equal(dense, sparse)
        assert np.array_equal(model.costs(stats, h), sparse)


def test_factorize_int64_equals_pandas() -> None:
    rng = np.random.default_rng(11)
    for values in (
        np.zeros(0, dtype=np.int64),
        np.array([7], dtype=np.int64),
        rng.integers(-50, 50, 1000),
        rng.integers(0, 2**62, 300) // 7 * 7,
        np.repeat(rng.integers(0, 9, 40), 3),
    ):
        inverse, uniques = factorize_int64(np.asarray(values, dtype=np.int64))
        expected_inverse, expected_uniques = pd.factorize(values)
        assert inverse.dtype == np.int64 and uniques.dtype == np.int64
        assert np.array_equal(inverse, expected_inverse)
        assert np.array_equal(uniques, expected_uniques)


@pytest.mark.parametrize("space_factor", [1, 100])
def test_sum_pairs_equal_plain_sums(space_factor: int) -> None:
    """Both branches (dense bincount, sort) against a plain per-pair sum."""
    rng = np.random.default_rng(space_factor)
    for n_classes, n_values, pairs in [
        (1, 1, 0),
        (3, 2, 10),
        (50, 7, 400),
        (4000 * space_factor, 90, 500),
    ]:
        classes = rng.integers(0, n_classes, pairs)
        values = rng.integers(0, n_values, pairs)
        weights = rng.integers(0, 4, pairs)
        got = aggregate_histograms(classes, values, weights, n_classes, n_values)
        sums: dict[tuple[int, int], int] = {}
        for c, v, w in zip(classes.tolist(), values.tolist(), weights.tolist(), strict=True):
            sums[(c, v)] = sums.get((c, v), 0) + w
        expected = sorted((c, v, w) for (c, v), w in sums.items() if w)
        assert [tuple(int(x) for x in t) for t in zip(*got, strict=True)] == expected
        assert all(a.dtype == np.int64 for a in got)


def plain_roll_up(
    engine: FrequencyEngine, levels: tuple[int, ...]
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]]:
    """The bottom's tuples lifted to ``levels`` and grouped in order of first appearance:
    ``(keys, counts, codes, dense histogram of 's')``."""
    base = engine.base_tuples
    lifted = np.column_stack(
        [engine.qis[i].lift(0, lv)[base[:, i]] if lv else base[:, i] for i, lv in enumerate(levels)]
    ).astype(np.int64)
    inverse, uniques = pd.factorize(engine.layout.pack(lifted)[:, 0])
    counts = np.bincount(inverse, weights=engine.bottom.counts).astype(np.int64)
    first = np.array([int(np.flatnonzero(inverse == c)[0]) for c in range(len(uniques))])
    h = engine.bottom.sensitive["s"]
    dense = np.zeros((len(uniques), h.global_counts.shape[0]), dtype=np.int64)
    np.add.at(dense, (inverse[h.classes], h.values), h.counts)
    return np.asarray(uniques), counts, lifted[first], dense


def test_roll_ups_equal_plain_grouping() -> None:
    """Key deltas, the hash-table grouping, codes from any member and the histogram sums give
    what grouping the bottom's lifted tuples gives, from any source below the target."""
    rng = np.random.default_rng(5)
    frame, hierarchies = random_table(rng, 2000)
    frame["s"] = rng.choice(list("abcdefg"), len(frame), p=[0.4, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05])
    dataset = Dataset.from_frame(frame, hierarchies, sensitive=["s"], other="insensitive")
    engine = FrequencyEngine(dataset, sensitive=["s"])
    heights = [q.height for q in dataset.qis]
    nodes = list(itertools.product(*(range(h + 1) for h in heights)))
    for target in nodes:
        for source_levels in [(0, 0, 0), (min(1, target[0]), 0, target[2]), target]:
            source = engine.roll_up(engine.bottom, source_levels)
            fs = engine.roll_up(source, target)
            keys, counts, codes, dense = plain_roll_up(engine, target)
            assert np.array_equal(fs.keys[:, 0], keys)
            assert np.array_equal(fs.counts, counts)
            assert np.array_equal(fs.codes, codes)
            h = fs.sensitive["s"]
            rows, cols = np.nonzero(dense)
            assert np.array_equal(h.classes, rows) and np.array_equal(h.values, cols)
            assert np.array_equal(h.counts, dense[rows, cols])


def test_delta_disclosure_and_enhanced_likeness_equal_plain_expressions() -> None:
    """The ratio bounds of delta-disclosure and the per-value bounds of enhanced
    beta-likeness flag exactly the classes ARX's per-triple expressions flag, also for
    ratios exactly at ``2^delta`` (e.g. ``p / q = 2`` with ``delta = 1``)."""
    rng = np.random.default_rng(8)
    for _ in range(200):
        stats = random_stats(rng, int(rng.integers(1, 60)), int(rng.integers(1, 12)))
        h = stats.sensitive["s"]
        p, q = shares(stats, h)
        for delta in [0.5, 1.0, 1.5, 2.0, 3.0, 2000.0, float(rng.random() * 4) + 0.01]:
            model = DeltaDisclosure("s", delta)
            plain = np.zeros(stats.classes, dtype=bool)
            plain[h.classes[np.abs(np.log(p / q) / math.log(2.0)) >= delta]] = True
            assert np.array_equal(model.violations(stats, h), plain)
        for beta in [0.5, 1.0, 2.0, float(rng.random() * 5) + 0.01]:
            enhanced = EnhancedBetaLikeness("s", beta)
            plain = np.zeros(stats.classes, dtype=bool)
            plain[h.classes[(p - q) / q > np.minimum(beta, -np.log(q))]] = True
            assert np.array_equal(enhanced.violations(stats, h), plain)


@pytest.mark.parametrize(
    "heights", [(0,), (1, 1), (4, 3, 2, 1, 1, 2, 2, 1), (7, 0, 3), (15,) * 3, (1,) * 20]
)
def test_packed_levels_compare_like_level_vectors(heights: tuple[int, ...]) -> None:
    """The cache's packed "at or below" test is the element-wise one, and ``never`` is at or
    below no node."""
    packer = LevelPacker(heights)
    assert packer.usable
    rng = np.random.default_rng(len(heights))
    cached = np.column_stack([rng.integers(0, h + 1, 300) for h in heights])
    packed = np.asarray(
        [packer.pack(row) for row in cached.tolist()] + [packer.never], dtype=np.int64
    )
    for _ in range(50):
        target = [int(rng.integers(0, h + 1)) for h in heights]
        below = np.all(cached <= np.asarray(target), axis=1)
        expected = [bool(b) for b in np.atleast_1d(below)] + [False]
        assert packer.below(packed, packer.pack(target)).tolist() == expected
    assert not LevelPacker((1,) * 21).usable  # 3 bits a field: 63 bits


def sensitive_problem(seed: int) -> tuple[Dataset, Hierarchy]:
    """:func:`random_table` with a skewed sensitive column ``s`` and a hierarchy for it."""
    rng = np.random.default_rng(seed)
    frame, hierarchies = random_table(rng, 1500)
    frame["s"] = rng.choice(list("abcdefg"), len(frame), p=[0.4, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05])
    dataset = Dataset.from_frame(frame, hierarchies, sensitive=["s"], other="insensitive")
    s_tree = Hierarchy.from_rows([[v, "x" if v in "abc" else "y", "*"] for v in "abcdefg"])
    return dataset, s_tree


def model_context(
    dataset: Dataset, criteria: list[Criterion], limit: int, metric: str
) -> SearchContext:
    """A search context for bound criteria on ``dataset``."""
    bind_criteria(criteria, dataset)
    engine = FrequencyEngine(dataset, sensitive=["s"])
    chosen = metric_by_name(metric, LossContext(dataset, engine.base_tuples, engine.bottom.counts))
    return SearchContext(Lattice(dataset.heights), engine, criteria, limit, chosen)


def criteria_sets(s_tree: Hierarchy) -> list[list[Criterion]]:
    """Models that are not monotone with suppression, with a monotone sub-model."""
    return [
        [KAnonymity(4), HierarchicalDistanceTCloseness("s", 0.15, s_tree)],
        [KAnonymity(3), DistinctLDiversity("s", 3), EnhancedBetaLikeness("s", 1.0)],
        [HierarchicalDistanceTCloseness("s", 0.2, s_tree), DistinctLDiversity("s", 4)],
    ]


@pytest.mark.parametrize("limit", [1, 30, 200])
def test_short_circuit_verdicts_equal_full_verdicts(limit: int) -> None:
    """Judging the sub-model first changes no verdict; a node it decides has more sub-model
    outliers than the limit, and every metric's lower bound of it is the full verdict's."""
    dataset, s_tree = sensitive_problem(11)
    decided = 0
    for criteria in criteria_sets(s_tree):
        ctx = model_context(dataset, criteria, limit, "loss")
        assert not ctx.monotone_model
        metrics = [
            metric_by_name(
                name, LossContext(dataset, ctx.engine.base_tuples, ctx.engine.bottom.counts)
            )
            for name in METRICS
            if not METRICS[name].options
        ]
        for node in range(ctx.lattice.size):
            fs = ctx.cache.compute(ctx.lattice.levels(node))
            quick, full = ctx.evaluate(fs, short_circuit=True), ctx.evaluate(fs)
            assert (quick.acceptable, quick.sub_acceptable) == (
                full.acceptable,
                full.sub_acceptable,
            )
            if np.array_equal(quick.classes.outliers, full.classes.outliers):
                continue
            decided += 1
            assert not full.sub_acceptable and quick.classes.suppressed > limit
            assert not (quick.classes.outliers & ~full.classes.outliers).any()
            for metric in metrics:
                assert metric.lower_bound(quick.classes) == metric.lower_bound(full.classes)
    assert decided > 0


def full_verdicts(ctx: SearchContext, node: int) -> Verdict:
    """:meth:`SearchContext.verdict` judging every criterion of every node."""
    fs = ctx.cache.compute(ctx.lattice.levels(node))
    if not ctx.checked[node]:
        ctx.checked[node] = True
        ctx.nodes_checked += 1
    result = ctx.evaluate(fs)
    if result.acceptable:
        ctx.consider(node, result.classes)
    return result


@pytest.mark.parametrize("strategy", ["flash", "ola", "exhaustive"])
def test_short_circuit_searches_equal_full_searches(
    strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The searches reach the same optimum, loss, checks and tags with the short circuit."""
    dataset, s_tree = sensitive_problem(12)

    def run(criteria: list[Criterion]) -> SearchResult:
        return STRATEGIES[strategy](model_context(dataset, criteria, 40, "loss"))

    quick = [run(criteria) for criteria in criteria_sets(s_tree)]
    monkeypatch.setattr(SearchContext, "verdict", full_verdicts)
    for got, criteria in zip(quick, criteria_sets(s_tree), strict=True):
        full = run(criteria)
        assert (got.levels, got.loss, got.nodes_checked) == (
            full.levels,
            full.loss,
            full.nodes_checked,
        )
        assert np.array_equal(got.tags, full.tags) and np.array_equal(got.checked, full.checked)
        assert got.sub_tags is not None and full.sub_tags is not None
        assert np.array_equal(got.sub_tags, full.sub_tags)
        assert np.array_equal(got.classes.outliers, full.classes.outliers)


def test_lazy_histograms_along_a_chain_equal_eager_ones() -> None:
    """Histograms rolled up along a chain of nodes none of which built them equal the
    histograms grouped from the bottom; until built, a node's bytes count what it pins."""
    rng = np.random.default_rng(6)
    frame, hierarchies = random_table(rng, 1500)
    frame["s"] = rng.choice(list("abcdefg"), len(frame))
    dataset = Dataset.from_frame(frame, hierarchies, sensitive=["s"], other="insensitive")
    engine = FrequencyEngine(dataset, sensitive=["s"])
    chain = [(1, 0, 0), (1, 1, 0), (2, 1, 1), (3, 2, 2)]
    nodes = [engine.bottom]
    for levels in chain:
        nodes.append(engine.roll_up(nodes[-1], levels))
    lazy = [fs.sensitive for fs in nodes[1:]]
    assert all(isinstance(m, RolledHistograms) and m.pending for m in lazy)
    before = [fs.nbytes for fs in nodes[1:]]
    top = nodes[-1].sensitive["s"]  # builds every node of the chain below it
    assert not any(m.pending for m in lazy if isinstance(m, RolledHistograms))
    for fs, counted in zip(nodes[1:], before, strict=True):
        _, _, _, dense = plain_roll_up(engine, fs.levels)
        h = fs.sensitive["s"]
        rows, cols = np.nonzero(dense)
        assert np.array_equal(h.classes, rows) and np.array_equal(h.values, cols)
        assert np.array_equal(h.counts, dense[rows, cols])
        assert counted >= fs.keys.nbytes + fs.counts.nbytes + histogram_bytes(h)
    assert top is nodes[-1].sensitive["s"]  # built once
    assert list(nodes[-1].sensitive) == ["s"] and len(nodes[-1].sensitive) == 1
    with pytest.raises(KeyError):
        nodes[-1].sensitive["t"]
