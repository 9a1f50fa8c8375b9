"""What the risk section costs ``anonlab generalize`` on Adult: the whole command, with and without.

Each run is the bundled example as a user types it, in a fresh process, with
its outputs in a temporary folder:

    anonlab generalize --config examples/adult.toml --output OUT.csv --report OUT.json --quiet

* ``with``: the command as it is: the release is verified, re-read, and its
  risk measured (:func:`anonlab.risk.release.release_risk_report`);
* ``without``: the same command in a process where the risk step is replaced by
  a stub returning no keys (and the check of the risk settings' columns by a
  no-op), so that only the measurement, the warnings and the report's risk
  keys are left out. The risk package is still imported there (the settings
  model lives in it), so its import is measured apart, in a process that has
  already imported everything else ``generalize`` needs (``import``);
* ``step``: the risk step alone (measure and judge the written release), in
  process, median of 4 x ``--repeats`` runs: the part of the difference that
  does not drown in the run-to-run noise of a shared machine.

CPU is user + system time of the child process (``RUSAGE_CHILDREN``); wall is
the elapsed time; both are the median of ``--repeats`` runs (default 5) of
each variant, after one warm-up run of each, the variants interleaved so that
the shared machine's load falls on both alike. The 1-minute load average is
recorded before and after. Results go to benchmarks/results/safe_cost.json.

    python benchmarks/safe_cost.py
    python benchmarks/safe_cost.py --repeats 3
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

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "examples" / "adult.toml"
OUT = REPO / "benchmarks" / "results" / "safe_cost.json"

# runs the command line in this process; "without" stubs the risk step first
LAUNCH = """
import sys
if sys.argv[1] == "without":
    import anonlab.risk.release as release
    release.release_risk_report = lambda *args, **kwargs: {}
    release.check_risk_columns = lambda *args, **kwargs: None
from anonlab.cli.app import app
sys.argv = ["anonlab", *sys.argv[2:]]
app()
"""

# the import of the risk package alone, after everything else generalize imports
IMPORT = """
import resource, sys
import pandas, numpy, pydantic, typer, rich
import anonlab.io, anonlab.settings, anonlab.outputs, anonlab.generalize, anonlab.hierarchy
import anonlab.lattice, anonlab.verify.generalization, anonlab.report, anonlab.cli.common
before = resource.getrusage(resource.RUSAGE_SELF)
import anonlab.risk.release
after = resource.getrusage(resource.RUSAGE_SELF)
print((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
"""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(variant: str, folder: Path) -> tuple[float, float]:
    """CPU and wall seconds of one whole command in a fresh process."""
    args = [
        "generalize",
        "--config",
        str(CONFIG),
        "--output",
        str(folder / f"{variant}.csv"),
        "--report",
        str(folder / f"{variant}.json"),
        "--quiet",
    ]
    cpu, wall = _cpu(), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", LAUNCH, variant, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    if done.returncode != 0:
        raise RuntimeError(f"{variant}: {done.stderr.strip()}")
    return cpu, wall


def import_cost() -> float:
    """CPU seconds of importing the risk package on top of the rest of generalize's imports."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORT], cwd=REPO, capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip())


def step_cost(release: Path, repeats: int) -> float:
    """Median CPU seconds of the risk step alone, in this process, on the written release.

    The step is what ``run_generalize`` adds: measure the release
    (:func:`anonlab.risk.release.measure_release`) and judge it (the
    warnings), on the table read back as the run reads it back.
    """
    from anonlab.io import read_table
    from anonlab.risk.measure import risk_warnings
    from anonlab.risk.release import ReleaseRiskSettings, measure_release

    table = read_table(release, delimiter=",")
    settings = ReleaseRiskSettings()
    runs = []
    for _ in range(repeats + 1):  # the first run warms the caches up
        before = time.process_time()
        section, _ = measure_release(table, ["salary-class"], settings)
        risk_warnings(section, settings.max_risk)
        runs.append(time.process_time() - before)
    return statistics.median(runs[1:])


def measure(repeats: int) -> dict[str, Any]:
    """Medians per variant, the releases compared, the risk package's import cost."""
    load_before = os.getloadavg()[0]
    times: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
    with tempfile.TemporaryDirectory(prefix="anonlab-bench-") as tmp:
        folder = Path(tmp)
        for variant in times:  # warm-up (file cache, .pyc)
            run_once(variant, folder)
        for _ in range(repeats):
            for variant, runs in times.items():
                runs.append(run_once(variant, folder))
        same = (folder / "with.csv").read_bytes() == (folder / "without.csv").read_bytes()
        step = step_cost(folder / "with.csv", 4 * repeats)
        has_risk = "risk" in json.loads((folder / "with.json").read_text())
        lacks_risk = "risk" not in json.loads((folder / "without.json").read_text())
    imports = [import_cost() for _ in range(repeats)]
    result: dict[str, Any] = {
        "repeats": repeats,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "same_release": same,
        "risk_only_in_with": has_risk and lacks_risk,
        "risk_import_cpu": statistics.median(imports),
        "risk_step_cpu": step,
    }
    for variant, runs in times.items():
        result[variant] = {
            "cpu": statistics.median(c for c, _ in runs),
            "wall": statistics.median(w for _, w in runs),
            "cpu_runs": [c for c, _ in runs],
        }
    base = result["without"]["cpu"]
    result["added_cpu"] = result["with"]["cpu"] - base
    result["added_share"] = result["added_cpu"] / base
    result["added_share_with_import"] = (result["added_cpu"] + result["risk_import_cpu"]) / base
    # the cost that does not drown in the machine's noise: step and import, in process
    result["step_and_import_share"] = (step + result["risk_import_cpu"]) / base
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=5)
    result = measure(parser.parse_args().repeats)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
