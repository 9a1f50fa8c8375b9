"""What the engine benchmarks share (``engines_local_suppress.py``, ``engines_mask.py``,
``engines_onedims.py``):
the input as 4 Parquet parts, one command measured in a fresh process, the release's hash,
and the repeats of one way summed up.

CPU is user + system time of the command and every process it started (its Dask workers
included), the median of the repeats; peak memory the largest resident set among them. A
release is hashed as its rows as text (the one reader's), so a CSV and a folder of parts
compare.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: runs a command, then prints the CPU time and the largest resident set of the command and
#: of every process it started (a fresh process's RUSAGE_CHILDREN: that tree alone)
_MEASURE = """
import json, resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"cpu_s": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024}))
sys.exit(code)
"""


def write_parts(frame: pd.DataFrame, folder: Path) -> None:
    """``frame`` as ``parts/`` (4 Parquet parts of about equal rows) under ``folder``."""
    parts = folder / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(np.array_split(np.arange(len(frame)), 4)):
        frame.iloc[rows].to_parquet(parts / f"part-{i}.parquet", index=False)


def measured(cmd: list[str], name: str) -> dict[str, Any]:
    """Wall, CPU and peak memory of ``cmd`` run in a fresh measuring process; a failure is an
    error naming the run by ``name``."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{proc.stderr[-3000:]}")
    usage = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"wall_s": wall, **usage, "load": [round(load, 2), round(os.getloadavg()[0], 2)]}


def release_hash(out: Path) -> str:
    """SHA-256 of the release's rows as text (the one reader, a file or parts alike)."""
    from anonlab.io import read_table

    files = [out / f"release.{ext}" for ext in ("csv", "parquet")]
    target = next((f for f in files if f.exists()), out / "release")
    return hashlib.sha256(read_table(target).to_csv(index=False).encode()).hexdigest()


def measured_way(
    command: Callable[[Path], list[str]], name: str, out: Path, repeats: int
) -> dict[str, Any]:
    """``repeats`` runs of ``command(out)``, each into ``out`` made afresh: the median CPU and
    wall time, the largest peak, the release's hash and every run's figures."""
    runs, digest = [], ""
    for _ in range(repeats):
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        runs.append(measured(command(out), name))
        digest = release_hash(out)
    return {
        "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "peak_mib": max(r["peak_mib"] for r in runs),
        "release_sha256": digest,
        "each": runs,
    }


def figures(run: dict[str, Any]) -> str:
    """A way's table cells: CPU and wall seconds, peak MiB, the release hash's first digits."""
    return (
        f"{run['cpu_s']:8.1f} {run['wall_s']:8.1f} {run['peak_mib']:9.0f}  "
        f"{run['release_sha256'][:12]}"
    )
