"""The frequency-set cache's byte budget follows the table's size (issue 22): 64 MiB on a small
table, whose long searches roll up from nearer sources with it, 16 MiB past LARGE_TABLE_ROWS
rows, where the rows make the peak."""

from __future__ import annotations

import numpy as np
import pandas as pd

from anonlab.dataset import Dataset
from anonlab.hierarchy import Hierarchy
from anonlab.lattice.freqset import (
    CACHE_BUDGET,
    LARGE_TABLE_ROWS,
    SMALL_TABLE_BUDGET,
    FrequencyCache,
    FrequencyEngine,
    cache_budget,
)


def test_budget_by_rows() -> None:
    assert SMALL_TABLE_BUDGET == 64 * 2**20 and CACHE_BUDGET == 16 * 2**20
    assert cache_budget(3016) == cache_budget(LARGE_TABLE_ROWS) == SMALL_TABLE_BUDGET
    assert cache_budget(LARGE_TABLE_ROWS + 1) == cache_budget(1_000_000) == CACHE_BUDGET


def test_cache_takes_the_tables_budget_unless_given_one() -> None:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.integers(0, 20, 500).astype(str)})
    h = Hierarchy.from_rows([[str(v), str(v // 4), "*"] for v in range(20)])
    engine = FrequencyEngine(Dataset.from_frame(frame, {"a": h}))
    assert FrequencyCache(engine).budget == SMALL_TABLE_BUDGET
    assert FrequencyCache(engine, budget=1234).budget == 1234
    engine.n = LARGE_TABLE_ROWS + 1  # what the cache reads of the table's size
    assert FrequencyCache(engine).budget == CACHE_BUDGET
