"""Mondrian on Adult (8 QIs: age numeric, the other 7 with the bundled hierarchies), k = 10:
GCP, classes, CPU of the partitioning and of the whole command, strict and relaxed.

    python benchmarks/mondrian.py [--runs 3] [--k 10] [--wide-rows 1000000]
        [--wide-engines 1000000]

Prints a table and writes benchmarks/results/mondrian.json. CPU times are medians of
``--runs`` runs: the partitioning's ``time.process_time`` in this process, and the whole
``anonlab generalize`` command's user + system CPU as a child process (release and report
written, verified).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult"
HIERARCHY_QIS = [
    "sex",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
]


def partitioning(k: int, relaxed: bool, runs: int) -> dict[str, float]:
    """Median CPU of the partitioning in this process, with its GCP and classes."""
    from anonlab.dataset import Dataset
    from anonlab.mondrian.method import flat_hierarchies, mondrian
    from anonlab.privacy import KAnonymity

    frame = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str, keep_default_na=False)
    qi = {c: str(ADULT / f"hierarchy_{c}.csv") for c in HIERARCHY_QIS}
    dataset = Dataset.from_frame(
        frame, flat_hierarchies(frame, qi, ["age"]), insensitive=["salary-class"]
    )
    seconds = []
    for _ in range(runs):
        result = mondrian(dataset, [KAnonymity(k)], ordered=["age"], relaxed=relaxed)
        seconds.append(result.seconds)
    summary = result.summary()
    return {
        "partitioning_cpu_s": statistics.median(seconds),
        "gcp": summary["loss"]["gcp"],
        "partitions": summary["mondrian"]["partitions"],
        "smallest_class": summary["mondrian"]["smallest_class"],
        "suppressed": summary["suppressed"],
    }


def wide(rows: int, columns: int = 50, k: int = 5) -> dict[str, float]:
    """Mondrian on a wide table of ``columns`` numeric QIs (integers 0-99, uniform, seed 0)
    and ``rows`` records, k-anonymity with ``k``, in this process: CPU of the partitioning
    and of the whole method (frequency set, partitioning, mapping, release frame)."""
    import numpy as np

    from anonlab.dataset import Dataset
    from anonlab.mondrian.method import flat_hierarchies, mondrian
    from anonlab.privacy import KAnonymity

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"q{j}": rng.integers(0, 100, rows).astype(str) for j in range(columns)})
    names = list(frame.columns)
    started = time.process_time()
    dataset = Dataset.from_frame(frame, flat_hierarchies(frame, {}, names))
    encoded = time.process_time()
    result = mondrian(dataset, [KAnonymity(k)], ordered=names)
    finished = time.process_time()
    summary = result.summary()
    return {
        "rows": rows,
        "columns": columns,
        "k": k,
        "encode_cpu_s": encoded - started,
        "partitioning_cpu_s": result.seconds,
        "method_cpu_s": finished - encoded,
        "partitions": summary["mondrian"]["partitions"],
        "smallest_class": summary["mondrian"]["smallest_class"],
        "gcp": summary["loss"]["gcp"],
    }


def wide_engines(rows: int, columns: int = 50, k: int = 5) -> list[dict[str, object]]:
    """The whole command on a Parquet table of ``columns`` numeric QIs x ``rows`` records
    (as :func:`wide`): in memory (a Parquet file output), on the NumPy engine (a folder
    output) and on Dask with 2 workers; CPU (user + system of the command and its workers),
    wall time, peak memory of the command, and the release's content hash, which must be
    one."""
    import hashlib

    import numpy as np

    rng = np.random.default_rng(0)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "wide.parquet"
        pd.DataFrame({f"q{j}": rng.integers(0, 100, rows) for j in range(columns)}).to_parquet(
            table
        )
        flags = [f"--qi=q{j}" for j in range(columns)]
        for name, extra in (
            ("memory", ["--output", f"{tmp}/memory.parquet"]),
            ("numpy", ["--output", f"{tmp}/numpy/"]),
            ("dask", ["--output", f"{tmp}/dask/", "--engine", "dask", "--workers", "2"]),
        ):
            args = [
                sys.executable, "-m", "anonlab", "generalize", str(table),
                "--recoding", "mondrian", *flags, "--k", str(k), "--quiet", *extra,
            ]  # fmt: skip
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            wall = time.perf_counter()
            subprocess.run(args, check=True)
            wall = time.perf_counter() - wall
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            release = pd.read_parquet(extra[1]).astype(str)
            digest = hashlib.sha256(
                pd.util.hash_pandas_object(release, index=False).to_numpy().tobytes()
            ).hexdigest()
            out.append(
                {
                    "run": name,
                    "rows": rows,
                    "columns": columns,
                    "k": k,
                    "cpu_s": (after.ru_utime - before.ru_utime)
                    + (after.ru_stime - before.ru_stime),
                    "wall_s": wall,
                    "peak_rss_mib_largest_child": after.ru_maxrss / 1024,
                    "release_sha256": digest,
                }
            )
    return out


def command(k: int, relaxed: bool, runs: int) -> float:
    """Median user + system CPU of the whole ``anonlab generalize`` command."""
    flags = [f"--qi={c}={ADULT / f'hierarchy_{c}.csv'}" for c in HIERARCHY_QIS]
    cpu = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(runs):
            args = [
                sys.executable,
                "-m",
                "anonlab",
                "generalize",
                str(ADULT / "adult.csv"),
                "--recoding",
                "mondrian",
                *(["--relaxed"] if relaxed else []),
                "--qi",
                "age",
                *flags,
                "--insensitive",
                "salary-class",
                "--k",
                str(k),
                "--output",
                os.path.join(tmp, f"out{i}.csv"),
                "--report",
                os.path.join(tmp, f"r{i}.json"),
                "--quiet",
            ]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(args, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument(
        "--wide-rows", type=int, default=0, help="also a 50-QI table of this many rows (k = 5)"
    )
    parser.add_argument(
        "--wide-engines",
        type=int,
        default=0,
        help="also the whole command on a 50-QI Parquet table of this many rows, in memory, "
        "on NumPy and on Dask (2 workers)",
    )
    args = parser.parse_args()
    rows = []
    for relaxed in (False, True):
        row = {"variant": "relaxed" if relaxed else "strict", "k": args.k}
        row.update(partitioning(args.k, relaxed, args.runs))
        row["command_cpu_s"] = command(args.k, relaxed, args.runs)
        rows.append(row)
    print(f"{'variant':8} {'GCP':>7} {'parts':>6} {'min':>4} {'part CPU s':>11} {'cmd CPU s':>10}")
    for r in rows:
        print(
            f"{r['variant']:8} {r['gcp']:7.4f} {r['partitions']:6d} {r['smallest_class']:4d} "
            f"{r['partitioning_cpu_s']:11.3f} {r['command_cpu_s']:10.3f}"
        )
    found: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d"),
        "runs": args.runs,
        "results": rows,
    }
    if args.wide_rows:
        table = wide(args.wide_rows)
        found["wide"] = table
        print(
            f"wide {table['rows']} x {table['columns']} QIs, k = {table['k']}: partitioning "
            f"{table['partitioning_cpu_s']:.1f} s CPU, method {table['method_cpu_s']:.1f} s, "
            f"encoding {table['encode_cpu_s']:.1f} s; {table['partitions']} partitions, "
            f"GCP {table['gcp']:.3f}"
        )
    if args.wide_engines:
        found["wide_engines"] = runs = wide_engines(args.wide_engines)
        for r in runs:
            print(
                f"{r['run']:7} {r['rows']} x {r['columns']}: {r['cpu_s']:.1f} s CPU, "
                f"{r['wall_s']:.1f} s wall, release {str(r['release_sha256'])[:12]}"
            )
    out = ROOT / "benchmarks" / "results" / "mondrian.json"
    out.write_text(json.dumps(found, indent=2) + "\n")


if __name__ == "__main__":
    main()
