"""Whole-command CPU of the microaggregation family's commands, before and after a change.

Each command runs as a user types it, in a fresh process with its outputs in a
temporary folder, once with the code under test (``--after-src``, default the
installed package) and once with an earlier checkout (``--before-src``, its
``src`` folder put first on ``PYTHONPATH``); the two are interleaved, their
order swapped every repeat, so that the shared machine's load falls on both
alike. CPU is user + system time of the child (``RUSAGE_CHILDREN``); figures
are medians of ``--repeats`` runs after one warm-up run each. Bytecode is
cached per version in a temporary folder (``PYTHONPYCACHEPREFIX``), as
benchmarks/commands.py does.

The cases: the bundled Tarragona example (exact MDAV, k = 3), EIA (k = 3, the
case of benchmarks/commands.py), examples/people.csv with a nominal column,
the scalable variant on the NumPy engine (a folder output), and ``evaluate``
of Tarragona against its k = 3 release, in memory and on the NumPy engine
(``--block-rows``). With ``--million FILE`` (a CSV of 1,000,000 x 10 numbers,
e.g. ``default_rng(1).standard_normal``) the scalable variant at k = 5 also
runs on it with a file output (both versions) and with a folder output (the
code under test); its peak memory was measured apart (``/usr/bin/time -v``).

    python benchmarks/microaggregation_commands.py --before-src /path/to/old/src
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
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "microaggregation_commands.json"
EIA_COLUMNS = (
    "UTILITYID,RESREVENUE,RESSALES,COMREVENUE,COMSALES,INDREVENUE,INDSALES,"
    "OTHREVENUE,OTHRSALES,TOTREVENUE,TOTSALES"
)
Case = tuple[list[str], bool]  # arguments, whether the earlier checkout runs it too


def cases(out: Path, release: Path, million: Path | None) -> dict[str, Case]:
    """Each case's arguments (outputs under ``out``); ``release`` is a k = 3 Tarragona."""
    tarragona = str(REPO / "data" / "sdc" / "Tarragona.csv")
    runs: dict[str, Case] = {
        "microaggregate Tarragona example (exact, k=3)": (
            [
                "microaggregate",
                "--config",
                str(REPO / "examples" / "tarragona.toml"),
                "--output",
                f"{out}/t.csv",
                "--report",
                f"{out}/t.json",
            ],
            True,
        ),
        "microaggregate EIA (k=3)": (
            [
                "microaggregate",
                str(REPO / "data" / "sdc" / "EIA.csv"),
                "--columns",
                EIA_COLUMNS,
                "--k",
                "3",
                "--identifying",
                "UTILNAME",
                "--insensitive",
                "STATE,YEAR,MONTH",
                "--output",
                f"{out}/m.csv",
                "--report",
                f"{out}/m.json",
            ],
            True,
        ),
        "microaggregate people.csv (nominal sex, k=5)": (
            [
                "microaggregate",
                str(REPO / "examples" / "people.csv"),
                "--columns",
                "age,income",
                "--nominal",
                "sex",
                "--identifying",
                "name",
                "--sensitive",
                "diagnosis",
                "--insensitive",
                "region",
                "--k",
                "5",
                "--output",
                f"{out}/p.csv",
            ],
            True,
        ),
        "microaggregate Tarragona scalable, folder output": (
            [
                "microaggregate",
                tarragona,
                "--variant",
                "scalable",
                "--k",
                "3",
                "--columns",
                "all-numeric",
                "--output",
                f"{out}/tk3/",
            ],
            True,
        ),
        "evaluate Tarragona vs its k=3 release": (
            ["evaluate", tarragona, str(release), "--report", f"{out}/e.json"],
            True,
        ),
        "evaluate Tarragona, --block-rows 200": (
            [
                "evaluate",
                tarragona,
                str(release),
                "--block-rows",
                "200",
                "--report",
                f"{out}/eb.json",
            ],
            True,
        ),
    }
    if million is not None:
        scalable = [
            "microaggregate",
            str(million),
            "--variant",
            "scalable",
            "--k",
            "5",
            "--columns",
            "all-numeric",
        ]
        runs["microaggregate 1M x 10 scalable, file output"] = (
            [*scalable, "--output", f"{out}/big.csv", "--report", f"{out}/big.json"],
            True,
        )
        runs["microaggregate 1M x 10 scalable, folder output"] = (
            [*scalable, "--output", f"{out}/big/", "--report", f"{out}/big_folder.json"],
            False,
        )
    return runs


def run(args: list[str], src: Path | None, cache: Path) -> float:
    """CPU seconds (user + system) of one command in a child process."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "anonlab", *args, "--quiet"],
        env=env,
        check=True,
        capture_output=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before-src", type=Path, required=True)
    parser.add_argument("--after-src", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--million", type=Path, default=None)
    args = parser.parse_args()
    versions = {"before": args.before_src, "after": args.after_src}
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        release = root / "tarragona_k3.csv"
        run(
            [
                "microaggregate",
                "--config",
                str(REPO / "examples" / "tarragona.toml"),
                "--output",
                str(release),
            ],
            args.after_src,
            root / "pyc-after",
        )
        for name, (_, both) in cases(root, release, args.million).items():
            times: dict[str, list[float]] = {v: [] for v in versions if both or v == "after"}
            for repeat in range(-1, args.repeats):  # -1: the warm-up
                order = list(times) if repeat % 2 == 0 else list(reversed(times))
                for version in order:
                    out = root / f"{version}-{repeat}"
                    out.mkdir(exist_ok=True)
                    case_args = cases(out, release, args.million)[name][0]
                    cpu = run(case_args, versions[version], root / f"pyc-{version}")
                    if repeat >= 0:
                        times[version].append(cpu)
            medians = {v: statistics.median(t) for v, t in times.items()}
            row: dict[str, object] = {"median_cpu_s": medians, "cpu_runs_s": times}
            if "before" in medians:
                row["change_percent"] = 100 * (medians["after"] / medians["before"] - 1)
            results[name] = row
            print(
                name,
                {v: round(m, 3) for v, m in medians.items()},
                f"{row.get('change_percent', 0):+.1f} %",
            )
    OUT.write_text(
        json.dumps({"repeats": args.repeats, "results": results}, indent=1) + "\n", encoding="utf-8"
    )
    print(f"saved {OUT.relative_to(REPO)}")


if __name__ == "__main__":
    main()
