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
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from _engine_runs import figures, measured_way, write_parts

ROOT = Path(__file__).resolve().parents[1]
LEVELS = ["1", "2", "3", "4", "5"]


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
    write_parts(frame, folder)
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
            run = measured_way(
                partial(command, method, way, data),
                f"{method}/{way}",
                args.data / f"out-{method}-{way}",
                args.repeats,
            )
            results["runs"][f"{method}/{way}"] = run
            print(f"{method:7} {way:7} {figures(run)}")
    target = ROOT / "benchmarks" / "results" / "engines_mask.json"
    target.write_text(json.dumps(results, indent=2) + "\n")
    print(f"saved {target}")


if __name__ == "__main__":
    main()
