"""Whole-command CPU of the perturbation family's bundled commands, before and after a change.

The README's perturbation commands as a user types them, each in a fresh
process with its outputs in a temporary folder, once with the code under test
and once with an earlier checkout given by ``--before-src`` (its ``src``
folder, put first on ``PYTHONPATH``; ``--after-src`` likewise names the code
under test when it is not this checkout's), interleaved and reported as
medians, as ``benchmarks/commands.py`` does (CPU is user + system time of the
child, bytecode cached in a temporary folder for both versions alike):

* ``perturb`` of Tarragona by ``examples/perturb_tarragona.toml`` (obt, key,
  library and report; 834 records, 13 columns), and the same as a Parquet
  folder on the NumPy engine (``--output rel/``);
* ``perturb`` of ``examples/people.csv`` with roles (README);
* ``perturb --invert`` of the Tarragona release, and ``attack`` on it.

The release and key each command writes are also compared byte for byte
between the two versions (``identical``). Results go to
benchmarks/results/perturb_commands.json.

    python benchmarks/perturb_commands.py --before-src /path/to/old/checkout/src
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from commands import REPO, child_env, cpu_of

TARRAGONA = REPO / "data" / "sdc" / "Tarragona.csv"


def cases(out: Path) -> dict[str, list[str]]:
    """Each command's arguments, writing into ``out`` (the release made by ``prepare``)."""
    config = str(REPO / "examples" / "perturb_tarragona.toml")
    files = [
        "--output",
        str(out / "rel.csv"),
        "--key",
        str(out / "key.json"),
        "--report",
        str(out / "report.json"),
        "--library",
        str(out / "library.json"),
        "--quiet",
        "--overwrite",
    ]
    return {
        "perturb Tarragona (obt, config)": ["perturb", "--config", config, *files],
        "perturb Tarragona to a folder (NumPy engine)": [
            "perturb",
            "--config",
            config,
            *files[:-1],
            "--output",
            str(out / "relf") + "/",
            "--overwrite",
        ],
        "perturb people.csv (roles)": [
            "perturb",
            str(REPO / "examples" / "people.csv"),
            "--columns",
            "age,income",
            "--identifying",
            "name",
            "--sensitive",
            "diagnosis",
            "--insensitive",
            "sex,region",
            "--seed",
            "7",
            "--output",
            str(out / "people.csv"),
            "--key",
            str(out / "people_key.json"),
            "--report",
            str(out / "people_report.json"),
            "--quiet",
            "--overwrite",
        ],
        "perturb --invert Tarragona": [
            "perturb",
            str(out / "given.csv"),
            "--invert",
            "--key",
            str(out / "given_key.json"),
            "--output",
            str(out / "restored.csv"),
            "--quiet",
            "--overwrite",
        ],
        "attack Tarragona": [
            "attack",
            str(TARRAGONA),
            str(out / "given.csv"),
            "--known",
            "2,5,10",
            "--report",
            str(out / "attack_report.json"),
            "--quiet",
            "--overwrite",
        ],
    }


def prepare(out: Path, src: Path | None) -> None:
    """The release and key the invert and attack commands read (written once, by the code
    under test)."""
    cpu_of(
        [
            "perturb",
            "--config",
            str(REPO / "examples" / "perturb_tarragona.toml"),
            "--output",
            str(out / "given.csv"),
            "--key",
            str(out / "given_key.json"),
            "--library",
            str(out / "given_library.json"),
            "--quiet",
            "--overwrite",
        ],
        child_env(src, None),
    )


#: the flags whose values a command writes
WRITES = ("--output", "--key", "--report", "--library")


def identical(args: list[str], srcs: dict[str, Path | None], folder: Path) -> bool | None:
    """Whether the two versions write the same release, key and library bytes (``None``:
    the command writes none of them, e.g. attack). Each version writes into its own folder."""
    written: dict[str, list[Path]] = {}
    for name, src in srcs.items():
        out = folder / name
        out.mkdir()
        moved = list(args)
        writes = [w for w in WRITES if not (w == "--key" and "--invert" in args)]
        for i, value in enumerate(args[:-1]):
            if value in writes:
                tail = "/" if args[i + 1].endswith("/") else ""
                moved[i + 1] = str(out / Path(args[i + 1]).name) + tail
        cpu_of(moved, child_env(src, None))
        written[name] = sorted(
            p.relative_to(out)
            for p in out.rglob("*")
            if p.is_file() and "report" not in p.name and p.suffix in (".csv", ".parquet", ".json")
        )
    if not written["after"]:
        return None
    return written["before"] == written["after"] and all(
        filecmp.cmp(folder / "before" / p, folder / "after" / p, shallow=False)
        for p in written["after"]
    )


def measure(
    args: list[str], srcs: dict[str, Path | None], cache: Path, repeats: int
) -> dict[str, object]:
    """Medians of ``repeats`` interleaved runs of ``args`` with each version's code (after
    one warm-up run each, which also writes its bytecode)."""
    envs = {name: child_env(src, cache / name) for name, src in srcs.items()}
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in srcs}
    for name in srcs:
        cpu_of(args, envs[name])
    loads = [os.getloadavg()[0]]
    for _ in range(repeats):
        for name in srcs:
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
    parser.add_argument("--after-src", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--only", default="", help="measure only the commands whose name holds this text"
    )
    parser.add_argument(
        "--results", type=Path, default=REPO / "benchmarks" / "results" / "perturb_commands.json"
    )
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        work = root / "w"
        work.mkdir()
        prepare(work, args.after_src)
        cache = root / "pycache"
        for number, (name, command) in enumerate(cases(work).items()):
            if args.only not in name:
                continue
            srcs = {"before": args.before_src, "after": args.after_src}
            row: dict[str, object] = {
                "command": name,
                **measure(command, srcs, cache, args.repeats),
            }
            same = root / f"same{number}"
            same.mkdir()
            row["identical_outputs"] = identical(command, srcs, same)
            before, after = float(row["before_cpu_s"]), float(row["after_cpu_s"])  # type: ignore[arg-type]
            row["change_percent"] = round(100 * (after / before - 1), 1)
            rows.append(row)
            print(
                f"{name:46s} before {before:6.3f} s  after {after:6.3f} s  "
                f"({row['change_percent']:+.1f} %)  identical {row['identical_outputs']}  "
                f"(load {row['load_average']})",
                flush=True,
            )
    out = args.results
    out.write_text(
        json.dumps({"repeats": args.repeats, "rows": rows}, indent=2) + "\n", encoding="utf-8"
    )
    print(f"saved {out}")


if __name__ == "__main__":
    main()
