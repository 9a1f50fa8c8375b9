"""Individual ranking (``onedims``) in memory, before and after a change, against sdcMicro
5.8.1, CPU time (issue 25, third pass).

The table and call of ``benchmarks/microaggregation_methods.py`` (100,000 x 10 correlated
log-normal values, seed 1; k = 3): ``anonlab.microaggregate(frame, k=3, method="onedims",
aggr=...)`` for each of ``--aggr`` (mean, median, trim with trim 0.2, onestep), timed by
``time.process_time`` with one BLAS thread in a child process whose ``PYTHONPATH`` starts
with the ``src`` of the code measured: ``--before DIR`` (a copy of the code before the
change, e.g. ``git archive <commit> src | tar -x -C DIR``) and this checkout's ``src``.
sdcMicro's ``microaggregationWORK(method = "onedims", measure = "mean")`` runs in ``Rscript``
with one OpenBLAS thread (``benchmarks/onedims_memory.py``; its median and one-step loops
run per group in R, minutes at this size, so the mean alone). Each round runs before,
after and sdcMicro one after the other (the median of ``--repeats`` calls each), so that
the three see the same load on a shared machine; ``--rounds`` rounds. Results:
``benchmarks/results/onedims_third_pass.json``.

    python benchmarks/onedims_third_pass.py --before /tmp/before --sdcmicro /path/to/sdcMicro
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "onedims_third_pass.json"
AGGREGATES = ("mean", "median", "trim", "onestep")
TRIM = 0.2  # the share cut off each end for aggr "trim"


def child(rows: int, aggrs: list[str], repeats: int) -> None:
    """Time the public call in this process (the anonlab on its path); print JSON."""
    import pandas as pd

    import anonlab
    from anonlab.threads import blas_threads
    from microaggregation_methods import _median_cpu, table

    x = table(rows)
    frame = pd.DataFrame(x, columns=[f"v{j + 1}" for j in range(x.shape[1])])
    out: dict[str, float] = {}
    with blas_threads(1):
        for aggr in aggrs:
            trim = TRIM if aggr == "trim" else 0.0

            def run(aggr: str = aggr, trim: float = trim) -> object:
                return anonlab.microaggregate(frame, k=3, method="onedims", aggr=aggr, trim=trim)

            run()  # imports and first-touch costs outside the timing
            out[aggr] = _median_cpu(run, repeats)
    print(json.dumps({"anonlab": anonlab.__file__, "seconds": out}))


def anonlab_seconds(src: Path, rows: int, aggrs: list[str], repeats: int) -> dict[str, float]:
    """The median CPU seconds of each aggregate with the anonlab of ``src`` (a child process)."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), str(REPO / "benchmarks")]),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }
    args = ["--child", "--rows", str(rows), "--repeats", str(repeats), "--aggr", ",".join(aggrs)]
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode:
        raise SystemExit(f"child failed: {done.stderr.strip().splitlines()[-1:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    if not str(answer["anonlab"]).startswith(str(src)):
        raise SystemExit(f"child imported {answer['anonlab']}, not the code under {src}")
    return {k: float(v) for k, v in answer["seconds"].items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--aggr", default=",".join(AGGREGATES))
    parser.add_argument("--before", type=Path, default=None, help="the code before (its root)")
    parser.add_argument("--sdcmicro", type=Path, default=None, help="sdcMicro checkout")
    parser.add_argument("--output", type=Path, default=OUT)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    aggrs = [a for a in args.aggr.split(",") if a]
    if args.child:
        child(args.rows, aggrs, args.repeats)
        return
    import pandas as pd

    from microaggregation_methods import table
    from onedims_memory import sdcmicro_seconds

    rounds: list[dict[str, Any]] = []
    print(
        f"{'round':>5} {'aggr':8} {'before s':>9} {'after s':>9} {'sdcMicro s':>10} "
        f"{'sdc/before':>10} {'sdc/after':>9}"
    )
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "x.csv"
        if args.sdcmicro:
            x = table(args.rows)
            frame = pd.DataFrame(x, columns=[f"v{j + 1}" for j in range(x.shape[1])])
            frame.to_csv(data, index=False, float_format="%.10g")
        for i in range(args.rounds):
            before = (
                anonlab_seconds(args.before / "src", args.rows, aggrs, args.repeats)
                if args.before
                else {}
            )
            after = anonlab_seconds(REPO / "src", args.rows, aggrs, args.repeats)
            theirs = sdcmicro_seconds(data, args.sdcmicro, args.repeats) if args.sdcmicro else None
            for aggr in aggrs:
                sdc = theirs if aggr == "mean" else None
                row = {
                    "round": i + 1,
                    "aggr": aggr,
                    "before_cpu_s": before.get(aggr),
                    "after_cpu_s": after[aggr],
                    "sdcmicro_cpu_s": sdc,
                    "sdcmicro_over_before": sdc / before[aggr] if sdc and aggr in before else None,
                    "sdcmicro_over_after": sdc / after[aggr] if sdc else None,
                }
                rounds.append(row)
                print(
                    f"{i + 1:5d} {aggr:8} {_fmt(row['before_cpu_s'], 9, 4)} "
                    f"{_fmt(row['after_cpu_s'], 9, 4)} {_fmt(sdc, 10, 3)} "
                    f"{_fmt(row['sdcmicro_over_before'], 10, 1)} "
                    f"{_fmt(row['sdcmicro_over_after'], 9, 1)}"
                )
    summary = {
        aggr: {
            key: statistics.median(v for r in rounds if r["aggr"] == aggr and (v := r[key]))
            for key in ("before_cpu_s", "after_cpu_s", "sdcmicro_cpu_s", "sdcmicro_over_after")
            if any(r[key] for r in rounds if r["aggr"] == aggr)
        }
        for aggr in aggrs
    }
    result = {
        "rows": args.rows,
        "columns": 10,
        "k": 3,
        "trim": TRIM,
        "repeats": args.repeats,
        "cpu": "CPU seconds (user + system), median of repeats, one BLAS thread",
        "rounds": rounds,
        "medians_of_rounds": summary,
        "command": "python benchmarks/onedims_third_pass.py --before <code before> "
        "--sdcmicro <sdcMicro checkout>",
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    print(f"saved {args.output}")


def _fmt(value: float | None, width: int, digits: int) -> str:
    return " " * width if value is None else f"{value:{width}.{digits}f}"


if __name__ == "__main__":
    main()
