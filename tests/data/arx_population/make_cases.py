"""Make the ARX 3.9 reference cases of tests/test_privacy_population.py (needs Java and ARX).

Each case is a small random table (the population, for delta-presence and
k-map with a population), a random research subset, nested hierarchies with a
top level ``*``, privacy models and a suppression limit. ARX evaluates every
node of the lattice (``/tmp/arx/ref/population/NodeCheck.java``: ``ARXResult.getOutput``
per node) and the JSON keeps, per node, whether ARX finds it anonymous and
which rows of the subset (or table) it suppresses.

Run from the repository: ``python tests/data/arx_population/make_cases.py [cases per kind]
[kind ...]`` (default: 10 of each kind).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ARX = Path("/tmp/arx")
OUT = Path(__file__).resolve().parent
COMMAND = "python tests/data/arx_population/make_cases.py"


def hierarchy_rows(values: list[str], height: int, fanout: int) -> list[list[str]]:
    """Nested groups: level j groups value i as i // fanout**j; the top level is '*'."""
    rows = []
    for i, v in enumerate(values):
        row = [v] + [f"{v[0]}g{j}_{i // fanout**j}" for j in range(1, height)] + ["*"]
        rows.append(row)
    return rows


def models_for(rng: np.random.Generator, kind: str, n: int) -> list[str]:
    """ARX model specs for NodeCheck."""
    if kind == "dpresencek":  # classes of population records only, hidden by k-anonymity
        dmin = float(rng.choice([0.1, 0.25, 0.4]))
        return [
            f"dpresence:{dmin}:{float(rng.choice([0.7, 1.0]))}",
            f"kanon:{int(rng.integers(1, 4))}",
        ]
    if kind == "popuniqhard":  # chosen where the estimate is not monotone in the suppression
        model = str(rng.choice(["pitman", "dankar"]))
        size = int(n * float(rng.choice([1.5, 3.0, 10.0])))
        return [f"popuniq:{float(rng.choice([0.01, 0.05, 0.1]))}:{model}:{size}"]
    if kind == "tightrisk":  # thresholds the top node alone meets (ARX leaves out its '*' class)
        if rng.random() < 0.5:
            return [f"avgrisk:{float(rng.choice([0.005, 0.01, 0.02]))}"]
        model = str(rng.choice(["pitman", "zayatz", "snb", "dankar"]))
        return [f"popuniq:{float(rng.choice([0.0, 0.001]))}:{model}:{n * 3}"]
    if kind == "dpresence":
        dmin = float(rng.choice([0.0, 0.1, 0.25, 0.4]))
        dmax = float(rng.choice([0.5, 0.7, 1.0]))
        out = [f"dpresence:{dmin}:{dmax}"]
        if rng.random() < 0.4:
            out.append(f"kanon:{int(rng.integers(2, 4))}")
        return out
    if kind == "kmap":
        return [f"kmap:{int(rng.integers(2, 6))}"]
    if kind == "kmapest":
        est = str(rng.choice(["poisson", "ztp"]))
        sig = float(rng.choice([0.0, 0.01, 0.05, 0.2]))
        size = int(n * float(rng.choice([1.5, 3.0, 20.0])))
        return [f"kmapest:{int(rng.integers(2, 8))}:{est}:{sig}:{size}"]
    if kind == "avgrisk":
        out = [f"avgrisk:{float(rng.choice([0.15, 0.25, 0.34, 0.5]))}"]
        if rng.random() < 0.3:
            out.append("kanon:2")
        return out
    if kind == "sampleuniq":
        return [f"sampleuniq:{float(rng.choice([0.0, 0.05, 0.1, 0.2]))}"]
    model = str(rng.choice(["pitman", "zayatz", "snb", "dankar"]))
    size = int(n * float(rng.choice([1.5, 3.0, 10.0, 50.0])))
    return [f"popuniq:{float(rng.choice([0.01, 0.02, 0.05, 0.1, 0.2]))}:{model}:{size}"]


def make_case(seed: int, kind: str) -> dict[str, object]:
    """One random case and ARX's verdict on every node."""
    return arx_verdicts(draw_case(seed, kind))


