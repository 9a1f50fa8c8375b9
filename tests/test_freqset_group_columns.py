"""The frequency engine's row grouping from coded columns (lattice.freqset.group_columns)."""

from __future__ import annotations

import numpy as np
import pytest

from anonlab.grouping import group_tuples
from anonlab.lattice.freqset import group_columns


@pytest.mark.parametrize("cards", [[3, 5, 2], [2**21, 2**21, 2**21, 7], [1]])
def test_same_groups_as_the_code_matrix(cards: list[int]) -> None:
    rng = np.random.default_rng(3)
    n = 200_003  # more than a few chunks of first rows
    columns = [rng.integers(0, min(c, 40), n).astype(np.int32) * (c // min(c, 40)) for c in cards]
    inverse, first = group_columns(columns, cards)
    expected_inverse, expected_first = group_tuples(np.column_stack(columns), cards)
    assert inverse.dtype == np.int32
    np.testing.assert_array_equal(inverse, expected_inverse)
    np.testing.assert_array_equal(first, expected_first)
    assert (inverse[first] == np.arange(first.shape[0])).all()


def test_no_rows() -> None:
    inverse, first = group_columns([np.zeros(0, dtype=np.int32)], [4])
    assert inverse.shape == (0,) and first.shape == (0,)
