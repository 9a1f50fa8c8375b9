"""Running an R driver for the benchmarks that time sdcMicro beside anonlab.

Each such script keeps its own driver (the R text that sources sdcMicro's functions from a
checkout of its public repository and times them); this module writes it to a scratch
folder, runs it with ``Rscript`` on one BLAS thread and returns what it printed.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path


def run_driver(driver: str, args: Sequence[object]) -> str:
    """The standard output of ``Rscript DRIVER ARGS...`` (one OpenBLAS and OpenMP thread);
    the script stops with R's last error line when R fails."""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "driver.R"
        script.write_text(driver)
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        done = subprocess.run(
            ["Rscript", str(script), *map(str, args)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    if done.returncode:
        raise SystemExit(f"Rscript failed: {done.stderr.strip().splitlines()[-1:]}")
    return done.stdout


def tab_figures(printed: str) -> dict[str, float]:
    """The ``name<TAB>number`` lines a driver printed, as numbers by name."""
    return {
        name: float(value)
        for name, value in (line.split("\t") for line in printed.splitlines() if "\t" in line)
    }
