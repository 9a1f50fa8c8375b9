"""Make the ARX 3.9 reference verdicts on Adult for tests/test_privacy_population.py (needs Java).

ARX's own test cases for delta-presence, k-map and the risk thresholds
(TestAnonymizationDPresence, ...KMap, ...RiskBased, ...Combinations) run on
Adult; for each of those settings ARX judges a sample of the lattice's nodes
(with ``/tmp/arx/ref/population/NodeCheck.java``): anonymous or not, and the
number of suppressed records with two checksums of their row numbers (sum and
sum of squares). The research subset is ARX's ``data/adult_subset.csv``,
stored as the table rows ARX matched it to.

Run from the repository: ``python tests/data/arx_population/make_adult.py``
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path
from typing import TypedDict

import numpy as np

ARX = Path("/tmp/arx")
REPO = Path(__file__).resolve().parents[3]
OUT = Path(__file__).resolve().parent / "adult.json"
SUBSET = Path("/tmp/h4/adult_subset.csv")  # git show HEAD:data/adult_subset.csv of ARX
QIS8 = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "salary-class",
]
QIS9 = [*QIS8[:7], "occupation", "salary-class"]
USA = 317238626


class Verdict(TypedDict):
    """ARX's verdict on one node: anonymous, and the suppressed rows' count and checksums."""

    levels: list[int]
    anonymous: bool
    suppressed: int
    sum: int
    squares: int


class CaseResult(TypedDict):
    """One stored case: its settings, ARX's optimum and its verdicts on the sampled nodes."""

    name: str
    qis: list[str]
    subset_rows: list[int] | None
    suppression: float
    metric: str
    models: list[str]
    optimum: list[int] | None
    nodes: list[Verdict]


CASES = [
    ("dpresence", QIS8, True, 0.05, "aecs", ["dpresence:0.05:0.15"]),
    ("dpresence-k5", QIS8, True, 0.0, "entropy", ["kanon:5", "dpresence:0.05:0.15"]),
    ("dpresence-wide", QIS8, True, 0.05, "aecs", ["dpresence:0.0:0.2"]),
    ("kmap", QIS8, True, 0.05, "aecs", ["kmap:5"]),
    ("kmap-ztp", QIS8, False, 0.05, "entropy", [f"kmapest:3:ztp:0.01:{USA}"]),
    ("kmap-poisson", QIS8, False, 0.0, "aecs", [f"kmapest:1000:poisson:0.01:{USA}"]),
    ("average-risk", QIS9, False, 0.04, "entropy", ["avgrisk:0.01"]),
    ("sample-uniqueness", QIS9, False, 0.04, "aecs", ["sampleuniq:0.01"]),
    ("population-uniqueness-zayatz", QIS9, False, 0.04, "aecs", [f"popuniq:0.0001:zayatz:{USA}"]),
    ("population-uniqueness-dankar", QIS9, False, 0.04, "aecs", [f"popuniq:0.0001:dankar:{USA}"]),
]


def heights(qis: list[str]) -> list[int]:
    """Hierarchy heights (columns minus one) of the Adult hierarchies."""
    out = []
    for q in qis:
        first = (REPO / "data" / "adult" / f"hierarchy_{q}.csv").read_text().splitlines()[0]
        out.append(len(first.split(";")) - 1)
    return out


def run(
    name: str,
    qis: list[str],
    subset: bool,
    suppression: float,
    metric: str,
    models: list[str],
    rng: np.random.Generator,
    count: int,
) -> CaseResult:
    """ARX's verdict on ``count`` random nodes and on its optimum."""
    tops = heights(qis)
    nodes = {tuple(int(rng.integers(0, h + 1)) for h in tops) for _ in range(count)}
    with tempfile.TemporaryDirectory() as tmp:
        spec = [f"data={REPO / 'data/adult/adult.csv'}"]
        spec += [f"qi={q}:{REPO / 'data/adult' / f'hierarchy_{q}.csv'}" for q in qis]
        if subset:
            spec.append(f"subset={SUBSET}")
        spec += [f"suppression={suppression}", f"metric={metric}", "compact=true", "iterations=15"]
        spec += [f"model={m}" for m in models]
        spec += ["node=" + ",".join(map(str, n)) for n in sorted(nodes)]
        path = Path(tmp) / "spec.txt"
        path.write_text("\n".join(spec) + "\n", encoding="utf-8")
        cp = (ARX / "cp.txt").read_text().strip()
        out = subprocess.run(
            [
                "java",
                "-Xmx3g",
                "-cp",
                f"{ARX / 'ref/population'}:{ARX / 'classes'}:{cp}",
                "NodeCheck",
                str(path),
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=ARX,
        )
    lines = out.stdout.strip().splitlines()
    optimum = lines[0].split()[1]
    rows: list[int] | None = None
    verdicts: list[Verdict] = []
    for line in lines[1:]:
        if line.startswith("subset "):
            rows = [int(x) for x in line.split()[1].split(",") if x]
            continue
        levels, anonymous, checks = line.split(" ")
        count_, total, squares = (int(x) for x in checks.split(","))
        verdicts.append(
            {
                "levels": [int(x) for x in levels.split(",")],
                "anonymous": anonymous == "1",
                "suppressed": count_,
                "sum": total,
                "squares": squares,
            }
        )
    return {
        "name": name,
        "qis": qis,
        "subset_rows": rows,
        "suppression": suppression,
        "metric": metric,
        "models": models,
        "optimum": None if optimum == "none" else [int(x) for x in optimum.split(",")],
        "nodes": verdicts,
    }


def main() -> None:
    rng = np.random.default_rng(13)
    cases = [run(*case, rng=rng, count=60) for case in CASES]
    payload = {
        "command": "python tests/data/arx_population/make_adult.py",
        "arx": "ARX 3.9 compiled at /tmp/arx/classes; solver: 15 iterations per try "
        "(as ARX's TestAnonymizationRiskBased)",
        "program": "/tmp/arx/ref/population/NodeCheck.java",
        "cases": cases,
    }
    OUT.write_text(json.dumps(payload) + "\n", encoding="utf-8")
    for case in cases:
        print(case["name"], case["optimum"], len(case["nodes"]))


if __name__ == "__main__":
    main()
