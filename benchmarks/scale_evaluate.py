"""``anonlab evaluate`` at 1M and 10M rows x 10 numeric columns, in memory, NumPy and Dask.

The original is the table of ``benchmarks/scale_perturb.py`` (its
:func:`scale_perturb.generate`: ten numeric columns drawn independently, one
Parquet part per ``--part-rows`` rows). The masked table imitates
microaggregation, column by column and part by part: within each part each
column's values are sorted and replaced by the mean of their group of
``--k`` consecutive values (individual ranking, k = 3), then written as
Parquet parts cut ``--shift`` rows later than the original's, so that the
engines must re-align the rows (its first part is shorter, the others as long).
A complete folder is reused (``_manifest.json``).

The command, each way in a fresh process (``anonlab evaluate ORIGINAL MASKED
--report ...``), its CPU time and peak resident set measured over it and every
process it started (:func:`scale.measured_run`):

* ``numpy``: in memory (both tables read whole; only up to
  ``--in-memory-max`` rows);
* ``numpy-engine``: ``--block-rows B`` (default 20,000), the NumPy engine,
  both tables read piece by piece in this process;
* ``dask``: ``--engine dask --workers 2 --memory-limit 4GB`` (wall time includes
  starting the cluster);
* ``read-limit`` (in this process): plain pyarrow reading both tables' ten
  columns into NumPy, batch by batch (:func:`scale_perturb.read_limit` on each).

The figures are compared: the engines' must be identical (every measure);
the in-memory run's exact measures against the engines' (largest relative
difference), and its blockwise ones (DLD, ID) set beside the engines' block
figures. Throughput is rows / wall second; the load average before and after
is recorded (the machine is shared). Results go to
``benchmarks/results/scale_evaluate.json``.

    python benchmarks/scale_evaluate.py --rows 1M
    python benchmarks/scale_evaluate.py --rows 10M --ways read-limit,numpy-engine,dask
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import dask_flags, measured_run, parse_rows
from scale_perturb import COLUMNS, generate, read_limit

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "scale_evaluate.json"
EXACT = ("ILh", "IL1", "IL2", "IL3", "ILs", "IL")
BLOCKWISE = ("DLD", "DLD_expected", "ID", "DR", "score")


def ranked_means(values: np.ndarray[Any, Any], k: int) -> np.ndarray[Any, Any]:
    """Each value replaced by the mean of its group of ``k`` consecutive values in sorted
    order (the last group takes the remainder)."""
    order = np.argsort(values, kind="stable")
    ranked = values[order].astype(np.float64)
    groups = np.arange(values.size) // k
    means = np.bincount(groups, weights=ranked) / np.bincount(groups)
    out = np.empty(values.size)
    out[order] = means[groups]
    return out


def generate_masked(original: Path, folder: Path, k: int, shift: int) -> dict[str, Any]:
    """The masked table (module text) from the original's parts; reused when complete."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    manifest = folder / "_manifest.json"
    wanted = {
        "original": json.loads((original / "_manifest.json").read_text())["table"],
        "k": k,
        "shift": shift,
    }
    if manifest.exists() and json.loads(manifest.read_text()).get("table") == wanted:
        return dict(json.loads(manifest.read_text()))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    started = time.perf_counter()
    pending: pa.Table | None = None
    written = 0
    files = sorted(original.glob("part-*.parquet"))
    for i, file in enumerate(files):
        part = pq.read_table(file, columns=COLUMNS)
        masked = pa.table(
            {c: pa.array(ranked_means(part.column(c).to_numpy(), k)) for c in COLUMNS}
        )
        pending = masked if pending is None else pa.concat_tables([pending, masked])
        cut = max(0, part.num_rows - shift) if i == 0 else part.num_rows
        if i == len(files) - 1:
            cut = pending.num_rows
        pq.write_table(
            pending.slice(0, cut), folder / f"part-{written:05d}.parquet", row_group_size=1 << 20
        )
        pending = pending.slice(cut)
        written += 1
    info = {
        "table": wanted,
        "parts": written,
        "seconds": time.perf_counter() - started,
        "bytes": sum(p.stat().st_size for p in folder.glob("*.parquet")),
    }
    manifest.write_text(json.dumps(info))
    return info


