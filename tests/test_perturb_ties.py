"""The release-only tie attack (anonlab.perturbation.ties) and what the runs do with it."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray
from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.perturbation import RecoverableReleaseWarning, perturb
from anonlab.perturbation.attacks import run_attacks, tie_attack
from anonlab.perturbation.ties import angle_peaks, find_ties, pseudo_angle
from anonlab.perturbation.transforms import perturb_array, rotation_2d
from anonlab.table import NumericColumns

ROOT = Path(__file__).resolve().parents[1]
TARRAGONA = ROOT / "data" / "sdc" / "Tarragona.csv"


def _columns(x: NDArray[np.float64]) -> NumericColumns:
    names = [f"c{j}" for j in range(x.shape[1])]
    return NumericColumns(names, np.asfortranarray(x.copy()), [False] * x.shape[1])


def _recovered(
    directions: NDArray[np.float64], y: NDArray[np.float64], z: NDArray[np.float64]
) -> list[float]:
    """Per original column, the best |correlation| of a found direction's projection."""
    if directions.shape[0] == 0:
        return [0.0] * z.shape[1]
    est = (y - y.mean(axis=0)) @ directions.T
    corr = np.corrcoef(np.hstack([est, z]), rowvar=False)[: est.shape[1], est.shape[1] :]
    return [float(v) for v in np.max(np.abs(corr), axis=0)]


def test_pseudo_angle_orders_directions_and_is_equal_for_parallel_ones() -> None:
    angles = np.linspace(-np.pi / 2 + 1e-3, np.pi / 2, 200)
    keys = pseudo_angle(np.cos(angles), np.sin(angles))
    assert np.all(np.diff(keys) > 0)
    # a direction and its opposite, at any length, have one key
    assert pseudo_angle(np.array([3.0, -6.0]), np.array([4.0, -8.0])).tolist() == [4 / 7] * 2
    piles = angle_peaks(np.array([0.1, 0.1, 0.1, 0.3, 0.5, 0.5]), 1e-9)
    assert piles == [(0.1, 3)]


def test_a_rotated_pair_with_ties_is_undone_from_the_release_alone() -> None:
    rng = np.random.default_rng(5)
    x = np.column_stack([rng.integers(0, 6, 300), rng.normal(size=300)]).astype(float)
    y = x @ rotation_2d(2.4).T  # a 2 x 2 rotation of two columns, one with ties
    found = find_ties(y)
    assert found.couples == 1
    assert min(_recovered(found.directions, y, x)) > 1 - 1e-9  # both columns, exactly


def test_no_direction_is_found_where_no_value_is_tied() -> None:
    x = np.random.default_rng(1).normal(size=(700, 6))
    for method in ("obt", "rbt", "rotation"):
        _, y, _ = perturb_array(_columns(x), method, seed=3)
        assert find_ties(y).directions.shape[0] == 0, method


@pytest.mark.parametrize("method", ["obt", "rotation"])
def test_values_on_a_lattice_give_every_column_away(method: str) -> None:
    x = np.random.default_rng(2).integers(0, 3, (900, 5)).astype(float)
    z, y, _ = perturb_array(_columns(x), method, seed=7)
    assert min(_recovered(find_ties(y).directions, y, z)) > 1 - 1e-9
    with pytest.warns(RecoverableReleaseWarning, match="ties attack from the release alone"):
        row = run_attacks(z, y, (2,), sample_attacks=False)[1]
    assert row["attack"] == "ties" and row["columns_recovered"] == 5 and row["exact"] == 1.0


def test_a_triple_block_is_found_by_its_hyperplanes() -> None:
    rng = np.random.default_rng(4)
    x = np.column_stack(
        [rng.integers(0, 2, 600), rng.integers(0, 4, 600), rng.normal(size=600)]
    ).astype(float)
    z, y, key = perturb_array(_columns(x), "obt", seed=2)
    assert [len(b.columns) for b in key.blocks] == [3]
    found = find_ties(y)
    assert found.hyperplanes == 3  # (a couple of the triple may show a pile too)
    assert min(_recovered(found.directions, y, z)) > 1 - 1e-9


def test_the_attack_scores_what_the_search_found_without_the_key() -> None:
    x = np.random.default_rng(2).integers(0, 3, (400, 4)).astype(float)
    z, y, _ = perturb_array(_columns(x), "rbt", seed=1)
    est = tie_attack(z, y)
    assert np.allclose(est, z, atol=1e-9)  # matched with its sign: the columns themselves


def test_noise_leaves_no_exact_tie_and_the_tie_attack_is_not_run() -> None:
    x = np.random.default_rng(2).integers(0, 3, (400, 4)).astype(float)
    frame = pd.DataFrame(x, columns=list("abcd"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = perturb(frame, method="gdp", seed=0, noise=1.0)
    assert find_ties(p.released).directions.shape[0] == 0


def _cli(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


def test_tarragona_obt_is_warned_about_and_refused_under_fail_on_risk(tmp_path: Path) -> None:
    base = [
        "perturb",
        str(TARRAGONA),
        "--columns",
        "all-numeric",
        "--method",
        "obt",
        "--seed",
        "7",
        "--key",
        str(tmp_path / "key.json"),
        "--known",
        "2",
    ]
    code, text = _cli(
        [
            *base,
            "--output",
            str(tmp_path / "rel.csv"),
            "--report",
            str(tmp_path / "rep.json"),
            "--quiet",
        ]
    )
    assert code == 0, text
    assert (
        "Warning: release is recoverable: the ties attack from the release alone "
        "recovers 10 column(s) of every record within 10%"
    ) in text
    report = json.loads((tmp_path / "rep.json").read_text())
    ties = [r for r in report["attacks"] if r["attack"] == "ties"]
    assert ties[0]["columns_recovered"] == 10 and report["warnings"]
    refused = tmp_path / "refused"
    refused.mkdir()
    code, text = _cli(
        [
            "perturb",
            str(TARRAGONA),
            "--columns",
            "all-numeric",
            "--method",
            "obt",
            "--seed",
            "7",
            "--known",
            "2",
            "--fail-on-risk",
            "--quiet",
            "--output",
            str(refused / "rel.csv"),
            "--key",
            str(refused / "key.json"),
        ]
    )
    assert code == 3, text
    assert "ties attack" in text and list(refused.iterdir()) == []


def test_the_python_run_warns_at_the_callers_line() -> None:
    frame = pd.read_csv(TARRAGONA)
    with pytest.warns(RecoverableReleaseWarning, match="ties attack from the release") as w:
        perturb(frame, list(frame.columns), "rbt", seed=7, known=(2,))
    assert w[0].filename == __file__
