"""Search CPU on a small table (issue 23): anonlab's flash search beside ARX 3.9.2.

sdcMicro's ``testdata`` (``data/sdc/testdata.csv``: 4,580 records), 8 quasi-identifiers with
the hierarchies of ``benchmarks/data/testdata/`` (built with ``anonlab hierarchy interval``,
``grouping`` and ``redaction``; the commands are in docs/benchmarks.md), k-anonymity with
k in {2, 5, 10} and a suppression limit of 0 or 1 %, the precision metric (ARX's
``Metric.createPrecisionMetric()``: non-monotonic, arithmetic mean, generalization/suppression
factor 0.5; anonlab's ``metric="precision_with_suppression"``, ARX's ``MetricMDNMPrecision``),
practical monotonicity off. This measures

* anonlab: nodes checked and search CPU seconds (``SearchResult.cpu_seconds``), median of
  ``--repeats`` runs after ``--warmups`` warm-up runs, in-process;
* ARX 3.9.2 (its optimal FLASH search) through ``benchmarks/arx/ArxSmall.java`` (compiled
  here when ARX is at /tmp/arx, see benchmarks/arx/README.md): nodes checked
  (``ARXNode.isChecked``) and the thread CPU time of ``ARXAnonymizer.anonymize`` (which also
  encodes the data), median of the same number of runs after the same warm-up, one JVM;

and whether both reach the same optimum (the transformation and ARX's score String). The two
tools are measured in turns, row by row (the machine is shared). Without Java or ARX the
ARX columns are ``n/a``. Results: ``benchmarks/results/small_table.json``.

    python benchmarks/small_table.py              # all six rows (a minute or two)
    python benchmarks/small_table.py --markdown   # the table from the saved results
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from anonlab.dataset import Roles
from anonlab.generalize import anonymize, model_dataset, resolve_criteria
from anonlab.hierarchy import Hierarchy
from anonlab.io import read_table

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "sdc" / "testdata.csv"
HIERARCHIES = REPO / "benchmarks" / "data" / "testdata"
JAVA_SRC = REPO / "benchmarks" / "arx" / "ArxSmall.java"
OUT = REPO / "benchmarks" / "results" / "small_table.json"
ARX = Path("/tmp/arx")
#: in the table's column order (ARX's order of the quasi-identifiers)
QIS = ["urbrur", "roof", "walls", "water", "relat", "sex", "age", "hhcivil"]
METRIC = "precision_with_suppression"  # ARX's Metric.createPrecisionMetric()
ROWS = [(k, s) for k in (2, 5, 10) for s in (0.0, 0.01)]


def setup() -> Any:
    """The dataset of the table and its hierarchies (read once)."""
    frame = read_table(DATA)
    hierarchies = {q: Hierarchy.from_csv(HIERARCHIES / f"hierarchy_{q}.csv") for q in QIS}
    model = resolve_criteria([{"model": "k-anonymity", "k": 2}])
    return model_dataset(frame, hierarchies, model, roles=Roles.of(other="insensitive"))


def run_anonlab(
    dataset: Any, k: int, suppression: float, warmups: int, repeats: int
) -> dict[str, Any]:
    """Nodes checked, the search CPU of each timed run, the optimum and its score."""

    def once() -> Any:
        return anonymize(
            dataset,
            criteria=[{"model": "k-anonymity", "k": k}],
            suppression=suppression,
            metric=METRIC,
            search="flash",
        )

    for _ in range(warmups):
        once()
    results = [once() for _ in range(repeats)]
    last = results[-1]
    return {
        "nodes_checked": last.search.nodes_checked,
        "search_cpu_runs": [r.search.cpu_seconds for r in results],
        "search_cpu_s": statistics.median(r.search.cpu_seconds for r in results),
        "transformation": [last.transformation[q] for q in QIS],
        "score": str(last.information_loss_arx[METRIC]),
    }


def arx_command(build: str) -> list[str] | None:
    """The compiled harness's command, or None without Java or ARX."""
    if shutil.which("java") is None or not (ARX / "classes").exists():
        return None
    cp = f"{ARX / 'classes'}:" + (ARX / "cp.txt").read_text().strip()
    subprocess.run(["javac", "-cp", cp, "-d", build, str(JAVA_SRC)], check=True)
    return [
        "java",
        "-cp",
        f"{build}:{cp}",
        "ArxSmall",
        str(DATA),
        ",",
        str(HIERARCHIES),
        ",".join(QIS),
    ]


