"""Whole-command CPU before and after this round's one-core refactor, side by side.

Runs two commands as a user types them, each in a fresh process with its
outputs in a temporary folder, once with the code under test and once with an
earlier checkout given by ``--before-src`` (its ``src`` folder, put first on
``PYTHONPATH``):

* ``generalize``: the bundled Adult example (``examples/adult.toml``: 8 QIs,
  k = 5, 1 % suppression, flash);
* ``microaggregate``: EIA with k = 3 on its 11 numeric columns.

The "after" command is today's: it also re-reads and verifies the release
(on by default now) and measures its re-identification risk; "after,
--no-verify" skips the verification only. The "after" commands get the roles
this version asks for. CPU is user + system time of the child
(``RUSAGE_CHILDREN``); the figures are medians of ``--repeats`` runs, the
variants interleaved so that the shared machine's load falls on all alike.

Python caches the compiled bytecode of every module it imports, as it does
for any installed package; this machine's environment turns that off
(``PYTHONDONTWRITEBYTECODE=1``), so that every run would compile the
package's modules again. The children therefore write and reuse their
bytecode in a temporary folder (``PYTHONPYCACHEPREFIX``), both versions alike;
``--no-bytecode-cache`` measures with the environment as it is instead.
Results go to benchmarks/results/commands.json.

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
EIA_COLUMNS = (
    "UTILITYID,RESREVENUE,RESSALES,COMREVENUE,COMSALES,INDREVENUE,INDSALES,"
    "OTHREVENUE,OTHRSALES,TOTREVENUE,TOTSALES"
)
Variants = dict[str, tuple[list[str], bool]]  # name -> (arguments, before's code?)


def commands(out: Path, before_roles: bool = False) -> dict[str, Variants]:
    """Each case: its variants' arguments, and whether each runs the earlier checkout
    (``before_roles``: that checkout asks for the roles too, as every version since round 3
    does)."""
    adult = [
        "generalize",
        "--config",
        str(REPO / "examples" / "adult.toml"),
        "--output",
        str(out / "a.csv"),
        "--report",
        str(out / "a.json"),
        "--quiet",
    ]
    eia = [
        "microaggregate",
        str(REPO / "data" / "sdc" / "EIA.csv"),
        "--columns",
        EIA_COLUMNS,
        "--k",
        "3",
        "--output",
        str(out / "m.csv"),
        "--report",
        str(out / "m.json"),
        "--quiet",
    ]
    roles = ["--identifying", "UTILNAME", "--insensitive", "STATE,YEAR,MONTH"]
    return {
        "generalize Adult (k=5, 1 %)": {
            "before": (adult, True),
            "after": (adult, False),
            "after_no_verify": ([*adult, "--no-verify"], False),
        },
        "microaggregate EIA (k=3)": {
            "before": ([*eia, *roles] if before_roles else eia, True),
            "after": ([*eia, *roles], False),
            "after_no_verify": ([*eia, *roles, "--no-verify"], False),
        },
    }


def child_env(src: Path | None, cache: Path | None) -> dict[str, str]:
    """The child's environment: the code to run, and where bytecode is cached (if it is)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    if cache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def cpu_of(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of one command in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "anonlab", *args],
        env=env,
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime), wall


def measure(
    variants: Variants, before_src: Path, cache: Path | None, repeats: int
) -> dict[str, object]:
    """Medians of ``repeats`` interleaved runs of each variant (after one warm-up run each)."""
    envs = {
        name: child_env(
            before_src if old else None,
            None if cache is None else cache / ("before" if old else "after"),
        )
        for name, (_, old) in variants.items()
    }
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    for name, (args, _) in variants.items():
        cpu_of(args, envs[name])  # warms the file cache (and writes the bytecode)
    loads = [os.getloadavg()[0]]
    for _ in range(repeats):
        for name, (args, _) in variants.items():
            runs[name].append(cpu_of(args, envs[name]))
    loads.append(os.getloadavg()[0])
    row: dict[str, object] = {"load_average": loads}
    for name, values in runs.items():
        row[f"{name}_cpu_s"] = statistics.median(v[0] for v in values)
        row[f"{name}_wall_s"] = statistics.median(v[1] for v in values)
        row[f"{name}_cpu_runs_s"] = [round(v[0], 3) for v in values]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-src", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile every module in every run, as this environment does",
    )
    parser.add_argument(
        "--before-roles",
        action="store_true",
        help="the earlier checkout asks for the roles (round 3 and later)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="results file (default: benchmarks/results/commands.json)",
    )
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        cache = None if args.no_bytecode_cache else Path(folder) / "pycache"
        for name, variants in commands(Path(folder), args.before_roles).items():
            row = {"command": name, **measure(variants, args.before_src, cache, args.repeats)}
            rows.append(row)
            print(
                f"{name:30s} before {row['before_cpu_s']:6.3f} s   after "
                f"{row['after_cpu_s']:6.3f} s   after --no-verify "
                f"{row['after_no_verify_cpu_s']:6.3f} s   (load {row['load_average']})"
            )
    out = args.out or REPO / "benchmarks" / "results" / (
        "commands_no_bytecode_cache.json" if args.no_bytecode_cache else "commands.json"
    )
    out.write_text(
        json.dumps(
            {"repeats": args.repeats, "bytecode_cache": not args.no_bytecode_cache, "rows": rows},
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"saved {out}")


if __name__ == "__main__":
    main()
