"""Each attack recovers exactly where theory says it must, and fails where it must."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from sklearn.datasets import load_breast_cancer

from anonlab.errors import AnonlabError
from anonlab.perturbation import RecoverableReleaseWarning, perturb, run_attacks
from anonlab.perturbation.attacks import (
    ica,
    known_sample,
    least_squares,
    method_aware,
    method_aware_matrix,
    naive,
    procrustes,
    score,
    warn_if_recoverable,
)
from anonlab.perturbation.library import haar_orthogonal
from anonlab.perturbation.measures import distance_privacy

# Most releases attacked here are recoverable on purpose: the warning is tested below, in
# the tests named for it.
pytestmark = pytest.mark.filterwarnings(
    "ignore::anonlab.perturbation.attacks.RecoverableReleaseWarning"
)


def _frame(values: NDArray[np.float64]) -> pd.DataFrame:
    return pd.DataFrame(values, columns=[f"c{i}" for i in range(values.shape[1])])


def _skewed(n: int, d: int, seed: int) -> NDArray[np.float64]:
    rng = np.random.default_rng(seed)
    return rng.exponential(1.0, (n, d)) @ rng.standard_normal((d, d))


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 8), st.integers(0, 2**32 - 1))
def test_full_rotation_with_d_independent_known_records_is_exact(d: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((40, d))
    a = haar_orthogonal(rng, d, 1)[0]
    y = x @ a.T
    known = rng.choice(40, d, replace=False)
    assert np.linalg.matrix_rank(x[known]) == d
    y_c = y - y.mean(axis=0)  # the attacks centre the release; give them centred truth
    x_c = y_c @ a
    for attack in (least_squares, procrustes):
        est = attack(x_c[known], y[known], y)
        assert np.allclose(est, x_c, atol=1e-8)
    # one record short: least squares cannot be exact (a direction is unseen)
    est = least_squares(x_c[known[:-1]], y[known[:-1]], y)
    assert not np.allclose(est, x_c, atol=1e-6)


@pytest.mark.parametrize("d", [2, 4, 8, 30])
def test_method_aware_breaks_obt_pairs_with_two_known_records(d: int) -> None:
    x = _skewed(300, d, d)
    p = perturb(_frame(x), method="obt", seed=d)
    rows = run_attacks(p.standardized, p.released, (2,), seed=1, sample_attacks=False)
    aware = next(r for r in rows if r["attack"] == "method_aware")
    assert aware["exact"] == 1.0
    assert aware["median_relative_error"] < 1e-9
    # the generic attacks need d known records; with 2 they fail on d >= 4
    if d >= 4:
        assert next(r for r in rows if r["attack"] == "least_squares")["exact"] == 0.0


@pytest.mark.parametrize("d", [3, 5, 9])
def test_method_aware_needs_three_known_records_with_a_triple(d: int) -> None:
    x = _skewed(300, d, d)
    p = perturb(_frame(x), method="obt", seed=d + 1)
    rows = run_attacks(p.standardized, p.released, (3, 5), seed=2, sample_attacks=False)
    for m in (3, 5):
        aware = next(r for r in rows if r["attack"] == "method_aware" and r["known"] == m)
        assert aware["exact"] == 1.0


def test_method_aware_rebuilds_the_block_matrix() -> None:
    x = _skewed(100, 6, 0)
    p = perturb(_frame(x), method="obt", seed=3)
    full = p.key.full_matrix()
    assert np.allclose(method_aware_matrix(p.standardized[:2], p.released[:2]), full)


def test_method_aware_does_not_break_a_full_rotation() -> None:
    x = _skewed(400, 8, 1)
    p = perturb(_frame(x), method="rotation", seed=3)
    est = method_aware(p.standardized[:5], p.released[:5], p.released)
    assert score(est[5:], p.standardized[5:])["within_10"] < 0.2


def test_naive_error_is_what_s_measures() -> None:
    x = _skewed(500, 4, 2)
    p = perturb(_frame(x), method="obt", seed=1)
    est = naive(p.released)
    ratio = np.sum((est - p.standardized) ** 2) / np.sum(p.standardized**2)
    assert ratio == pytest.approx(distance_privacy(p.standardized, p.released))


def test_known_sample_pca_recovers_correlated_skewed_data() -> None:
    rng = np.random.default_rng(5)
    lat = rng.exponential(1.0, (40000, 3)) * np.array([3.0, 1.5, 0.5])
    x = lat @ np.linalg.qr(rng.standard_normal((3, 3)))[0]
    p = perturb(_frame(x[:20000]), method="rotation", seed=4)
    means, stds = x[:20000].mean(axis=0), x[:20000].std(axis=0)
    sample = (x[20000:] - means) / stds  # independent draw of the same distribution
    got = score(known_sample(sample, p.released), p.standardized)
    assert got["within_10"] > 0.8


def test_ica_recovers_independent_non_gaussian_columns() -> None:
    rng = np.random.default_rng(6)
    x = np.column_stack(
        [
            rng.uniform(-1, 1, 8000),
            rng.exponential(1.0, 8000),
            rng.laplace(0, 1, 8000),
            rng.uniform(0, 1, 8000) ** 3,
        ]
    )
    p = perturb(_frame(x), method="rotation", seed=9)
    sample = p.standardized[:4000]
    got = score(ica(sample, p.released, seed=0)[4000:], p.standardized[4000:])
    assert got["within_25"] > 0.8
    # on Gaussian data ICA has nothing to unmix
    g = perturb(_frame(rng.standard_normal((8000, 4))), method="rotation", seed=9)
    bad = score(ica(g.standardized[:4000], g.released)[4000:], g.standardized[4000:])
    assert bad["within_25"] < 0.5


def test_ica_scale_does_not_depend_on_the_order_of_the_records() -> None:
    # more records than ICA is fitted on, sorted by one column (as many files are):
    # the components' scale must come from the rows the model saw, not the first rows
    rng = np.random.default_rng(1)
    x = np.column_stack(
        [rng.exponential(1.0, 12000), rng.uniform(0, 1, 12000) ** 3, -rng.lognormal(0, 0.5, 12000)]
    )  # skewed: each sign is identifiable
    x = x[np.argsort(x[:, 0])]
    p = perturb(_frame(x), method="rotation", seed=3)
    sample = p.standardized[rng.choice(12000, 4000, replace=False)]
    estimate = ica(sample, p.released, seed=0)
    assert np.allclose(estimate.std(axis=0), 1.0, atol=0.1)
    assert score(estimate, p.standardized)["within_25"] > 0.8


def test_ica_with_a_column_constant_in_the_sample_does_not_fail() -> None:
    # a rare value (e.g. a pixel of sklearn's digits) can be constant in the attacker's sample
    rng = np.random.default_rng(2)
    x = np.column_stack(
        [rng.exponential(1.0, 400), rng.uniform(0, 1, 400) ** 2, np.r_[np.zeros(399), 1.0]]
    )
    p = perturb(_frame(x), method="rotation", seed=1)
    estimate = ica(p.standardized[:200], p.released, seed=0)
    assert np.isfinite(estimate).all()
    rows = run_attacks(p.standardized, p.released, (2, 5), seed=0, sample=p.standardized[:200])
    assert all(np.isfinite(r["median_relative_error"]) for r in rows)


def test_attacks_on_a_subset_centre_with_the_whole_release() -> None:
    # the attacker holds the whole release: its centroid is exact even when the
    # attacks run on a random subset of the records (the report's --attack-records)
    from anonlab.perturbation import perturbation_summary

    x = _skewed(6000, 4, 3)
    p = perturb(_frame(x), method="obt", seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoverableReleaseWarning)
        summary = perturbation_summary(
            p.key, p.standardized, p.released, known=(2,), attack_records=500
        )
    rows = {(r["attack"], r["known"]): r for r in summary["attacks"]}
    assert rows[("method_aware", 2)]["exact"] == 1.0
    g = perturb(_frame(x), method="gdp", seed=2, noise=0.0)  # translation, no noise
    sub = np.arange(0, 6000, 7)
    table = run_attacks(
        g.standardized[sub], g.released[sub], (4,), seed=1, centre=g.released.mean(axis=0)
    )
    assert {r["attack"]: r["exact"] for r in table if r["known"] == 4}["procrustes"] == 1.0


def test_noise_resists_exact_recovery_but_not_approximate() -> None:
    x = load_breast_cancer().data[:, :10]
    p = perturb(_frame(x), method="gdp", seed=2, noise=0.2)
    rows = run_attacks(p.standardized, p.released, (10, 40), seed=0, sample_attacks=False)
    for r in rows:
        assert r["exact"] == 0.0
    best = max(r["within_25"] for r in rows if r["attack"] == "procrustes")
    assert best > 0.0


def test_score_by_hand_and_table_shape() -> None:
    truth = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0], [0.0, 0.0]])
    est = truth + np.array([[0.05, 0.0], [0.0, 0.4], [0.0, 0.0], [0.0, 0.0]])
    got = score(est, truth)  # relative errors 0.05, 0.2, 0, 0 (zero record, exact)
    # columns: relative RMS errors 0.05 / sqrt(10) and 0.4 / sqrt(20), both within 10 %
    assert got == pytest.approx(
        {
            "median_relative_error": 0.025,
            "within_10": 0.75,
            "within_25": 1.0,
            "exact": 0.5,
            "columns_recovered": 2,
        }
    )
    assert score(truth + np.array([0.0, 0.5]), truth)["columns_recovered"] == 1
    x = _skewed(60, 3, 0)
    p = perturb(_frame(x), method="obt", seed=0)
    rows = run_attacks(p.standardized, p.released, (2, 5), seed=0)
    names = [(r["attack"], r["known"]) for r in rows]
    assert names[:8] == [
        ("naive", 0),
        ("ties", 0),
        ("least_squares", 2),
        ("procrustes", 2),
        ("method_aware", 2),
        ("least_squares", 5),
        ("procrustes", 5),
        ("method_aware", 5),
    ]
    assert [n for n, _ in names[8:]] == ["known_sample", "ica"]
    quick = run_attacks(p.standardized, p.released, (2,), seed=0, sample_attacks=False, ties=False)
    assert [r["attack"] for r in quick] == ["naive", "least_squares", "procrustes", "method_aware"]
    with pytest.raises(AnonlabError, match="known 60 must be between 1 and") as caught:
        run_attacks(p.standardized, p.released, (60,))
    assert caught.value.parameter == "known"


def test_recoverable_release_warning() -> None:
    x = _skewed(200, 6, 3)
    p = perturb(_frame(x), method="obt", seed=0)
    with pytest.warns(RecoverableReleaseWarning, match="method_aware attack with 2 known"):
        rows = run_attacks(p.standardized, p.released, (2,), sample_attacks=False)
    with pytest.warns(RecoverableReleaseWarning, match="method_aware attack with 2 known"):
        message = warn_if_recoverable(rows)
    assert message is not None and message.startswith("release is recoverable")
    noisy = perturb(_frame(x), method="gdp", seed=0, noise=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = run_attacks(noisy.standardized, noisy.released, (2,), sample_attacks=False)
        assert warn_if_recoverable(rows) is None


def test_perturb_warns_when_its_release_is_recoverable() -> None:
    x = _skewed(200, 6, 3)
    with pytest.warns(RecoverableReleaseWarning, match="method_aware attack with 2 known") as w:
        perturb(_frame(x), method="obt", seed=0)
    assert len(w) == 1 and w[0].filename == __file__  # it points at the caller's line
    with pytest.warns(RecoverableReleaseWarning, match="least_squares attack with 6 known"):
        perturb(_frame(x), method="rotation", seed=0, known=(6,))
    independent = np.random.default_rng(3).exponential(1.0, (200, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # far fewer than d = 6 known records, and columns that do not predict each other
        perturb(_frame(independent), method="rotation", seed=0, known=(2,))
        perturb(_frame(x), method="gdp", seed=0, noise=1.0)


def test_run_attacks_warns_at_its_caller() -> None:
    x = _skewed(100, 4, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoverableReleaseWarning)
        p = perturb(_frame(x), method="obt", seed=1)
    with pytest.warns(RecoverableReleaseWarning) as w:
        run_attacks(p.standardized, p.released, (2,), sample_attacks=False)
    assert len(w) == 1 and w[0].filename == __file__
