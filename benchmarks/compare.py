"""``anonlab compare`` on Adult and Tarragona: CPU of the whole comparison (issues 24, 25).

Runs :func:`anonlab.compare` on the example configs (``examples/compare_adult.toml``,
``examples/compare_tarragona.toml``) ``--repeats`` times each, without writing anything,
and prints one line per method (utility loss, linkage risk, CPU of its run and of its
measures, medians) and the whole comparison's CPU (this process's, median). Target:
under 60 s CPU per table with 7 or more methods. The figures go to
``benchmarks/results/compare.json``.

    python benchmarks/compare.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

from anonlab.runs.compare import CompareSettings, run_compare

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {
    "adult": ROOT / "examples" / "compare_adult.toml",
    "tarragona": ROOT / "examples" / "compare_tarragona.toml",
}
#: the target of issue 25: the whole comparison of one table, CPU seconds
TARGET_CPU = 60.0


def measure(table: str, repeats: int) -> dict[str, Any]:
    """``repeats`` comparisons of ``table``'s config: the medians of every method and of
    the whole run."""
    settings = CompareSettings.load(CONFIGS[table], report=None)
    settings = settings.model_copy(update={"report": None, "html": None, "plot": None})
    totals: list[float] = []
    runs: list[list[dict[str, Any]]] = []
    for _ in range(repeats):
        cpu = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report = run_compare(settings).report
        totals.append(time.process_time() - cpu)
        runs.append(report["methods"])
    methods = []
    for i, first in enumerate(runs[0]):
        rows = [run[i] for run in runs]
        ok = first["status"] == "ok"
        methods.append(
            {
                "name": first["name"],
                "command": first["command"]
                + (f" ({first['recoding']})" if first.get("recoding") else ""),
                "status": first["status"],
                "utility_loss": first["utility_loss"]["overall"] if ok else None,
                "linkage_mean": first["linkage"]["mean"] if ok else None,
                "linkage_at_risk": first["linkage"]["at_risk"] if ok else None,
                "run_cpu_seconds": statistics.median(r.get("run_cpu_seconds", 0.0) for r in rows),
                "measure_cpu_seconds": statistics.median(
                    r["cpu_seconds"] - r.get("run_cpu_seconds", r["cpu_seconds"]) for r in rows
                ),
                "cpu_seconds": statistics.median(r["cpu_seconds"] for r in rows),
            }
        )
    return {
        "config": str(CONFIGS[table].relative_to(ROOT)),
        "records": report["records"],
        "sampled": report["sampled"],
        "methods": methods,
        "cpu_seconds": statistics.median(totals),
        "cpu_seconds_each": totals,
        "target_cpu_seconds": TARGET_CPU,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=sorted(CONFIGS), default=sorted(CONFIGS))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "compare.json"
    )
    args = parser.parse_args()
    results = {table: measure(table, args.repeats) for table in args.tables}
    for table, found in results.items():
        print(f"{table}: {found['records']} records, {len(found['methods'])} methods")
        print(f"  {'method':<22}{'command':<26}{'loss':>8}{'risk':>8}{'run s':>8}{'measure s':>11}")
        for m in found["methods"]:
            loss = "failed" if m["utility_loss"] is None else f"{m['utility_loss']:.4f}"
            risk = "" if m["linkage_mean"] is None else f"{m['linkage_mean']:.4f}"
            print(
                f"  {m['name']:<22}{m['command']:<26}{loss:>8}{risk:>8}"
                f"{m['run_cpu_seconds']:>8.2f}{m['measure_cpu_seconds']:>11.2f}"
            )
        print(
            f"  whole comparison: {found['cpu_seconds']:.1f} s CPU (median of {args.repeats}; "
            f"target under {TARGET_CPU:.0f} s)"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    record = {"repeats": args.repeats, "tables": results}
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
