"""Where the CPU and memory of one ``anonlab generalize`` run on Adult x33 go, step by step.

Runs the command of benchmarks/whole_arx.py (Adult x33, k = 165, 1 %, defaults:
verification and the risk section on) in a fresh process whose steps are
wrapped: each step's CPU (``time.process_time``, all threads) and the
process's resident memory after it (current and peak, MiB); the command's
quick exit (``anonlab.cli.app.exit_now``) raises instead, so that the child
prints its steps. With
``--before-src`` an earlier checkout's ``src`` runs the same way, the two
interleaved; figures are medians of ``--repeats`` runs.
Results go to benchmarks/results/whole_steps.json.

    python benchmarks/whole_steps.py --repeats 3 [--before-src OLD/src]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from whole_arx import anonlab_args, make_x33

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "whole_steps.json"

#: (module, function) of each step, in the order a run takes them
STEPS = [
    ("anonlab.runs.generalize", "read_input"),
    ("anonlab.generalize", "model_dataset"),
    ("anonlab.runs.generalize", "search_dataset"),
    ("anonlab.io", "write_table"),
    ("anonlab.io", "read_table"),
    ("anonlab.runs.generalize", "verify_release"),
    ("anonlab.runs.generalize", "_verify"),  # its name in earlier checkouts
    ("anonlab.risk.release", "release_risk_report"),
    ("anonlab.runs.generalize", "distinct_values"),
]

CHILD = """
import importlib, json, resource, sys, time
started = time.process_time()
import anonlab.cli.app
from anonlab.cli.app import main
def exit_by_raising(code):  # main() ends generalize with exit_now (os._exit): raise instead
    raise SystemExit(code)
anonlab.cli.app.exit_now = exit_by_raising
try:  # as main() does first, before the modules wrapped below load pyarrow
    from anonlab.memory import tune_allocators_at_start
except ImportError:  # an earlier checkout
    pass
else:
    tune_allocators_at_start(sys.argv[2:])
import anonlab.runs.generalize, anonlab.generalize, anonlab.io, anonlab.risk.release
steps, rows = json.loads(sys.argv[1]), []
rows.append(["imports", time.process_time() - started, 0, 0])
def wrap(module, name):
    mod = importlib.import_module(module)
    inner = getattr(mod, name, None)
    if inner is None:  # a step of another checkout's spelling
        return
    def step(*args, **kwargs):
        begun = time.process_time()
        out = inner(*args, **kwargs)
        current = int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        rows.append([name, time.process_time() - begun, current, peak])
        return out
    setattr(mod, name, step)
for module, name in steps:
    wrap(module, name)
sys.argv = ["anonlab", *sys.argv[2:]]
try:
    main()
except SystemExit:
    pass
rows.append(["total", time.process_time() - started, 0,
             resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024])
print(json.dumps(rows))
"""


def one_run(args: list[str], env: dict[str, str]) -> list[list[Any]]:
    """The steps of one run: [name, CPU s, current MiB, peak MiB]."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(STEPS), *args[3:]],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    rows: list[list[Any]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before-src", type=Path, default=None)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out: dict[str, Any] = {"repeats": args.repeats}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        argv = anonlab_args(make_x33(folder), 165, folder)
        versions = {"after": {**env, "PYTHONPYCACHEPREFIX": str(folder / "pyc")}}
        if args.before_src:
            versions["before"] = {
                **env,
                "PYTHONPATH": str(args.before_src.resolve()),
                "PYTHONPYCACHEPREFIX": str(folder / "pyc-before"),
            }
        runs: dict[str, list[list[list[Any]]]] = {name: [] for name in versions}
        for child_env in versions.values():
            one_run(argv, child_env)  # warm-up: bytecode, file cache
        for _ in range(args.repeats):
            for name, child_env in versions.items():
                runs[name].append(one_run(argv, child_env))
    for name, found in runs.items():
        steps = []
        reads = 0
        for i, row in enumerate(found[0]):
            label = row[0]
            if label == "read_table":  # the input's (inside read_input), then the release's
                reads += 1
                label = "read_table (input)" if reads == 1 else "read back (release)"
            steps.append(
                {
                    "step": label,
                    "cpu_s": statistics.median(r[i][1] for r in found),
                    "rss_after_mib": statistics.median(r[i][2] for r in found),
                    "peak_mib": statistics.median(r[i][3] for r in found),
                }
            )
        out[name] = steps
        print(name)
        for s in steps:
            print(
                f"  {s['step']:22s} CPU {s['cpu_s']:5.2f} s  RSS after "
                f"{s['rss_after_mib']:5.0f} MiB  peak {s['peak_mib']:5.0f} MiB"
            )
    RESULTS.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    print(f"saved {RESULTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
