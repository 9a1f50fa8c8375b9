"""``evaluate`` on wide tables: the nearest-neighbour method chosen by dimension (issue 11).

A k-d tree degenerates in high dimension: at 200 columns ``evaluate`` took 7.6 s
at 5,000 rows, 164 s at 20,000 and over 600 s at 100,000 (issue 11). Above
``KD_MAX_DIM`` attributes the record linkage now uses blocked matrix products
with an exact recheck of the candidates (anonlab.metrics.risk).

Data: standard normal columns (seed 1), the worst case for a k-d tree and an
ordinary one for the products, whose cost does not depend on the data. The
masked table is the block variant of MDAV (k = 3, blocks of 2,048 records)
replaced by group means, so the measures see a real microaggregation. Each
figure is the median of ``--repeats`` runs of the whole ``evaluate`` call
(every measure, ``interval_p`` 1..10) on one BLAS thread (``workers=1``):
CPU seconds by ``time.process_time`` and wall seconds. ``--kdtree-upto N``
also times the k-d tree (forced) on the tables of at most N rows, as the
"before" figure. Results: benchmarks/results/evaluate_wide.json.

    python benchmarks/evaluate_wide.py                 # about 10 minutes
    python benchmarks/evaluate_wide.py --quick         # no 100,000 x 200
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from anonlab.metrics import evaluate, risk
from anonlab.microaggregation import scalable_mdav_labels
from anonlab.microaggregation.mdav import group_means

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "evaluate_wide.json"
SIZES = [(5_000, 200), (20_000, 200), (100_000, 200), (100_000, 10)]
MASK_BLOCK = 2048


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """Median CPU and wall seconds of ``fn`` over ``repeats`` runs, and its last result."""
    cpus, walls = [], []
    result = None
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        result = fn()
        cpus.append(time.process_time() - c)
        walls.append(time.perf_counter() - w)
    return statistics.median(cpus), statistics.median(walls), result


def pair(n: int, p: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Standard normal original (seed 1) and its block-MDAV masked table (k = 3)."""
    x = np.random.default_rng(1).standard_normal((n, p))
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    masked = group_means(x, scalable_mdav_labels(z, 3, MASK_BLOCK))
    names = [f"c{j}" for j in range(p)]
    return pd.DataFrame(x, columns=names), pd.DataFrame(masked, columns=names)


def measure(n: int, p: int, repeats: int, kdtree: bool) -> list[dict[str, Any]]:
    """Rows of the table for one size: the default method, and the k-d tree if asked."""
    original, masked = pair(n, p)
    rows = []
    methods = ["default"] + (["kdtree"] if kdtree and p > risk.KD_MAX_DIM else [])
    for method in methods:
        limit = risk.KD_MAX_DIM if method == "default" else 10**9
        saved, risk.KD_MAX_DIM = risk.KD_MAX_DIM, limit
        try:
            cpu, wall, result = timed(lambda: evaluate(original, masked), repeats)
        finally:
            risk.KD_MAX_DIM = saved
        used = "kdtree" if p <= limit else "blocked"
        rows.append(
            {
                "rows": n,
                "columns": p,
                "method": used,
                "cpu_s": round(cpu, 2),
                "wall_s": round(wall, 2),
                "DLD": result.measures["DLD"],
                "ID": result.measures["ID"],
                "repeats": repeats,
            }
        )
        print(
            f"{n:>8} {p:>4}  {used:<8} {cpu:>9.2f} {wall:>9.2f}   DLD {result.measures['DLD']:.4f}",
            flush=True,
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="leave out 100,000 x 200")
    parser.add_argument(
        "--kdtree-upto",
        type=int,
        default=5_000,
        help="also time the forced k-d tree up to this many rows",
    )
    args = parser.parse_args()
    sizes = [s for s in SIZES if not (args.quick and s == (100_000, 200))]
    print(f"{'rows':>8} {'cols':>4}  {'method':<8} {'CPU s':>9} {'wall s':>9}")
    table = []
    for n, p in sizes:
        repeats = 1 if n * n * p > 10**12 else args.repeats
        table += measure(n, p, repeats, n <= args.kdtree_upto)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps(
            {
                "benchmark": "evaluate on wide tables (issue 11)",
                "kd_max_dim": risk.KD_MAX_DIM,
                "workers": 1,
                "cpus": os.cpu_count(),
                "load_average_at_end": os.getloadavg(),
                "rows": table,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"saved {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
