"""Numeric masking (noise, rank swapping, shuffling) against sdcMicro 5.8.1, CPU time.

Target (issue 25): at least 10 times cheaper than sdcMicro single-threaded at 100,000
records x 10 columns for each method. The table: 10 correlated log-normal columns
(``exp`` of a normal with correlation 0.5 between columns, seed 1). Noise and rank
swapping mask all 10 columns; shuffling masks 7 given the other 3. sdcMicro runs in
``Rscript`` with ``OPENBLAS_NUM_THREADS=1``, its R functions (``addNoiseWORK``,
``shuffleWORK``) and its C++ ``RankSwap`` taken from a checkout of its public repository
(``--sdcmicro DIR``, the repository's root; nothing of it is kept here), timed by
``proc.time()`` (user + system CPU) around the call; anonlab in this process with one BLAS
thread, ``time.process_time``. Every figure is the median of ``--repeats`` runs after a
first call (R compiles a function to byte code on its first calls), which is shown too.
sdcMicro's ROMM builds an n x n matrix and orthonormalizes it by a Gram-Schmidt loop
costing about n^4: it is timed at ``--romm-rows`` records only (and anonlab beside it at
the same size and at 100,000). Results: benchmarks/results/mask_numeric.json.

    python benchmarks/mask_numeric.py --sdcmicro /path/to/sdcMicro
    python benchmarks/mask_numeric.py --rows 20000 --repeats 1     # quicker, anonlab only
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
from numpy.typing import NDArray

from _rscript import run_driver
from anonlab.masking import noise, rankswap, shuffle
from anonlab.threads import blas_threads

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "mask_numeric.json"

NOISE = ["additive", "correlated", "correlated2", "restr", "outdect"]
SWAP = {"rankswap r0=0.95": {"r0": 0.95}, "rankswap P=5%": {"p": 5.0}}
SHUFFLE = ["ds", "mvn", "mlm"]

R_DRIVER = r"""
suppressMessages({library(MASS); library(robustbase); library(Rcpp)})
args <- commandArgs(TRUE); src <- args[1]; data <- args[2]; reps <- as.integer(args[3])
romm_rows <- as.integer(args[4])
take <- function(file, name) {
  for (e in parse(file)) if (is.call(e) && identical(e[[1]], as.name("<-")) &&
      identical(as.character(e[[2]]), name)) eval(e, globalenv())
}
take(file.path(src, "R", "addNoise.r"), "addNoiseWORK")
take(file.path(src, "R", "shuffle.R"), "shuffleWORK")
cpp <- tempfile(fileext = ".cpp")
writeLines(c("#include <time.h>", "#include <Rcpp.h>",
  sprintf('#include "%s"', file.path(src, "src", "Framework.h")),
  "static constexpr int es_NbHashBit = 16;",
  "static constexpr int es_NbHashList = 1 << es_NbHashBit;",
  sprintf('#include "%s"', file.path(src, "src", "RankSwapping.h")),
  "// [[Rcpp::export]]",
  "Rcpp::List RankSwapR(SEXP a, SEXP b, SEXP c, SEXP d, SEXP e, SEXP f, SEXP g, SEXP h, SEXP i) {",
  "  return RankSwap(a, b, c, d, e, f, g, h, i); }"), cpp)
suppressWarnings(sourceCpp(cpp))
x <- as.matrix(read.csv(data))
cpu <- function(f) {
  t0 <- proc.time(); f(); t <- proc.time() - t0; t[["user.self"]] + t[["sys.self"]]
}
med <- function(f) {  # the first call (R compiles to byte code then), the others' median
  tryCatch({
    t <- sapply(seq_len(reps + 1), function(r) { set.seed(r); cpu(f) })
    paste(t[1], median(t[-1]), sep = "\t")
  }, error = function(e) NA)  # sdcMicro's shuffle(method = "mlm") fails in R 4
}
out <- list()
for (m in c("additive", "correlated", "correlated2", "restr", "outdect"))
  out[[paste("noise", m)]] <- med(function() addNoiseWORK(x, noise = 150, method = m))
small <- x[seq_len(romm_rows), ]
out[["noise ROMM (romm rows)"]] <- med(function() addNoiseWORK(small, method = "ROMM"))
na <- x * NA; low <- min(x) - 1
out[["rankswap r0=0.95"]] <- med(function() RankSwapR(x, na, low, 5, 5, -1, 0.95, -1, 1L))
out[["rankswap P=5%"]] <- med(function() RankSwapR(x, na, low, 5, 5, -1, -1, 0.05, 1L))
d <- as.data.frame(x); cn <- colnames(d)
form <- as.formula(paste(paste(cn[1:7], collapse = "+"), "~", paste(cn[8:10], collapse = "+")))
for (m in c("ds", "mvn", "mlm"))
  out[[paste("shuffle", m)]] <- med(function() shuffleWORK(d, form, method = m))
