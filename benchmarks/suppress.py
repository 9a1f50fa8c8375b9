"""Cell suppression at 100,000 records x 8 keys against sdcMicro's ``kAnon`` (issue 24).

The table: sdcMicro's testdata key tuples (``urbrur, roof, walls, water, electcon,
relat, sex, hhcivil``; data/sdc/testdata.csv) drawn with replacement, then each cell
replaced with probability ``--noise`` by a value drawn from its column (seeded), so the
table holds common and rare tuples as a survey does. ``anonlab.suppress`` runs on it
``--repeats`` times (CPU time of this process, median); with ``--sdcmicro-r SCRIPT``
the same CSV goes to ``Rscript SCRIPT CSV KEYS K - - - 1`` once per repeat, a script
that sources sdcMicro 5.8.1's ``localSuppression.R``, ``freqCalc.r``, ``indivRisk.R``
and ``calcSuppInds.cpp`` and prints ``TOTAL <cells>`` and ``CPU <seconds>`` of the
``localSuppression`` call (docs/suppression.md, "Measuring sdcMicro"). Without it the
sdcMicro figures recorded in :data:`RECORDED` (same table, same machine) are shown.

Target: anonlab's CPU at most a tenth of sdcMicro's, with no more cells blanked.

    python benchmarks/suppress.py --repeats 3
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
import pandas as pd

from anonlab.suppression import suppress

ROOT = Path(__file__).resolve().parents[1]
KEYS = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "hhcivil"]
#: sdcMicro 5.8.1 (localSuppression, R 4.2.2, data.table 1.14) on this machine, by
#: ``--sdcmicro-r`` on the default table: rows -> k -> (cells, CPU seconds)
RECORDED: dict[int, dict[int, tuple[int, float]]] = {
    100_000: {3: (1572, 12.131), 5: (2677, 22.428)},  # medians of 3, 2026-12-07, load 9 to 11
}


def make_table(rows: int, noise: float, seed: int) -> pd.DataFrame:
    """The benchmark's table (module text)."""
    source = pd.read_csv(ROOT / "data" / "sdc" / "testdata.csv")[KEYS]
    rng = np.random.default_rng(seed)
    table = source.iloc[rng.integers(0, len(source), size=rows)].reset_index(drop=True)
    for key in KEYS:
        column = table[key].to_numpy().copy()
        swap = rng.random(rows) < noise
        column[swap] = rng.choice(source[key].to_numpy(), size=int(swap.sum()))
        table[key] = column
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--k", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--noise", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sdcmicro-r", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/suppress.json")
    args = parser.parse_args()
    table = make_table(args.rows, args.noise, args.seed)
    distinct = len(table.drop_duplicates())
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        csv = Path(scratch) / "table.csv"
        table.to_csv(csv, index=False)
        for k in args.k:
            cpu, cells = [], 0
            for _ in range(args.repeats):
                started = time.process_time()
                result = suppress(table, KEYS, k)
                cpu.append(time.process_time() - started)
                cells = result.cells_suppressed
            sdc_cells, sdc_cpu = RECORDED.get(args.rows, {}).get(k, (None, None))
            source = "recorded" if sdc_cpu is not None else None
            if args.sdcmicro_r is not None:
                measured = []
                for _ in range(args.repeats):
                    out = subprocess.run(
                        [
                            "Rscript",
                            str(args.sdcmicro_r),
                            str(csv),
                            ",".join(KEYS),
                            str(k),
                            "-",
                            "-",
                            "-",
                            "1",
                        ],
                        capture_output=True,
                        text=True,
                        check=True,
                    ).stdout
                    lines = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
                    sdc_cells = int(lines["TOTAL"])
                    measured.append(float(lines["CPU"]))
                sdc_cpu, source = statistics.median(measured), "measured"
            row = {
                "rows": args.rows,
                "keys": len(KEYS),
                "distinct_tuples": distinct,
                "k": k,
                "anonlab_cpu_s": round(statistics.median(cpu), 3),
                "anonlab_cells": cells,
                "sdcmicro_cpu_s": sdc_cpu,
                "sdcmicro_cells": sdc_cells,
                "sdcmicro_source": source,
                "ratio": None if sdc_cpu is None else round(sdc_cpu / statistics.median(cpu), 1),
            }
            rows.append(row)
            print(
                f"{args.rows} x {len(KEYS)} ({distinct} distinct) k={k}: anonlab "
                f"{row['anonlab_cpu_s']} s CPU, {cells} cells; sdcMicro {sdc_cpu} s, "
                f"{sdc_cells} cells ({source}); sdcMicro / anonlab {row['ratio']}"
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"repeats": args.repeats, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
