"""``suppress`` and ``generalize --recoding local`` at a million records, in memory and on both
engines (issues 23 and 24).

Tables (seeded, written once under ``--data``):

- suppress: :func:`benchmarks.suppress.make_table`'s table (sdcMicro's testdata key tuples
  drawn with replacement, 10 % of the cells redrawn from their column) at ``--rows``
  records, 8 keys, k = 3;
- local: ``--rows`` records whose every column is drawn on its own from Adult's (age, sex,
  marital-status, education, race with the bundled hierarchies; occupation and salary-class
  insensitive), so that rare combinations abound, k = 5, suppression 50 %, ARX's loss metric
  with gs factor 0.5, then ARX's local defaults.

Each command runs as a fresh process (``python -m anonlab ...``) ``--repeats`` times per way:
in memory (CSV in, CSV out), the NumPy engine (a folder of 4 Parquet parts in, a folder out)
and Dask (the same folder, ``--workers 2 --memory-limit 2GB``, a folder out). CPU is user +
system time of the command and every process it started (its Dask workers included), the
median of the repeats; peak memory is the largest resident set among them. The releases of
the three ways are compared by a content hash of their rows as text.

    python benchmarks/engines_local_suppress.py --rows 1000000 --repeats 3
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from _engine_runs import figures, measured_way, write_parts

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult"
LOCAL_QI = ["age", "sex", "marital-status", "education", "race"]


def _suppress_table(rows: int) -> pd.DataFrame:
    spec = importlib.util.spec_from_file_location(
        "suppress_bench", ROOT / "benchmarks" / "suppress.py"
    )
    if spec is None or spec.loader is None:
        raise RuntimeError("benchmarks/suppress.py not found")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table: pd.DataFrame = module.make_table(rows, 0.1, 0).astype(str)
    return table


def _local_table(rows: int) -> pd.DataFrame:
    adult = pd.read_csv(ADULT / "adult.csv", sep=";", dtype=str, keep_default_na=False)
    rng = np.random.default_rng(0)
    columns = [*LOCAL_QI, "occupation", "salary-class"]
    # each column drawn on its own from Adult's: rare combinations, so that the full-domain
    # optimum suppresses records and the searches on them have work
    return pd.DataFrame(
        {c: adult[c].to_numpy()[rng.integers(0, len(adult), size=rows)] for c in columns}
    )


def write_inputs(frame: pd.DataFrame, folder: Path) -> None:
    """``frame`` as ``in.csv`` and as ``parts/`` (4 Parquet parts) under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / "in.csv", index=False)
    write_parts(frame, folder)


def command(family: str, way: str, data: Path, out: Path) -> list[str]:
    """The command line of one run."""
    source = str(data / ("in.csv" if way == "memory" else "parts"))
    output = str(out / "release.csv") if way == "memory" else f"{out / 'release'}/"
    engine = {"memory": [], "numpy": [], "dask": ["--engine", "dask", "--workers", "2"]}[way]
    if way == "dask":
        engine += ["--memory-limit", "2GB"]
    if family == "suppress":
        keys = "urbrur,roof,walls,water,electcon,relat,sex,hhcivil"
        args = ["suppress", source, "--qi", keys, "--k", "3", "--other", "insensitive"]
    else:
        args = ["generalize", source]
        for c in LOCAL_QI:
            args += ["--qi", f"{c}={ADULT / f'hierarchy_{c}.csv'}"]
        args += [
            "--insensitive",
            "occupation,salary-class",
            "--k",
            "5",
            "--suppression",
            "50%",
            "--metric",
            "loss",
            "--gs-factor",
            "0.5",
            "--recoding",
            "local",
        ]
    report = str(out / "report.json")
    return [sys.executable, "-m", "anonlab", *args, *engine, "--output", output,
            "--report", report, "--quiet"]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--families", nargs="+", default=["suppress", "local"])
    parser.add_argument("--ways", nargs="+", default=["memory", "numpy", "dask"])
    parser.add_argument("--data", type=Path, default=Path("/tmp/anonlab-engines-local-suppress"))
    args = parser.parse_args()
    results: dict[str, Any] = {"rows": args.rows, "repeats": args.repeats, "runs": {}}
    print(f"{'family':9} {'way':7} {'CPU s':>8} {'wall s':>8} {'peak MiB':>9}  release")
    for family in args.families:
        data = args.data / f"{family}-{args.rows}"
        if not (data / "parts").exists():
            frame = _suppress_table(args.rows) if family == "suppress" else _local_table(args.rows)
            write_inputs(frame, data)
        for way in args.ways:
            run = measured_way(
                partial(command, family, way, data),
                f"{family}/{way}",
                args.data / f"out-{family}-{way}",
                args.repeats,
            )
            results["runs"][f"{family}/{way}"] = run
            print(f"{family:9} {way:7} {figures(run)}")
    target = ROOT / "benchmarks" / "results" / "engines_local_suppress.json"
    target.write_text(json.dumps(results, indent=2) + "\n")
    print(f"saved {target}")


if __name__ == "__main__":
    main()