def run_arx(
    command: list[str] | None, k: int, suppression: float, warmups: int, repeats: int
) -> dict[str, Any] | None:
    """ARX's figures for one row (one JVM: its warm-ups, then the timed runs)."""
    if command is None:
        return None
    proc = subprocess.run(
        [*command, str(warmups), str(repeats)],
        input=f"{k} {suppression}\n",
        capture_output=True,
        text=True,
        check=True,
    )
    out: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return {
        "nodes_checked": out["nodes_checked"],
        "cpu_runs": out["cpu_seconds"],
        "cpu_s": statistics.median(out["cpu_seconds"]),
        "transformation": out["transformation"],
        "score": out["highest_score"],
        "lattice_size": out["lattice_size"],
    }


def measure(warmups: int, repeats: int) -> list[dict[str, Any]]:
    """One row per (k, suppression), anonlab then ARX."""
    dataset = setup()
    rows = []
    with tempfile.TemporaryDirectory() as build:
        command = arx_command(build)
        for k, suppression in ROWS:
            ours = run_anonlab(dataset, k, suppression, warmups, repeats)
            theirs = run_arx(command, k, suppression, warmups, repeats)
            same = (
                None
                if theirs is None
                else (
                    ours["transformation"] == theirs["transformation"]
                    and ours["score"] == theirs["score"]
                )
            )
            rows.append(
                {
                    "k": k,
                    "suppression": suppression,
                    "anonlab": ours,
                    "arx": theirs,
                    "same_optimum": same,
                }
            )
            print(line(rows[-1]), flush=True)
    return rows


def _fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def line(row: dict[str, Any]) -> str:
    """One row of the markdown table."""
    ours, arx = row["anonlab"], row["arx"] or {}
    ratio = None if not arx else ours["search_cpu_s"] / arx["cpu_s"]
    same = row["same_optimum"]
    return (
        f"| {row['k']} | {row['suppression']:.0%} | {ours['nodes_checked']} | "
        f"{_fmt(arx.get('nodes_checked'), 'd')} | {ours['search_cpu_s'] * 1e3:.1f} | "
        f"{_fmt(None if not arx else arx['cpu_s'] * 1e3, '.1f')} | {_fmt(ratio, '.2f')} | "
        f"{'n/a' if same is None else 'yes' if same else 'NO'} |"
    )


def markdown(rows: list[dict[str, Any]]) -> str:
    """The results as the table of docs/benchmarks.md."""
    head = (
        "| k | suppression | anonlab nodes | ARX nodes | anonlab search CPU ms | "
        "ARX CPU ms | anonlab / ARX | same optimum |\n|---|---|---|---|---|---|---|---|"
    )
    return "\n".join([head, *(line(r) for r in rows)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmups", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--save", type=Path, default=OUT, help="the results file")
    parser.add_argument("--markdown", action="store_true", help="print the saved table")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(args.save.read_text())["rows"]))
        return
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()
    rows = measure(args.warmups, args.repeats)
    args.save.parent.mkdir(parents=True, exist_ok=True)
    args.save.write_text(
        json.dumps(
            {
                "measured_at": started,
                "load_average": [round(x, 2) for x in load],
                "warmups": args.warmups,
                "repeats": args.repeats,
                "machine": "2 cores, shared",
                "rows": rows,
            },
            indent=1,
        )
        + "\n"
    )
    print(markdown(rows))


if __name__ == "__main__":
    main()
