"""ARX's profitability models on Adult: anonlab's flash search beside ARX 3.9.2.

For ARX's six Adult cases of ``TestAnonymizationProfitability`` (and cases 4 and 5 again without
practical monotonicity), as ``tests/data/arx_profitability/adult.json`` holds them, this measures

* anonlab: nodes checked and search CPU seconds (``SearchResult.cpu_seconds``), median of 3 runs
  after a warm-up, in-process;
* ARX 3.9.2 (its optimal FLASH search) through ``tests/data/arx_profitability/java/ProfitRef.java``
  (compiled here when ARX is at /tmp/arx): nodes checked (``ARXNode.isChecked``) and the thread
  CPU time of ``ARXAnonymizer.anonymize``, median of 3 runs after a warm-up in one JVM per case;

and whether both print the same optimum score. The two tools are measured in turns, case by
case (the machine is shared). Without Java or ARX the ARX columns are ``n/a``. Results:
``benchmarks/results/profitability.json`` (``--save`` names another file, e.g. for a
"before" run of an older commit's ``src`` on ``PYTHONPATH``).

    python benchmarks/profitability.py              # all cases (a few minutes)
    python benchmarks/profitability.py --markdown   # the table from the saved results
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
REFS = REPO / "tests" / "data" / "arx_profitability" / "adult.json"
JAVA_SRC = REPO / "tests" / "data" / "arx_profitability" / "java" / "ProfitRef.java"
OUT = REPO / "benchmarks" / "results" / "profitability.json"
ARX = Path("/tmp/arx")


def cases() -> list[dict[str, Any]]:
    """ARX's Adult cases (0-5 and 4, 5 without practical monotonicity)."""
    doc = json.loads(REFS.read_text())
    return [c for c in doc["cases"] if c["id"].startswith("TestAnonymizationProfitability#")]


def run_anonlab(case: dict[str, Any], repeats: int) -> dict[str, Any]:
    """Nodes checked, median search CPU seconds and the score, in-process."""
    from anonlab.errors import AnonlabError
    from test_privacy_profitability import replay  # type: ignore[import-not-found,unused-ignore]

    try:
        results = [replay(case) for _ in range(repeats + 1)][1:]
    except AnonlabError as exc:  # practical monotonicity may find no release
        return {
            "nodes_checked": None,
            "search_cpu_seconds": None,
            "score": f"no release ({str(exc)[:40]}...)",
        }
    last = results[-1]
    return {
        "nodes_checked": last.search.nodes_checked,
        "search_cpu_seconds": statistics.median(r.search.cpu_seconds for r in results),
        "search_cpu_runs": [r.search.cpu_seconds for r in results],
        "score": last.information_loss_arx[case["config"]["metric"]],
    }


def arx_command(build: str) -> list[str] | None:
    """The compiled harness's command, or None without Java or ARX."""
    if shutil.which("java") is None or not (ARX / "classes").exists():
        return None
    cp = f"{ARX / 'classes'}:" + (ARX / "cp.txt").read_text().strip()
    subprocess.run(["javac", "-cp", cp, "-d", build, str(JAVA_SRC)], check=True)
    return ["java", "-cp", f"{build}:{cp}", "ProfitRef"]


def run_arx(command: list[str] | None, case: dict[str, Any], repeats: int) -> dict[str, Any] | None:
    """ARX's figures for one case (one JVM: a warm-up, then the timed runs), or ``None``."""
    if command is None:
        return None
    args = [a if not a.startswith("nodes=") else "nodes=none" for a in case["args"]]
    proc = subprocess.run(
        command,
        cwd=REPO,
        input="\n".join(["\t".join(args)] * (repeats + 1)) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    runs = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")][1:]
    return {
        "nodes_checked": runs[-1]["nodes_checked"],
        "cpu_seconds": statistics.median(r["cpu_seconds"] for r in runs),
        "cpu_runs": [r["cpu_seconds"] for r in runs],
        "score": runs[-1]["highest_score"],
    }


def measure(repeats: int, only: list[str] | None = None) -> list[dict[str, Any]]:
    """One row per case, anonlab then ARX."""
    all_cases = [c for c in cases() if only is None or c["id"].split("#", 1)[1] in only]
    rows = []
    with tempfile.TemporaryDirectory() as build:
        command = arx_command(build)
        for case in all_cases:
            ours = run_anonlab(case, repeats)
            theirs = run_arx(command, case, repeats)
            rows.append(
                {
                    "case": case["id"].replace("TestAnonymizationProfitability", "Profit"),
                    "model": case["config"]["criteria"][0]["model"],
                    "metric": case["config"]["metric"],
                    "suppression": case["config"]["suppression"],
                    "practical_monotonicity": case["config"]["practical_monotonicity"],
                    "anonlab": ours,
                    "arx": theirs,
                    "same_optimum": None if theirs is None else ours["score"] == theirs["score"],
                }
            )
            print(line(rows[-1]), flush=True)
    return rows


def _fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def line(row: dict[str, Any]) -> str:
    arx = row["arx"] or {}
    return (
        f"| {row['case']} | {row['model']} | {row['metric']} | {row['suppression']:g} | "
        f"{'yes' if row['practical_monotonicity'] else 'no'} | "
        f"{_fmt(row['anonlab']['nodes_checked'], 'd')} | {_fmt(arx.get('nodes_checked'), 'd')}"
        f" | {_fmt(row['anonlab']['search_cpu_seconds'], '.3f')} | "
        f"{_fmt(arx.get('cpu_seconds'), '.3f')}"
        f" | {'n/a' if row['same_optimum'] is None else 'yes' if row['same_optimum'] else 'NO'}"
        " |"
    )


def markdown(rows: list[dict[str, Any]]) -> str:
    head = (
        "| case | model | metric | suppression | practical monotonicity | anonlab nodes | "
        "ARX nodes | anonlab search CPU s | ARX CPU s | same optimum |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    return "\n".join([head, *(line(r) for r in rows)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", nargs="*", help="case numbers, e.g. 3 4 5 (default: all)")
    parser.add_argument("--save", type=Path, default=OUT, help="the results file")
    parser.add_argument("--markdown", action="store_true", help="print the saved table")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(args.save.read_text())["rows"]))
        return
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()
    rows = measure(args.repeats, args.cases)
    args.save.parent.mkdir(parents=True, exist_ok=True)
    args.save.write_text(
        json.dumps(
            {
                "measured_at": started,
                "load_average": [round(x, 2) for x in load],
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