def draw_case(seed: int, kind: str) -> dict[str, object]:
    """A random case: table, subset, hierarchies, models and suppression limit."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 4))
    hard = kind == "popuniqhard"
    n = (
        int(rng.integers(60, 200 if hard else 160))
        if kind.startswith("popuniq")
        else int(rng.integers(15, 60))
    )
    columns, hierarchies, data = [], {}, {}
    for j in range(m):
        name = f"q{j}"
        d = int(rng.integers(2, 8 if kind.startswith("popuniq") else 7))
        values = [f"{chr(97 + j)}{i}" for i in range(d)]
        height = int(rng.integers(1, 4))
        hierarchies[name] = hierarchy_rows(values, height, 2 if hard else int(rng.integers(2, 4)))
        weights = rng.dirichlet(np.full(d, 0.5 if kind.startswith("popuniq") else 0.7))
        data[name] = [values[i] for i in rng.choice(d, size=n, p=weights)]
        columns.append(name)
    data["s"] = [str(x) for x in rng.integers(0, 3, size=n)]
    columns.append("s")
    rows = [[data[c][r] for c in columns] for r in range(n)]
    subset = None
    if kind in ("dpresence", "dpresencek", "kmap"):
        size = int(rng.integers(max(2, n // 4), max(3, (3 * n) // 4)))
        picked = rng.choice(n, size=size, replace=False)
        subset = [rows[int(r)] for r in picked]  # in random order
    models = models_for(rng, kind, n)
    suppression = float(rng.choice([0.0, 0.05, 0.1, 0.3, 1.0]))
    if kind == "tightrisk":
        suppression = float(rng.choice([0.0, 0.1]))
    metric = str(rng.choice(["aecs", "height"]))
    return {
        "seed": seed,
        "kind": kind,
        "columns": columns,
        "rows": rows,
        "subset": subset,
        "hierarchies": hierarchies,
        "models": models,
        "suppression": suppression,
        "metric": metric,
    }


def arx_verdicts(case: dict[str, Any]) -> dict[str, Any]:
    """ARX's optimum and its verdict on every node of the case's lattice."""
    columns, rows, subset = case["columns"], case["rows"], case["subset"]
    hierarchies, models = case["hierarchies"], case["models"]
    suppression, metric = case["suppression"], case["metric"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "data.csv").write_text(
            "\n".join(";".join(r) for r in [columns, *rows]) + "\n", encoding="utf-8"
        )
        spec = [f"data={folder / 'data.csv'}"]
        for name, hrows in hierarchies.items():
            (folder / f"h_{name}.csv").write_text(
                "\n".join(";".join(r) for r in hrows) + "\n", encoding="utf-8"
            )
            spec.append(f"qi={name}:{folder / f'h_{name}.csv'}")
        if subset is not None:
            (folder / "subset.csv").write_text(
                "\n".join(";".join(r) for r in [columns, *subset]) + "\n", encoding="utf-8"
            )
            spec.append(f"subset={folder / 'subset.csv'}")
        spec += [f"suppression={suppression}", f"metric={metric}"]
        spec += [f"model={x}" for x in models]
        (folder / "spec.txt").write_text("\n".join(spec) + "\n", encoding="utf-8")
        cp = (ARX / "cp.txt").read_text().strip()
        out = subprocess.run(
            [
                "java",
                "-cp",
                f"{ARX / 'ref/population'}:{ARX / 'classes'}:{cp}",
                "NodeCheck",
                str(folder / "spec.txt"),
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=ARX,
        )
    lines = out.stdout.strip().splitlines()
    optimum = lines[0].split()[1]
    nodes = []
    for line in lines[1:]:
        parts = line.split(" ")
        suppressed = [int(x) for x in parts[2].split(",") if x] if len(parts) > 2 else []
        nodes.append(
            {
                "levels": [int(x) for x in parts[0].split(",")],
                "anonymous": parts[1] == "1",
                "suppressed": suppressed,
            }
        )
    return {
        **case,
        "optimum": None if optimum == "none" else [int(x) for x in optimum.split(",")],
        "nodes": nodes,
    }


def not_monotone(case: dict[str, Any]) -> bool:
    """Whether ARX's binary search and the smallest fulfilling prefix differ at some node
    (population uniqueness is not monotone in the classes suppressed): asked of anonlab,
    only to pick cases; ARX's verdicts are the reference."""
    import itertools

    import pandas as pd

    from anonlab.dataset import Dataset
    from anonlab.hierarchy import Hierarchy
    from anonlab.privacy import riskbased
    from anonlab.privacy.base import ClassStats

    table = pd.DataFrame(case["rows"], columns=case["columns"])
    hierarchies = {c: Hierarchy.from_rows(r) for c, r in case["hierarchies"].items()}
    ds = Dataset.from_frame(table, hierarchies, sensitive=["s"])
    _, t, model, size = case["models"][0].split(":")
    crit = riskbased.PopulationUniqueness(float(t), model, population_size=int(size))
    prefix = riskbased.suppression_prefix

    def smallest(fulfilled: Any, suppressed: Any, limit: int) -> int:
        return next(
            (p for p in range(suppressed.shape[0]) if fulfilled(p)), suppressed.shape[0] - 1
        )

    for levels in itertools.product(*[range(q.height + 1) for q in ds.qis]):
        codes = np.column_stack(
            [q.level_codes[lv][q.codes] for q, lv in zip(ds.qis, levels, strict=True)]
        )
        _, inverse = np.unique(codes, axis=0, return_inverse=True)
        counts = np.bincount(inverse.ravel())
        stats = ClassStats(levels=levels, counts=counts)
        none = np.zeros(counts.shape[0], dtype=bool)
        try:
            riskbased.suppression_prefix = smallest
            other = crit.enforce(stats, none, 2**62)
        finally:
            riskbased.suppression_prefix = prefix
        if (crit.enforce(stats, none, 2**62) != other).any():
            return True
    return False


def main() -> None:
    kinds = [
        "dpresence",
        "dpresencek",
        "kmap",
        "kmapest",
        "avgrisk",
        "sampleuniq",
        "popuniq",
        "tightrisk",
        "popuniqhard",
    ]
    per_kind = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    for kind in sys.argv[2:] or kinds:
        if kind == "popuniqhard":
            drawn = (draw_case(9000 + i, kind) for i in range(10_000))
            cases = [
                arx_verdicts(c) for c in itertools.islice(filter(not_monotone, drawn), per_kind)
            ]
        else:
            cases = [make_case(1000 * (kinds.index(kind) + 1) + i, kind) for i in range(per_kind)]
        payload = {
            "command": f"{COMMAND} {per_kind} {kind}",
            "arx": "ARX 3.9 compiled at /tmp/arx/classes",
            "program": "/tmp/arx/ref/population/NodeCheck.java",
            "cases": cases,
        }
        (OUT / f"{kind}.json").write_text(json.dumps(payload, indent=None) + "\n", encoding="utf-8")
        print(kind, len(cases))


if __name__ == "__main__":
    main()
