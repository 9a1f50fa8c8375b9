"""Individual ranking (``onedims``) in memory against sdcMicro 5.8.1, CPU time (issue 25).

The table and call of ``benchmarks/microaggregation_methods.py`` (100,000 x 10 correlated
log-normal values, seed 1; k = 3, mean): ``anonlab.microaggregate(frame, method="onedims")``
in this process with one BLAS thread (``time.process_time``), and sdcMicro's
``microaggregationWORK(method = "onedims")`` in ``Rscript`` with one OpenBLAS thread
(``proc.time()``, user + system), taken from a checkout of its public repository
(``--sdcmicro DIR``). Each round times both, one after the other (the median of
``--repeats`` calls each); ``--rounds`` rounds, so that both see the same load. Results:
``benchmarks/results/onedims_memory.json``.

    python benchmarks/onedims_memory.py --sdcmicro /path/to/sdcMicro --rounds 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

import anonlab
from _rscript import run_driver
from anonlab.threads import blas_threads
from microaggregation_methods import _median_cpu, table

OUT = Path(__file__).resolve().parent / "results" / "onedims_memory.json"

R_DRIVER = r"""
args <- commandArgs(TRUE); src <- args[1]; data <- args[2]; reps <- as.integer(args[3])
for (e in parse(file.path(src, "R", "microaggregation.R"))) if (is.call(e) &&
    identical(e[[1]], as.name("<-")) &&
    identical(as.character(e[[2]]), "microaggregationWORK")) eval(e, globalenv())
x <- read.csv(data)
cpu <- function(f) {
  t0 <- proc.time(); f(); t <- proc.time() - t0; t[["user.self"]] + t[["sys.self"]]
}
s <- median(sapply(seq_len(reps), function(r) cpu(function()
  microaggregationWORK(x, variables=colnames(x), aggr=3, method="onedims", measure="mean"))))
cat(s, "\n")
"""


def sdcmicro_seconds(data: Path, source: Path, repeats: int) -> float:
    """sdcMicro's median CPU seconds for onedims on ``data`` (one OpenBLAS thread)."""
    return float(run_driver(R_DRIVER, (source, data, repeats)).split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sdcmicro", type=Path, default=None, help="sdcMicro checkout")
    parser.add_argument("--output", type=Path, default=OUT)
    args = parser.parse_args()
    x = table(args.rows)
    frame = pd.DataFrame(x, columns=[f"v{j + 1}" for j in range(x.shape[1])])
    rounds: list[dict[str, Any]] = []
    print(f"{'round':>5} {'anonlab s':>10} {'sdcMicro s':>11} {'ratio':>7}")
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "x.csv"
        frame.to_csv(data, index=False, float_format="%.10g")
        for i in range(args.rounds):
            theirs = sdcmicro_seconds(data, args.sdcmicro, args.repeats) if args.sdcmicro else None
            with blas_threads(1):
                ours = _median_cpu(
                    lambda: anonlab.microaggregate(frame, k=3, method="onedims"), args.repeats
                )
            ratio = theirs / ours if theirs is not None else None
            rounds.append({"anonlab_cpu_s": ours, "sdcmicro_cpu_s": theirs, "ratio": ratio})
            shown = "" if theirs is None else f"{theirs:11.3f} {theirs / ours:7.1f}"
            print(f"{i + 1:5d} {ours:10.4f} {shown}")
    ratios = [r["ratio"] for r in rounds if r["ratio"] is not None]
    result = {
        "rows": args.rows,
        "columns": 10,
        "k": 3,
        "repeats": args.repeats,
        "rounds": rounds,
        "anonlab_median_s": statistics.median(r["anonlab_cpu_s"] for r in rounds),
        "ratio_median": statistics.median(ratios) if ratios else None,
        "command": "python benchmarks/onedims_memory.py --sdcmicro <sdcMicro checkout>",
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"median anonlab {result['anonlab_median_s']:.4f} s, ratio {result['ratio_median']}")
    print(f"saved {args.output}")


if __name__ == "__main__":
    main()
