"""Exact MDAV's speed on a busy machine, and the whole ``microaggregate`` command (issue 11).

OpenBLAS starts one thread per core. On a busy 2-core machine its threads wait
for each other at every matrix-vector product: exact MDAV at 100,000 x 10 took
55.9 s of CPU instead of 3.3 s (issue 11). The kernels now run on one BLAS
thread unless ``workers`` asks for more.

Part 1, in-process: exact MDAV (``mdav_labels``, k = 3) on 100,000 x 10
standard normal values (seed 1), CPU seconds (``time.process_time``, every
thread of this process) and wall seconds, the median of ``--repeats`` runs,
once with the machine as it is ("idle") and once "busy": one pure-Python busy
loop pinned to each core (``os.sched_setaffinity``) runs for the duration.
Target: busy and idle CPU within 20 % of each other with the default
``workers=1``. ``workers=2`` (two BLAS threads, the old default) is timed
once each way for contrast.

Part 2, the whole command: ``anonlab microaggregate`` on EIA (k = 3, the 11
numeric columns), user + system CPU of the child process
(``resource.getrusage(RUSAGE_CHILDREN)``) and wall, the median of
``--cli-repeats`` runs, "after" with this checkout and "before" with the
previous commit's sources given by ``--before-src`` (``PYTHONPATH``); and the
library call ``microaggregate()`` alone (in-process CPU, same median), which
leaves out what the command does around it (reading, checking, the risk
section, writing).

Results: benchmarks/results/mdav_threads.json.

    python benchmarks/mdav_threads.py --before-src /tmp/basecopy/src
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from anonlab.microaggregation import mdav_labels

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "mdav_threads.json"
EIA = REPO / "data" / "sdc" / "EIA.csv"
EIA_COLUMNS = (
    "UTILITYID,RESREVENUE,RESSALES,COMREVENUE,COMSALES,INDREVENUE,INDSALES,"
    "OTHREVENUE,OTHRSALES,TOTREVENUE,TOTSALES"
)
LIBRARY = """
import json, statistics, sys, time
import pandas as pd
from anonlab.microaggregation import microaggregate
frame = pd.read_csv(sys.argv[1])
columns = sys.argv[2].split(",")
cpus = []
for _ in range(int(sys.argv[3])):
    start = time.process_time()
    microaggregate(frame, columns, 3)
    cpus.append(time.process_time() - start)
print(json.dumps(statistics.median(cpus)))
"""
BURNER = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


@contextmanager
def busy_machine() -> Iterator[None]:
    """One pure-Python busy loop pinned to each core of this process, for the body."""
    burners = [
        subprocess.Popen([sys.executable, "-c", BURNER, str(cpu)])
        for cpu in sorted(os.sched_getaffinity(0))
    ]
    time.sleep(0.5)  # let them start spinning
    try:
        yield
    finally:
        for proc in burners:
            proc.terminate()
        for proc in burners:
            proc.wait()


def timed(fn: Callable[[], Any], repeats: int) -> dict[str, Any]:
    """Median CPU and wall seconds of ``fn`` over ``repeats`` runs (and every run)."""
    cpus, walls = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        fn()
        cpus.append(time.process_time() - c)
        walls.append(time.perf_counter() - w)
    return {
        "cpu_s": round(statistics.median(cpus), 2),
        "wall_s": round(statistics.median(walls), 2),
        "cpu_runs": [round(v, 2) for v in cpus],
        "wall_runs": [round(v, 2) for v in walls],
        "load_average": [round(v, 2) for v in os.getloadavg()],
    }


def in_process(repeats: int) -> list[dict[str, Any]]:
    """Exact MDAV at 100,000 x 10, idle and busy, with 1 and 2 BLAS threads."""
    z = np.random.default_rng(1).standard_normal((100_000, 10))
    rows = []
    for workers, runs in ((1, repeats), (2, 1)):
        for state in ("idle", "busy"):

            def run(w: int = workers) -> None:
                mdav_labels(z, 3, workers=w)

            if state == "busy":
                with busy_machine():
                    result = timed(run, runs)
            else:
                result = timed(run, runs)
            rows.append({"workers": workers, "machine": state, **result})
            print(
                f"MDAV 100000x10 k=3  workers={workers}  {state:<5} CPU {result['cpu_s']:>7.2f} s"
                f"  wall {result['wall_s']:>7.2f} s",
                flush=True,
            )
    return rows


def command_cpu(src: Path, repeats: int) -> dict[str, Any]:
    """Median child CPU (user + system) and wall of ``anonlab microaggregate`` on EIA, k = 3."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    base = [sys.executable, "-m", "anonlab", "microaggregate"]
    usage = subprocess.run(
        [*base, "--help"], check=False, env=env, capture_output=True, text=True
    ).stdout
    # Issue 11 asks every column for a role; the other (text) columns pass unchanged.
    other = ["--other", "insensitive"] if "--other" in usage else []
    cpus, walls = [], []
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            *base,
            str(EIA),
            "--columns",
            EIA_COLUMNS,
            "--k",
            "3",
            *other,
            "--output",
            str(Path(tmp) / "eia_k3.csv"),
            "--quiet",
        ]
        for _ in range(repeats):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            w = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            walls.append(time.perf_counter() - w)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {
        "cpu_s": round(statistics.median(cpus), 3),
        "wall_s": round(statistics.median(walls), 3),
        "cpu_runs": [round(v, 3) for v in cpus],
        "command": " ".join(cmd[1:]),
    }


def library_cpu(src: Path, repeats: int) -> float:
    """Median in-process CPU of ``microaggregate(EIA, k=3)`` with the sources at ``src``."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run(
        [sys.executable, "-c", LIBRARY, str(EIA), EIA_COLUMNS, str(repeats)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return round(float(json.loads(out)), 4)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cli-repeats", type=int, default=5)
    parser.add_argument(
        "--before-src",
        type=Path,
        default=None,
        help="the previous commit's src folder, for the 'before' command",
    )
    parser.add_argument(
        "--skip-mdav",
        action="store_true",
        help="time the command only (keep the saved in-process figures)",
    )
    args = parser.parse_args()
    result: dict[str, Any] = {
        "benchmark": "exact MDAV threads and the microaggregate command (issue 11)",
        "cpus": os.cpu_count(),
    }
    if args.skip_mdav and OUT.exists():  # keep the last in-process figures
        kept = json.loads(OUT.read_text())
        result.update({k: v for k, v in kept.items() if k.startswith(("mdav_", "busy_"))})
    if not args.skip_mdav:
        result["mdav_100000x10"] = in_process(args.repeats)
        one = [r for r in result["mdav_100000x10"] if r["workers"] == 1]
        ratio = one[1]["cpu_s"] / one[0]["cpu_s"]
        result["busy_over_idle_cpu_workers_1"] = round(ratio, 3)
        print(f"busy / idle CPU with workers=1: {ratio:.3f} (target within 0.8..1.2)")
    commands = {"after": REPO / "src"}
    if args.before_src is not None:
        commands["before"] = args.before_src
    result["microaggregate_eia_k3"] = {}
    for label, src in commands.items():
        cmd = command_cpu(src, args.cli_repeats)
        cmd["library_cpu_s"] = library_cpu(src, args.cli_repeats)
        result["microaggregate_eia_k3"][label] = cmd
        print(
            f"anonlab microaggregate EIA k=3  {label:<6} CPU {cmd['cpu_s']:>6.3f} s  "
            f"wall {cmd['wall_s']:>6.3f} s   microaggregate() alone CPU "
            f"{cmd['library_cpu_s']:.4f} s",
            flush=True,
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
