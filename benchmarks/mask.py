"""PRAM, top/bottom coding and recoding at 100,000 records x 10 columns against sdcMicro.

Two seeded tables of ``--rows`` records: ten categorical columns (column ``j`` has
``3 + j`` levels with shares proportional to ``1 / rank``) for PRAM, and ten numeric
columns (log-normal, two decimals) for top/bottom coding and recoding. Each method masks
all ten columns. For every method, in one loop, CPU time (user + system) of:

- anonlab's method alone (the registered function: the masked columns from the table),
  ``anonlab.mask`` on the table as numbers (what sdcMicro gets from ``read.csv``: the
  method plus the release frame and the parameters' checks) and on the table as text (as
  the run reads it): the first call in this process and the median of ``--repeats``;
- sdcMicro 5.8.1 with ``--sdcmicro DIR`` (a checkout of its public repository; nothing
  of it is kept here): one ``Rscript`` per method that sources ``pramWORK``,
  ``inputs_pram``, ``globalRecodeWORK`` and ``topBotCodingWORK`` from ``DIR/R`` and times
  ``--repeats`` calls (``proc.time``, the CSV read and factors made before the clock): the
  first call (R compiles a function to byte code on its first calls) and the median of
  the others, as anonlab's;
- with ``--command``, the whole ``anonlab mask`` command once (read the CSV, mask, write,
  re-read and check, measures, risk, report), CPU of the child process, for these methods
  and for noise, rank swapping and shuffling (benchmarks/mask_numeric.py measures those
  methods themselves).

Target (issue 25): anonlab's CPU at most a tenth of sdcMicro's for each method.

    python benchmarks/mask.py --repeats 7 --sdcmicro /path/to/sdcMicro --command
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import anonlab
from _rscript import run_driver
from anonlab.io import read_table
from anonlab.masking.registry import get_method, method_params

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("pram", "pram_matrix", "topbot", "recode")
#: the whole command's runs beyond this script's methods: (name, flags)
COMMANDS: dict[str, list[str]] = {
    "pram": ["--method", "pram", "--seed", "1"],
    "topbot": ["--method", "topbot", "--top", "1000"],
    "recode": ["--method", "recode", "--breaks", "10"],
    "noise additive": ["--method", "noise", "--noise", "150", "--seed", "1"],
    "noise outdect": [
        "--method",
        "noise",
        "--noise-method",
        "outdect",
        "--noise",
        "150",
        "--seed",
        "1",
    ],
    "rankswap": ["--method", "rankswap", "--seed", "1"],
    "shuffle ds": ["--method", "shuffle", "--predictors", "x7,x8,x9", "--seed", "1"],
}

R_DRIVER = r"""
suppressMessages(library(data.table))
a <- commandArgs(TRUE)
src <- a[1]; csv <- a[2]; method <- a[3]; cols <- strsplit(a[4], ",")[[1]]; extra <- a[5]
reps <- as.integer(a[6])
take <- function(file, pattern) {
  for (e in parse(file)) if (is.call(e) && identical(e[[1]], as.name("<-")) &&
      grepl(pattern, deparse(e[[2]])[1])) eval(e, globalenv())
}
take(file.path(src, "R", "pram.R"), "^(pramWORK|inputs_pram)$")
take(file.path(src, "R", "globalRecode.R"), "^globalRecodeWORK$")
take(file.path(src, "R", "topBotCoding.R"), "^topBotCodingWORK$")
d0 <- read.csv(csv)
if (startsWith(method, "pram")) for (c in cols) d0[[c]] <- factor(d0[[c]])
mats <- NULL
if (method == "pram_matrix") {
  mats <- lapply(cols, function(c) {
    m <- as.matrix(read.csv(file.path(extra, paste0(c, ".csv")), row.names = 1,
                            check.names = FALSE))
    rownames(m) <- colnames(m) <- levels(d0[[c]]); m })
}
run <- function(d) {
  if (method == "pram") {
    p <- inputs_pram(pd = 0.8, alpha = 0.5, levList = lapply(d[, cols], levels))
    pramWORK(data = d, variables = cols, params = p)
  } else if (method == "pram_matrix") {
    p <- inputs_pram(pd = mats, alpha = rep(NA_real_, length(cols)),
                     levList = lapply(d[, cols], levels))
    pramWORK(data = d, variables = cols, params = p)
  } else if (method == "topbot") {
    for (c in cols) d[[c]] <- topBotCodingWORK(d[[c]], as.numeric(extra),
                                               as.numeric(extra), kind = "top")
    d
  } else {
    for (c in cols) d[[c]] <- globalRecodeWORK(d[[c]], breaks = as.integer(extra),
                                               method = "equidistant")
    d
  }
}
for (r in seq_len(reps)) {
  set.seed(r); d <- d0
  t0 <- proc.time(); out <- run(d); t <- proc.time() - t0
  cat("CPU", t[["user.self"]] + t[["sys.self"]], "\n")
}
"""


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


def parameters(method: str, args: argparse.Namespace, files: dict[str, str]) -> dict[str, Any]:
    """The method's name in the registry and its parameters."""
    if method == "pram":
        return {}
    if method == "pram_matrix":
        return {"matrix": files}
    if method == "topbot":
        return {"top": args.top}
    return {"breaks": args.intervals}


