"""MDAV speed against sdcMicro, the block variant's speed and quality, and evaluate at scale.

Targets (issue 3; sdcMicro 5.8's C++ MDAV measured on this machine, CPU time, warm):
Tarragona k=3 11.5 ms; EIA (11 columns) k=3 127 ms; standard normal data, p=10,
k=5: 25,000 rows 2.7 s, 50,000 rows 12.1 s, 100,000 rows 58 s. anonlab's exact
MDAV should be at or below sdcMicro on EIA and under 20 s at 100,000 x 10; the
block variant under 60 s at 1,000,000 x 10 with SSE/SST within 5 % (relative) of
exact MDAV where exact MDAV runs; ``evaluate`` (all measures) under 30 s at
100,000 x 10.

Every figure is the median of ``--repeats`` runs (wall and CPU time of the
partition + aggregation on standardized data; the data is generated with seed
1). Results: benchmarks/results/mdav.json.

    python benchmarks/mdav.py              # full run (about 10 minutes)
    python benchmarks/mdav.py --quick      # one repeat, no 1,000,000 rows
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.encoding import standardize
from anonlab.metrics import evaluate
from anonlab.microaggregation import mdav_labels, scalable_mdav_labels
from anonlab.microaggregation.mdav import group_means, sse_sst

REPO = Path(__file__).resolve().parents[1]
SDC = REPO / "data" / "sdc"
OUT = REPO / "benchmarks" / "results" / "mdav.json"
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
SDCMICRO_SECONDS = {
    "Tarragona k=3": 0.0115,
    "EIA k=3": 0.127,
    "normal 25000x10 k=5": 2.7,
    "normal 50000x10 k=5": 12.1,
    "normal 100000x10 k=5": 58.0,
}


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """Median wall and CPU seconds of ``fn`` over ``repeats`` runs, and its last result."""
    walls, cpus = [], []
    result = None
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), result


def casc(name: str, columns: list[str] | None) -> NDArray[Any]:
    frame = pd.read_csv(SDC / f"{name}.csv")
    cols = columns or [str(c) for c in frame.columns]
    return standardize(frame[cols].to_numpy(float), cols)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 repeat, no 1,000,000 rows")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--block-size",
        type=int,
        default=None,
        help="block size of the scalable variant (default: the library's)",
    )
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    block = {} if args.block_size is None else {"block_size": args.block_size}
    rows: list[dict[str, Any]] = []

    def run(label: str, z: NDArray[Any], k: int, variant: str, reps: int) -> dict[str, Any]:
        if variant == "exact":

            def part() -> NDArray[Any]:
                return mdav_labels(z, k)
        else:

            def part() -> NDArray[Any]:
                return scalable_mdav_labels(z, k, **block)

        def full() -> NDArray[Any]:
            return group_means(z, part())

        wall, cpu, zm = timed(full, reps)
        row = {
            "case": label,
            "variant": variant,
            "k": k,
            "rows": int(z.shape[0]),
            "cols": int(z.shape[1]),
            "wall_s": wall,
            "cpu_s": cpu,
            "sse_sst_percent": 100 * sse_sst(z, zm),
            "sdcmicro_s": SDCMICRO_SECONDS.get(label),
        }
        rows.append(row)
        print(
            f"{label:24} {variant:8} wall {wall:9.3f} s  cpu {cpu:9.3f} s  "
            f"SSE/SST {row['sse_sst_percent']:.4f} %"
            + (f"  (sdcMicro {row['sdcmicro_s']} s)" if row["sdcmicro_s"] else ""),
            flush=True,
        )
        return row

    run("Tarragona k=3", casc("Tarragona", None), 3, "exact", max(repeats, 5))
    run("EIA k=3", casc("EIA", EIA_COLUMNS), 3, "exact", max(repeats, 5))
    rng = np.random.default_rng(1)
    exact_sse: dict[int, float] = {}
    for n in (25_000, 50_000, 100_000):
        z = rng.standard_normal((n, 10))
        ex = run(f"normal {n}x10 k=5", z, 5, "exact", repeats)
        sc = run(f"normal {n}x10 k=5", z, 5, "scalable", repeats)
        exact_sse[n] = ex["sse_sst_percent"]
        sc["relative_to_exact"] = sc["sse_sst_percent"] / ex["sse_sst_percent"] - 1
        print(f"{'':24} scalable SSE/SST relative to exact: {100 * sc['relative_to_exact']:+.2f} %")
    if not args.quick:
        z = np.random.default_rng(1).standard_normal((1_000_000, 10))
        run("normal 1000000x10 k=5", z, 5, "scalable", repeats)

    # evaluate: all measures on 100,000 x 10 (masked by the scalable variant, k = 5)
    x = pd.DataFrame(
        np.random.default_rng(2).standard_normal((100_000, 10)),
        columns=[f"x{j}" for j in range(10)],
    )
    z = x.to_numpy()
    masked = pd.DataFrame(group_means(z, scalable_mdav_labels(z, 5, **block)), columns=x.columns)
    wall, cpu, ev = timed(lambda: evaluate(x, masked), repeats)
    rows.append(
        {
            "case": "evaluate 100000x10",
            "wall_s": wall,
            "cpu_s": cpu,
            "measures": {k: v for k, v in ev.measures.items() if k != "ID_by_p"},
        }
    )
    print(
        f"{'evaluate 100000x10':24} {'':8} wall {wall:9.3f} s  cpu {cpu:9.3f} s  "
        f"DLD {ev.measures['DLD']:.4f}  ID {ev.measures['ID']:.4f}"
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(
        json.dumps({"repeats": repeats, "block_size": args.block_size, "rows": rows}, indent=2)
        + "\n"
    )
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
