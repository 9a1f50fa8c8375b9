"""Release-only attacks on perturbation (issue 21): which method falls to which attack, and
what the remedy costs.

Tables: Tarragona (834 x 13), Census (CASCrefmicrodata, 1,080 x 13), and a table with many
ties (``lattice``: 900 records x 5 columns on 3 levels, 200 of them duplicates, the shape of
docs/perturbation.md's Ward example). Seeds 7 and 8 for every release.

Part 1, attacks: for obt (P >= 0.5), rbt (rho 0.5), rotation and gdp (noise 0.1), each attack
of the suite (naive, ties, least_squares / procrustes / method_aware with 2 and d known
records, known_sample, ica): records recovered within 10 % and columns recovered within 10 %.

Part 2, remedies: noise added to the rotated records (gdp at noise 0, 0.01, 0.05, 0.1, 0.25,
0.5; isotropic Gaussian noise added before an orthogonal map is the same in law as after it,
so breaking ties by jitter before rotating is this remedy too), beside obt and rbt as
published. Per remedy: columns the tie attack recovers, records the best known-record attack
recovers with d known records, two upper bounds for an attacker who knows the transform
exactly (``key``: columns within 10 % after undoing the rotation, so only the noise is
left; ``rounded``: the share of values of discrete columns, at most 20 distinct values,
recovered exactly by rounding to the nearest original value), and the clustering agreement
(adjusted Rand index of k-means, DBSCAN, Ward; docs/perturbation.md).

    python benchmarks/perturb_ties.py              # about 3 minutes
    python benchmarks/perturb_ties.py --part attacks
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from anonlab.perturbation.attacks import attack_table, columns_recovered
from anonlab.perturbation.evaluate import clustering_agreement
from anonlab.perturbation.table import numeric_columns
from anonlab.perturbation.transforms import perturb_array

REPO = Path(__file__).resolve().parents[1]
SDC = REPO / "data" / "sdc"
OUT = REPO / "benchmarks" / "results" / "perturb_ties.json"
SEEDS = (7, 8)
METHODS: list[tuple[str, str, dict[str, Any]]] = [
    ("obt", "obt", {"min_privacy": 0.5}),
    ("rbt", "rbt", {"rho": (0.5, 0.5)}),
    ("rotation", "rotation", {}),
    ("gdp 0.1", "gdp", {"noise": 0.1}),
]
REMEDIES: list[tuple[str, str, dict[str, Any]]] = [
    ("obt", "obt", {}),
    ("rbt", "rbt", {}),
    *[(f"gdp {v:g}", "gdp", {"noise": v}) for v in (0.0, 0.01, 0.05, 0.1, 0.25, 0.5)],
]


def lattice() -> pd.DataFrame:
    """900 records x 5 columns on a 3-level lattice, the last 200 duplicates of others."""
    rng = np.random.default_rng(2)
    x = rng.integers(0, 3, (900, 5)).astype(float)
    x[-200:] = x[rng.integers(0, 700, 200)]
    return pd.DataFrame(x, columns=[f"q{j}" for j in range(5)])


def tables() -> dict[str, pd.DataFrame]:
    return {
        "Tarragona": pd.read_csv(SDC / "Tarragona.csv"),
        "Census": pd.read_csv(SDC / "CASCrefmicrodata.csv"),
        "lattice": lattice(),
    }


def release(
    frame: pd.DataFrame, method: str, seed: int, params: dict[str, Any]
) -> tuple[Any, Any, Any]:
    data = numeric_columns(frame, list(frame.columns))
    return perturb_array(data, method, seed=seed, **params)


def attack_rows(
    frame: pd.DataFrame, method: str, params: dict[str, Any], seed: int
) -> list[dict[str, Any]]:
    z, y, key = release(frame, method, seed, params)
    d = z.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return attack_table(z, y, (2, d), seed=seed, ties=key.noise_scale == 0)


def _best(rows: list[dict[str, Any]], attack: str, field: str) -> float:
    return max((float(r[field]) for r in rows if r["attack"] == attack), default=float("nan"))


def attacks_part() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, frame in tables().items():
        for label, method, params in METHODS:
            for seed in SEEDS:
                rows = attack_rows(frame, method, params, seed)
                for r in rows:
                    out.append({"table": name, "method": label, "seed": seed, **r})
                ties = [r for r in rows if r["attack"] == "ties"]
                print(
                    f"{name:10s} {label:9s} seed {seed}: ties "
                    f"{ties[0]['columns_recovered'] if ties else '-'} columns; "
                    + ", ".join(
                        f"{r['attack']}/{r['known']} {r['within_10']:.0%}|{r['columns_recovered']}"
                        for r in rows
                        if r["attack"] != "ties"
                    )
                )
    return out


def key_bounds(z: Any, y: Any, key: Any) -> tuple[int, float]:
    """Columns within 10 % and discrete values recovered by rounding, knowing the transform."""
    undone = (y - (key.translation if key.translation is not None else 0.0)) @ key.full_matrix()
    columns = columns_recovered(undone, z)
    hits = total = 0
    for j in range(z.shape[1]):
        levels = np.unique(z[:, j])
        if levels.size > 20:
            continue
        nearest = levels[np.abs(undone[:, j, None] - levels[None, :]).argmin(axis=1)]
        hits += int(np.count_nonzero(nearest == z[:, j]))
        total += z.shape[0]
    return columns, (hits / total if total else float("nan"))


def remedies_part() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name, frame in tables().items():
        for label, method, params in REMEDIES:
            for seed in SEEDS:
                z, y, key = release(frame, method, seed, params)
                d = z.shape[1]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    rows = attack_table(
                        z, y, (d,), seed=seed, sample_attacks=True, ties=key.noise_scale == 0
                    )
                    ari = clustering_agreement(z, y, seed=seed)
                cols, rounded = key_bounds(z, y, key)
                row = {
                    "table": name,
                    "remedy": label,
                    "seed": seed,
                    "ties_columns": _best(rows, "ties", "columns_recovered"),
                    "known_d_records": max(
                        _best(rows, a, "within_10")
                        for a in ("least_squares", "procrustes", "method_aware")
                    ),
                    "known_sample_records": _best(rows, "known_sample", "within_10"),
                    "key_columns": cols,
                    "key_rounded": rounded,
                    "kmeans": ari["kmeans"],
                    "dbscan": ari["dbscan"],
                    "ward": ari["ward"],
                }
                out.append(row)
                print(
                    f"{name:10s} {label:9s} seed {seed}: ties {row['ties_columns']:.0f} cols, "
                    f"d known {row['known_d_records']:.0%}, sample "
                    f"{row['known_sample_records']:.0%}, key {cols} cols / rounded "
                    f"{rounded:.0%}, ARI {ari['kmeans']:.2f} {ari['dbscan']:.2f} "
                    f"{ari['ward']:.2f}"
                )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["attacks", "remedies", "both"], default="both")
    args = parser.parse_args()
    result: dict[str, Any] = json.loads(OUT.read_text()) if OUT.exists() else {}
    start = time.process_time()
    if args.part in ("attacks", "both"):
        result["attacks"] = attacks_part()
    if args.part in ("remedies", "both"):
        result["remedies"] = remedies_part()
    result["cpu_seconds"] = time.process_time() - start
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
