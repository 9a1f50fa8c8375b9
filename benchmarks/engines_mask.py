"""``anonlab mask`` in memory and on both engines (issue 25, "On the engines").

A seeded table of ``--rows`` records (``income`` and ``age`` numbers, ``roof`` one of
five levels, ``region`` one of four) is written once under ``--data`` as ``parts/`` (4
Parquet parts). Each method that runs on the engines masks it:

- ``topbot``: ``income`` and ``age``, top 80, bottom 20;
- ``recode``: ``income`` and ``age`` by the breaks 0, 20, ..., 200;
- ``pram``: ``roof`` by a given 5 x 5 matrix (0.8 on the diagonal), seed 7;
- ``noise``: additive noise of 50 % on ``income`` and ``age``, seed 7.

Each command runs as a fresh process (``python -m anonlab mask ...``) ``--repeats``
times per way, all reading the same parts (a CSV's ``45.0`` and a double's ``45`` are
different texts): in memory (a CSV out), the NumPy engine (a folder out) and Dask
(``--engine dask``: a local cluster of its default size, a folder out). CPU is user +
system time of the command and every process it started
(its Dask workers included), the median of the repeats; peak memory the largest resident
set among them. The releases of the three ways are compared by a content hash of their
rows as text (the one reader's). Results: ``benchmarks/results/engines_mask.json``.

    python benchmarks/engines_mask.py --rows 1000000 --repeats 3
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
LEVELS = ["1", "2", "3", "4", "5"]

#: runs a command, then prints the CPU time and the largest resident set of the command and
#: of every process it started (a fresh process's RUSAGE_CHILDREN: that tree alone)
_MEASURE = """
import json, resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"cpu_s": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024}))
sys.exit(code)
"""


def make_table(rows: int) -> pd.DataFrame:
    """The benchmark's table (module text), drawn from ``default_rng(25)``."""
    rng = np.random.default_rng(25)
    return pd.DataFrame(
        {
            "income": rng.gamma(4.0, 12.5, rows).round(2).clip(0.01, 199.99),
            "age": rng.integers(18, 95, rows),
            "roof": rng.choice(LEVELS, rows, p=[0.4, 0.25, 0.15, 0.12, 0.08]),
            "region": rng.choice(["north", "south", "east", "west"], rows),
        }
    )


def write_inputs(frame: pd.DataFrame, folder: Path) -> None:
    """``frame`` as ``parts/`` (4 Parquet parts), and the PRAM matrix."""
    folder.mkdir(parents=True, exist_ok=True)
    parts = folder / "parts"
    parts.mkdir(exist_ok=True)
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 4)):
        frame.iloc[rows].to_parquet(parts / f"part-{i}.parquet", index=False)
    matrix = np.full((5, 5), 0.05) + np.eye(5) * 0.75
    lines = [",".join(["", *LEVELS])]
    for level, row in zip(LEVELS, matrix, strict=True):
        lines.append(",".join([level, *(f"{v:g}" for v in row)]))
    (folder / "matrix.csv").write_text("\n".join(lines) + "\n")


def method_args(method: str, data: Path) -> list[str]:
    """The ``mask`` flags of one method (module text)."""
    numbers = ["--columns", "income,age"]
    if method == "topbot":
        return ["--method", "topbot", *numbers, "--top", "80", "--bottom", "20"]
    if method == "recode":
        breaks = ",".join(str(b) for b in range(0, 201, 20))
        return ["--method", "recode", *numbers, "--breaks", breaks]
    if method == "pram":
        matrix = str(data / "matrix.csv")
        return ["--method", "pram", "--columns", "roof", "--matrix", matrix, "--seed", "7"]
    return ["--method", "noise", *numbers, "--noise", "50", "--seed", "7"]


def command(method: str, way: str, data: Path, out: Path) -> list[str]:
    """The command line of one run."""
    source = str(data / "parts")
    output = str(out / "release.csv") if way == "memory" else f"{out / 'release'}/"
    engine = ["--engine", "dask"] if way == "dask" else []
    return [
        sys.executable,
        "-m",
        "anonlab",
        "mask",
        source,
        *method_args(method, data),
        "--other",
        "insensitive",
        *engine,
        "--output",
        output,
        "--report",
        str(out / "report.json"),
        "--quiet",
    ]


def measured(cmd: list[str]) -> dict[str, Any]:
    """Wall, CPU and peak memory of ``cmd`` run in a fresh measuring process."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[3:8])} failed:\n{proc.stderr[-3000:]}")
    usage = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"wall_s": wall, **usage, "load": [round(load, 2), round(os.getloadavg()[0], 2)]}


def release_hash(out: Path) -> str:
    """SHA-256 of the release's rows as text (the one reader, a CSV or parts alike)."""
    from anonlab.io import read_table

    target = out / "release.csv" if (out / "release.csv").exists() else out / "release"
    return hashlib.sha256(read_table(target).to_csv(index=False).encode()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=["topbot", "recode", "pram", "noise"])
    parser.add_argument("--ways", nargs="+", default=["memory", "numpy", "dask"])
    parser.add_argument("--data", type=Path, default=Path("/tmp/anonlab-engines-mask"))
    args = parser.parse_args()
    data = args.data / f"table-{args.rows}"
    if not (data / "parts").exists():
        write_inputs(make_table(args.rows), data)
    results: dict[str, Any] = {"rows": args.rows, "repeats": args.repeats, "runs": {}}
    print(f"{'method':7} {'way':7} {'CPU s':>8} {'wall s':>8} {'peak MiB':>9}  release")
    for method in args.methods:
        for way in args.ways:
            runs, digest = [], ""
            for _ in range(args.repeats):
                out = args.data / f"out-{method}-{way}"
                shutil.rmtree(out, ignore_errors=True)
                out.mkdir(parents=True)
                runs.append(measured(command(method, way, data, out)))
                digest = release_hash(out)
            cpu = statistics.median(r["cpu_s"] for r in runs)
            wall = statistics.median(r["wall_s"] for r in runs)
            peak = max(r["peak_mib"] for r in runs)
            results["runs"][f"{method}/{way}"] = {
                "cpu_s": cpu,
                "wall_s": wall,
                "peak_mib": peak,
                "release_sha256": digest,
                "each": runs,
            }
            print(f"{method:7} {way:7} {cpu:8.1f} {wall:8.1f} {peak:9.0f}  {digest[:12]}")
    target = ROOT / "benchmarks" / "results" / "engines_mask.json"
    target.write_text(json.dumps(results, indent=2) + "\n")
    print(f"saved {target}")


if __name__ == "__main__":
    main()
