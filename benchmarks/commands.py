"""Whole-command CPU before and after this round's one-core refactor, side by side.

Runs two commands as a user types them, each in a fresh process with its
outputs in a temporary folder, once with the code under test and once with an
earlier checkout given by ``--before-src`` (its ``src`` folder, put first on
``PYTHONPATH``):

* ``generalize``: the bundled Adult example (``examples/adult.toml``: 8 QIs,
  k = 5, 1 % suppression, flash);
* ``microaggregate``: EIA with k = 3 on its 11 numeric columns.

The "after" command is today's: it also re-reads and verifies the release
(on by default now) and measures its re-identification risk. ``--options``
may add flags to the "after" run only (e.g. the roles a new version asks for).
CPU is user + system time of the child (``RUSAGE_CHILDREN``); the figures are
medians of ``--repeats`` runs, before and after interleaved so that the shared
machine's load falls on both alike. Results go to benchmarks/results/commands.json.

    python benchmarks/commands.py --before-src /path/to/old/checkout/src
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EIA_COLUMNS = ("UTILITYID,RESREVENUE,RESSALES,COMREVENUE,COMSALES,INDREVENUE,INDSALES,"
               "OTHREVENUE,OTHRSALES,TOTREVENUE,TOTSALES")


def commands(out: Path) -> dict[str, tuple[list[str], list[str]]]:
    """Each case: the arguments both versions take, and those only the new one needs."""
    return {
        "generalize Adult (k=5, 1 %)": (
            ["generalize", "--config", str(REPO / "examples" / "adult.toml"),
             "--output", str(out / "a.csv"), "--report", str(out / "a.json"), "--quiet"],
            []),
        "microaggregate EIA (k=3)": (
            ["microaggregate", str(REPO / "data" / "sdc" / "EIA.csv"), "--columns",
             EIA_COLUMNS, "--k", "3", "--output", str(out / "m.csv"), "--report",
             str(out / "m.json"), "--quiet"],
            ["--identifying", "UTILNAME", "--insensitive", "STATE,YEAR,MONTH"]),
    }


def cpu_of(args: list[str], src: Path | None) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of one command in a child process."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-W", "ignore", "-m", "anonlab", *args], env=env,
                   check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-src", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name, (common, extra) in commands(Path(folder)).items():
            runs: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
            cpu_of(common, args.before_src)  # warm the file cache for both
            for _ in range(args.repeats):
                runs["before"].append(cpu_of(common, args.before_src))
                runs["after"].append(cpu_of(common + extra, None))
            row = {"command": name, "load_average": os.getloadavg()[0]}
            for side, values in runs.items():
                row[f"{side}_cpu_s"] = statistics.median(v[0] for v in values)
                row[f"{side}_wall_s"] = statistics.median(v[1] for v in values)
            rows.append(row)
            print(f"{name:32s} before CPU {row['before_cpu_s']:6.3f} s   after CPU "
                  f"{row['after_cpu_s']:6.3f} s   (load {row['load_average']:.1f})")
    out = REPO / "benchmarks" / "results" / "commands.json"
    out.write_text(json.dumps({"repeats": args.repeats, "rows": rows}, indent=2) + "\n",
                   encoding="utf-8")
    print(f"saved {out.relative_to(REPO)}")


if __name__ == "__main__":
    main()
