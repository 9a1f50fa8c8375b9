"""OBT, RBT, rotation and GDP: distances kept, clusters kept, invertible, structure as specified."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy.spatial.distance import pdist
from sklearn.datasets import load_wine

from anonlab.errors import AnonlabError
from anonlab.perturbation import (
    MatrixLibrary,
    PerturbationKey,
    clustering_agreement,
    invert,
    perturb,
    privacy_measures,
)
from anonlab.perturbation.library import haar_orthogonal
from anonlab.perturbation.measures import privacy_level
from anonlab.perturbation.transforms import random_groups, security_angles

# Most releases made here are recoverable on purpose (OBT pairs, a few records): the
# warning is tested where it is the subject (test_attack.py, test_runs_perturb.py).
pytestmark = pytest.mark.filterwarnings(
    "ignore::anonlab.perturbation.attacks.RecoverableReleaseWarning"
)

ORTHOGONAL = ("obt", "rbt", "rotation")


def _frame(values: NDArray[np.float64]) -> pd.DataFrame:
    return pd.DataFrame(values, columns=[f"c{i}" for i in range(values.shape[1])])


tables = st.tuples(st.integers(4, 30), st.integers(2, 7), st.integers(0, 2**32 - 1)).map(
    lambda t: (
        np.random.default_rng(t[2]).standard_normal((t[0], t[1]))
        * np.random.default_rng(t[2] + 1).uniform(0.1, 100, t[1])
        + np.random.default_rng(t[2] + 2).uniform(-1e3, 1e3, t[1])
    )
)


@settings(max_examples=30, deadline=None)
@given(tables, st.sampled_from(ORTHOGONAL), st.integers(0, 1000))
def test_distances_of_standardized_data_kept(
    values: NDArray[np.float64], method: str, seed: int
) -> None:
    frame = _frame(values)
    p = perturb(frame, method=method, seed=seed, min_privacy=0.3, rho=(0.2, 0.2))
    z = (values - values.mean(axis=0)) / values.std(axis=0)
    assert np.allclose(p.standardized, z)
    assert np.max(np.abs(pdist(p.standardized) - pdist(p.released))) < 1e-9
    assert np.allclose(p.key.full_matrix() @ p.key.full_matrix().T, np.eye(values.shape[1]))


@settings(max_examples=30, deadline=None)
@given(tables, st.sampled_from((*ORTHOGONAL, "gdp")), st.integers(0, 1000))
def test_invert_restores_the_original(values: NDArray[np.float64], method: str, seed: int) -> None:
    frame = _frame(values)
    frame["label"] = [f"0{i}" for i in range(len(frame))]  # text passes through untouched
    p = perturb(
        frame,
        [c for c in frame.columns if c != "label"],
        method,
        seed=seed,
        min_privacy=0.3,
        rho=(0.2, 0.2),
        noise=0.3,
    )
    assert list(p.release.columns) == list(frame.columns)
    assert p.release["label"].tolist() == frame["label"].tolist()
    key = PerturbationKey.from_dict(p.key.to_dict())  # through its JSON form
    back = invert(p.release, key)
    assert np.allclose(back[list(key.columns)].to_numpy(), values, rtol=1e-12, atol=1e-9)
    assert back["label"].tolist() == frame["label"].tolist()


def test_integer_columns_restored_exactly(data_dir) -> None:  # type: ignore[no-untyped-def]
    frame = pd.read_csv(data_dir / "sdc" / "Tarragona.csv")
    for method in ("obt", "rbt", "rotation", "gdp"):
        p = perturb(frame, method=method, seed=5)
        assert invert(p.release, p.key).equals(frame)


def test_obt_pairs_and_triple_with_library_matrices() -> None:
    lib = MatrixLibrary.build(0.5, seed=11, size=16)
    for d in (2, 3, 6, 7, 13):
        groups = random_groups(d, np.random.default_rng(d))
        assert sorted(i for g in groups for i in g) == list(range(d))
        sizes = sorted(len(g) for g in groups)
        assert sizes == [2] * (d // 2) if d % 2 == 0 else sizes == [2] * (d // 2 - 1) + [3]
        values = np.random.default_rng(d).standard_normal((40, d))
        p = perturb(_frame(values), method="obt", seed=d, library=lib)
        for b in p.key.blocks:
            stack = lib.matrices(len(b.columns))
            assert any(np.array_equal(b.matrix, m) for m in stack)
            assert privacy_level(b.matrix) >= 0.5
    with pytest.raises(AnonlabError, match=r"min_privacy 0\.7 is above the privacy level 0\.5"):
        perturb(
            _frame(np.random.default_rng(0).standard_normal((9, 4))),
            method="obt",
            min_privacy=0.7,
            library=lib,
        )


def test_rbt_angles_in_security_range() -> None:
    rng = np.random.default_rng(4)
    values = rng.standard_normal((300, 5)) @ rng.standard_normal((5, 5))
    rho = (0.8, 1.1)
    p = perturb(_frame(values), method="rbt", seed=2, rho=rho)
    index = {c: i for i, c in enumerate(p.key.columns)}
    three = [b for b in p.key.blocks if len(b.columns) == 3]
    assert len(three) == 1 and len(p.key.blocks) == 2
    last = index[three[0].columns[2]]  # the odd column, rotated with a rotated partner
    assert np.var(p.standardized[:, last] - p.released[:, last]) >= rho[0] - 1e-9
    pair = next(b for b in p.key.blocks if len(b.columns) == 2)
    i, j = (index[c] for c in pair.columns)
    za, zb = p.standardized[:, i], p.standardized[:, j]
    assert np.var(za - p.released[:, i]) >= rho[0] - 1e-9
    assert np.var(zb - p.released[:, j]) >= rho[1] - 1e-9
    m = pair.matrix  # a rotation [[c, s], [-s, c]]
    assert m[0, 0] == pytest.approx(m[1, 1]) and m[0, 1] == pytest.approx(-m[1, 0])
    # closed form of the security range against the grid
    cov = np.array([[1.0, 0.3], [0.3, 1.0]])
    angles = security_angles(cov, (0.5, 0.5))
    for t in angles[:: max(1, len(angles) // 50)]:
        c, s = math.cos(t), math.sin(t)
        assert (1 - c) ** 2 + s * s - 2 * (1 - c) * s * 0.3 >= 0.5 - 1e-12
    with pytest.raises(AnonlabError, match=r"rho \(5, 5\) is out of reach .*; lower rho"):
        perturb(_frame(values), method="rbt", rho=(5.0, 5.0))


def _rbt_from_data(
    z: NDArray[np.float64], seed: int, rho: tuple[float, float]
) -> list[NDArray[np.float64]]:
    """rbt's matrices as the method describes them, each pair's angle from the covariance
    of that pair's *data* (the odd column: with its rotated partner's values)."""
    from anonlab.perturbation.transforms import rotation_2d

    def angle(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
        grid = security_angles(np.cov(np.column_stack([a, b]), rowvar=False, bias=True), rho)
        return float(grid[int(rng.integers(grid.size))])

    rng = np.random.default_rng(seed)
    order = [int(i) for i in rng.permutation(z.shape[1])]
    pairs = [(order[i], order[i + 1]) for i in range(0, len(order) - 1, 2)]
    mats = [rotation_2d(angle(z[:, a], z[:, b])) for a, b in pairs]
    if len(order) % 2:
        k, partner = int(rng.integers(len(mats))), int(rng.integers(2))
        rotated = z[:, list(pairs[k])] @ mats[k][partner]
        second = np.eye(3)
        second[np.ix_([2, partner], [2, partner])] = rotation_2d(angle(z[:, order[-1]], rotated))
        three = np.eye(3)
        three[:2, :2] = mats[k]
        mats[k] = second @ three
    return mats


@pytest.mark.parametrize("d", [2, 5, 6, 7])
def test_rbt_blocks_need_only_the_covariance(d: int) -> None:
    """rbt from the z-scores' covariance matrix draws the matrices that the pairs' own data
    (and the odd column's rotated partner) give: ``T S T^T`` is that pair's covariance."""
    from anonlab.perturbation.transforms import rbt_blocks, standardize, z_covariance

    rng = np.random.default_rng(d)
    z = standardize(rng.standard_normal((400, d)) @ rng.standard_normal((d, d)))[0]
    names = [f"c{i}" for i in range(d)]
    for seed in range(10):
        blocks = rbt_blocks(names, z_covariance(z), np.random.default_rng(seed), (0.6, 0.9))
        want = _rbt_from_data(z, seed, (0.6, 0.9))
        assert len(blocks) == len(want)
        for block, matrix in zip(blocks, want, strict=True):
            np.testing.assert_allclose(block.matrix, matrix, rtol=0, atol=1e-15)


def test_blocked_noise_of_a_run_of_rows_is_that_of_the_whole_table() -> None:
    """Rows ``[a, b)`` given their first row draw the whole table's noise for those rows,
    wherever the run starts and ends (inside a block, across block boundaries); each block
    of rows has its own stream ``default_rng([seed, j])``."""
    from anonlab.perturbation.key import NOISE_BLOCK, add_noise

    n, d = 2 * NOISE_BLOCK + 500, 2
    whole = np.zeros((n, d))
    add_noise(whole, 9, 0.5, sign=0.0, blocked=True)
    cuts = [0, 17, NOISE_BLOCK - 1, NOISE_BLOCK + 3, 2 * NOISE_BLOCK + 1, n]
    for a, b in pairwise(cuts):
        run = np.ones((b - a, d))
        add_noise(run, 9, 0.5, blocked=True, first_row=a)
        np.testing.assert_array_equal(run, 1.0 + whole[a:b])
    second = np.random.default_rng([9, 1]).standard_normal((NOISE_BLOCK, d)) * 0.5
    np.testing.assert_array_equal(whole[NOISE_BLOCK : 2 * NOISE_BLOCK], second)
    back = whole.copy()
    add_noise(back, 9, 0.5, sign=-1.0, blocked=True)
    assert not back.any()
    with pytest.raises(ValueError, match="single noise stream"):
        add_noise(np.zeros((3, d)), 9, 0.5, first_row=4)


def test_checker_undoes_a_gdp_release_of_several_noise_blocks() -> None:
    """The independent checker regenerates the blocked noise past the first block (where it
    differs from the old single stream) and refuses the release under the other stream."""
    from anonlab.perturbation.key import NOISE_BLOCK
    from anonlab.verify.perturbation import check_perturbation

    values = np.random.default_rng(6).standard_normal((NOISE_BLOCK + 700, 3))
    p = perturb(_frame(values), method="gdp", seed=4, noise=0.2, known=(2,))
    columns = list(p.key.columns)
    key = p.key.to_dict()
    assert check_perturbation(_frame(values), p.release, columns, method="gdp", key=key) == []
    del key["noise"]["stream"]
    key.pop("sha256")
    problems = check_perturbation(_frame(values), p.release, columns, method="gdp", key=key)
    assert any(f"of record {NOISE_BLOCK + 1}," in s for s in problems), problems


def test_gdp_adds_translation_and_noise_of_the_given_scale() -> None:
    values = np.random.default_rng(1).standard_normal((20000, 4))
    p = perturb(_frame(values), method="gdp", seed=3, noise=0.2)
    assert p.key.translation is not None and p.key.noise_scale == 0.2
    rotated = p.standardized @ p.key.full_matrix().T + p.key.translation
    resid = p.released - rotated
    assert resid.std() == pytest.approx(0.2, rel=0.02)
    assert abs(resid.mean()) < 0.01
    exact = perturb(_frame(values), method="gdp", seed=3, noise=0.0)
    assert np.allclose(exact.released, rotated)


def test_clusterings_identical_before_and_after_on_wine() -> None:
    frame = pd.DataFrame(load_wine().data, columns=load_wine().feature_names)
    for method in ORTHOGONAL:
        p = perturb(frame, method=method, seed=7)
        agreement = clustering_agreement(p.standardized, p.released, seed=0, n_clusters=3)
        assert agreement["kmeans"] == 1.0
        assert agreement["dbscan"] == 1.0
        assert agreement["ward"] == 1.0
    noisy = perturb(frame, method="gdp", seed=7, noise=1.0)
    assert clustering_agreement(noisy.standardized, noisy.released)["ward"] < 1.0


def test_privacy_measures_per_block_and_overall() -> None:
    values = np.random.default_rng(2).standard_normal((500, 6))
    p = perturb(_frame(values), method="obt", seed=1, min_privacy=0.5)
    blocks, overall = privacy_measures(p.key, p.standardized, p.released)
    assert len(blocks) == 3
    for b in blocks:
        assert b["P"] == pytest.approx(b["R"] * b["S"])
        assert b["P_trace"] >= 0.5  # the library's level, data-independent
        assert b["S"] == pytest.approx(b["S_trace"], rel=1e-9)  # 2x2 rotations: exact
    assert overall["R"] == pytest.approx(np.prod([b["R"] for b in blocks]))
    assert overall["min_block_P"] == min(b["P"] for b in blocks)


def test_bad_input_is_refused() -> None:
    good = np.random.default_rng(0).standard_normal((10, 3))
    frame = _frame(good)
    with pytest.raises(AnonlabError, match="at least 2 numeric columns"):
        perturb(frame, ["c0"])
    with pytest.raises(AnonlabError, match="unknown column 'zz'"):
        perturb(frame, ["c0", "zz"])
    const = frame.copy()
    const["c1"] = 4.0
    with pytest.raises(AnonlabError, match="'c1' is constant"):
        perturb(const)
    nan = frame.copy()
    nan.loc[3, "c2"] = np.nan
    with pytest.raises(AnonlabError, match=r"'c2' has a missing .* \(record 4\)"):
        perturb(nan)
    text = frame.copy()
    text["c0"] = "x"
    with pytest.raises(AnonlabError, match="'c0' is not numeric"):
        perturb(text)
    with pytest.raises(AnonlabError, match="method 'swap' is unknown"):
        perturb(frame, method="swap")


def test_key_refuses_other_release_and_damage() -> None:
    values = np.random.default_rng(0).standard_normal((30, 4))
    p = perturb(_frame(values), method="rotation", seed=1)
    other = perturb(_frame(values + 1), method="rotation", seed=2)
    with pytest.raises(AnonlabError, match="does not match"):
        invert(other.release, p.key)
    with pytest.raises(AnonlabError, match="key is for 30 records"):
        invert(p.release.iloc[:20], p.key)
    with pytest.raises(AnonlabError, match="no column 'c3'"):
        invert(p.release.drop(columns=["c3"]), p.key)
    data = p.key.to_dict()
    data["blocks"][0]["matrix"][0][0] += 0.5
    with pytest.raises(AnonlabError, match="not orthogonal"):
        PerturbationKey.from_dict(data)
    data = p.key.to_dict()
    del data["means"]
    with pytest.raises(AnonlabError, match="damaged"):
        PerturbationKey.from_dict(data)
    data = p.key.to_dict()
    data["noise"] = [0.1]  # hand-edited: not the {scale, seed} table
    with pytest.raises(AnonlabError, match="damaged"):
        PerturbationKey.from_dict(data)
    g = perturb(_frame(values), method="gdp", seed=1, noise=0.2).key.to_dict()
    for bad in (float("nan"), -0.2):
        g["noise"]["scale"] = bad  # would silently skip removing the noise
        with pytest.raises(AnonlabError, match="noise scale"):
            PerturbationKey.from_dict(g)


def test_haar_matrices_are_orthogonal_with_both_determinants() -> None:
    mats = haar_orthogonal(np.random.default_rng(0), 3, 200)
    assert np.allclose(mats @ np.swapaxes(mats, 1, 2), np.eye(3))
    dets = np.linalg.det(mats)
    assert np.allclose(np.abs(dets), 1) and (dets > 0).any() and (dets < 0).any()
    # consecutive draws differ
    assert all(not np.allclose(a, b) for a, b in pairwise(mats[:10]))


@settings(max_examples=15, deadline=None)
@given(
    st.integers(20, 80), st.integers(2, 6), st.sampled_from(ORTHOGONAL), st.integers(0, 2**32 - 1)
)
def test_clusterings_identical_on_small_random_blobs(
    n: int, d: int, method: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, (3, d))
    values = centres[rng.integers(0, 3, n)] + rng.normal(0, 1, (n, d))
    p = perturb(_frame(values), method=method, seed=seed % 1000, min_privacy=0.3, rho=(0.2, 0.2))
    agreement = clustering_agreement(p.standardized, p.released, seed=1, n_clusters=3)
    assert (agreement["kmeans"], agreement["dbscan"], agreement["ward"]) == (1.0, 1.0, 1.0)


def test_dataframe_with_non_string_labels_is_perturbed_in_place_and_inverted() -> None:
    values = np.random.default_rng(4).normal(size=(40, 3)) * [1.0, 10.0, 100.0]
    frame = pd.DataFrame(values)  # labels 0, 1, 2 (integers, as NumPy arrays give)
    frame["name"] = [f"r{i}" for i in range(40)]
    for method in ("obt", "rbt", "rotation", "gdp"):
        p = perturb(frame, [0, 1, 2], method, seed=1)  # type: ignore[list-item]
        assert list(p.release.columns) == list(frame.columns)
        assert np.allclose(p.release[[0, 1, 2]].to_numpy(), p.released)
        back = invert(p.release, p.key)
        assert list(back.columns) == list(frame.columns)
        assert np.allclose(back[[0, 1, 2]].to_numpy(), values, rtol=1e-12, atol=1e-9)
    plain = frame[[0, 1, 2]]
    assert list(perturb(plain, seed=2).release.columns) == list(plain.columns)  # not '0'..