def cpu_times(call: Callable[[], object], repeats: int) -> tuple[float, float]:
    """The first call's CPU seconds and the median of ``repeats`` more."""
    started = time.process_time()
    call()
    first = time.process_time() - started
    times = []
    for _ in range(repeats):
        started = time.process_time()
        call()
        times.append(time.process_time() - started)
    return first, statistics.median(times)


def sdcmicro_times(
    source: Path, csv: Path, method: str, columns: list[str], extra: str, repeats: int
) -> tuple[float, float]:
    """sdcMicro's first call and the median of the next ``repeats`` (module text)."""
    printed = run_driver(R_DRIVER, (source, csv, method, ",".join(columns), extra, repeats + 1))
    times = [float(line.split()[1]) for line in printed.splitlines() if line.startswith("CPU")]
    return times[0], statistics.median(times[1:])


def command_cpu(csv: Path, columns: str, flags: list[str], folder: Path) -> dict[str, float]:
    """The whole ``anonlab mask`` command once: CPU of the child, and wall seconds."""
    out = folder / "out"
    out.mkdir(exist_ok=True)
    for old in out.iterdir():
        old.unlink()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "anonlab",
            "mask",
            str(csv),
            "--columns",
            columns,
            *flags,
            "--other",
            "insensitive",
            "--output",
            str(out / "release.csv"),
            "--report",
            str(out / "report.json"),
        ],
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3)}


def measure(
    method: str,
    args: argparse.Namespace,
    tables: dict[str, pd.DataFrame],
    texts: dict[str, pd.DataFrame],
    csvs: dict[str, Path],
    files: dict[str, str],
    folder: Path,
) -> dict[str, Any]:
    """One method's figures (module text)."""
    kind = "categorical" if method.startswith("pram") else "numeric"
    name = "pram" if method.startswith("pram") else method
    table = tables[kind]
    columns = list(map(str, table.columns))
    params = parameters(method, args, files)
    chosen = get_method(name)
    checked = method_params(chosen, params)
    seed = 1 if chosen.randomized else None
    row: dict[str, Any] = {"method": method, "rows": args.rows, "columns": 10}
    calls: dict[str, Callable[[], object]] = {
        "method": lambda: chosen.apply(table, columns, checked, seed),
        "mask": lambda: anonlab.mask(table, name, columns, seed=seed, **params),
        "mask_text": lambda: anonlab.mask(texts[kind], name, columns, seed=seed, **params),
    }
    for label, call in calls.items():
        first, median = cpu_times(call, args.repeats)
        row[f"anonlab_{label}_first_s"] = round(first, 4)
        row[f"anonlab_{label}_s"] = round(median, 4)
    if args.sdcmicro is not None:
        extra = {
            "pram": "-",
            "pram_matrix": str(folder),
            "topbot": repr(args.top),
            "recode": str(args.intervals),
        }[method]
        first, warm = sdcmicro_times(
            args.sdcmicro, csvs[kind], method, columns, extra, args.repeats
        )
        row["sdcmicro_first_s"] = round(first, 4)
        row["sdcmicro_s"] = round(warm, 4)
        for label in ("method", "mask"):
            row[f"ratio_{label}"] = round(warm / max(row[f"anonlab_{label}_s"], 1e-9), 1)
            row[f"ratio_{label}_first"] = round(
                first / max(row[f"anonlab_{label}_first_s"], 1e-9), 1
            )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--top", type=float, default=1000.0)
    parser.add_argument("--intervals", type=int, default=10)
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--sdcmicro", type=Path, default=None, help="sdcMicro checkout")
    parser.add_argument(
        "--command", action="store_true", help="also time the whole `anonlab mask` command"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/mask.json")
    args = parser.parse_args()
    categorical, numeric = make_tables(args.rows, args.seed)
    results: list[dict[str, Any]] = []
    commands: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = write_matrices(folder, categorical)
        csvs = {"categorical": folder / "categorical.csv", "numeric": folder / "numeric.csv"}
        categorical.to_csv(csvs["categorical"], index=False)
        numeric.to_csv(csvs["numeric"], index=False)
        tables = {"categorical": categorical, "numeric": numeric}
        texts = {kind: read_table(path) for kind, path in csvs.items()}
        for method in args.methods:
            row = measure(method, args, tables, texts, csvs, files, folder)
            results.append(row)
            print(
                f"{method:12s} anonlab method {row['anonlab_method_s']} s (first "
                f"{row['anonlab_method_first_s']}), mask {row['anonlab_mask_s']} s, on text "
                f"{row['anonlab_mask_text_s']} s"
                + (
                    f"; sdcMicro {row['sdcmicro_s']} s (first {row['sdcmicro_first_s']}); "
                    f"sdcMicro / anonlab: method {row['ratio_method']} "
                    f"(first calls {row['ratio_method_first']}), mask {row['ratio_mask']}"
                    if "sdcmicro_s" in row
                    else ""
                )
            )
        if args.command:
            for label, flags in COMMANDS.items():
                kind = "categorical" if label == "pram" else "numeric"
                columns = ",".join(map(str, tables[kind].columns))
                if label == "shuffle ds":
                    columns = ",".join(f"x{j}" for j in range(7))
                commands[label] = command_cpu(csvs[kind], columns, flags, folder)
                print(f"anonlab mask ({label}): {commands[label]}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "repeats": args.repeats,
                "cpu": "CPU seconds (user + system); first call, and median of the repeats",
                "rows": results,
                "commands": commands,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