def run_way(
    way: str, original: Path, masked: Path, root: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """The whole evaluate command one way (``numpy``, ``numpy-engine``, ``dask``)."""
    root.mkdir(parents=True, exist_ok=True)
    report = root / f"evaluate_{way}.json"
    report.unlink(missing_ok=True)
    command = [
        sys.executable,
        "-m",
        "anonlab",
        "evaluate",
        str(original),
        str(masked),
        "--report",
        str(report),
        "--quiet",
    ]
    if way == "numpy-engine":
        command += ["--block-rows", str(args.block_rows)]
    if way == "dask":
        command += [*dask_flags(args), "--block-rows", str(args.block_rows)]
    run = measured_run(command, f"evaluate {way}")
    found = json.loads(report.read_text())
    return {
        "way": way,
        **run,
        "rows_per_s": found["records"] / run["wall_s"],
        "records": found["records"],
        "engine": found.get("engine"),
        "measures": found["measures"],
    }


def compare(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The engines' figures identical? The largest relative difference of the exact measures
    to the in-memory run's, and the blockwise measures side by side."""
    out: dict[str, Any] = {}
    if "numpy-engine" in runs and "dask" in runs:
        out["engines_identical"] = runs["numpy-engine"]["measures"] == runs["dask"]["measures"]
    if "numpy" in runs:
        memory = runs["numpy"]["measures"]
        for way in ("numpy-engine", "dask"):
            if way in runs:
                got = runs[way]["measures"]
                out[f"exact_relative_difference_{way}"] = max(
                    abs(got[m] - memory[m]) / abs(memory[m]) for m in EXACT
                )
        out["blockwise"] = {m: {w: r["measures"][m] for w, r in runs.items()} for m in BLOCKWISE}
    return out


def measure(rows: int, args: argparse.Namespace) -> dict[str, Any]:
    original = args.cache / f"numeric_{rows}"
    table = generate(original, rows, args.part_rows, args.seed)
    masked = args.cache / f"masked_{rows}"
    masked_info = generate_masked(original, masked, args.k, args.shift)
    ways = [w for w in args.ways.split(",") if w != "numpy" or rows <= args.in_memory_max]
    results: dict[str, dict[str, Any]] = {}
    for way in ways:
        if way == "read-limit":
            a, b = read_limit(original), read_limit(masked)
            results[way] = {
                "way": way,
                "wall_s": a["wall_s"] + b["wall_s"],
                "cpu_s": a["cpu_s"] + b["cpu_s"],
                "peak_mib": max(a["peak_mib"], b["peak_mib"]),
                "rows_per_s": rows / (a["wall_s"] + b["wall_s"]),
                "records": rows,
                "load_average": [a["load_average"][0], b["load_average"][1]],
            }
        else:
            results[way] = run_way(way, original, masked, args.cache / f"out_{rows}", args)
        print(f"  {way}: {results[way]['wall_s']:.1f} s", flush=True)
    return {
        "rows": rows,
        "table": table,
        "masked": masked_info,
        "block_rows": args.block_rows,
        "runs": list(results.values()),
        "compared": compare(results),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="append", type=parse_rows)
    parser.add_argument("--part-rows", type=parse_rows, default=1_000_000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--shift", type=int, default=123_457)
    parser.add_argument("--block-rows", type=int, default=20_000)
    parser.add_argument("--ways", default="read-limit,numpy,numpy-engine,dask")
    parser.add_argument("--in-memory-max", type=parse_rows, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="4GB")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/anonlab-bench/scale_perturb"))
    args = parser.parse_args()
    found = json.loads(OUT.read_text()) if OUT.exists() else {}
    for rows in args.rows or [1_000_000]:
        result = measure(rows, args)
        earlier = found.get(str(rows), {})  # ways measured before and not now are kept
        ran = {r["way"] for r in result["runs"]}
        result["runs"] = [r for r in earlier.get("runs", []) if r["way"] not in ran] + result[
            "runs"
        ]
        found[str(rows)] = result
        print(f"\n{rows:,} rows x {len(COLUMNS)} columns, blocks of {args.block_rows:,} rows")
        print(f"{'way':14} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9} {'rows/s':>12}  load")
        for r in result["runs"]:
            print(
                f"{r['way']:14} {r['wall_s']:8.1f} {r['cpu_s']:8.1f} {r['peak_mib']:9.0f} "
                f"{r['rows_per_s']:12,.0f}  {r['load_average']}"
            )
        print(json.dumps(result["compared"], indent=1))
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
