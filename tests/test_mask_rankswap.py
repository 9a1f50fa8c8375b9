"""Rank swapping (anonlab.masking.rankswap): Moore's window, sdcMicro's top/bottom coding
or anonlab's permutation of the extremes, rank distances over many seeds against sdcMicro
5.8.1's, the registered method and its independent check."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

import anonlab
from anonlab.errors import AnonlabError
from anonlab.masking import rankswap
from anonlab.verify.masking import check_masking
from mask_numeric_stats import DATA, FIGURES, agrees, over_seeds, rankswap_stats, table


@pytest.fixture(scope="module")
def figures() -> dict[str, dict[str, dict[str, float]]]:
    loaded: dict[str, dict[str, dict[str, float]]] = json.loads(FIGURES.read_text())["figures"]
    return loaded


@pytest.mark.parametrize("data", ["Tarragona", "CASCrefmicrodata"])
@pytest.mark.parametrize(
    ("tag", "kwargs"),
    [("r0=0.95", {"r0": 0.95}), ("P=0.05", {"p": 5.0}), ("k0=0.1", {"k0": 0.1})],
)
def test_rank_distances_match_sdcmicro_over_seeds(figures, data, tag, kwargs) -> None:
    """sdcMicro's rankSwap (TopPercent = BottomPercent = 5; its P = 0.05 is anonlab's
    p = 5) and anonlab's with extremes="mean": the same mean rank distance, share of
    original values, rank correlation and change of a correlation over many seeds."""
    x = table(data)

    def run(seed: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        return rankswap.rank_swap(x, rng, extremes="mean", **kwargs).released

    key = f"rankswap/{'tarragona' if data == 'Tarragona' else 'casc'}/{tag}"
    reference = figures[key]
    seeds = (60, int(reference["seeds"]))
    bad = agrees(over_seeds(run, x, rankswap_stats, 60), reference, seeds, 2e-3)
    assert not bad, bad


def test_every_middle_value_moves_within_the_window() -> None:
    rng = np.random.default_rng(1)
    x = rng.permutation(1000).astype(float)  # distinct values: rank = value
    result = rankswap.rank_swap(x, np.random.default_rng(2), p=4.0, extremes="mean")
    fact = result.columns[0]
    assert (fact.top, fact.bottom) == (50, 50)
    assert fact.max_distance == int(900 * 0.04) - 1
    y = result.released[:, 0]
    middle = (x >= 50) & (x < 950)
    moved = np.abs(y[middle] - x[middle])
    assert moved.max() <= fact.max_distance
    assert fact.swapped == int(np.count_nonzero(moved))
    assert fact.swapped > 800  # almost every value finds a partner
    assert np.array_equal(np.sort(y[middle]), np.sort(x[middle]))
    assert np.all(y[x >= 950] == np.mean(x[x >= 950]))
    assert np.all(y[x < 50] == np.mean(x[x < 50]))


def test_permute_mode_releases_original_values_only() -> None:
    x = table("Tarragona")
    y = rankswap.rank_swap(x, np.random.default_rng(3)).released  # anonlab's default
    for j in range(x.shape[1]):
        assert np.array_equal(np.sort(y[:, j]), np.sort(x[:, j]))
    coded = rankswap.rank_swap(x, np.random.default_rng(3), extremes="mean").released
    share = np.mean([np.mean(np.isin(coded[:, j], x[:, j])) for j in range(x.shape[1])])
    assert 0.88 < share < 0.92  # sdcMicro's top and bottom 5 % replaced by means


def test_window_from_r0_and_k0_follows_moores_relations() -> None:
    x = np.arange(1.0, 1001.0)
    ranked = x[::-1]
    middle = ranked[50:950]
    spread = abs(ranked[949 + 1] - ranked[49])
    share = rankswap.rank_swap(x, np.random.default_rng(1), r0=0.9).columns[0].share
    assert share == pytest.approx(np.sqrt(2 * middle.var() * 0.1) / spread)
    share_k = rankswap.rank_swap(x, np.random.default_rng(1), k0=0.05).columns[0].share
    assert share_k == pytest.approx(np.sqrt(8 / 3) * 0.05 * middle.mean() / spread)
    default = rankswap.rank_swap(x, np.random.default_rng(1)).columns[0].share
    assert default == pytest.approx(np.sqrt(2 * middle.var() * 0.05) / spread)


def test_partners_are_uniform_over_the_free_window() -> None:
    """The first value's partner is uniform over the W - 1 ranks below it."""
    counts = np.zeros(10)
    for seed in range(4000):
        partner = rankswap.swap_partners(50, 10, np.random.default_rng(seed))
        counts[partner[0] - 1] += 1
    assert counts[9] == 0
    expected = 4000 / 9
    assert np.all(np.abs(counts[:9] - expected) < 5 * np.sqrt(expected))
    partner = rankswap.swap_partners(500, 7, np.random.default_rng(1))
    assert np.array_equal(partner[partner], np.arange(500))  # pairs: an involution
    assert np.abs(partner - np.arange(500)).max() <= 6


