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
