"""What a compiled roll-up would cost and save: numba measured beside anonlab's hashing.

The search's fixed cost per checked node on small tables (issues 22 and 23) is a few
dozen NumPy calls; the largest single one is the hash of the source's packed keys
(:func:`anonlab.grouping.factorize_int64`, pandas' ``Int64HashTable``). This script
measures the cheapest compiled replacement the project could depend on, numba (not a
dependency of anonlab): the same factorization (inverse and uniques in order of first
appearance) written as an open-addressing hash loop, ``@njit(cache=True)``, in a child
process of ``--python`` (a Python with numba and NumPy installed, e.g. a scratch venv):

- the CPU of ``import numba`` in a fresh process;
- the CPU of the first call: the compilation without a cache, then the load of the
  cached machine code in later processes (the cache in a scratch folder);
- the median time of a call on ``--keys`` int64 keys (2,155: the distinct tuples of
  sdcMicro's ``testdata``, the small table of those issues), beside
  ``factorize_int64`` on the same keys in this process.

Every process that searches would pay the import and the cache load once.
Results: benchmarks/results/compiled_rollup_cost.json.

    python -m venv /tmp/nb && /tmp/nb/bin/pip install numba
    python benchmarks/compiled_rollup_cost.py --python /tmp/nb/bin/python
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from anonlab.grouping import factorize_int64

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "compiled_rollup_cost.json"

KERNEL = """
import numba
import numpy as np


@numba.njit(cache=True)
def factorize(keys):
    n = keys.shape[0]
    size = 1
    while size < 2 * n:
        size <<= 1
    mask = size - 1
    slots = np.full(size, -1, np.int64)
    inverse = np.empty(n, np.int64)
    uniques = np.empty(n, np.int64)
    m = 0
    for i in range(n):
        key = keys[i]
        h = (key * 0x9E3779B97F4A7C15) & mask
        while True:
            s = slots[h]
            if s < 0:
                slots[h] = m
                uniques[m] = key
                inverse[i] = m
                m += 1
                break
            if uniques[s] == key:
                inverse[i] = s
                break
            h = (h + 1) & mask
    return inverse, uniques[:m]
"""

DRIVER = """
import json, sys, time
started = time.process_time()
import numba
imported = time.process_time()
import numpy as np
from kernel import factorize
keys = np.random.default_rng(1).integers(0, int(sys.argv[2]), int(sys.argv[1]))
before = time.process_time()
factorize(keys)
first = time.process_time() - before
calls = []
for _ in range(2001):
    t = time.perf_counter()
    factorize(keys)
    calls.append(time.perf_counter() - t)
calls.sort()
print(json.dumps({"import_s": imported - started, "first_call_s": first, "call_s": calls[1000]}))
"""


def numba_run(python: str, folder: Path, keys: int, space: int) -> dict[str, float]:
    """One fresh process: numba's import, first call and median call (module text)."""
    done = subprocess.run(
        [python, str(folder / "driver.py"), str(keys), str(space)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def anonlab_call(keys: int, space: int) -> float:
    """The median time of ``factorize_int64`` on the same keys."""
    values = np.random.default_rng(1).integers(0, space, keys)
    calls = []
    for _ in range(2001):
        t = time.perf_counter()
        factorize_int64(values)
        calls.append(time.perf_counter() - t)
    return statistics.median(calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", required=True, help="a Python with numba installed")
    parser.add_argument("--keys", type=int, default=2155)
    parser.add_argument("--runs", type=int, default=5, help="processes with the cache")
    parser.add_argument("--output", type=Path, default=OUT)
    args = parser.parse_args()
    space = 2 * args.keys
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "kernel.py").write_text(KERNEL)
        (folder / "driver.py").write_text(DRIVER)
        cold = numba_run(args.python, folder, args.keys, space)
        warm = [numba_run(args.python, folder, args.keys, space) for _ in range(args.runs)]
    ours = anonlab_call(args.keys, space)
    figures = {
        "numba_import_cpu_s": statistics.median(r["import_s"] for r in [cold, *warm]),
        "numba_compile_cpu_s": cold["first_call_s"],
        "numba_cached_load_cpu_s": statistics.median(r["first_call_s"] for r in warm),
        "numba_call_s": statistics.median(r["call_s"] for r in warm),
        "anonlab_factorize_int64_call_s": ours,
    }
    for name, value in figures.items():
        unit, scale = ("us", 1e6) if name.endswith("call_s") else ("ms", 1e3)
        print(f"{name:34} {value * scale:10.1f} {unit}")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "keys": args.keys,
        "command": "python benchmarks/compiled_rollup_cost.py --python <python with numba>",
        **figures,
    }
    args.output.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