def test_missing_values_stay_and_are_never_swapped() -> None:
    x = np.arange(100.0)
    x[[3, 50, 77]] = np.nan
    y = rankswap.rank_swap(x, np.random.default_rng(1), p=20.0).released[:, 0]
    assert np.array_equal(np.isnan(y), np.isnan(x))
    assert rankswap.rank_swap(x, np.random.default_rng(1)).columns[0].present == 97


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p": 5.0, "r0": 0.9}, "give only one of p, r0 and k0"),
        ({"p": 120.0}, "p must be a percentage"),
        ({"r0": 1.5}, "r0 must lie in"),
        ({"top_percent": 60.0, "bottom_percent": 50.0}, "must not exceed 100"),
        ({"extremes": "drop"}, "extremes must be one of"),
    ],
)
def test_bad_parameters_are_one_line_errors(kwargs, message) -> None:
    with pytest.raises(AnonlabError, match=message):
        rankswap.rank_swap(np.arange(10.0), np.random.default_rng(1), **kwargs)


COLUMNS = ["FIXED.ASSETS", "CURRENT.ASSETS", "PAID.UP.CAPITAL"]


def _report(result: anonlab.MaskResult, seed: int) -> dict:
    return {
        "method": result.method,
        "seed": seed,
        "parameters": {"parameters": result.parameters},
        "masking": result.section,
    }


@pytest.mark.parametrize(
    "params",
    [{}, {"extremes": "mean"}, {"p": 10.0, "top_percent": 0, "bottom_percent": 0}, {"k0": 0.3}],
)
def test_registered_method_passes_the_independent_check(params) -> None:
    frame = pd.read_csv(DATA / "Tarragona.csv")
    result = anonlab.mask(frame, "rankswap", COLUMNS, seed=5, **params)
    assert check_masking(frame, result.release, COLUMNS, _report(result, 5)) == []
    again = anonlab.mask(frame, "rankswap", COLUMNS, seed=5, **params)
    assert again.release.equals(result.release)


def test_check_finds_a_value_moved_beyond_the_window() -> None:
    frame = pd.read_csv(DATA / "Tarragona.csv")
    result = anonlab.mask(frame, "rankswap", COLUMNS, seed=5, p=2.0)
    release = result.release.copy()
    column = release["FIXED.ASSETS"].to_numpy().copy()
    order = np.argsort(-frame["FIXED.ASSETS"].to_numpy(), kind="stable")
    a, b = order[100], order[700]  # two middle records far apart
    column[[a, b]] = column[[b, a]]
    release["FIXED.ASSETS"] = column
    problems = check_masking(frame, release, COLUMNS, _report(result, 5))
    assert problems and "beyond the window" in problems[0]
    with pytest.raises(AnonlabError, match="give a seed"):
        anonlab.mask(frame, "rankswap", COLUMNS)


