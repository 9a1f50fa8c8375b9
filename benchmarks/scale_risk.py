"""``anonlab risk`` at 10M (and 100M) rows: in memory and on Dask, wall, CPU and peak memory.

The tables are those of ``benchmarks/scale.py`` (its generator is imported,
so they are the same files and are reused when already made): Adult's nine
columns, each drawn independently from Adult's rows, as partitioned Parquet
under ``/tmp/anonlab_scale``. The attacker knows ``ATTACKER`` (five of the
eight quasi-identifiers: with all eight the raw synthetic table has millions
of distinct combinations and SUDA2's subset search, not the pass over the
rows, would be what is timed); ``salary-class`` is sensitive and a population
of ``POPULATION`` gives the population-uniqueness models.

Each way is the whole command as a user runs it, in a fresh process:
``numpy`` reads the table whole into memory (only at sizes where that fits);
``dask`` starts a ``LocalCluster`` of ``--workers`` processes of
``--memory-limit`` each (included in the wall time), counts the frequency set
there and measures it here. CPU time and peak memory are those of the
command and every process it started (``RUSAGE_CHILDREN``: user + system, and
the largest resident set of any one process, so a worker's peak counts).
The two ways' ``risk`` sections are compared for equality. The 1-minute load
average before and after is recorded (the machine is shared).

    python benchmarks/scale_risk.py                       # 10M rows
    python benchmarks/scale_risk.py --rows 10M --rows 100M
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale  # benchmarks/scale.py: the table's generator

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "scale_risk.json"
ATTACKER = ["sex", "age", "race", "marital-status", "education"]
POPULATION = 1_000_000_000
#: largest table the in-memory way is run on (its text columns need ~400 bytes a row)
IN_MEMORY_ROWS = 10_000_000


def run_way(way: str, data: Path, report: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One ``anonlab risk`` run (``numpy`` or ``dask``) and its measurements."""
    command = [
        sys.executable,
        "-m",
        "anonlab",
        "risk",
        str(data),
        "--qi",
        ",".join(scale.QIS),
        "--attacker-columns",
        ",".join(ATTACKER),
        "--sensitive",
        scale.SENSITIVE,
        "--population",
        str(POPULATION),
        "--report",
        str(report),
        "--quiet",
    ]
    if way == "dask":
        command += scale.dask_flags(args)
    report.unlink(missing_ok=True)
    run = scale.measured_run(command, f"risk {way}")
    result = json.loads(report.read_text())
    risk = result["risk"]
    rows = risk["records"] + risk["suppressed"]
    return {
        "way": way,
        **run,
        "rows_per_s": rows / run["wall_s"],
        "command_runtime_s": result["runtime_seconds"],
        "classes": risk["classes"]["count"],
        "risk": risk,
    }


def make_release(data: Path, folder: Path, args: argparse.Namespace) -> Path:
    """The generalize release of ``data`` as ``benchmarks/scale.py --command`` makes it (k=5,
    1 % suppression, on Dask), written once into ``folder`` and reused (not timed here)."""
    release = folder / "release"
    if not (folder / "report.json").exists():
        command = scale._command_args(data, f"{release}/", folder / "report.json")
        folder.mkdir(parents=True, exist_ok=True)
        print(f"making the release {release} ...", flush=True)
        scale.measured_run(command + scale.dask_flags(args), "generalize")
    return release


def measure(rows: int, args: argparse.Namespace) -> dict[str, Any]:
    """Every way at ``rows`` rows, the table made first if needed."""
    label = f"{rows // 10**6}M" if rows >= 10**6 else str(rows)
    root = Path(args.dir)
    data = root / f"synthetic_{label}"
    info = scale.generate(data, rows, args.part_rows, args.seed)
    if args.release:
        data = make_release(data, root / f"release_{label}", args)
        label += " release"
    ways = ["numpy", "dask"] if rows <= IN_MEMORY_ROWS else ["dask"]
    out: dict[str, Any] = {
        "rows": rows,
        "parquet_bytes": info.get("bytes"),
        "release": args.release,
        "ways": [],
    }
    for way in ways:
        r = run_way(way, data, root / f"risk_{label}_{way}.json", args)
        out["ways"].append(r)
        print(
            f"{label:>5} risk {way:<6} wall {r['wall_s']:7.1f} s  cpu {r['cpu_s']:7.1f} s  "
            f"peak {r['peak_mib']:7,.0f} MiB  {r['rows_per_s'] / 1e6:6.2f} M rows/s  "
            f"classes {r['classes']:,}  load {r['load_average']}",
            flush=True,
        )
    sections = [json.dumps(w.pop("risk"), sort_keys=True) for w in out["ways"]]
    out["same_risk_section"] = len(set(sections)) == 1
    print(f"{label}: same risk section on every way: {out['same_risk_section']}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows",
        action="append",
        type=scale.parse_rows,
        help="table sizes (default 10M; repeatable)",
    )
    parser.add_argument("--dir", default="/tmp/anonlab_scale", help="where tables go")
    parser.add_argument("--part-rows", type=scale.parse_rows, default=10**6)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="4GB")
    parser.add_argument(
        "--release",
        action="store_true",
        help="measure the generalize release of each table (k=5, 1 %%), not "
        "the raw table; results go to scale_risk_release.json",
    )
    args = parser.parse_args()
    results = {
        "attacker_columns": ATTACKER,
        "sensitive": scale.SENSITIVE,
        "population": POPULATION,
        "workers": args.workers,
        "memory_limit": args.memory_limit,
        "cpus": os.cpu_count(),
        "sizes": [measure(rows, args) for rows in args.rows or [10**7]],
    }
    out = RESULTS / "scale_risk_release.json" if args.release else OUT
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
