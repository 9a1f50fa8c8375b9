"""ARX's order of a node's classes when a research subset is released.

ARX groups its whole input table, the population, and meets each class first
at its first population row; its sums over classes run in that order. The
frequency sets of a dataset with a population list the classes otherwise, so
the metrics that add class by class (:mod:`~anonlab.lattice.metrics.entropy_loss`,
:mod:`~anonlab.lattice.metrics.classification`) reorder them with
:func:`arx_class_order`.
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
    index = ctx.classes_of_codes(fs, population)
    seen = pd.unique(index[index >= 0]).astype(np.int64)
    rest = np.setdiff1d(np.arange(fs.classes, dtype=np.int64), seen, assume_unique=True)
    return np.concatenate((seen, rest))
