"""S, R, P by hand on known matrices; the trace form of S; the OBT matrix library."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from anonlab.errors import AnonlabError
from anonlab.perturbation.library import MatrixLibrary, haar_orthogonal
from anonlab.perturbation.measures import (
    direction_privacy,
    distance_privacy,
    measure_block,
    point_set_variance,
    privacy_level,
    trace_privacy,
)


def rot(t: float) -> NDArray[np.float64]:
    return np.array([[math.cos(t), math.sin(t)], [-math.sin(t), math.cos(t)]])


def test_measures_by_hand_on_known_matrices() -> None:
    # identity: nothing moves, every row is a unit vector
    assert trace_privacy(np.eye(3)) == 0.0
    assert direction_privacy(np.eye(3)) == 0.0
    # rotation by 90 degrees: (E - A)^T (E - A) = 2E, tr = 4, S = 4/2 = 2; v_i = 1 -> R = 0
    assert trace_privacy(rot(math.pi / 2)) == pytest.approx(2.0)
    assert direction_privacy(rot(math.pi / 2)) == pytest.approx(0.0)
    # rotation by 45 degrees: v_i = sqrt 2, 1 - 1/2 = 1/2, R = 1/4; S = 2 - 2 cos 45 = 2 - sqrt 2
    a = rot(math.pi / 4)
    assert direction_privacy(a) == pytest.approx(0.25)
    assert trace_privacy(a) == pytest.approx(2 - math.sqrt(2))
    assert privacy_level(a) == pytest.approx(0.25 * (2 - math.sqrt(2)))
    # 135 degrees: S = 2 + sqrt 2, R = 1/4
    assert privacy_level(rot(3 * math.pi / 4)) == pytest.approx(0.25 * (2 + math.sqrt(2)))
    # a 3x3 reflection with |row| sums v = 5/3 -> 1 - 9/25 = 16/25 per row
    h = np.array([[-1, 2, 2], [2, -1, 2], [2, 2, -1]]) / 3.0
    assert np.allclose(h @ h.T, np.eye(3))
    assert direction_privacy(h) == pytest.approx((16 / 25) ** 3)
    # E - H has diagonal 4/3 and off-diagonals -2/3: squared entries sum 3*16/9 + 6*4/9 = 8
    assert trace_privacy(h) == pytest.approx(8 / 3)
    # stacks give one value per matrix
    stack = np.stack([np.eye(2), rot(math.pi / 4)])
    assert np.allclose(privacy_level(stack), [0.0, 0.25 * (2 - math.sqrt(2))])


def test_distance_privacy_by_hand() -> None:
    x = np.array([[0.0, 0.0], [2.0, 0.0]])  # centroid (1, 0): Var = 1
    assert point_set_variance(x) == 1.0
    y = -x  # X - Y = 2X: Var = 4
    assert distance_privacy(x, y) == 4.0
    assert distance_privacy(x, x + 5.0) == 0.0  # a translation costs no privacy
    m = measure_block(np.eye(2), x, x)
    assert m == {"S": 0.0, "S_trace": 0.0, "R": 0.0, "P": 0.0, "P_trace": 0.0}


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 2 * math.pi), st.integers(3, 40), st.integers(0, 2**32 - 1))
def test_s_equals_trace_form_exactly_for_2x2_rotations(angle: float, n: int, seed: int) -> None:
    """For a 2x2 rotation (E - A)^T (E - A) = (2 - 2 cos t) E, so S = tr/2 for ANY data."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 2)) @ rng.standard_normal((2, 2)) + rng.standard_normal(2)
    if point_set_variance(x) < 1e-9:
        return
    a = rot(angle)
    s = distance_privacy(x, x @ a.T)
    assert s == pytest.approx(trace_privacy(a), rel=1e-9, abs=1e-12)
    assert s == pytest.approx(2 - 2 * math.cos(angle), rel=1e-9, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 6), st.integers(0, 2**32 - 1))
def test_s_equals_trace_form_on_whitened_data(d: int, seed: int) -> None:
    """S = tr((E-A)^T (E-A) Cov) / tr(Cov); on whitened data (Cov = E) it is the trace form."""
    rng = np.random.default_rng(seed)
    raw = rng.standard_normal((50, d))
    raw -= raw.mean(axis=0)
    cov = raw.T @ raw / raw.shape[0]
    white = raw @ np.linalg.inv(np.linalg.cholesky(cov)).T  # covariance exactly E
    a = haar_orthogonal(rng, d, 1)[0]
    assert distance_privacy(white, white @ a.T) == pytest.approx(trace_privacy(a), rel=1e-9)


def test_library_is_seeded_orthogonal_and_qualifies(tmp_path: Path) -> None:
    lib = MatrixLibrary.build(0.6, seed=3, size=20)
    again = MatrixLibrary.build(0.6, seed=3, size=20)
    assert np.array_equal(lib.pairs, again.pairs) and np.array_equal(lib.triples, again.triples)
    for n in (2, 3):
        stack = lib.matrices(n)
        assert stack.shape == (20, n, n)
        assert np.allclose(stack @ np.swapaxes(stack, 1, 2), np.eye(n), atol=1e-12)
        assert np.all(privacy_level(stack) >= 0.6)
    other = MatrixLibrary.build(0.6, seed=4, size=20)
    assert not np.array_equal(lib.pairs, other.pairs)
    path = tmp_path / "lib.json"
    lib.save(path)
    loaded = MatrixLibrary.load(path)
    assert np.array_equal(loaded.pairs, lib.pairs) and loaded.min_privacy == 0.6


def test_library_refuses_unreachable_level_and_damaged_files(tmp_path: Path) -> None:
    with pytest.raises(AnonlabError, match=r"min_privacy 0\.95 is out of reach"):
        MatrixLibrary.build(0.95, seed=0, size=1)
    with pytest.raises(AnonlabError, match="must be in"):
        MatrixLibrary.build(1.5, seed=0)
    lib = MatrixLibrary.build(0.3, seed=0, size=4)
    data = lib.to_dict()
    data["pairs"][0] = [[1.0, 1.0], [0.0, 1.0]]
    path = tmp_path / "bad.json"
    path.write_text(__import__("json").dumps(data))
    with pytest.raises(AnonlabError, match="non-orthogonal"):
        MatrixLibrary.load(path)
    path.write_text("{}")
    with pytest.raises(AnonlabError, match="not an OBT matrix library"):
        MatrixLibrary.load(path)
    data = lib.to_dict()
    data["pairs"][0] = [[1.0, 0.0], [0.0, 1.0]]  # the identity, P = 0, under a level that is
    for level in (float("nan"), -1.0):  # not a number in [0, 1): every check would pass
        data["min_privacy"] = level
        path.write_text(__import__("json").dumps(data))
        with pytest.raises(AnonlabError, match="damaged"):
            MatrixLibrary.load(path)
