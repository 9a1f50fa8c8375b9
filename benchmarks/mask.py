"""The masking methods at 100,000 records x 10 columns against sdcMicro (issue 25).

Two seeded tables of ``--rows`` records: ten categorical columns (column ``j`` has
``3 + j`` levels with shares proportional to ``1 / rank``) for PRAM, and ten numeric
columns (log-normal, two decimals) for top/bottom coding and recoding. Each method
masks all ten columns, ``--repeats`` times, in this process (``anonlab.mask`` on the
table in memory, as numbers, as sdcMicro gets them from ``read.csv``, and as text, as
the run reads them; CPU time of this process, median):

- ``pram``: invariant PRAM, sdcMicro's defaults ``pd = 0.8``, ``alpha = 0.5``;
- ``pram_matrix``: PRAM with a given matrix per column (0.8 on the diagonal, the rest
  spread evenly);
- ``topbot``: every value above ``--top`` replaced by it;
- ``recode``: ``--intervals`` equidistant intervals (``breaks`` a count).

With ``--sdcmicro-r SCRIPT`` the same CSV goes to ``Rscript SCRIPT CSV METHOD COLUMNS
EXTRA`` once per repeat: a script that sources sdcMicro 5.8.1's ``pramWORK``,
``inputs_pram``, ``globalRecodeWORK`` and ``topBotCodingWORK`` and prints ``CPU
<seconds>`` of the method's calls alone (reading the CSV and making factors not
counted; docs/masking.md, "Measuring sdcMicro"). Without it the sdcMicro figures of
:data:`RECORDED` (same tables, same machine) are shown.

Target: anonlab's CPU at most a tenth of sdcMicro's for each method.

    python benchmarks/mask.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import anonlab
from anonlab.io import read_table

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("pram", "pram_matrix", "topbot", "recode")
#: sdcMicro 5.8.1 (R 4.2.2, data.table) on this machine by ``--sdcmicro-r`` on the default
#: tables (100,000 x 10, seed 25): method -> median CPU seconds of 3 runs
RECORDED: dict[str, float] = {
    "pram": 5.099,
    "pram_matrix": 4.977,
    "topbot": 0.019,
    "recode": 0.08,
}


def make_tables(rows: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The categorical and the numeric table (module text)."""
    rng = np.random.default_rng(seed)
    categorical = {}
    for j in range(10):
        levels = 3 + j
        shares = 1 / np.arange(1, levels + 1)
        categorical[f"c{j}"] = rng.choice(levels, size=rows, p=shares / shares.sum()) + 1
    numeric = {f"x{j}": np.round(rng.lognormal(5, 1, size=rows), 2) for j in range(10)}
    return pd.DataFrame(categorical), pd.DataFrame(numeric)


def write_matrices(folder: Path, table: pd.DataFrame) -> dict[str, str]:
    """One transition matrix file per column: 0.8 on the diagonal, the rest even."""
    files = {}
    for name in table.columns:
        levels = sorted(table[name].unique())
        size = len(levels)
        matrix = np.full((size, size), 0.2 / (size - 1))
        np.fill_diagonal(matrix, 0.8)
        frame = pd.DataFrame(
            matrix, index=[str(v) for v in levels], columns=[str(v) for v in levels]
        )
        path = folder / f"{name}.csv"
        frame.to_csv(path, float_format="%.17g")
        files[str(name)] = str(path)
    return files


def anonlab_call(
    method: str, table: pd.DataFrame, args: argparse.Namespace, files: dict[str, str]
) -> Any:
    columns = list(map(str, table.columns))
    if method == "pram":
        return anonlab.mask(table, "pram", columns, seed=1)
    if method == "pram_matrix":
        return anonlab.mask(table, "pram", columns, seed=1, matrix=files)
    if method == "topbot":
        return anonlab.mask(table, "topbot", columns, top=args.top)
    return anonlab.mask(table, "recode", columns, breaks=args.intervals)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--top", type=float, default=1000.0)
    parser.add_argument("--intervals", type=int, default=10)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--sdcmicro-r", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/mask.json")
    args = parser.parse_args()
    categorical, numeric = make_tables(args.rows, args.seed)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = write_matrices(folder, categorical)
        csvs = {"categorical": folder / "categorical.csv", "numeric": folder / "numeric.csv"}
        categorical.to_csv(csvs["categorical"], index=False)
        numeric.to_csv(csvs["numeric"], index=False)
        # the tables as numbers (as sdcMicro gets them from read.csv), and as the one reader
        # reads them (text), as a run hands them to the method
        tables = {"categorical": categorical, "numeric": numeric}
        texts = {kind: read_table(path) for kind, path in csvs.items()}
        for method in args.methods:
            kind = "categorical" if method.startswith("pram") else "numeric"
            table = tables[kind]
            cpu, text_cpu = [], []
            for _ in range(args.repeats):
                started = time.process_time()
                anonlab_call(method, table, args, files)
                cpu.append(time.process_time() - started)
                started = time.process_time()
                anonlab_call(method, texts[kind], args, files)
                text_cpu.append(time.process_time() - started)
            sdc_cpu, source = RECORDED.get(method), "recorded" if method in RECORDED else None
            if args.sdcmicro_r is not None:
                extra = {
                    "pram": "-",
                    "pram_matrix": str(folder),
                    "topbot": repr(args.top),
                    "recode": str(args.intervals),
                }[method]
                measured = []
                for _ in range(args.repeats):
                    out = subprocess.run(
                        [
                            "Rscript",
                            str(args.sdcmicro_r),
                            str(csvs[kind]),
                            method,
                            ",".join(map(str, table.columns)),
                            extra,
                        ],
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
                    measured.append(float(lines["CPU"]))
                sdc_cpu, source = statistics.median(measured), "measured"
            median = statistics.median(cpu)
            row = {
                "method": method,
                "rows": args.rows,
                "columns": 10,
                "anonlab_cpu_s": round(median, 4),
                "anonlab_text_cpu_s": round(statistics.median(text_cpu), 4),
                "sdcmicro_cpu_s": sdc_cpu,
                "sdcmicro_source": source,
                "ratio": None if sdc_cpu is None else round(sdc_cpu / max(median, 1e-9), 1),
            }
            results.append(row)
            print(
                f"{method:12s} {args.rows} x 10: anonlab {row['anonlab_cpu_s']} s CPU (on text "
                f"{row['anonlab_text_cpu_s']} s); sdcMicro "
                f"{sdc_cpu} s ({source}); sdcMicro / anonlab {row['ratio']}"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"repeats": args.repeats, "rows": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
