"""The statistics of a numeric masking that tests compare with sdcMicro 5.8.1's.

The same statistics as the R script that produced tests/data/sdcmicro_masking/
sdcmicro_5.8.1.json computed on sdcMicro's releases (that file's "source" says how):
each a mean over the masked columns, then a mean and SD over seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy import stats

DATA = Path(__file__).resolve().parents[1] / "data" / "sdc"
FIGURES = Path(__file__).resolve().parent / "data" / "sdcmicro_masking" / "sdcmicro_5.8.1.json"

Stats = Callable[[NDArray[np.float64], NDArray[np.float64]], dict[str, float]]


def table(name: str) -> NDArray[np.float64]:
    """The first six numeric, non-constant columns of a table under data/sdc/."""
    frame = pd.read_csv(DATA / f"{name}.csv")
    numeric = frame.select_dtypes("number")
    numeric = numeric.loc[:, numeric.std() > 0]
    return numeric.to_numpy(dtype=np.float64)[:, :6]


def _cor12(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    return float(np.corrcoef(y, rowvar=False)[0, 1] - np.corrcoef(x, rowvar=False)[0, 1])


def noise_stats(x: NDArray[np.float64], y: NDArray[np.float64]) -> dict[str, float]:
    d = y - x
    sd = x.std(axis=0, ddof=1)
    return {
        "sd_ratio": float(np.mean(d.std(axis=0, ddof=1) / sd)),
        "mean_shift": float(np.mean(d.mean(axis=0) / sd)),
        "var_ratio": float(np.mean(y.var(axis=0, ddof=1) / x.var(axis=0, ddof=1))),
        "cor12": _cor12(x, y),
        "changed": float(np.mean(np.any(d != 0, axis=1))),
    }


def _ranks(v: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(stats.rankdata(v, method="average"), dtype=np.float64)


def rankswap_stats(x: NDArray[np.float64], y: NDArray[np.float64]) -> dict[str, float]:
    m = x.shape[1]
    distance = [float(np.mean(np.abs(_ranks(x[:, j]) - _ranks(y[:, j])))) for j in range(m)]
    original = [float(np.mean(np.isin(y[:, j], x[:, j]))) for j in range(m)]
    rank_cor = [float(stats.spearmanr(x[:, j], y[:, j])[0]) for j in range(m)]
    return {
        "rank_distance": float(np.mean(distance)),
        "original_share": float(np.mean(original)),
        "cor12": _cor12(x, y),
        "rank_cor": float(np.mean(rank_cor)),
    }


def _spearman(a: NDArray[np.float64]) -> NDArray[np.float64]:
    ranks = np.column_stack([_ranks(a[:, j]) for j in range(a.shape[1])])
    return np.asarray(np.corrcoef(ranks, rowvar=False), dtype=np.float64)


def shuffle_stats(x: NDArray[np.float64], y: NDArray[np.float64]) -> dict[str, float]:
    """``x``: the six columns (three responses, three predictors); ``y``: the released
    responses."""
    released = _spearman(np.hstack([y, x[:, 3:6]]))
    original = _spearman(x)
    upper = np.triu_indices(3, 1)
    both = _spearman(np.hstack([y, x[:, :3]]))
    return {
        "resp_pred": float(released[:3, 3:6].mean()),
        "resp_resp": float(released[:3, :3][upper].mean()),
        "orig_resp_pred": float(original[:3, 3:6].mean()),
        "orig_resp_resp": float(original[:3, :3][upper].mean()),
        "self": float(np.mean(np.diag(both[:3, 3:6]))),
    }


def over_seeds(
    run: Callable[[int], NDArray[np.float64]],
    x: NDArray[np.float64],
    measure: Stats,
    seeds: int,
) -> tuple[dict[str, float], dict[str, float]]:
    """Mean and SD over ``seeds`` releases ``run(seed)`` of each statistic."""
    rows = [measure(x, run(seed)) for seed in range(1, seeds + 1)]
    keys = rows[0]
    mean = {k: float(np.mean([r[k] for r in rows])) for k in keys}
    sd = {k: float(np.std([r[k] for r in rows], ddof=1)) if seeds > 1 else 0.0 for k in keys}
    return mean, sd


def agrees(
    ours: tuple[dict[str, float], dict[str, float]],
    reference: dict[str, dict[str, float]],
    seeds: tuple[int, int],
    slack: float = 1e-3,
) -> list[str]:
    """The statistics whose means differ by more than 4.5 standard errors of the
    difference (plus ``slack``): a two-sample test at about 1e-5 per statistic."""
    mean, sd = ours
    bad = []
    for key, theirs in reference["mean"].items():
        if key not in mean or theirs is None:
            continue
        se = np.sqrt(sd[key] ** 2 / seeds[0] + float(reference["sd"][key] or 0.0) ** 2 / seeds[1])
        if abs(mean[key] - float(theirs)) > 4.5 * se + slack:
            bad.append(
                f"{key}: anonlab {mean[key]:.5g}, sdcMicro {float(theirs):.5g} (se {se:.2g})"
            )
    return bad
