"""The whole ``anonlab risk`` command on Adult and on Adult x33: CPU and wall time.

Adult x33 is data/adult/adult.csv with its 30,162 records repeated 33 times
(995,346 records), written to a temporary folder. Each run is the command as a
user types it, with the 8 quasi-identifiers, ``salary-class`` as sensitive
attribute and a JSON report:

    anonlab risk TABLE --sensitive salary-class --report OUT.json --quiet
        --qi sex,age,race,marital-status,education,native-country,workclass,occupation

CPU is user + system time of the child process (``RUSAGE_CHILDREN``), so it
counts Python's start-up, reading the CSV and writing the report; wall is the
elapsed time. Both are the median of ``--repeats`` runs (default 5), after one
warm-up run. The 1-minute load average is recorded before and after, since the
machine is shared. Results go to benchmarks/results/risk.json.

    python benchmarks/risk.py
    python benchmarks/risk.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult" / "adult.csv"
OUT = REPO / "benchmarks" / "results" / "risk.json"
QI = "sex,age,race,marital-status,education,native-country,workclass,occupation"
COPIES = 33


def make_x33(folder: Path) -> Path:
    """Adult's records repeated 33 times under one header."""
    lines = ADULT.read_text(encoding="utf-8").splitlines(keepends=True)
    target = folder / "adult_x33.csv"
    with target.open("w", encoding="utf-8") as out:
        out.write(lines[0])
        body = "".join(lines[1:])
        for _ in range(COPIES):
            out.write(body)
    return target


def command(table: Path, report: Path) -> list[str]:
    """The ``anonlab risk`` command line measured."""
    exe = shutil.which("anonlab")
    head = [exe] if exe else [sys.executable, "-m", "anonlab"]  # shown as "anonlab" in the JSON
    return [
        *head,
        "risk",
        str(table),
        "--qi",
        QI,
        "--sensitive",
        "salary-class",
        "--report",
        str(report),
        "--quiet",
    ]


def run_once(args: list[str]) -> tuple[float, float]:
    """(CPU seconds of the child, wall seconds) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def measure(table: Path, report: Path, repeats: int) -> dict[str, Any]:
    """Median CPU and wall over ``repeats`` runs after a warm-up run."""
    args = command(table, report)
    run_once(args)
    cpus, walls = [], []
    for _ in range(repeats):
        cpu, wall = run_once(args)
        cpus.append(cpu)
        walls.append(wall)
    risk = json.loads(report.read_text(encoding="utf-8"))["risk"]
    return {
        "records": risk["records"],
        "classes": risk["classes"]["count"],
        "cpu_seconds_median": statistics.median(cpus),
        "wall_seconds_median": statistics.median(walls),
        "cpu_seconds": cpus,
        "wall_seconds": walls,
    }


def main() -> None:
    """Run the benchmark, print a table, save the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    shown = ["anonlab", *command(Path("TABLE"), Path("OUT.json"))[1:]]
    results: dict[str, Any] = {
        "command": " ".join(shown),
        "repeats": args.repeats,
        "load_before": os.getloadavg()[0],
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tables = {"adult": ADULT, "adult_x33": make_x33(folder)}
        for name, table in tables.items():
            results[name] = measure(table, folder / f"{name}.json", args.repeats)
    results["load_after"] = os.getloadavg()[0]
    print(f"{'table':<10} {'records':>9} {'classes':>8} {'CPU s':>7} {'wall s':>7}")
    for name in ("adult", "adult_x33"):
        row = results[name]
        print(
            f"{name:<10} {row['records']:>9} {row['classes']:>8} "
            f"{row['cpu_seconds_median']:>7.2f} {row['wall_seconds_median']:>7.2f}"
        )
    print(f"load average: {results['load_before']:.2f} before, {results['load_after']:.2f} after")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"saved {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
