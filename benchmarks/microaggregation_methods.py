"""Microaggregation methods other than MDAV against sdcMicro 5.8.1, CPU time.

Target (issue 25): at least 10 times cheaper than sdcMicro single-threaded at 100,000
records x 10 columns for each method. The table: 10 correlated log-normal columns (``exp``
of a normal with correlation 0.5 between columns, seed 1; the table of
benchmarks/mask_numeric.py), k = 3. sdcMicro runs in ``Rscript`` with
``OPENBLAS_NUM_THREADS=1``, its R function ``microaggregationWORK`` taken from a checkout of
its public repository (``--sdcmicro DIR``, the repository's root; nothing of it is kept
here), with cluster and robustbase loaded as its package does, timed by ``proc.time()``
(user + system CPU) around the call; anonlab is ``anonlab.microaggregate`` on a DataFrame
(the table model, the method, the release frame and its SSE/SST) in this process with one
BLAS thread, timed by ``time.process_time``. Every figure is the median of ``--repeats``
runs. sdcMicro's rmd builds the n x n distance matrix (80 GB at 100,000 records): both run
it at ``--rmd-rows`` records, and anonlab at 100,000 as well. Results:
benchmarks/results/microaggregation_methods.json.

    python benchmarks/microaggregation_methods.py --sdcmicro /path/to/sdcMicro
    python benchmarks/microaggregation_methods.py --rows 20000 --repeats 1   # anonlab only
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

import anonlab
from _rscript import run_driver, tab_figures
from anonlab.threads import blas_threads

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "microaggregation_methods.json"

#: (method, aggregate) pairs timed at full size: every method with sdcMicro's default
#: aggregate (its median and one-step loops run per group and per record in R, minutes at
#: this size; not timed here)
CASES = [
    ("onedims", "mean"),
    ("pca", "mean"),
    ("clustpca", "mean"),
    ("influence", "mean"),
]

R_DRIVER = r"""
suppressMessages({library(cluster); library(robustbase)})
args <- commandArgs(TRUE); src <- args[1]; data <- args[2]; reps <- as.integer(args[3])
rmd_rows <- as.integer(args[4]); cases <- strsplit(args[5], ",")[[1]]
take <- function(file, name) {
  for (e in parse(file)) if (is.call(e) && identical(e[[1]], as.name("<-")) &&
      identical(as.character(e[[2]]), name)) eval(e, globalenv())
}
take(file.path(src, "R", "microaggregation.R"), "microaggregationWORK")
x <- read.csv(data)
cpu <- function(f) {
  t0 <- proc.time(); f(); t <- proc.time() - t0; t[["user.self"]] + t[["sys.self"]]
}
med <- function(f) median(sapply(seq_len(reps), function(r) { set.seed(r); cpu(f) }))
for (case in cases) {
  mm <- strsplit(case, ":")[[1]]
  s <- med(function() microaggregationWORK(x, variables=colnames(x), aggr=3, method=mm[1],
    measure=mm[2]))
  cat(paste(mm[1], mm[2]), "\t", s, "\n", sep="")
}
small <- x[seq_len(rmd_rows), ]
s <- med(function() microaggregationWORK(small, variables=colnames(small), aggr=3,
  method="rmd"))
cat("rmd mean (rmd rows)\t", s, "\n", sep="")
"""


def table(rows: int, columns: int = 10) -> NDArray[np.float64]:
    """Correlated log-normal columns (correlation 0.5 on the log scale), seed 1."""
    rng = np.random.default_rng(1)
    corr = np.full((columns, columns), 0.5) + 0.5 * np.eye(columns)
    z = rng.standard_normal((rows, columns)) @ np.linalg.cholesky(corr).T
    return np.exp(z) * 1000.0


def _median_cpu(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return statistics.median(times)


def anonlab_times(frame: pd.DataFrame, repeats: int, rmd_rows: int) -> dict[str, float]:
    """anonlab's CPU seconds per method (one BLAS thread)."""

    def run(data: pd.DataFrame, method: str, aggr: str) -> Callable[[], object]:
        seed = 1 if method == "rmd" else None  # the one method that draws random numbers
        return lambda: anonlab.microaggregate(data, k=3, method=method, aggr=aggr, seed=seed)

    out: dict[str, float] = {}
    with blas_threads(1):
        for method, aggr in CASES:
            out[f"{method} {aggr}"] = _median_cpu(run(frame, method, aggr), repeats)
        out["rmd mean (rmd rows)"] = _median_cpu(run(frame.head(rmd_rows), "rmd", "mean"), repeats)
        out["rmd mean (all rows)"] = _median_cpu(run(frame, "rmd", "mean"), repeats)
    return out


def sdcmicro_times(
    frame: pd.DataFrame, source: Path, repeats: int, rmd_rows: int
) -> dict[str, float]:
    """sdcMicro's CPU seconds per method, single-threaded (module docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "x.csv"
        frame.to_csv(data, index=False, float_format="%.10g")
        cases = ",".join(f"{m}:{a}" for m, a in CASES)
        printed = run_driver(R_DRIVER, (source, data, repeats, rmd_rows, cases))
    return tab_figures(printed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rmd-rows", type=int, default=10_000)
    parser.add_argument("--sdcmicro", type=Path, default=None, help="sdcMicro checkout")
    parser.add_argument("--output", type=Path, default=OUT)
    args = parser.parse_args()
    x = table(args.rows)
    frame = pd.DataFrame(x, columns=[f"v{j + 1}" for j in range(x.shape[1])])
    theirs = (
        sdcmicro_times(frame, args.sdcmicro, args.repeats, args.rmd_rows) if args.sdcmicro else {}
    )
    ours = anonlab_times(frame, args.repeats, args.rmd_rows)
    rows: list[dict[str, Any]] = []
    print(f"{'method':24} {'anonlab s':>10} {'sdcMicro s':>11} {'ratio':>8}")
    for name, seconds in ours.items():
        other = theirs.get(name)
        ratio = other / seconds if other is not None and seconds > 0 else None
        rows.append(
            {
                "method": name,
                "anonlab_cpu_s": seconds,
                "sdcmicro_cpu_s": other,
                "sdcmicro_over_anonlab": ratio,
            }
        )
        print(
            f"{name:24} {seconds:10.3f} {'' if other is None else f'{other:11.3f}':>11} "
            f"{'' if ratio is None else f'{ratio:8.1f}':>8}"
        )
    result = {
        "rows": args.rows,
        "columns": 10,
        "k": 3,
        "rmd_rows": args.rmd_rows,
        "repeats": args.repeats,
        "cpu": "CPU seconds (user + system), median of repeats, one BLAS thread",
        "command": "python benchmarks/microaggregation_methods.py --sdcmicro <sdcMicro checkout>",
        "results": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {args.output}")


if __name__ == "__main__":
    main()
