"""MDAV's scalable variant on an engine (by regions) against exact MDAV: the SSE/SST gap.

Target (issue 14): on an engine the scalable variant's SSE/SST within 5 %
(relative) of exact MDAV's at every size where exact MDAV runs, up to 400,000
rows. On an engine the table is cut into ``ceil(n / region_rows)`` regions
(anonlab.microaggregation.pieces) and each region is microaggregated by the scalable
variant alone, so groups never cross a region's faces; this measures what the
faces cost, for several ``region_rows``.

Data: standard normal, 10 attributes, k = 5, ``default_rng(1)`` afresh for
each size (the data of benchmarks/mdav_blocks.py), given to the NumPy engine
as a DataFrame in pieces of 100,000 rows. For each size: exact MDAV (once;
about 2 to 4 minutes of CPU at 400,000), the in-memory scalable variant, and
the engine's region variant for each ``region_rows`` (CPU time of this
process: the NumPy engine runs the regions one after the other here). At
1,000,000 rows exact MDAV does not run: the region variant is compared with
the in-memory scalable variant instead. With ``--dask`` the default
``region_rows`` also runs on a local Dask cluster of 2 worker processes (2 GB
each): wall time, and whether its release has the NumPy engine's content hash
(rows sorted). Results: benchmarks/results/mdav_regions.json.

    python benchmarks/mdav_regions.py                       # 100k, 200k, 400k, 1M
    python benchmarks/mdav_regions.py --sizes 100000 --region-rows 50000
    python benchmarks/mdav_regions.py --sizes 400000 1000000 --region-rows 200000 --dask \
        --no-exact --out benchmarks/results/mdav_regions_dask.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.engine import open_engine, open_table
from anonlab.microaggregation import mdav_labels, scalable_mdav_labels
from anonlab.microaggregation.mdav import group_means, sse_sst
from anonlab.microaggregation.pieces import REGION_ROWS, microaggregate_regions
from anonlab.microaggregation.scalable import DEFAULT_BLOCK_SIZE
from anonlab.staging import StagedFolder

OUT = Path(__file__).resolve().parent / "results" / "mdav_regions.json"
SIZES = (100_000, 200_000, 400_000, 1_000_000)
EXACT_UP_TO = 400_000
REGION_CHOICES = (50_000, 100_000, REGION_ROWS)
P, K = 10, 5
PIECE_ROWS = 100_000


def cpu(fn: Any) -> tuple[float, Any]:
    """CPU seconds of this process for ``fn()``, and its result."""
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def standardized(x: NDArray[Any]) -> NDArray[Any]:
    """z-scores with the population deviation, as MDAV standardizes."""
    return np.asarray((x - x.mean(axis=0)) / x.std(axis=0))


def digest(folder: Path) -> str:
    """A content hash of a written release, its rows sorted (their order aside)."""
    values = pd.read_parquet(folder).to_numpy()
    rows = values[np.lexsort(values.T[::-1])]
    return hashlib.sha256(np.ascontiguousarray(rows).tobytes()).hexdigest()


def by_regions(
    x: NDArray[Any], region_rows: int, folder: Path, engine_name: str = "numpy"
) -> dict[str, Any]:
    """The engine's region variant on ``x``: SSE/SST, regions, CPU seconds of this process,
    wall seconds and the release's content hash."""
    names = [f"x{j}" for j in range(x.shape[1])]
    table = open_table(pd.DataFrame(x, columns=names), piece_rows=PIECE_ROWS)
    options: dict[str, Any] = {"workers": 2, "memory_limit": "2GB"} if engine_name == "dask" else {}
    target = folder / f"release-{engine_name}-{region_rows}"
    with open_engine(engine_name, **options) as engine:
        start, wall = time.process_time(), time.perf_counter()
        moments = engine.moments(table, names)
        with StagedFolder(target) as staged:
            result = microaggregate_regions(
                engine,
                table,
                names,
                names,
                rows=moments.count,
                mean=moments.mean,
                std=moments.std,
                k=K,
                block_size=DEFAULT_BLOCK_SIZE,
                region_rows=region_rows,
                output=staged,
            )
            staged.commit()
        seconds, wall = time.process_time() - start, time.perf_counter() - wall
    sizes = np.flatnonzero(result.size_counts)
    return {
        "engine": engine_name,
        "region_rows": region_rows,
        "regions": len(result.region_rows),
        "largest_region": max(result.region_rows),
        "smallest_region": min(result.region_rows),
        "sse_sst_percent": 100 * result.sse / result.sst,
        "cpu_s": seconds,
        "wall_s": wall,
        "min_group": int(sizes.min()),
        "max_group": int(sizes.max()),
        "sha256": digest(target),
    }


