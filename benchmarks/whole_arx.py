"""The whole ``anonlab generalize`` command against ARX 3.9 doing the same, on Adult x33.

Adult x33 is data/adult/adult.csv's 30,162 records repeated 33 times
(995,346 rows); k = 165 with 1 % suppression is then the same search as
k = 5 on Adult. Each variant runs as its user types it, in a fresh process,
under ``/usr/bin/time`` (process CPU = user + system, peak resident memory):

* ``anonlab``: ``anonlab generalize`` with its defaults (verification and the
  risk section on), ``--output`` and ``--report``;
* ``anonlab --no-verify``: the same without the independent check;
* ``ARX``: benchmarks/arx/ArxWhole.java (read the CSV, the same 8 hierarchies,
  k-anonymity with the same limit, precision with suppression, anonymize, save
  the output CSV) with the JVM's default heap, and with ``-Xmx128m`` and
  ``-Xmx256m`` (a capped heap; a run that fails for lack of heap is recorded as
  failed with its peak).

ARX's variants run only when ARX is compiled at /tmp/arx (classes and cp.txt, see
benchmarks/arx/README.md); otherwise they are skipped with a note, and the
results keep ARX's rows as the results file last recorded them (each marked
``"recorded": true``). The variants
are interleaved, run after run, so that the shared machine's load falls on all
alike; figures are medians of ``--repeats`` runs after one warm-up run each.
Also Adult itself (30,162 rows, k = 5), anonlab's default command only; with
``--before-src`` an earlier checkout's ``src`` folder runs the default command
too (``anonlab (before)``), on ``PYTHONPATH``.
Python's bytecode is cached in a temporary folder (as an installed package's
is), since this machine's environment turns caching off.
Results go to benchmarks/results/whole_arx.json.

    python benchmarks/whole_arx.py              # 5 runs of each (about 5 minutes)
    python benchmarks/whole_arx.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult"
ARX = Path("/tmp/arx")
QIS = (
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
)
RESULTS = REPO / "benchmarks" / "results" / "whole_arx.json"


def make_x33(folder: Path) -> Path:
    """Adult's records repeated 33 times under its header (995,346 rows)."""
    lines = (ADULT / "adult.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    target = folder / "adult_x33.csv"
    target.write_text(lines[0] + "".join(lines[1:]) * 33, encoding="utf-8")
    return target


def anonlab_args(data: Path, k: int, out: Path) -> list[str]:
    """``anonlab generalize`` as a user types it (default metric, verification and risk)."""
    qis = [x for q in QIS for x in ("--qi", f"{q}={ADULT / f'hierarchy_{q}.csv'}")]
    return [
        sys.executable,
        "-m",
        "anonlab",
        "generalize",
        str(data),
        "--delimiter",
        ";",
        *qis,
        "--sensitive",
        "salary-class",
        "--k",
        str(k),
        "--suppression",
        "0.01",
        "--output",
        str(out / "release.csv"),
        "--report",
        str(out / "report.json"),
        "--quiet",
    ]


def compile_arx(folder: Path) -> list[str] | None:
    """The class path of the compiled harness, or ``None`` when ARX is not at /tmp/arx."""
    if not (ARX / "classes").is_dir() or not (ARX / "cp.txt").is_file():
        return None
    cp = f"{ARX / 'classes'}:{(ARX / 'cp.txt').read_text().strip()}"
    subprocess.run(
        ["javac", "-cp", cp, "-d", str(folder), str(REPO / "benchmarks" / "arx" / "ArxWhole.java")],
        check=True,
    )
    return ["-cp", f"{folder}:{cp}"]


def arx_args(classpath: list[str], heap: str | None, data: Path, k: int, out: Path) -> list[str]:
    """ArxWhole on ``data`` (``heap``: a -Xmx option or the JVM's default)."""
    return [
        "java",
        *([heap] if heap else []),
        *classpath,
        "ArxWhole",
        str(data),
        ";",
        str(ADULT),
        str(k),
        "0.01",
        str(out / "arx.csv"),
        ",".join(QIS),
    ]


def timed(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Wall, CPU (user + system) and peak RSS of one process under /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as stats:
        started = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "%M %U %S", "-o", stats.name, *args],
            check=False,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
        rss_kib, user, system = Path(stats.name).read_text().split()[-3:]
    return {
        "ok": proc.returncode == 0,
        "wall_s": wall,
        "cpu_s": float(user) + float(system),
        "peak_mib": int(rss_kib) / 1024,
        "stdout": proc.stdout.strip()[-300:],
    }


def recorded_arx_rows() -> dict[str, Any]:
    """ARX's rows of the results file as last measured, marked as recorded (kept when ARX
    is not here to run again)."""
    if not RESULTS.is_file():
        return {}
    rows = json.loads(RESULTS.read_text(encoding="utf-8")).get("rows", {})
    return {name: {**row, "recorded": True} for name, row in rows.items() if name.startswith("ARX")}


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the runs (and whether each succeeded)."""
    return {
        "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "peak_mib": statistics.median(r["peak_mib"] for r in runs),
        "all_ok": all(r["ok"] for r in runs),
        "cpu_runs_s": [round(r["cpu_s"], 3) for r in runs],
        "peak_runs_mib": [round(r["peak_mib"], 1) for r in runs],
        "last_stdout": runs[-1]["stdout"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--before-src",
        type=Path,
        default=None,
        help="an earlier checkout's src folder, run as 'anonlab (before)'",
    )
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        x33 = make_x33(folder)
        variants: dict[str, list[str]] = {
            "anonlab": anonlab_args(x33, 165, folder),
            **({"anonlab (before)": anonlab_args(x33, 165, folder)} if args.before_src else {}),
            "anonlab --no-verify": [*anonlab_args(x33, 165, folder), "--no-verify"],
            "anonlab, Adult (k=5)": anonlab_args(ADULT / "adult.csv", 5, folder),
        }
        classpath = compile_arx(folder)
        note = None
        recorded: dict[str, Any] = {}
        if classpath is None:
            recorded = recorded_arx_rows()
            note = (
                "ARX skipped: no compiled ARX at /tmp/arx (classes, cp.txt); its rows are "
                "the ones recorded before"
                if recorded
                else "ARX skipped: no compiled ARX at /tmp/arx (classes, cp.txt)"
            )
            print(note)
        else:
            for heap in (None, "-Xmx256m", "-Xmx128m"):
                variants[f"ARX {heap or 'default heap'}"] = arx_args(
                    classpath, heap, x33, 165, folder
                )
        envs = {name: env for name in variants}
        if args.before_src:
            envs["anonlab (before)"] = {
                **env,
                "PYTHONPATH": str(args.before_src.resolve()),
                "PYTHONPYCACHEPREFIX": str(folder / "pycache-before"),
            }
        for name, argv in variants.items():
            timed(argv, envs[name])  # warm-up: file cache, bytecode, JIT class data
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in variants}
        loads = [os.getloadavg()[0]]
        for _ in range(args.repeats):
            for name, argv in variants.items():
                runs[name].append(timed(argv, envs[name]))
        loads.append(os.getloadavg()[0])
    rows = {name: summary(r) for name, r in runs.items()}
    rows.update(recorded)
    for name, row in rows.items():
        print(
            f"{name:24s} CPU {row['cpu_s']:6.2f} s  wall {row['wall_s']:6.2f} s  "
            f"peak {row['peak_mib']:6.0f} MiB  {'ok' if row['all_ok'] else 'FAILED'}"
            f"{'  (recorded)' if row.get('recorded') else ''}"
        )
    arx = rows.get("ARX default heap")
    if arx is not None:
        print(f"anonlab / ARX process CPU: {rows['anonlab']['cpu_s'] / arx['cpu_s']:.2f}")
    RESULTS.write_text(
        json.dumps(
            {"repeats": args.repeats, "load_average": loads, "note": note, "rows": rows}, indent=2
        )
        + "\n",
        encoding="utf-8",
    )
    print(f"saved {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
