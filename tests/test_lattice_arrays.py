"""The lattice's whole-lattice arrays, tag masks and successor lists against their definitions
(the fast paths of the optimal searches, issue 23)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from anonlab.lattice.freqset import LevelPacker
from anonlab.lattice.lattice import SUCCESSOR_CACHE_NODES, Lattice


def _definition(heights: list[int], lows: list[int]) -> np.ndarray:
    """Every level vector in node-number order: the last dimension varies fastest."""
    ranges = [range(low, h + 1) for low, h in zip(lows, heights, strict=True)]
    return np.array(list(itertools.product(*ranges)), dtype=np.int16)


@pytest.mark.parametrize(
    ("heights", "lows"),
    [
        ([2, 1, 3], [0, 0, 0]),
        ([5, 2, 3, 2, 2, 1, 1, 1], [0] * 8),
        ([3, 4, 1, 2, 0, 5], [0, 1, 0, 1, 0, 2]),
        ([16, 1], [0, 0]),
        ([1] * 13, [0] * 13),
        ([0], [0]),
    ],
)
def test_arrays_and_masks_match_definition(heights: list[int], lows: list[int]) -> None:
    """all_levels, level_sums, the packed codes (when they fit) and the masks of the nodes
    below and above a node; the successors (kept or not) are the same lists each time."""
    lat = Lattice(heights, lows)
    lv = _definition(heights, lows)
    assert lat.all_levels.dtype == np.int16 and np.array_equal(lat.all_levels, lv)
    assert lat.level_sums.dtype == np.int64
    assert np.array_equal(lat.level_sums, lv.astype(np.int64).sum(axis=1))
    assert [lat.levels(n) for n in range(lat.size)] == [tuple(row) for row in lv.tolist()]
    for node in np.random.default_rng(1).permutation(lat.size)[:200].tolist():
        below = (lv[: node + 1] <= lv[node]).all(axis=1)
        above = (lv[node:] >= lv[node]).all(axis=1)
        assert np.array_equal(lat.below_mask(node), below)
        assert np.array_equal(lat.above_mask(node), above)
        assert np.array_equal(np.flatnonzero(below), lat.below(node))
        assert np.array_equal(node + np.flatnonzero(above), lat.above(node))
        first = lat.successors(node)
        expected = [
            node + int(s) for s, a, h in zip(lat.strides, lv[node], heights, strict=True) if a < h
        ]
        assert first == expected and lat.successors(node) == expected


def test_successor_lists_kept_only_on_small_lattices() -> None:
    """A small lattice hands back the same list; a large one builds a new list each time."""
    small = Lattice([3, 3])
    assert small.successors(0) is small.successors(0)
    large = Lattice([15] * 5)
    assert large.size > SUCCESSOR_CACHE_NODES
    assert large.successors(0) == large.successors(0)
    assert large.successors(0) is not large.successors(0)


def test_level_packer_packs_as_shifts() -> None:
    """LevelPacker.pack is the sum of each level shifted into its field; a wrong length is an
    error."""
    heights = [5, 2, 3, 2, 2, 1, 1, 1]
    packer = LevelPacker(heights)
    for levels in itertools.islice(itertools.product(*(range(h + 1) for h in heights)), 0, None, 7):
        expected = sum(a << s for a, s in zip(levels, packer.shifts, strict=True))
        assert packer.pack(levels) == expected
        assert packer.pack(list(np.asarray(levels, dtype=np.int16))) == expected
    with pytest.raises(ValueError, match="levels"):
        packer.pack((1, 2))
