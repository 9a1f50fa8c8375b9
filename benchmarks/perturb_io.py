"""The whole ``anonlab perturb`` command on 1,000,000 x 20 numbers: reading, verifying, writing.

The table is the one of ``benchmarks/perturbation.py`` (exponential values
mixed by a random 20 x 20 matrix, rounded to 4 decimals, seed 0), written once
as CSV (150 MB) and Parquet (117 MB) into ``--cache`` (default
``/tmp/anonlab-bench/perturb_io``, outside the repository, so the data is
never committed). Each case is the command as a user types it:

    python -m anonlab perturb big.EXT --method obt --seed 1 --output rel.EXT
        --key key.json --quiet [--no-verify]

``new`` is this checkout, with verification (the default) and with
``--no-verify``; ``old`` is the same command run with ``PYTHONPATH`` set to
``--baseline``, the ``src`` folder of the code before the reader refactor,
which had no verification. The cases alternate within each repeat, so all
see the same load. CPU is user + system time of the child
(``resource.getrusage(RUSAGE_CHILDREN)`` before and after), peak memory the
child's ``ru_maxrss`` (from ``os.wait4``); each is the median of
``--repeats`` runs (default 3). The 1-minute load average is recorded before
and after, since the machine is shared. The old and new releases must hold
the same values (CSV: the same bytes; Parquet: equal tables), else the script
stops. Results go to ``benchmarks/results/perturb_io.json``.

    python benchmarks/perturb_io.py
    python benchmarks/perturb_io.py --repeats 5 --baseline /tmp/basecopy/src
    # the baseline, from a commit before the refactor:
    git archive bac7870 src | tar -x -C /tmp/basecopy
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
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "perturb_io.json"
ROWS, COLUMNS = 1_000_000, 20
FORMATS = ("csv", "parquet")


def make_tables(cache: Path) -> dict[str, Path]:
    """The 1,000,000 x 20 table as CSV and Parquet in ``cache`` (written once)."""
    import pandas as pd

    cache.mkdir(parents=True, exist_ok=True)
    paths = {fmt: cache / f"big.{fmt}" for fmt in FORMATS}
    if all(p.exists() for p in paths.values()):
        return paths
    rng = np.random.default_rng(0)
    x = (rng.exponential(1.0, (ROWS, COLUMNS)) @ rng.standard_normal((COLUMNS, COLUMNS))).round(4)
    frame = pd.DataFrame(x, columns=[f"v{i:02d}" for i in range(COLUMNS)])
    frame.to_csv(paths["csv"], index=False)
    frame.to_parquet(paths["parquet"], index=False)
    return paths


def run(cmd: list[str], python_path: str | None) -> dict[str, float]:
    """Run ``cmd``; its CPU seconds (user, system), wall seconds and peak resident MB."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if python_path is not None:
        env["PYTHONPATH"] = python_path
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        if child.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} failed: {err.read().decode()[-800:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "user": after.ru_utime - before.ru_utime,
        "system": after.ru_stime - before.ru_stime,
        "wall": wall,
        "peak_mb": usage.ru_maxrss / 1024,
    }


def cases(tables: dict[str, Path], out: Path, baseline: str) -> list[dict[str, Any]]:
    """Every (format, version, verify) case with its command."""
    found = []
    for fmt, table in tables.items():
        for version, verify in (("old", None), ("new", True), ("new", False)):
            name = f"{version}{'' if verify is None else '-verify' if verify else '-noverify'}"
            cmd = [
                sys.executable,
                "-m",
                "anonlab",
                "perturb",
                str(table),
                "--method",
                "obt",
                "--seed",
                "1",
                "--output",
                str(out / f"{name}.{fmt}"),
                "--key",
                str(out / f"{name}-key.json"),
                "--quiet",
            ]
            if verify is False:
                cmd.append("--no-verify")
            found.append(
                {
                    "format": fmt,
                    "version": version,
                    "verify": verify,
                    "cmd": cmd,
                    "python_path": baseline if version == "old" else None,
                    "release": out / f"{name}.{fmt}",
                }
            )
    return found


def same_values(a: Path, b: Path) -> bool:
    """Whether two releases hold the same values (CSV bytes; Parquet tables)."""
    if a.suffix == ".csv":
        return a.read_bytes() == b.read_bytes()
    import pyarrow.parquet as pq

    return bool(pq.read_table(a).equals(pq.read_table(b)))


def measure(repeats: int, cache: Path, baseline: str) -> dict[str, Any]:
    """Run every case ``repeats`` times (alternating) and summarise each by its medians."""
    tables = make_tables(cache)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        out = tmp
        todo = cases(tables, Path(tmp), baseline)
        runs: list[list[dict[str, float]]] = [[] for _ in todo]
        for repeat in range(repeats):
            for i, case in enumerate(todo):
                runs[i].append(run(case["cmd"], case["python_path"]))
                print(
                    f"  {repeat + 1}/{repeats} {case['format']} {case['version']} "
                    f"verify={case['verify']}: {runs[i][-1]}",
                    file=sys.stderr,
                )
        for fmt in FORMATS:
            old, *new = [c["release"] for c in todo if c["format"] == fmt]
            for release in new:
                if not same_values(old, release):
                    raise SystemExit(f"{release.name} differs from the old release {old.name}")
    rows = []
    for case, measured in zip(todo, runs, strict=True):

        def median(key: str, measured: list[dict[str, float]] = measured) -> float:
            return statistics.median(m[key] for m in measured)

        rows.append(
            {
                "format": case["format"],
                "version": case["version"],
                "verify": case["verify"],
                "command": " ".join(["anonlab", *case["cmd"][3:]])
                .replace(out, "$OUT")
                .replace(str(cache), "$CACHE"),
                "cpu_seconds": statistics.median(m["user"] + m["system"] for m in measured),
                "user_seconds": median("user"),
                "system_seconds": median("system"),
                "wall_seconds": median("wall"),
                "peak_rss_mb": median("peak_mb"),
                "runs": measured,
            }
        )
    return {
        "rows": ROWS,
        "columns": COLUMNS,
        "repeats": repeats,
        "baseline": baseline,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "releases_identical": True,
        "cases": rows,
    }


def table(result: dict[str, Any]) -> str:
    """The results as a Markdown table."""
    lines = [
        "| input | code | verification | CPU s | user s | system s | wall s | peak MB |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in result["cases"]:
        verify = (
            "none (did not exist)"
            if row["verify"] is None
            else ("on (default)" if row["verify"] else "--no-verify")
        )
        lines.append(
            f"| {row['format']} | {row['version']} | {verify} | "
            f"{row['cpu_seconds']:.2f} | {row['user_seconds']:.2f} | "
            f"{row['system_seconds']:.2f} | {row['wall_seconds']:.2f} | "
            f"{row['peak_rss_mb']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Measure, print the table, save the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/anonlab-bench/perturb_io"))
    parser.add_argument(
        "--baseline", default="/tmp/basecopy/src", help="src folder of the code before the refactor"
    )
    args = parser.parse_args()
    if not (Path(args.baseline) / "anonlab").is_dir():
        raise SystemExit(f"no anonlab package under {args.baseline}: give --baseline")
    result = measure(args.repeats, args.cache, str(Path(args.baseline).resolve()))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(table(result))
    print(
        f"\nload average {result['load_before']:.2f} before, {result['load_after']:.2f} "
        f"after; saved {OUT.relative_to(REPO)}"
    )


if __name__ == "__main__":
    main()
