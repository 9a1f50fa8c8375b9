"""Heuristic searches on a wide table: anonlab against ARX 3.9.2, quality found vs time.

The table is data/sdc/free1.csv (4,000 records) with 20 of its columns as quasi-identifiers;
their hierarchies were built with anonlab's own builders (``anonlab hierarchy interval`` and
``grouping``, the commands in :data:`HIERARCHIES`) and are kept in
benchmarks/data/free1_hierarchies/ (``--rebuild`` makes them again). The lattice has
about 1.1e12 nodes, far beyond an optimal search. The model: k-anonymity (k = 5) with 1 %
suppression, ARX's loss metric. For each time limit, anonlab's and ARX's Lightning,
top-down and genetic searches run once with that limit and no step limit (and anonlab's own
descent search, which ARX lacks); the table shows the best loss each found (lower is
better), nodes checked, search and CPU seconds. ARX runs through
tests/data/arx_heuristic/java/HeuristicRef.java (compiled to /tmp/hbuild, see its
make_refs.py); without Java the ARX rows are left out.

    python benchmarks/heuristic.py                 # time limits 1, 5, 30 s, one run each
    python benchmarks/heuristic.py --repeats 3     # medians of three runs
    python benchmarks/heuristic.py --limits 1,5    # quicker

Results: benchmarks/results/heuristic.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "sdc" / "free1.csv"
HIER = REPO / "benchmarks" / "data" / "free1_hierarchies"
RESULTS = REPO / "benchmarks" / "results" / "heuristic.json"
ARX_CLASSES = Path("/tmp/hbuild")
ARX_CP = Path("/tmp/arx/cp.txt")

#: quasi-identifier -> the anonlab hierarchy builder and its options
HIERARCHIES: dict[str, list[str]] = {
    "REGION": ["interval", "--widths", "10,50,100"],
    "AGE": ["interval", "--widths", "5,10,20,40"],
    "MARSTAT": ["grouping", "--sizes", "2"],
    "KINDPERS": ["grouping", "--sizes", "2,4"],
    "NUMYOUNG": ["grouping", "--sizes", "2,4"],
    "NUMOLD": ["grouping", "--sizes", "2,4"],
    "AGEYOUNG": ["interval", "--widths", "5,10,20"],
    "EDUC1": ["grouping", "--sizes", "2,4"],
    "EDUC2": ["grouping", "--sizes", "2,4,8"],
    "ETNI": ["grouping", "--sizes", "3"],
    "PRIOCCU": ["grouping", "--sizes", "2,4,8"],
    "POSLABM": ["grouping", "--sizes", "2"],
    "REGJOBC": ["grouping", "--sizes", "2"],
    "RECBEN": ["grouping", "--sizes", "2"],
    "POSLABLY": ["grouping", "--sizes", "2"],
    "POSFACT": ["grouping", "--sizes", "2"],
    "COMPCODE": ["interval", "--widths", "10,20,40,80"],
    "OCCUCODE": ["interval", "--widths", "10,100,200,400"],
    "KINDFACT": ["grouping", "--sizes", "2,4,8"],
    "TENURE": ["grouping", "--sizes", "2"],
}
K, SUPPRESSION, METRIC = 5, 0.01, "loss"
SEARCHES = ("lightning", "top-down", "genetic", "descent")


def build_hierarchies(rebuild: bool) -> None:
    """Write each quasi-identifier's hierarchy with ``anonlab hierarchy`` (once)."""
    HIER.mkdir(parents=True, exist_ok=True)
    anonlab = str(Path(sys.executable).with_name("anonlab"))
    for column, spec in HIERARCHIES.items():
        path = HIER / f"{column}.csv"
        if path.exists() and not rebuild:
            continue
        subprocess.run(
            [
                anonlab,
                "hierarchy",
                spec[0],
                str(DATA),
                "--column",
                column,
                *spec[1:],
                "--output",
                str(path),
                "--quiet",
            ],
            check=True,
        )


