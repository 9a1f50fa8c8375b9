"""How much of a tenth of sdcMicro's time the least work of a masking method leaves.

Issue 25 asks each masking method to cost at most a tenth of sdcMicro 5.8.1's CPU at
100,000 records x 10 columns. For the methods below that target after the profiling
passes (docs/benchmarks.md), this script sets three figures side by side, in one loop:

- sdcMicro's call (``addNoiseWORK``, ``topBotCodingWORK`` per column,
  ``globalRecodeWORK`` per column, sourced from ``--sdcmicro DIR``, a checkout of its
  public repository), timed in ``Rscript`` as ``--loops`` calls within one
  ``proc.time()`` span (a call of a few ms is below that clock's resolution otherwise),
  the median of ``--repeats`` spans divided by the loops; and R's own ``rnorm`` of the
  same n x p normals (what its noise methods draw);
- anonlab's method (the function the command calls for the masked columns);
- the *floor*: the least work any NumPy implementation of the method must do, whatever
  else it does:

  - ``additive``, ``correlated``, ``correlated2``: the n x p standard normal draws of
    NumPy's default generator, written into an existing array (each method adds a
    normal variate to every value);
  - ``restr``: the column means (one pass that reads the table: a product with a
    vector of ones, BLAS's row-major reduction), then the release ``c x + (1 - c) mean``
    in two passes (``np.multiply(x, c, out=...)``, then the shift added in place: NumPy
    has no fused multiply-add);
  - ``topbot``: one pass that reads each column and writes it capped
    (``np.minimum(x, top, out=...)``);
  - ``recode``: one comparison pass per column into bytes (``np.greater``); a
    one-pass binning needs compiled code, so this floor is far below the target.

Each anonlab and floor figure is the median of ``--repeats`` spans of ``--loops`` calls
(CPU, ``time.process_time``, one BLAS thread). A floor above a tenth of sdcMicro's time
means the target cannot be met by the method in NumPy, however its other work is cut.
Results: benchmarks/results/floors.json.

    python benchmarks/floors.py --sdcmicro /path/to/sdcMicro
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

from _rscript import run_driver, tab_figures
from anonlab.masking import noise
from anonlab.masking.registry import get_method, method_params
from anonlab.threads import blas_threads
from mask import make_tables
from mask_numeric import table

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "floors.json"
NOISE = ("additive", "correlated", "correlated2", "restr")
TOP = 1000.0  # topbot's cap (a value near the 99th percentile of the log-normal columns)

R_DRIVER = r"""
suppressMessages(library(MASS))
a <- commandArgs(TRUE)
src <- a[1]; noisy <- a[2]; numeric <- a[3]; reps <- as.integer(a[4])
loops <- as.integer(a[5]); top <- as.numeric(a[6])
take <- function(file, name) {
  for (e in parse(file)) if (is.call(e) && identical(e[[1]], as.name("<-")) &&
      identical(as.character(e[[2]]), name)) eval(e, globalenv())
}
take(file.path(src, "R", "addNoise.r"), "addNoiseWORK")
take(file.path(src, "R", "topBotCoding.R"), "topBotCodingWORK")
take(file.path(src, "R", "globalRecode.R"), "globalRecodeWORK")
x <- as.matrix(read.csv(noisy)); d0 <- read.csv(numeric)
span <- function(f) {
  f()  # R compiles a function to byte code on its first calls
  t <- sapply(seq_len(reps), function(r) {
    set.seed(r); t0 <- proc.time(); for (i in seq_len(loops)) f(); t <- proc.time() - t0
    (t[["user.self"]] + t[["sys.self"]]) / loops
  })
  median(t)
}
out <- list()
for (m in c("additive", "correlated", "correlated2", "restr"))
  out[[m]] <- span(function() addNoiseWORK(x, noise = 150, method = m))
out[["rnorm"]] <- span(function() rnorm(length(x)))
out[["topbot"]] <- span(function() {
  d <- d0; for (c in names(d)) d[[c]] <- topBotCodingWORK(d[[c]], top, top, kind = "top"); d })
out[["recode"]] <- span(function() {
  d <- d0
  for (c in names(d)) d[[c]] <- globalRecodeWORK(d[[c]], breaks = 10L, method = "equidistant")
  d })
cat(paste(names(out), unlist(out), sep = "\t"), sep = "\n")
"""


def span_cpu(call: Callable[[], object], repeats: int, loops: int) -> float:
    """CPU seconds of one call: the median of ``repeats`` spans of ``loops`` calls, after a
    first call."""
    call()
    spans = []
    for _ in range(repeats):
        started = time.process_time()
        for _ in range(loops):
            call()
        spans.append((time.process_time() - started) / loops)
    return statistics.median(spans)


def anonlab_calls(x: np.ndarray, numeric: pd.DataFrame) -> dict[str, Callable[[], object]]:
    """anonlab's method per row of the table (the function the command calls)."""
    calls: dict[str, Callable[[], object]] = {
        m: (lambda m=m: noise.add_noise(x, np.random.default_rng(1), method=m, noise=150))
        for m in NOISE
    }
    columns = list(map(str, numeric.columns))
    for name, params in (("topbot", {"top": TOP}), ("recode", {"breaks": [10]})):
        chosen = get_method(name)
        checked = method_params(chosen, params)
        calls[name] = lambda chosen=chosen, checked=checked: chosen.apply(
            numeric, columns, checked, None
        )
    return calls


