"""Run ARX 3.9.2's heuristic searches on the Adult cases of its heuristic tests; write JSON.

ARX's TestAnonymizationHeuristic (Lightning, bottom-up), TestAnonymizationHeuristicTopDown and
TestAnonymizationGenetic (deterministic) run six Adult cases each with a step limit of 1,000
checks and no time limit. This script runs them through java/HeuristicRef.java and stores what
ARX found (``adult_cases.json``), and, for the genetic search with ARX's own random seeds, the
distribution of its results over repeated runs (``genetic_runs.json``).

    javac -cp "/tmp/arx/classes:$(cat /tmp/arx/cp.txt)" -d /tmp/hbuild java/HeuristicRef.java
    python3 tests/data/arx_heuristic/make_refs.py   # from the repository root
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
QIS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
    "salary-class",
]
HIERARCHIES = ",".join(f"{q}=data/adult/hierarchy_{q}.csv" for q in QIS)
#: ARX's six Adult cases: (suppression, metric, gs_factor, k, practical monotonicity)
CASES = [
    (1.0, "loss", 0.5, 5, False),
    (0.04, "entropy_with_suppression", 0.5, 100, False),
    (1.0, "loss", 0.1, 5, False),
    (1.0, "entropy_with_suppression", 0.5, 100, False),
    (0.04, "loss", 0.5, 5, True),
    (1.0, "entropy_with_suppression", 0.5, 100, True),
]
#: the expected results ARX's test sources state (transformation, score)
TESTS = {
    "lightning": [
        ([0, 3, 0, 0, 2, 1, 1, 1, 0], 0.22041192847984292),
        ([1, 1, 1, 1, 2, 2, 2, 2, 1], 400196.319223464),
        ([0, 3, 0, 0, 0, 0, 0, 0, 0], 0.09257312971977383),
        ([0, 1, 1, 1, 2, 2, 2, 2, 0], 377248.23689620313),
        ([0, 3, 0, 1, 1, 1, 1, 2, 0], 0.26611081915757495),
        ([0, 1, 1, 1, 2, 2, 2, 2, 0], 377248.23689620313),
    ],
    "top-down": [
        ([0, 3, 0, 0, 2, 1, 1, 1, 0], 0.22041192847984292),
        ([1, 3, 1, 2, 3, 2, 2, 0, 1], 413894.76146080694),
        ([0, 3, 0, 0, 0, 0, 0, 0, 0], 0.09257312971977383),
        ([1, 1, 1, 2, 3, 2, 2, 0, 1], 372601.7108854912),
        ([0, 3, 0, 1, 1, 1, 1, 2, 0], 0.26611081915757495),
        ([1, 1, 1, 2, 3, 2, 2, 0, 1], 372601.7108854912),
    ],
    "genetic": [
        ([0, 3, 0, 0, 2, 1, 1, 1, 0], 0.22041192847984292),
        ([1, 1, 1, 1, 3, 2, 2, 1, 1], 383803.4034066361),
        ([0, 3, 0, 0, 0, 0, 0, 0, 0], 0.09257312971977383),
        ([1, 0, 1, 1, 3, 2, 2, 2, 0], 359649.67365904135),
        ([0, 3, 0, 1, 1, 1, 1, 2, 0], 0.26611081915757495),
        ([1, 0, 1, 1, 3, 2, 2, 2, 0], 359649.67365904135),
    ],
}


def java(*args: str) -> list[dict[str, object]]:
    """Run the harness; one dict per printed line."""
    cp = f"/tmp/hbuild:/tmp/arx/classes:{Path('/tmp/arx/cp.txt').read_text().strip()}"
    out = subprocess.run(
        ["java", "-cp", cp, "HeuristicRef", *args], check=True, capture_output=True, text=True
    ).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def main() -> None:
    cases = []
    for algorithm, expected in TESTS.items():
        for number, ((supp, metric, gs, k, pm), (levels, score)) in enumerate(
            zip(CASES, expected, strict=True)
        ):
            run = java(
                "run",
                "data/adult/adult.csv",
                HIERARCHIES,
                algorithm,
                str(k),
                str(supp),
                metric,
                str(gs),
                "1000",
                "2147483647",
                "1",
                "true",
            )[0]
            cases.append(
                {
                    "algorithm": algorithm,
                    "case": number,
                    "k": k,
                    "suppression": supp,
                    "metric": metric,
                    "gs_factor": gs,
                    "practical_monotonicity": pm,
                    "step_limit": 1000,
                    "qis": QIS,
                    "test_transformation": levels,
                    "test_score": score,
                    "arx_transformation": run["transformation"],
                    "arx_score": run["score"],
                    "arx_checked": run["checked"],
                }
            )
            print(cases[-1], file=sys.stderr)
    (HERE / "adult_cases.json").write_text(
        json.dumps(
            {
                "arx_version": "3.9.2",
                "generated_by": "python3 tests/data/arx_heuristic/make_refs.py",
                "cases": cases,
            },
            indent=1,
        )
        + "\n"
    )
    runs = {}
    for number in (0, 1):
        supp, metric, gs, k, _ = CASES[number]
        runs[str(number)] = java(
            "run",
            "data/adult/adult.csv",
            HIERARCHIES,
            "genetic",
            str(k),
            str(supp),
            metric,
            str(gs),
            "300",
            "2147483647",
            "30",
            "false",
        )
    (HERE / "genetic_runs.json").write_text(
        json.dumps(
            {
                "arx_version": "3.9.2",
                "step_limit": 300,
                "note": "ARX's genetic search with unseeded java.util.Random, 30 runs per case",
                "runs": runs,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
