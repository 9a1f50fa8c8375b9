"""Perturbation for clustering: what each method keeps, what it protects, and how fast.

Part 1 (quality), in-process, on Tarragona (13 columns), Census
(CASCrefmicrodata, 13), EIA (the 11 columns of the literature: UTILITYID and
the ten revenue/sales columns), and scikit-learn's bundled wine (13) and
breast cancer (30) data: for obt (P >= 0.5), rbt (rho 0.5), rotation, and gdp
at noise 0.1 and 0.5, the adjusted Rand index of k-means (k = 3, seed 0),
DBSCAN (eps = median 5-NN distance of the original, moved half-way to
the next pairwise distance) and Ward (k = 3) between
the standardized original and the release; overall S; the smallest and mean
block P; and the attack table (share of records recovered within 10 %).
Every run uses seed 7.

Part 2 (speed): the whole ``anonlab perturb`` command on a synthetic
1,000,000 x 20 table (CSV and Parquet in and out, obt and gdp, with --output
and --key; once more with --report), and the whole ``anonlab attack`` command
on 100,000 x 20 records (CSV), wall time median of several runs, CPU time and
peak memory via /usr/bin/time, and the 1-minute load average around the runs
(the machine is shared).

    python benchmarks/perturbation.py            # both parts, about 5 minutes
    python benchmarks/perturbation.py --part quality
    python benchmarks/perturbation.py --part speed --repeats 5
    # the same beside an earlier version (its src folder), runs alternating:
    git archive 243817e src | tar -x -C /tmp/before
    python benchmarks/perturbation.py --part speed --baseline /tmp/before/src
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer, load_wine

from anonlab.perturbation import perturb, perturbation_summary

REPO = Path(__file__).resolve().parents[1]
SDC = REPO / "data" / "sdc"
OUT = REPO / "benchmarks" / "results" / "perturbation.json"
EIA_COLUMNS = [
    "UTILITYID",
    "RESREVENUE",
    "RESSALES",
    "COMREVENUE",
    "COMSALES",
    "INDREVENUE",
    "INDSALES",
    "OTHREVENUE",
    "OTHRSALES",
    "TOTREVENUE",
    "TOTSALES",
]
METHODS: list[tuple[str, dict[str, Any]]] = [
    ("obt", {"min_privacy": 0.5}),
    ("rbt", {"rho": (0.5, 0.5)}),
    ("rotation", {}),
    ("gdp 0.1", {"noise": 0.1}),
    ("gdp 0.5", {"noise": 0.5}),
]
SEED = 7


def datasets() -> dict[str, pd.DataFrame]:
    """The five benchmark tables, numeric columns only."""
    wine, cancer = load_wine(), load_breast_cancer()
    return {
        "Tarragona": pd.read_csv(SDC / "Tarragona.csv"),
        "Census": pd.read_csv(SDC / "CASCrefmicrodata.csv"),
        "EIA": pd.read_csv(SDC / "EIA.csv")[EIA_COLUMNS],
        "wine": pd.DataFrame(wine.data, columns=wine.feature_names),
        "breast cancer": pd.DataFrame(cancer.data, columns=cancer.feature_names),
    }


def _share(rows: list[dict[str, Any]], attack: str, known: int | None = None) -> float:
    hits = [
        r["within_10"]
        for r in rows
        if r["attack"] == attack and (known is None or r["known"] == known)
    ]
    return max(hits) if hits else float("nan")


def quality() -> list[dict[str, Any]]:
    """Part 1: one row per data set and method."""
    out = []
    for name, frame in datasets().items():
        d = frame.shape[1]
        for label, options in METHODS:
            method = label.split()[0]
            started = time.perf_counter()
            p = perturb(frame, method=method, seed=SEED, **options)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                summary = perturbation_summary(
                    p.key, p.standardized, p.released, known=(2, 3, 5, d), seed=SEED
                )
            rows = summary["attacks"]
            known_io = ("least_squares", "procrustes", "method_aware")
            out.append(
                {
                    "data": name,
                    "records": int(frame.shape[0]),
                    "columns": d,
                    "method": label,
                    "kmeans": summary["clustering"]["kmeans"],
                    "dbscan": summary["clustering"]["dbscan"],
                    "ward": summary["clustering"]["ward"],
                    "S": summary["overall"]["S"],
                    "min_block_P": summary["overall"]["min_block_P"],
                    "mean_block_P": summary["overall"]["mean_block_P"],
                    "naive": _share(rows, "naive"),
                    "aware_2": _share(rows, "method_aware", 2),
                    "aware_3": _share(rows, "method_aware", 3),
                    "aware_5": _share(rows, "method_aware", 5),
                    "best_known_d": max(_share(rows, a, d) for a in known_io),
                    "best_known_5": max(_share(rows, a, 5) for a in known_io),
                    "best_known_d_median_error": min(
                        r["median_relative_error"]
                        for r in rows
                        if r["attack"] in known_io and r["known"] == d
                    ),
                    "pca": _share(rows, "known_sample"),
                    "ica": _share(rows, "ica"),
                    "seconds": time.perf_counter() - started,
                    "attacks": rows,
                }
            )
            print(f"  {name:14s} {label:9s} done", file=sys.stderr)
    return out


def _timed(cmd: list[str], python_path: str | None = None) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and peak resident kB (via /usr/bin/time).

    ``python_path`` puts another copy of the package's source first on the path.
    """
    env = dict(os.environ)
    if python_path is not None:
        env["PYTHONPATH"] = python_path
    started = time.perf_counter()
    res = subprocess.run(
        ["/usr/bin/time", "-f", "%U %S %M", *cmd],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    wall = time.perf_counter() - started
    if res.returncode != 0:
        raise RuntimeError(f"{cmd} failed: {res.stderr[-500:]}")
    user, system, kb = res.stderr.strip().splitlines()[-1].split()
    return wall, float(user) + float(system), int(kb)


def speed(repeats: int, baseline: str | None = None) -> list[dict[str, Any]]:
    """Part 2: whole commands at scale; with ``baseline`` (a ``src`` folder of another
    version) each run of the current code alternates with one of that version."""
    rng = np.random.default_rng(0)
    x = (rng.exponential(1.0, (1_000_000, 20)) @ rng.standard_normal((20, 20))).round(4)
    frame = pd.DataFrame(x, columns=[f"v{i:02d}" for i in range(20)])
    out = []
    versions: list[tuple[str, str | None]] = [("current", None)]
    if baseline is not None:
        versions.append(("baseline", str(Path(baseline).resolve())))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        frame.to_csv(folder / "big.csv", index=False)
        frame.to_parquet(folder / "big.parquet", index=False)
        frame.iloc[:100_000].to_csv(folder / "orig100k.csv", index=False)
        del frame
        exe = [sys.executable, "-m", "anonlab"]
        cases: list[tuple[str, list[str]]] = []
        for method in ("obt", "gdp"):
            for ext in ("csv", "parquet"):
                cases.append(
                    (
                        f"perturb 1,000,000 x 20 {method} {ext}",
                        [
                            *exe,
                            "perturb",
                            str(folder / f"big.{ext}"),
                            "--method",
                            method,
                            "--seed",
                            "1",
                            "--output",
                            str(folder / f"rel.{ext}"),
                            "--key",
                            str(folder / "key.json"),
                            "--quiet",
                        ],
                    )
                )
        cases.append(
            (
                "perturb 1,000,000 x 20 obt csv --report",
                [
                    *exe,
                    "perturb",
                    str(folder / "big.csv"),
                    "--method",
                    "obt",
                    "--seed",
                    "1",
                    "--output",
                    str(folder / "rel.csv"),
                    "--key",
                    str(folder / "key.json"),
                    "--report",
                    str(folder / "report.json"),
                    "--quiet",
                ],
            )
        )
        subprocess.run(
            [
                *exe,
                "perturb",
                str(folder / "orig100k.csv"),
                "--method",
                "obt",
                "--output",
                str(folder / "rel100k.csv"),
                "--quiet",
            ],
            check=True,
            capture_output=True,
        )
        cases.append(
            (
                "attack 100,000 x 20 (obt release)",
                [
                    *exe,
                    "attack",
                    str(folder / "orig100k.csv"),
                    str(folder / "rel100k.csv"),
                    "--known",
                    "2,5,10",
                    "--quiet",
                ],
            )
        )
        for label, cmd in cases:
            loads = [os.getloadavg()[0]]
            runs: dict[str, list[tuple[float, float, int]]] = {v: [] for v, _ in versions}
            for _ in range(repeats):  # versions alternate, so both see the same load
                for version, path in versions:
                    runs[version].append(_timed(cmd, path))
                    loads.append(os.getloadavg()[0])
            for version, _ in versions:
                walls = [w for w, _, _ in runs[version]]
                out.append(
                    {
                        "case": label,
                        "version": version,
                        "median_seconds": statistics.median(walls),
                        "runs_seconds": walls,
                        "median_cpu_seconds": statistics.median(c for _, c, _ in runs[version]),
                        "peak_rss_mb": max(k for _, _, k in runs[version]) / 1024,
                        "load_average_before": loads[0],
                        "load_average_range": [min(loads), max(loads)],
                    }
                )
                print(f"  {label} [{version}]: {statistics.median(walls):.2f} s", file=sys.stderr)
    return out


def _fmt(v: float) -> str:
    return "-" if math.isnan(v) else f"{v:.3g}"


def print_tables(result: dict[str, Any]) -> None:
    """Markdown tables (the ones quoted in docs/perturbation.md)."""
    if "quality" in result:
        print(
            "| data | method | ARI k-means | ARI DBSCAN | ARI Ward | S | min P | naive | "
            "aware 2 | aware 3 | best known 5 | best known d | its median error | PCA | ICA |"
        )
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in result["quality"]:
            print(
                f"| {r['data']} | {r['method']} | "
                + " | ".join(
                    _fmt(r[k])
                    for k in (
                        "kmeans",
                        "dbscan",
                        "ward",
                        "S",
                        "min_block_P",
                        "naive",
                        "aware_2",
                        "aware_3",
                        "best_known_5",
                        "best_known_d",
                        "best_known_d_median_error",
                        "pca",
                        "ica",
                    )
                )
                + " |"
            )
    if "speed" in result:
        print(
            "\n| case | version | median wall (s) | runs (s) | median CPU (s) | "
            "peak RSS (MB) | load (1 min) |"
        )
        print("|---|---|---:|---|---:|---:|---|")
        for r in result["speed"]:
            runs = ", ".join(f"{w:.2f}" for w in r["runs_seconds"])
            low, high = r.get("load_average_range", [r.get("load_average_before")] * 2)
            print(
                f"| {r['case']} | {r.get('version', 'current')} | {r['median_seconds']:.2f} | "
                f"{runs} | {r.get('median_cpu_seconds', float('nan')):.2f} | "
                f"{r['peak_rss_mb']:.0f} | {low:.1f}-{high:.1f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("all", "quality", "speed"), default="all")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--baseline",
        metavar="SRC",
        help="speed part: also time the package found in SRC (e.g. the src "
        "folder of an earlier commit, from git archive), runs interleaved",
    )
    args = parser.parse_args()
    result: dict[str, Any] = {}
    if OUT.exists():
        result = json.loads(OUT.read_text())
    result["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    if args.part in ("all", "quality"):
        result["quality"] = quality()
    if args.part in ("all", "speed"):
        result["speed"] = speed(args.repeats, args.baseline)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print_tables(result)


if __name__ == "__main__":
    main()
