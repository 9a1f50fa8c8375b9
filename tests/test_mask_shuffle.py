"""Data shuffling (anonlab.masking.shuffle): sdcMicro's ds, mvn and mlm, marginals kept
exactly, rank correlations over many seeds against sdcMicro 5.8.1's, the registered method
and its independent check."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import anonlab
from anonlab.errors import AnonlabError
from anonlab.masking import shuffle
from anonlab.verify.masking import check_masking
from mask_numeric_stats import DATA, FIGURES, agrees, over_seeds, shuffle_stats, table


@pytest.fixture(scope="module")
def figures() -> dict[str, dict[str, dict[str, float]]]:
    loaded: dict[str, dict[str, dict[str, float]]] = json.loads(FIGURES.read_text())["figures"]
    return loaded


@pytest.mark.parametrize("data", ["Tarragona", "CASCrefmicrodata"])
@pytest.mark.parametrize("method", ["ds", "mvn"])
def test_correlations_match_sdcmicro_over_seeds(figures, data, method) -> None:
    """sdcMicro's shuffle (three responses on three predictors) and anonlab's: the same
    mean rank correlations of the released responses with the predictors, among
    themselves and with their originals, over many seeds. (sdcMicro's mlm stops with an
    error in R 4.2: ``predict`` is given a matrix, not a data frame.)"""
    x = table(data)

    def run(seed: int) -> np.ndarray:
        return shuffle.shuffle(x[:, :3], x[:, 3:6], np.random.default_rng(seed), method=method)

    seeds = 60
    key = f"shuffle/{'tarragona' if data == 'Tarragona' else 'casc'}/{method}"
    reference = figures[key]
    bad = agrees(
        over_seeds(run, x, shuffle_stats, seeds), reference, (seeds, int(reference["seeds"])), 2e-3
    )
    assert not bad, bad


@pytest.mark.parametrize("method", ["ds", "mvn", "mlm"])
def test_every_released_column_is_a_permutation(method) -> None:
    x = table("CASCrefmicrodata")
    y = shuffle.shuffle(x[:, :4], x[:, 4:6], np.random.default_rng(1), method=method)
    assert np.array_equal(np.sort(y, axis=0), np.sort(x[:, :4], axis=0))
    assert not np.array_equal(y, x[:, :4])


def test_ds_keeps_the_rank_correlations_with_the_predictors() -> None:
    x = table("Tarragona")
    y = shuffle.shuffle(x[:, :3], x[:, 3:6], np.random.default_rng(2))
    stats = shuffle_stats(x, y)
    assert stats["resp_pred"] == pytest.approx(stats["orig_resp_pred"], abs=0.05)
    assert stats["resp_resp"] == pytest.approx(stats["orig_resp_resp"], abs=0.05)


def test_mlm_is_deterministic_and_follows_the_fit() -> None:
    x = table("Tarragona")
    a = shuffle.shuffle(x[:, :2], x[:, 2:4], np.random.default_rng(1), method="mlm")
    b = shuffle.shuffle(x[:, :2], x[:, 2:4], np.random.default_rng(2), method="mlm")
    assert np.array_equal(a, b)
    design = np.column_stack([np.ones(len(x)), x[:, 2:4]])
    fitted = design @ np.linalg.lstsq(design, x[:, :2], rcond=None)[0]
    order = np.argsort(fitted[:, 0], kind="stable")
    assert np.array_equal(a[order, 0], np.sort(x[:, 0]))


def test_reverse_map_gives_the_kth_smallest_to_the_kth_smallest_draw() -> None:
    x = np.array([[10.0], [30.0], [20.0], [40.0]])
    ystar = np.array([[0.3], [-1.0], [0.3], [5.0]])  # a tie: record order
    assert shuffle.reverse_map(x, ystar)[:, 0].tolist() == [20.0, 10.0, 30.0, 40.0]


def test_bad_input_is_one_line_errors() -> None:
    x = table("Tarragona")
    rng = np.random.default_rng(1)
    with pytest.raises(AnonlabError, match="shuffle_method must be one of"):
        shuffle.shuffle(x[:, :2], x[:, 2:3], rng, method="gadp")
    bad = x[:, :2].copy()
    bad[0, 0] = np.nan
    with pytest.raises(AnonlabError, match="no missing"):
        shuffle.shuffle(bad, x[:, 2:3], rng)
    with pytest.raises(AnonlabError, match="same records"):
        shuffle.shuffle(x[:10, :2], x[:, 2:3], rng)


COLUMNS = ["FIXED.ASSETS", "CURRENT.ASSETS"]


def _report(result: anonlab.MaskResult, seed: int | None) -> dict:
    return {
        "method": result.method,
        "seed": seed,
        "parameters": {"parameters": result.parameters},
        "masking": result.section,
    }


@pytest.mark.parametrize("method", ["ds", "mvn", "mlm"])
def test_registered_method_passes_the_independent_check(method) -> None:
    frame = pd.read_csv(DATA / "Tarragona.csv")
    result = anonlab.mask(
        frame, "shuffle", COLUMNS, seed=3, shuffle_method=method, predictors="TREASURY,SALES"
    )
    assert check_masking(frame, result.release, COLUMNS, _report(result, 3)) == []
    release = result.release.copy()
    release.loc[0, "FIXED.ASSETS"] += 1.0
    assert "not a permutation" in check_masking(frame, release, COLUMNS, _report(result, 3))[0]


def test_check_finds_an_mlm_release_out_of_the_fits_order() -> None:
    frame = pd.read_csv(DATA / "Tarragona.csv")
    result = anonlab.mask(frame, "shuffle", COLUMNS, shuffle_method="mlm", predictors="SALES")
    release = result.release.copy()
    column = release["CURRENT.ASSETS"].to_numpy().copy()
    column[[0, 1]] = column[[1, 0]]
    release["CURRENT.ASSETS"] = column
    problems = check_masking(frame, release, COLUMNS, _report(result, None))
    assert problems and "regression" in problems[0]
    with pytest.raises(AnonlabError, match="predictors"):
        anonlab.mask(frame, "shuffle", COLUMNS, seed=1, predictors="FIXED.ASSETS")


def test_from_the_command_line_with_sdcmicros_flags(tmp_path) -> None:
    """``anonlab mask --method shuffle --shuffle-method ds --predictors ...``."""
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    out, report = tmp_path / "s.csv", tmp_path / "s.json"
    args = ["mask", str(DATA / "Tarragona.csv"), "--method", "shuffle"]
    args += ["--shuffle-method", "ds", "--predictors", "SALES,LABOR.COSTS"]
    args += ["--columns", "FIXED.ASSETS,CURRENT.ASSETS", "--seed", "8", "--other", "insensitive"]
    args += ["--max-risk", "1", "--output", str(out), "--report", str(report)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    section = json.loads(report.read_text())["masking"]
    assert section["predictors"] == ["SALES", "LABOR.COSTS"]
    released = pd.read_csv(out)
    original = pd.read_csv(DATA / "Tarragona.csv")
    for name in COLUMNS:
        assert np.array_equal(np.sort(released[name]), np.sort(original[name]))
    assert released["SALES"].equals(original["SALES"])


def _rank_cov(data: np.ndarray) -> np.ndarray:
    """Covariance (divisor n - 1) of the columns' average ranks (R's ``cov(method =
    "spearman")``), on ``n x r`` tables."""
    return np.atleast_2d(np.cov(shuffle._ranks(data), rowvar=False, ddof=1))


def _egadp(x: np.ndarray, s: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """sdcMicro's ``egadp`` perturbation of ``x`` given ``s``, step by step on ``n x r``
    tables (shuffle's module docstring): ``Y* = F + R_V C_V^-1 C_R^-1``."""
    fitted, residuals = shuffle._regression(x, s)
    c_r = _rank_cov(residuals)
    v = shuffle._mvnormal(rng, x.shape[0], x.mean(axis=0), _rank_cov(x))
    v_residuals = shuffle._regression(v, np.hstack([s, x]))[1]
    c_v = _rank_cov(v_residuals)
    scaled = np.linalg.solve(c_v.T, v_residuals.T).T  # R_V C_V^-1
    scaled = np.linalg.solve(c_r.T, scaled.T).T  # ... C_R^-1
    return fitted + scaled


def mvn_draw(x: np.ndarray, s: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``Y*`` of method ``mvn``, step by step on ``n x r`` tables: the reference that
    :func:`shuffle._mvn_rows` follows with one row a column."""
    r = x.shape[1]
    joint = np.hstack([x, s])
    sample = shuffle._mvnormal(rng, x.shape[0], joint.mean(axis=0), _rank_cov(joint))
    return _egadp(sample[:, :r], sample[:, r:], rng)


def _rows(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.hstack([x, s]).T)


@pytest.mark.parametrize("data", ["Tarragona", "CASCrefmicrodata"])
def test_mvn_row_steps_give_the_reference_draw_and_release(data: str) -> None:
    """``shuffle(method="mvn")`` runs ``mvn``'s steps with one row a column (the second
    fit on ``[S', R]`` instead of ``[S', X']``, the normal equations, the responses'
    sorted values from the table's ranking): the same ``Y*`` as the step-by-step
    reference :func:`mvn_draw` for the same seed, to rounding, and the same
    release. CASC's columns hold ties."""
    x = table(data)
    for seed in range(5):
        reference = mvn_draw(x[:, :3], x[:, 3:6], np.random.default_rng(seed))
        rows = _rows(x[:, :3], x[:, 3:6])
        ystar, ordered = shuffle._mvn_rows(rows, 3, np.random.default_rng(seed))
        scale = np.abs(reference).max(axis=0)
        assert np.all(np.abs(ystar.T - reference) <= 1e-9 * scale)
        assert np.array_equal(ordered, np.sort(x[:, :3].T, axis=1))
        released = shuffle.shuffle(x[:, :3], x[:, 3:6], np.random.default_rng(seed), method="mvn")
        assert np.array_equal(released, shuffle.reverse_map(x[:, :3], reference))


def test_centred_ranks_are_the_average_ranks_less_their_mean() -> None:
    x = table("CASCrefmicrodata")  # ties
    rows = np.ascontiguousarray(np.round(x[:, :4] / 1000.0).T)
    centred, ordered = shuffle._centred_ranks(rows, 2)
    n = rows.shape[1]
    assert np.array_equal(centred, shuffle._ranks(rows.T).T - (n + 1) / 2.0)
    assert np.array_equal(ordered, np.sort(rows[:2], axis=1))
    assert np.array_equal(shuffle._centred_cov(centred), _rank_cov(rows.T))


def test_row_fit_is_the_least_squares_fit_and_falls_back_on_collinear_predictors() -> None:
    rng = np.random.default_rng(4)
    s = rng.standard_normal((500, 3)) * [1.0, 1e3, 1e-3] + [5.0, -2e4, 0.0]
    y = s @ rng.standard_normal((3, 2)) + rng.standard_normal((500, 2)) + 1e6
    collinear = np.column_stack([s, s[:, 0] * 2.0 - s[:, 1]])
    constant = np.column_stack([s, np.full(500, 7.0)])
    for predictors in (s, collinear, constant):
        fitted, residuals = shuffle._fit_rows(
            np.ascontiguousarray(y.T), np.ascontiguousarray(predictors.T)
        )
        want_fitted, want_residuals = shuffle._regression(y, predictors)
        assert np.allclose(fitted.T, want_fitted, rtol=1e-12, atol=0.0)
        assert np.allclose(residuals.T, want_residuals, rtol=0.0, atol=1e-6)


def test_spread_order_is_the_stable_order() -> None:
    """The bucketed order equals ``argsort(kind="stable")``: normal draws, rounded ones
    (ties, in record order), a constant row, a skewed row, numbers near 1e300 (whose
    range overflows), a few records, a far outlier and a few values repeated."""
    rng = np.random.default_rng(8)
    rows = [
        rng.standard_normal(100_000) * 3e4 + 1e6,
        np.round(rng.standard_normal(20_000), 2),
        np.full(50, 3.0),
        rng.lognormal(0.0, 3.0, 10_000),
        np.concatenate([rng.standard_normal(100) * 1e300, [1.7e308, -1.7e308]]),
        np.array([2.0, 1.0]),
        np.array([5.0]),
        np.append(rng.random(50_000), 1e9),  # one bucket holds all but one: sorted directly
        rng.integers(0, 5, 50_000).astype(float),  # crowded buckets of equal values
    ]
    for values in rows:
        assert np.array_equal(shuffle._spread_order(values), np.argsort(values, kind="stable"))