def run_anonlab(search: str, seconds: float, seed: int = 1) -> dict[str, Any]:
    """One anonlab search with a time limit; the best node's loss and the counts."""
    from anonlab.dataset import Roles
    from anonlab.errors import AnonlabError
    from anonlab.generalize import anonymize, model_dataset, resolve_criteria
    from anonlab.hierarchy import Hierarchy
    from anonlab.io import read_table

    frame = read_table(DATA, delimiter=",")
    frame = frame.astype(str)
    hierarchies = {c: Hierarchy.from_csv(HIER / f"{c}.csv") for c in HIERARCHIES}
    criteria = resolve_criteria([{"model": "k-anonymity", "k": K}])
    dataset = model_dataset(frame, hierarchies, criteria, roles=Roles.of(other="insensitive"))
    cpu, wall = time.process_time(), time.perf_counter()
    options: dict[str, Any] = {"genetic": {"seed": seed}} if search == "genetic" else {}
    try:
        result = anonymize(
            dataset,
            criteria=criteria,
            suppression=SUPPRESSION,
            metric=METRIC,
            search=search,
            time_limit=seconds,
            **options,
        )
    except AnonlabError as exc:  # no acceptable node found within the limit
        found = re.search(r"after (\d+) checks", str(exc))
        return {
            "tool": "anonlab",
            "search": search,
            "time_limit": seconds,
            "loss": None,
            "checked": int(found.group(1)) if found else None,
            "stopped_by": "time limit",
            "search_seconds": seconds,
            "wall_seconds": time.perf_counter() - wall,
            "cpu_seconds": time.process_time() - cpu,
        }
    return {
        "tool": "anonlab",
        "search": search,
        "time_limit": seconds,
        "loss": result.summary()["optimum_loss"],
        "checked": result.search.nodes_checked,
        "stopped_by": result.summary()["heuristic"]["stopped_by"],
        "transformation": list(result.transformation.values()),
        "lattice_size": result.lattice_size,
        "search_seconds": result.search.runtime_seconds,
        "wall_seconds": time.perf_counter() - wall,
        "cpu_seconds": time.process_time() - cpu,
    }


def run_arx(search: str, seconds: float) -> dict[str, Any] | None:
    """ARX's search with the same table, hierarchies, model and time limit (None: no Java)."""
    if shutil.which("java") is None or not ARX_CLASSES.exists() or not ARX_CP.exists():
        return None
    cp = f"{ARX_CLASSES}:/tmp/arx/classes:{ARX_CP.read_text().strip()}"
    hierarchies = ",".join(f"{c}={HIER / f'{c}.csv'}" for c in HIERARCHIES)
    started = time.perf_counter()
    out = subprocess.run(
        [
            "java",
            "-cp",
            cp,
            "HeuristicRef",
            "run",
            str(DATA),
            hierarchies,
            search,
            str(K),
            str(SUPPRESSION),
            METRIC,
            "0.5",
            "2147483647",
            str(int(seconds * 1000)),
            "1",
            "false",
            ",",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    line = json.loads(next(x for x in out.splitlines() if x.startswith("{")))
    return {
        "tool": "ARX 3.9.2",
        "search": search,
        "time_limit": seconds,
        "loss": float(line["score"]) if line["score"] else None,
        "checked": line["checked"],
        "transformation": line["transformation"],
        "search_seconds": line["wall_ms"] / 1000.0,
        "wall_seconds": time.perf_counter() - started,
        "cpu_seconds": line["cpu_ms"] / 1000.0,
    }


def median_row(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row for repeated runs: the median of each figure (a run finding nothing counts as
    the worst loss), the runs themselves under ``runs``."""
    losses = [math.inf if r["loss"] is None else r["loss"] for r in runs]
    loss = statistics.median_low(losses)
    row = dict(runs[0])
    for key in ("checked", "search_seconds", "wall_seconds", "cpu_seconds"):
        row[key] = statistics.median(r[key] or 0 for r in runs)
    row["loss"] = None if math.isinf(loss) else loss
    row["runs"] = runs
    return row


def table(rows: list[dict[str, Any]]) -> str:
    """The results as a text table, one row per tool, search and time limit."""
    head = (
        f"{'limit s':>7}  {'search':<10} {'tool':<10} {'best loss':>12} {'checked':>8} "
        f"{'search s':>8} {'CPU s':>7}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        loss = "none found" if r["loss"] is None else f"{r['loss']:.6f}"
        lines.append(
            f"{r['time_limit']:>7g}  {r['search']:<10} {r['tool']:<10} {loss:>12} "
            f"{r['checked']:>8} {r['search_seconds']:>8.2f} {r['cpu_seconds']:>7.2f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limits", default="1,5,30", help="time limits in seconds")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the hierarchies")
    parser.add_argument(
        "--repeats", type=int, default=1, help="runs per tool, search and limit (medians are shown)"
    )
    args = parser.parse_args()
    build_hierarchies(args.rebuild)
    rows: list[dict[str, Any]] = []
    for seconds in (float(x) for x in args.limits.split(",")):
        for search in SEARCHES:
            ours = [run_anonlab(search, seconds, seed) for seed in range(1, args.repeats + 1)]
            new = [median_row(ours)]
            if search != "descent":
                arx = [run_arx(search, seconds) for _ in range(args.repeats)]
                if all(r is not None for r in arx):
                    new.append(median_row([r for r in arx if r is not None]))
            rows += new
            print("\n".join(table(new).splitlines()[2:]), file=sys.stderr, flush=True)
    print(table(rows))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "heuristic searches on free1.csv, 20 quasi-identifiers",
                "command": f"python benchmarks/heuristic.py --limits {args.limits} --repeats "
                f"{args.repeats}",
                "model": {"k": K, "suppression": SUPPRESSION, "metric": METRIC},
                "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
                "rows": rows,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