def floor_calls(x: np.ndarray, numeric: pd.DataFrame) -> dict[str, Callable[[], object]]:
    """The least NumPy work of each method (module text)."""
    rng = np.random.default_rng(1)
    draws = np.empty(x.shape)
    release = np.empty(x.shape)
    ones = np.ones(len(x))
    columns = [np.ascontiguousarray(numeric[c].to_numpy(dtype=np.float64)) for c in numeric]
    capped = np.empty(len(numeric))
    above = np.empty(len(numeric), dtype=bool)

    def per_column(step: Callable[[np.ndarray], object]) -> Callable[[], object]:
        return lambda: [step(column) for column in columns]

    normals = lambda: rng.standard_normal(out=draws)  # noqa: E731
    return {
        "additive": normals,
        "correlated": normals,
        "correlated2": normals,
        "restr": lambda: np.add(
            np.multiply(x, 0.9, out=release), (0.1 / len(x)) * (ones @ x), out=release
        ),
        "topbot": per_column(lambda c: np.minimum(c, TOP, out=capped)),
        "recode": per_column(lambda c: np.greater(c, TOP, out=above)),
    }


def sdcmicro_times(
    source: Path, x: np.ndarray, numeric: pd.DataFrame, repeats: int, loops: int
) -> dict[str, float]:
    """sdcMicro's CPU seconds per call and R's ``rnorm`` of n x p normals (module text)."""
    with tempfile.TemporaryDirectory() as folder:
        noisy = Path(folder) / "x.csv"
        header = ",".join(f"v{j + 1}" for j in range(x.shape[1]))
        np.savetxt(noisy, x, delimiter=",", header=header, comments="", fmt="%.10g")
        numbers = Path(folder) / "numeric.csv"
        numeric.to_csv(numbers, index=False)
        printed = run_driver(R_DRIVER, (source, noisy, numbers, repeats, loops, TOP))
    return tab_figures(printed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--loops", type=int, default=10)
    parser.add_argument("--sdcmicro", type=Path, default=None, help="sdcMicro checkout")
    parser.add_argument("--output", type=Path, default=OUT)
    args = parser.parse_args()
    x = table(args.rows)
    numeric = make_tables(args.rows, 1)[1]
    with blas_threads(1):
        calls = anonlab_calls(x, numeric)
        ours = {m: span_cpu(c, args.repeats, args.loops) for m, c in calls.items()}
        least = floor_calls(x, numeric)
        floors = {m: span_cpu(c, args.repeats, args.loops) for m, c in least.items()}
    theirs = (
        sdcmicro_times(args.sdcmicro, x, numeric, args.repeats, args.loops) if args.sdcmicro else {}
    )
    rows: list[dict[str, Any]] = []
    print(
        f"{'method':12} {'sdcMicro ms':>11} {'tenth ms':>9} {'floor ms':>9} "
        f"{'anonlab ms':>10} {'floor/tenth':>11} {'sdcMicro/anonlab':>16}"
    )
    for method, seconds in ours.items():
        other = theirs.get(method)
        tenth = other / 10 if other is not None else None
        row = {
            "method": method,
            "sdcmicro_cpu_s": other,
            "floor_cpu_s": floors[method],
            "anonlab_cpu_s": seconds,
            "floor_over_tenth": floors[method] / tenth if tenth else None,
            "sdcmicro_over_anonlab": other / seconds if other is not None else None,
        }
        rows.append(row)

        def ms(value: float | None, width: int) -> str:
            return f"{value * 1000:{width}.2f}" if value is not None else " " * width

        ratio = row["floor_over_tenth"]
        speed = row["sdcmicro_over_anonlab"]
        print(
            f"{method:12} {ms(other, 11)} {ms(tenth, 9)} {ms(floors[method], 9)} "
            f"{ms(seconds, 10)} {'' if ratio is None else f'{ratio:11.2f}':>11} "
            f"{'' if speed is None else f'{speed:16.1f}':>16}"
        )
    if "rnorm" in theirs:
        print(f"R's rnorm of {x.size:,} normals: {theirs['rnorm'] * 1000:.2f} ms")
    result = {
        "rows": args.rows,
        "columns": 10,
        "repeats": args.repeats,
        "loops": args.loops,
        "cpu": "CPU seconds of one call: the median of the repeats' spans of `loops` calls, "
        "one BLAS thread (both sides)",
        "command": "python benchmarks/floors.py --sdcmicro <sdcMicro checkout>",
        "r_rnorm_cpu_s": theirs.get("rnorm"),
        "results": rows,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
