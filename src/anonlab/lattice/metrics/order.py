"""ARX's order of a node's classes when a research subset is released.

ARX groups its whole input table, the population, and meets each class first
at its first population row; its sums over classes run in that order. The
frequency sets of a dataset with a population list the classes otherwise, so
the metrics that add class by class (:mod:`~anonlab.lattice.metrics.entropy_loss`,
:mod:`~anonlab.lattice.metrics.classification`,
:mod:`~anonlab.lattice.metrics.payout`) reorder them with :func:`arx_class_order`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.lattice.freqset import FrequencySet
from anonlab.lattice.metrics.base import LossContext


def arx_class_order(ctx: LossContext, fs: FrequencySet) -> NDArray[Any]:
    """Indices of ``fs``'s classes in ARX's order.

    Without a population table, the frequency set's own order (the order of
    first appearance in the table, ARX's). With one, the order of each class's
    first population row; a class no population row falls in keeps its place
    after those.
    """
    population = getattr(ctx.dataset, "population", None)
    if population is None:
        return np.arange(fs.classes, dtype=np.int64)
    seen = population_order(ctx, fs)
    if seen is None:
        index = ctx.classes_of_codes(fs, population)
        seen = pd.unique(index[index >= 0]).astype(np.int64)
    if seen.shape[0] == fs.classes:
        return seen
    rest = np.setdiff1d(np.arange(fs.classes, dtype=np.int64), seen, assume_unique=True)
    return np.concatenate((seen, rest))


def population_order(ctx: LossContext, fs: FrequencySet) -> NDArray[Any] | None:
    """The classes of ``fs`` that population rows fall in, in order of their first population
    row, from the node's tuple-to-class map (``fs.base_index``); ``None`` when the frequency set
    has no such map or a population tuple is not among the engine's bottom tuples.

    The population's distinct tuples in order of first appearance
    (:meth:`LossContext.population_tuples`, found once) meet the classes in the
    order of their first rows, so each node works in the distinct tuples, not
    the population's rows: ``first[c]``, the earliest of them in class ``c``,
    sorted (the positions are distinct). A frequency set that carries the order
    (:attr:`FrequencySet.population_order`, rolled up by the engine) gives it at once.
    """
    if fs.population_order is not None:
        return fs.population_order
    tuples = ctx.population_tuples()
    if fs.base_index is None or tuples is None:
        return None
    classes = fs.base_index.take(tuples)
    n = tuples.shape[0]
    first = np.full(fs.classes, n, dtype=np.int64)
    # reversed, so that the earliest position of each class is written last
    first[classes[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
    order = np.argsort(first)
    return np.asarray(order[: np.count_nonzero(first < n)], dtype=np.int64)
