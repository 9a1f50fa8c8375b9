"""``anonlab microaggregate --method onedims`` in memory and on both engines (issue 25).

A seeded table of ``--rows`` records and five numeric columns (``income``: gamma, two
decimals; ``age``: whole years, long runs of ties; ``hours``: one decimal; ``wealth``:
lognormal, three decimals; ``score``: normal, two decimals, with signed zeros) and a
stratum ``region`` (one of four) is written once under ``--data`` as ``parts/`` (4 Parquet
parts). Individual ranking masks the five columns with ``k = 3`` and ``--aggr`` (default
mean) within ``--strata`` (default ``region``).

Each command runs as a fresh process (``python -m anonlab microaggregate ...``)
``--repeats`` times per way, all reading the same parts: in memory (a Parquet file out),
the NumPy engine (a folder out) and Dask (``--engine dask``: a local cluster of its
default size, a folder out). CPU is user + system time of the command and every process
it started (its Dask workers included), the median of the repeats; peak memory the
largest resident set among them. The releases of the three ways are compared by a
content hash of their rows as text (the one reader's). Results:
``benchmarks/results/engines_onedims.json``; with ``--no-verify`` (the runs skip the
independent check, which reads the input and the release back whole up to 2,000,000
records) ``benchmarks/results/engines_onedims_no_verify.json``.

    python benchmarks/engines_onedims.py --rows 1000000 --repeats 3
    python benchmarks/engines_onedims.py --rows 1000000 --repeats 3 --no-verify
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from _engine_runs import figures, measured_way, write_parts

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ["income", "age", "hours", "wealth", "score"]


def make_table(rows: int) -> pd.DataFrame:
    """The benchmark's table (module text), drawn from ``default_rng(25)``."""
    rng = np.random.default_rng(25)
    return pd.DataFrame(
        {
            "income": rng.gamma(4.0, 12.5, rows).round(2),
            "age": rng.integers(18, 95, rows).astype(float),
            "hours": rng.normal(38.0, 9.0, rows).round(1),
            "wealth": rng.lognormal(3.0, 1.2, rows).round(3),
            "score": rng.normal(0.0, 1.0, rows).round(2),
            "region": rng.choice(["north", "south", "east", "west"], rows),
        }
    )


def command(
    way: str, data: Path, out: Path, aggr: str, strata: str, verify: bool = True
) -> list[str]:
    """The command line of one run."""
    output = str(out / "release.parquet") if way == "memory" else f"{out / 'release'}/"
    engine = ["--engine", "dask"] if way == "dask" else []
    return [
        sys.executable,
        "-m",
        "anonlab",
        "microaggregate",
        str(data / "parts"),
        "--method",
        "onedims",
        "--aggr",
        aggr,
        *(["--strata", strata] if strata else []),
        "--columns",
        ",".join(COLUMNS),
        "--k",
        "3",
        "--other",
        "insensitive",
        *engine,
        *([] if verify else ["--no-verify"]),
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
    parser.add_argument("--aggr", default="mean")
    parser.add_argument("--strata", default="region")
    parser.add_argument("--ways", nargs="+", default=["memory", "numpy", "dask"])
    parser.add_argument("--no-verify", action="store_true", help="runs without the check")
    parser.add_argument("--data", type=Path, default=Path("/tmp/anonlab-engines-onedims"))
    args = parser.parse_args()
    data = args.data / f"table-{args.rows}"
    if not (data / "parts").exists():
        write_parts(make_table(args.rows), data)
    results: dict[str, Any] = {
        "rows": args.rows,
        "columns": COLUMNS,
        "aggr": args.aggr,
        "strata": args.strata,
        "repeats": args.repeats,
        "verify": not args.no_verify,
        "runs": {},
    }
    print(f"{'way':7} {'CPU s':>8} {'wall s':>8} {'peak MiB':>9}  release")
    for way in args.ways:
        run = measured_way(
            lambda out, way=way: command(
                way, data, out, args.aggr, args.strata, not args.no_verify
            ),
            way,
            args.data / f"out-{way}",
            args.repeats,
        )
        results["runs"][way] = run
        print(f"{way:7} {figures(run)}")
    name = "engines_onedims_no_verify" if args.no_verify else "engines_onedims"
    target = ROOT / "benchmarks" / "results" / f"{name}.json"
    target.write_text(json.dumps(results, indent=2) + "\n")
    print(f"saved {target}")


if __name__ == "__main__":
    main()