cat(paste(names(out), unlist(out), sep = "\t"), sep = "\n")
"""


def table(rows: int, columns: int = 10) -> NDArray[np.float64]:
    """Correlated log-normal columns (correlation 0.5 on the log scale), seed 1."""
    rng = np.random.default_rng(1)
    corr = np.full((columns, columns), 0.5) + 0.5 * np.eye(columns)
    z = rng.standard_normal((rows, columns)) @ np.linalg.cholesky(corr).T
    return np.exp(z) * 1000.0


def _median_cpu(run: Callable[[], object], repeats: int) -> tuple[float, float]:
    """The first call's CPU seconds and the median of ``repeats`` more."""
    times = []
    for _ in range(repeats + 1):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return times[0], statistics.median(times[1:])


def anonlab_times(
    x: NDArray[np.float64], repeats: int, romm_rows: int
) -> dict[str, tuple[float, float]]:
    """anonlab's CPU seconds per method (one BLAS thread): first call, median of the rest."""
    out: dict[str, tuple[float, float]] = {}
    with blas_threads(1):
        for m in NOISE:
            out[f"noise {m}"] = _median_cpu(
                lambda m=m: noise.add_noise(x, np.random.default_rng(1), method=m, noise=150),
                repeats,
            )
        small = x[:romm_rows]
        out["noise ROMM (romm rows)"] = _median_cpu(
            lambda: noise.add_noise(small, np.random.default_rng(1), method="romm"), repeats
        )
        out["noise ROMM (all rows)"] = _median_cpu(
            lambda: noise.add_noise(x, np.random.default_rng(1), method="romm"), repeats
        )
        for name, kwargs in SWAP.items():
            out[name] = _median_cpu(
                lambda kwargs=kwargs: rankswap.rank_swap(
                    x, np.random.default_rng(1), extremes="mean", **kwargs
                ),
                repeats,
            )
        for m in SHUFFLE:
            out[f"shuffle {m}"] = _median_cpu(
                lambda m=m: shuffle.shuffle(x[:, :7], x[:, 7:], np.random.default_rng(1), method=m),
                repeats,
            )
    return out


def sdcmicro_times(
    x: NDArray[np.float64], source: Path, repeats: int, romm_rows: int
) -> dict[str, tuple[float, float]]:
    """sdcMicro's CPU seconds per method, single-threaded (module docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "x.csv"
        header = ",".join(f"v{j + 1}" for j in range(x.shape[1]))
        np.savetxt(data, x, delimiter=",", header=header, comments="", fmt="%.10g")
        printed = run_driver(R_DRIVER, (source, data, repeats, romm_rows))
    out = {}
    for line in printed.splitlines():
        name, *values = line.split("\t")
        if len(values) == 2:
            out[name] = (float(values[0]), float(values[1]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--romm-rows", type=int, default=200)
    parser.add_argument("--sdcmicro", type=Path, default=None, help="sdcMicro checkout")
    parser.add_argument("--output", type=Path, default=OUT)
    args = parser.parse_args()
    x = table(args.rows)
    ours = anonlab_times(x, args.repeats, args.romm_rows)
    theirs = sdcmicro_times(x, args.sdcmicro, args.repeats, args.romm_rows) if args.sdcmicro else {}
    rows: list[dict[str, Any]] = []
    print(f"{'method':28} {'anonlab s':>10} {'sdcMicro s':>11} {'ratio':>8} {'first calls':>12}")
    for name, (first, seconds) in ours.items():
        other_first, other = theirs.get(name, (None, None))
        ratio = other / seconds if other is not None and seconds > 0 else None
        ratio_first = other_first / first if other_first is not None and first > 0 else None
        rows.append(
            {
                "method": name,
                "anonlab_cpu_s": seconds,
                "anonlab_first_cpu_s": first,
                "sdcmicro_cpu_s": other,
                "sdcmicro_first_cpu_s": other_first,
                "sdcmicro_over_anonlab": ratio,
                "first_calls_ratio": ratio_first,
            }
        )
        print(
            f"{name:28} {seconds:10.3f} {'' if other is None else f'{other:11.3f}':>11} "
            f"{'' if ratio is None else f'{ratio:8.1f}':>8} "
            f"{'' if ratio_first is None else f'{ratio_first:12.1f}':>12}"
        )
    result = {
        "rows": args.rows,
        "columns": 10,
        "romm_rows": args.romm_rows,
        "repeats": args.repeats,
        "cpu": "CPU seconds (user + system), one BLAS thread: the median of the repeats "
        "after the first call (both sides), and the first calls",
        "command": "python benchmarks/mask_numeric.py --sdcmicro <sdcMicro checkout>",
        "results": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
