"""``anonlab perturb`` (obt) at 10M (and 100M) rows x 10 numeric columns, NumPy and Dask.

The table. Ten numeric columns, each drawn independently per row: ``n0..n2``
normal (mean 50, deviation 10), ``e0..e2`` exponential (scale 1000, a skewed
income-like column), ``u0..u1`` uniform on [0, 1), and ``i0..i1`` integers
uniform in [18, 90] (stored as int64, so the key marks them integer). Part
``i`` (``--part-rows`` rows, default 1M) is drawn with
``numpy.random.default_rng([seed, i])``, so any part can be remade alone, and
written as Parquet (row groups of 1M rows) into one folder under ``--cache``
(outside the repository); a complete folder is reused (``_manifest.json``).
Random doubles barely compress: 10M rows are about 0.8 GB, 100M about 8 GB.

The command, each way in a fresh process, as a user runs it
(``anonlab perturb DATA --method obt --seed 1 --key ... --report ...``), its
CPU time and peak resident set measured over it and every process it started
(``RUSAGE_CHILDREN`` through the wrapper of ``benchmarks/scale.py``: a Dask
worker's peak counts):

* ``numpy``: in memory, the release one Parquet file (only up to
  ``--in-memory-max`` rows: the in-memory path holds the table as text);
* ``numpy-engine``: a folder output, the NumPy engine's two passes
  (moments, then the row-wise map written part by part), rows never held;
* ``dask``: ``--engine dask --workers 2 --memory-limit 4GB``, folder output
  (wall time includes starting the cluster);
* ``read-limit`` (in this process): the physical limit, plain pyarrow reading
  every part's ten columns into NumPy, batch by batch.

A run of some ways keeps the other ways' earlier results for that row count.

The releases are compared value by value: the engines' folders part by part
(largest absolute difference), and, when the in-memory way ran, its file
against the engine's rows in order. Throughput is rows / wall second; the
1-minute load average before and after is recorded (the machine is shared,
so wall times follow it; CPU times much less). Results go to
``benchmarks/results/scale_perturb.json``.

    python benchmarks/scale_perturb.py                  # 10M rows
    python benchmarks/scale_perturb.py --rows 100M --ways read-limit,numpy-engine,dask
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import dask_flags, measured_run, parse_rows, write_parts

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "scale_perturb.json"
COLUMNS = ["n0", "n1", "n2", "e0", "e1", "e2", "u0", "u1", "i0", "i1"]


def generate(folder: Path, rows: int, part_rows: int, seed: int) -> dict[str, Any]:
    """Write the numeric table (see the module text); reuse it when already complete."""
    import pyarrow as pa

    def part(i: int) -> Any:
        n = min(part_rows, rows - i * part_rows)
        rng = np.random.default_rng([seed, i])
        arrays: list[Any] = [rng.normal(50.0, 10.0, n) for _ in range(3)]
        arrays += [rng.exponential(1000.0, n) for _ in range(3)]
        arrays += [rng.random(n) for _ in range(2)]
        arrays += [rng.integers(18, 91, n) for _ in range(2)]
        return pa.Table.from_arrays([pa.array(a) for a in arrays], names=COLUMNS)

    wanted = {"rows": rows, "part_rows": part_rows, "seed": seed, "columns": COLUMNS}
    return write_parts(folder, wanted, -(-rows // part_rows), part)


def run_way(way: str, data: Path, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The whole perturb command one way (``numpy``, ``numpy-engine``, ``dask``)."""
    out = root / f"perturb_{way}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    target = str(out / "release.parquet") if way == "numpy" else f"{out / 'release'}/"
    command = [
        sys.executable,
        "-m",
        "anonlab",
        "perturb",
        str(data),
        "--method",
        "obt",
        "--seed",
        "1",
        "--output",
        target,
        "--key",
        str(out / "key.json"),
        "--report",
        str(out / "report.json"),
        "--quiet",
    ]
    if way == "dask":
        command += dask_flags(args)
    run = measured_run(command, f"perturb {way}")
    report = json.loads((out / "report.json").read_text())
    return {
        "way": way,
        **run,
        "rows_per_s": report["records"] / run["wall_s"],
        "records": report["records"],
        "verified": report["verified"],
        "engine": report.get("engine"),
        "release": target,
    }