def test_from_the_command_line_with_sdcmicros_flags(tmp_path) -> None:
    """``anonlab mask --method rankswap --p 5 --top-percent 0 --bottom-percent 0``: every
    value swapped within 5 % of the ranks, every released value an original one."""
    from typer.testing import CliRunner

    from anonlab.cli.app import app

    out, report = tmp_path / "r.csv", tmp_path / "r.json"
    args = ["mask", str(DATA / "Tarragona.csv"), "--method", "rankswap", "--p", "5"]
    args += ["--top-percent", "0", "--bottom-percent", "0", "--columns", "SALES"]
    args += ["--seed", "2", "--other", "insensitive", "--max-risk", "1"]
    args += ["--output", str(out), "--report", str(report)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    entry = json.loads(report.read_text())["masking"]["columns"]["SALES"]
    assert (entry["top"], entry["bottom"], entry["max_distance"]) == (0, 0, int(834 * 0.05) - 1)
    released = pd.read_csv(out)["SALES"].to_numpy()
    original = pd.read_csv(DATA / "Tarragona.csv")["SALES"].to_numpy()
    assert np.array_equal(np.sort(released), np.sort(original))


def test_descending_order_is_the_stable_order_with_and_without_ties() -> None:
    """The ranking sorts unstably when no two values tie, else stably: either way the
    positions from the highest value down, tied values in record order."""
    rng = np.random.default_rng(2)
    for values in (
        rng.lognormal(0, 1, 5000),
        np.round(rng.lognormal(0, 1, 5000), 1),
        np.array([0.0, -0.0, 0.0, 1.0, -0.0]),
        np.ones(7),
        np.array([3.0]),
    ):
        expected = np.argsort(-values, kind="stable")
        assert np.array_equal(rankswap.descending(values), expected)


def test_swap_partners_walks_the_window_rule_on_a_wide_window() -> None:
    """A window of thousands (the 100,000-record case's shape, smaller): an involution,
    every pair within W - 1 ranks, nearly every position paired."""
    partner = rankswap.swap_partners(20_000, 1500, np.random.default_rng(4))
    positions = np.arange(partner.size)
    assert np.array_equal(partner[partner], positions)
    assert np.abs(partner - positions).max() <= 1499
    assert np.mean(partner != positions) > 0.99


def _pairing_by_the_definition(size: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """sdcMicro's ``RankSwap`` loop as written: each free position lists the free positions
    of its window and takes one of them uniformly."""
    partner = np.arange(size)
    paired = np.zeros(size, dtype=bool)
    for j in range(size):
        if paired[j]:
            continue
        free = [k for k in range(j + 1, min(size, j + width)) if not paired[k]]
        if free:
            k = free[int(rng.integers(len(free)))]
            paired[[j, k]] = True
            partner[[j, k]] = k, j
    return partner


@pytest.mark.parametrize(("size", "width", "redraws"), [(40, 12, None), (31, 4, None), (31, 4, 0)])
def test_swap_partners_have_the_definitions_distribution(
    monkeypatch: pytest.MonkeyPatch, size: int, width: int, redraws: int | None
) -> None:
    """Per position, the mean rank distance to the partner and the share of values that
    stay, over 3,000 pairings each: the rejection draws (and, with ``redraws = 0``, the
    listed free positions every time) against the loop of the definition, within 4.5
    standard errors. The last ``W`` positions have windows cut by the end; of an odd number
    of positions one at least stays."""
    if redraws is not None:
        monkeypatch.setattr(rankswap, "_REDRAWS", redraws)
    runs = 3000
    positions = np.arange(size)

    def moves(pairing: Callable[[int], np.ndarray]) -> np.ndarray:
        return np.array([np.abs(pairing(seed) - positions) for seed in range(runs)])

    ours = moves(lambda seed: rankswap.swap_partners(size, width, np.random.default_rng(seed)))
    theirs = moves(
        lambda seed: _pairing_by_the_definition(size, width, np.random.default_rng(10**6 + seed))
    )
    assert ours.max() <= width - 1
    for a, b in ((ours, theirs), (ours == 0, theirs == 0)):
        se = np.sqrt((a.var(axis=0) + b.var(axis=0)) / runs) + 1e-9
        z = np.abs(a.mean(axis=0) - b.mean(axis=0)) / se
        assert z.max() < 4.5, (z.argmax(), a.mean(axis=0), b.mean(axis=0))
    if size % 2:
        assert np.mean(ours == 0) >= 1 / size and np.mean(theirs == 0) >= 1 / size
