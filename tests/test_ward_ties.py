"""Ward's clustering is the same on a release as on its original when distances tie (issue 20).

On data with many duplicate records and lattice values (a census table such as
ISLR's Wage, 201 duplicate rows), many of Ward's merge costs tie, and a tie
broken by rounding noise let an obt release score Ward ARI 0.40. The report's
Ward now merges on distances snapped to a power-of-two grid, ties in record
order (:func:`anonlab.perturbation.evaluate.ward_labels`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.spatial.distance import pdist
from sklearn.metrics import adjusted_rand_score

from anonlab.errors import AnonlabWarning
from anonlab.perturbation.evaluate import clustering_agreement, snapped_distances, ward_labels
from anonlab.perturbation.transforms import perturb_array
from anonlab.table import NumericColumns


def _lattice(levels: int, seed: int, n: int = 900, duplicates: int = 200) -> NDArray[np.float64]:
    """Records on a small integer lattice, the last ``duplicates`` copies of earlier ones."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, levels, (n, 4)).astype(float)
    x[-duplicates:] = x[rng.integers(0, n - duplicates, duplicates)]
    return x


def _release(
    x: NDArray[np.float64], method: str, seed: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    data = NumericColumns(["a", "b", "c", "d"], x, [True] * 4)
    with warnings.catch_warnings():  # the release's warnings are not what is tested here
        warnings.simplefilter("ignore", AnonlabWarning)
        z, released, _ = perturb_array(data, method, seed=seed)
    return z, released


@pytest.mark.parametrize("method", ["obt", "rbt", "rotation"])
@pytest.mark.parametrize(("levels", "seed"), [(3, 0), (5, 1), (10, 2)])
def test_ward_agrees_on_data_with_many_ties(method: str, levels: int, seed: int) -> None:
    x = _lattice(levels, seed)
    z, released = _release(x, method, seed)
    d = pdist(z)
    assert np.unique(x, axis=0).shape[0] <= x.shape[0] - 200  # 200+ duplicate records
    assert np.unique(np.round(d, 9)).size < d.size / 20  # most distances tie
    assert not np.array_equal(d, pdist(released))  # the last bits do differ
    agreement = clustering_agreement(z, released, seed=seed)
    assert agreement["ward"] == 1.0


def test_snapped_distances_are_bit_equal_for_an_isometry() -> None:
    z, released = _release(_lattice(4, 3), "rotation", 3)
    before, after = snapped_distances(z), snapped_distances(released)
    assert np.array_equal(before, after)
    assert np.max(np.abs(before - pdist(z))) <= 2.0**-31 * pdist(z).max()


def test_ward_labels_split_clear_groups_as_ward_does() -> None:
    rng = np.random.default_rng(5)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    points = np.vstack([c + rng.normal(0, 0.5, (40, 2)) for c in centres])
    labels = ward_labels(points, 3)
    truth = np.repeat([0, 1, 2], 40)
    assert adjusted_rand_score(truth, labels) == 1.0
    assert ward_labels(points[:2], 3).tolist() == [0, 1]  # more clusters than records