def read_limit(data: Path) -> dict[str, Any]:
    """The physical limit, plain pyarrow in this process: read every part's ten columns in
    batches of 1M rows into NumPy, the floor under any pass that reads the table."""
    import resource

    import pyarrow.parquet as pq

    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    rows = 0
    for file in sorted(data.glob("part-*.parquet")):
        for batch in pq.ParquetFile(file).iter_batches(batch_size=1 << 20, columns=COLUMNS):
            block = np.column_stack([batch.column(c).to_numpy() for c in COLUMNS])
            rows += block.shape[0]
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {
        "way": "read-limit",
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_mib": after.ru_maxrss / 1024,
        "rows_per_s": rows / wall,
        "records": rows,
        "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
    }


def largest_difference(a: Path, b: Path) -> float:
    """The largest absolute difference between two releases' values, rows in order (a folder
    is read part by part, a file whole)."""
    import pyarrow.parquet as pq

    def blocks(path: Path) -> Any:
        files = sorted(path.glob("part-*.parquet")) if path.is_dir() else [path]
        for file in files:
            handle = pq.ParquetFile(file)
            for batch in handle.iter_batches(batch_size=1 << 20, columns=COLUMNS):
                yield np.column_stack([batch.column(c).to_numpy() for c in COLUMNS])

    worst = 0.0
    left, right = blocks(a), blocks(b)
    pending = np.zeros((0, len(COLUMNS)))
    for block in left:
        while pending.shape[0] < block.shape[0]:
            pending = np.concatenate([pending, next(right)])
        worst = max(worst, float(np.max(np.abs(block - pending[: block.shape[0]]))))
        pending = pending[block.shape[0] :]
    return worst


def measure(rows: int, args: argparse.Namespace) -> dict[str, Any]:
    data = args.cache / f"numeric_{rows}"
    table = generate(data, rows, args.part_rows, args.seed)
    ways = [w for w in args.ways.split(",") if w != "numpy" or rows <= args.in_memory_max]
    results = {
        way: (
            read_limit(data)
            if way == "read-limit"
            else run_way(way, data, args.cache / f"out_{rows}", args)
        )
        for way in ways
    }
    compared = {}
    names = [w for w in results if w != "read-limit"]
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            compared[f"{a} vs {b}"] = largest_difference(
                Path(results[a]["release"].rstrip("/")), Path(results[b]["release"].rstrip("/"))
            )
    return {
        "rows": rows,
        "table": table,
        "runs": list(results.values()),
        "largest_difference": compared,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="append", type=parse_rows)
    parser.add_argument("--part-rows", type=parse_rows, default=1_000_000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--ways", default="read-limit,numpy,numpy-engine,dask")
    parser.add_argument("--in-memory-max", type=parse_rows, default=10_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="4GB")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/anonlab-bench/scale_perturb"))
    args = parser.parse_args()
    found = json.loads(OUT.read_text()) if OUT.exists() else {}
    for rows in args.rows or [10_000_000]:
        result = measure(rows, args)
        earlier = found.get(str(rows), {})  # ways measured before and not now are kept
        ran = {r["way"] for r in result["runs"]}
        result["runs"] = [r for r in earlier.get("runs", []) if r["way"] not in ran] + result[
            "runs"
        ]
        result["largest_difference"] = {
            **earlier.get("largest_difference", {}),
            **result["largest_difference"],
        }
        found[str(rows)] = result
        print(
            f"\n{rows:,} rows x {len(COLUMNS)} columns ({result['table']['bytes'] / 1e9:.2f} "
            "GB of Parquet)"
        )
        print(f"{'way':14} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9} {'rows/s':>12}  load")
        for r in result["runs"]:
            print(
                f"{r['way']:14} {r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['peak_mib']:9.0f} "
                f"{r['rows_per_s']:12,.0f}  {r['load_average']}"
            )
        for pair, diff in result["largest_difference"].items():
            print(f"largest difference {pair}: {diff:.3g}")
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