def measure(
    n: int, choices: tuple[int, ...], folder: Path, dask: bool, exact_up_to: int
) -> dict[str, Any]:
    """One size: exact MDAV (up to EXACT_UP_TO), the in-memory scalable variant, the regions."""
    x = np.random.default_rng(1).standard_normal((n, P))
    z = standardized(x)
    row: dict[str, Any] = {"rows": n, "cols": P, "k": K, "block_size": DEFAULT_BLOCK_SIZE}
    seconds, labels = cpu(lambda: scalable_mdav_labels(z, K, DEFAULT_BLOCK_SIZE))
    row.update(
        scalable_sse_sst_percent=100 * sse_sst(z, group_means(z, labels)), scalable_cpu_s=seconds
    )
    if n <= exact_up_to:
        seconds, labels = cpu(lambda: mdav_labels(z, K))
        row.update(
            exact_sse_sst_percent=100 * sse_sst(z, group_means(z, labels)), exact_cpu_s=seconds
        )
    reference = row.get("exact_sse_sst_percent", row["scalable_sse_sst_percent"])
    row["reference"] = "exact" if "exact_sse_sst_percent" in row else "scalable"
    row["regions"] = []
    for region_rows in choices:
        got = by_regions(x, region_rows, folder)
        got["gap_percent"] = 100 * (got["sse_sst_percent"] / reference - 1)
        row["regions"].append(got)
        show(row, got)
    if dask:
        got = by_regions(x, REGION_ROWS, folder, "dask")
        numpy_hash = [g["sha256"] for g in row["regions"] if g["region_rows"] == REGION_ROWS]
        got["same_release_as_numpy"] = bool(numpy_hash) and numpy_hash[0] == got["sha256"]
        got["gap_percent"] = 100 * (got["sse_sst_percent"] / reference - 1)
        row["dask"] = got
        show(row, got)
    return row


def show(row: dict[str, Any], got: dict[str, Any]) -> None:
    """One line of the table."""
    exact = (
        f"exact {row['exact_sse_sst_percent']:8.4f} %"
        if "exact_sse_sst_percent" in row
        else "exact not run   "
    )
    print(
        f"{row['rows']:>9,}  {exact}  scalable {row['scalable_sse_sst_percent']:8.4f} %  "
        f"region_rows {got['region_rows']:>7,} ({got['regions']:2} regions, "
        f"{got['smallest_region']:,}..{got['largest_region']:,} rows)  "
        f"{got['sse_sst_percent']:8.4f} %  gap vs {row['reference']} "
        f"{got['gap_percent']:+6.2f} %  cpu {got['cpu_s']:6.1f} s wall {got['wall_s']:6.1f} s"
        f"  {got['engine']}"
        + (
            f" same release: {got['same_release_as_numpy']}"
            if "same_release_as_numpy" in got
            else ""
        ),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--region-rows", type=int, nargs="*", default=list(REGION_CHOICES))
    parser.add_argument(
        "--dask", action="store_true", help="also run the default region_rows on 2 Dask workers"
    )
    parser.add_argument(
        "--no-exact", action="store_true", help="compare with the in-memory scalable variant only"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            rows.append(
                measure(
                    n,
                    tuple(args.region_rows),
                    Path(tmp),
                    args.dask,
                    0 if args.no_exact else EXACT_UP_TO,
                )
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"default_region_rows": REGION_ROWS, "rows": rows}, indent=2) + "\n"
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
