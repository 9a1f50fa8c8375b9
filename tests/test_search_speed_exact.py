"""The fast paths of the lattice search give exactly what the plain computations give.

Issue 13's performance work replaced sequential loss sums by interval checks
(:func:`anonlab.lattice.metrics.base.finished_sum`), the hierarchical EMD's
sparse walk by a dense one for small hierarchies, and the roll-up's code
unpacking by codes carried from node to node. These tests compare each with
the straightforward computation it replaces, bit for bit.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray

from anonlab.dataset import Dataset, EncodedSensitive
from anonlab.hierarchy import Hierarchy
from anonlab.lattice.freqset import FrequencyEngine, first_members
from anonlab.lattice.metrics import LossContext, NodeClasses, metric_by_name
from anonlab.lattice.metrics.base import finished_sum, sequential_sum
from anonlab.lattice.metrics.multidim import LossMetric
from anonlab.privacy import closeness
from anonlab.privacy.base import ClassStats, SensitiveHistograms
from anonlab.privacy.closeness import HierarchicalDistanceTCloseness


def random_table(rng: np.random.Generator, rows: int) -> tuple[pd.DataFrame, dict[str, Hierarchy]]:
    """A table of three QIs with nested hierarchies of 2-3 levels and skewed values."""
    frame = pd.DataFrame({
        "a": rng.integers(0, 40, rows).astype(str),
        "b": rng.choice(list("pqrstuvw"), rows, p=[.3, .2, .1, .1, .1, .1, .05, .05]),
        "c": rng.integers(0, 7, rows).astype(str),
    })
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
        suppressed = (counts if metric.s_factor == 1.0
                      else share + metric.s_factor * (counts - share))
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
    matrix = rng.multinomial(rng.integers(1, 40), rng.dirichlet(np.full(values, 0.5)),
                             size=classes).astype(np.int64)
    matrix[rng.random(classes) < 0.1] = 0  # classes of population records only
    matrix[0, matrix.sum(axis=0) == 0] += 1
    rows, cols = np.nonzero(matrix)
    h = SensitiveHistograms(rows.astype(np.int64), cols.astype(np.int64), matrix[rows, cols],
                            matrix.sum(axis=0))
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
def test_dense_hierarchical_costs_equal_sparse(block_cells: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(closeness, "_BLOCK_CELLS", block_cells)
    rng = np.random.default_rng(block_cells)
    for values, height in [(1, 1), (5, 1), (9, 2), (14, 3), (30, 4)]:
        stats = random_stats(rng, 25, values)
        h = stats.sensitive["s"]
        model = HierarchicalDistanceTCloseness("s", 0.2, tree(rng, values, height))
        model.bind_values(EncodedSensitive("s", tuple(f"v{i}" for i in range(values)),
                                           np.zeros(0, dtype=np.int32), h.global_counts))
        levels = model.bound_levels()
        total = int(h.global_counts.sum())
        dense: NDArray[Any] = model._dense_costs(stats, h, levels, total)
        sparse: NDArray[Any] = model._sparse_costs(stats, h, levels, total)
        assert np.array_equal(dense, sparse)
        assert np.array_equal(model.costs(stats, h), sparse)
