"""Vectorized perturbation code against plain per-record / per-candidate reference loops."""

from __future__ import annotations

import itertools
import tracemalloc

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from anonlab.perturbation import attacks, perturb
from anonlab.perturbation.attacks import method_aware, method_aware_matrix, score
from anonlab.perturbation.key import add_noise, fingerprint
from anonlab.perturbation.transforms import invert_array, standardize

# Most releases made here are recoverable on purpose (OBT pairs, a few records): the
# warning is tested where it is the subject (test_attack.py, test_runs_perturb.py).
pytestmark = pytest.mark.filterwarnings(
    "ignore::anonlab.perturbation.attacks.RecoverableReleaseWarning"
)

seeds = st.integers(0, 2**32 - 1)


def _frame(values: NDArray[np.float64]) -> pd.DataFrame:
    return pd.DataFrame(values, columns=[f"c{i}" for i in range(values.shape[1])])


def _reference_release(z: NDArray[np.float64], key) -> NDArray[np.float64]:  # type: ignore[no-untyped-def]
    """Record by record, block by block: y[S] = A z[S] (+ t)."""
    index = {c: i for i, c in enumerate(key.columns)}
    out = np.zeros_like(z)
    for r in range(z.shape[0]):
        for b in key.blocks:
            idx = [index[c] for c in b.columns]
            out[r, idx] = b.matrix @ z[r, idx]
    if key.translation is not None:
        out += key.translation
    return out


@settings(max_examples=30, deadline=None)
@given(st.integers(3, 25), st.integers(2, 7), st.sampled_from(["obt", "rbt", "rotation"]), seeds)
def test_release_and_inverse_match_reference_loops(n: int, d: int, method: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((n, d)) * rng.uniform(0.5, 20, d) + rng.uniform(-50, 50, d)
    p = perturb(_frame(values), method=method, seed=seed % 1000, min_privacy=0.3, rho=(0.1, 0.1))
    ref_z = (values - values.mean(axis=0)) / np.std(values, axis=0)
    assert np.allclose(p.standardized, ref_z, atol=1e-12)
    assert np.allclose(p.released, _reference_release(ref_z, p.key), atol=1e-12)
    back = np.array([p.key.full_matrix().T @ y for y in p.released]) * p.key.stds + p.key.means
    assert np.allclose(invert_array(p.released, p.key), back, atol=1e-9)
    means, stds = fingerprint(p.released)
    assert np.allclose(means, p.released.mean(axis=0), atol=1e-12)
    assert np.allclose(stds, p.released.std(axis=0), atol=1e-7)


def test_standardize_in_place_equals_copy() -> None:
    values = np.asfortranarray(np.random.default_rng(0).standard_normal((50, 4)) * 3 + 1)
    z, m, s = standardize(values.copy(order="F"))
    w = values.copy(order="F")
    z2, m2, s2 = standardize(w, overwrite=True)
    assert z2 is w
    assert np.array_equal(z, z2) and np.array_equal(m, m2) and np.array_equal(s, s2)


def test_chunked_noise_is_one_stream() -> None:
    shape = (150_001, 3)  # more than two chunks, a ragged last one
    whole = np.random.default_rng(42).standard_normal(shape) * 0.3
    chunked = np.zeros(shape)
    add_noise(chunked, 42, 0.3)
    assert np.array_equal(chunked, whole)
    back = chunked.copy()
    add_noise(back, 42, 0.3, sign=-1.0)
    assert np.array_equal(back, np.zeros(shape))


def _reference_method_aware(
    known_x: NDArray[np.float64], known_y: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Every released column against every pair/triple with lstsq, the same score."""
    m, d = known_x.shape
    supports: list[tuple[int, ...]] = list(itertools.combinations(range(d), 2))
    if m >= 3 and d >= 3:
        supports += list(itertools.combinations(range(d), 3))
    out = np.zeros((d, d))
    for j in range(d):
        best: tuple[tuple[int, ...], NDArray[np.float64]] | None = None
        best_score = np.inf
        for s in supports:
            a = np.linalg.pinv(known_x[:, s]) @ known_y[:, j]
            resid = np.linalg.norm(known_x[:, s] @ a - known_y[:, j]) / (
                np.linalg.norm(known_y[:, j]) + 1e-300
            )
            value = float(resid + abs(np.linalg.norm(a) - 1) + 1e-9 * len(s))
            if value < best_score:
                best, best_score = (s, a), value
        assert best is not None
        out[j, list(best[0])] = best[1]
    return out


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 7), st.integers(2, 5), seeds)
def test_method_aware_matrix_matches_reference(d: int, m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((max(m + 5, 12), d))
    p = perturb(_frame(x), method="obt", seed=seed % 1000)
    fast = method_aware_matrix(p.standardized[:m], p.released[:m])
    slow = _reference_method_aware(p.standardized[:m], p.released[:m])
    assert np.allclose(fast, slow, atol=1e-8)


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 7), st.integers(2, 5), st.integers(1, 40), seeds)
def test_method_aware_matrix_in_small_chunks_matches_reference(
    d: int, m: int, chunk: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((max(m + 5, 12), d))
    p = perturb(_frame(x), method="obt", seed=seed % 1000)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(attacks, "METHOD_AWARE_CHUNK", chunk)  # a few supports per chunk
        fast = method_aware_matrix(p.standardized[:m], p.released[:m])
    slow = _reference_method_aware(p.standardized[:m], p.released[:m])
    assert np.allclose(fast, slow, atol=1e-8)


def test_method_aware_memory_is_bounded_on_wide_tables() -> None:
    # 60 columns, 5 known records: 35,990 supports; scoring all at once took ~360 MB
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((5, 60)), rng.standard_normal((5, 60))
    tracemalloc.start()
    try:
        method_aware_matrix(x, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 150e6


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 8), seeds)
def test_method_aware_exact_on_small_random_obt(d: int, seed: int) -> None:
    """Two known records break all-pair OBT; three break OBT with a triple."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((40, d))
    p = perturb(_frame(x), method="obt", seed=seed % 1000)
    m = 2 if d % 2 == 0 else 3
    est = method_aware(p.standardized[:m], p.released[:m], p.released)
    assert score(est[m:], p.standardized[m:])["exact"] == 1.0
