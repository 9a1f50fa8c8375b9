"""Make the ARX 3.9 reference files of tests/test_privacy_sensitive.py (not run in CI: needs Java).

For each case, writes a small table (columns ``cls``, ``s``; one row per record, rows shuffled),
runs ARX 3.9 through /tmp/arx/ref/sensitive/SensitiveRef.java (``cls`` is the only
quasi-identifier, ``s`` the sensitive attribute, suppression limit 100 %) and stores, per privacy
model, the classes ARX suppresses at the bottom node, i.e. those its ``isAnonymous`` rejects.

The Java programs are in tests/data/arx_sensitive/java (SensitiveRef: per-class outliers,
BucketRef: ARX's Distribution tables -> buckets.json; GrassbergerProbe made
grassberger_probe.json, see the command there). With ARX compiled at /tmp/arx/classes, from the
repository root:
    javac -cp "/tmp/arx/classes:$(sed 's|jars/|/tmp/arx/jars/|g' /tmp/arx/cp.txt)" \
        -d /tmp/arx/ref/sensitive tests/data/arx_sensitive/java/*.java
    python tests/data/arx_sensitive/generate.py
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
from pathlib import Path

import numpy as np

ARX = Path("/tmp/arx")
HERE = Path(__file__).resolve().parent

DIVERSITY = [
    "distinct:2",
    "distinct:3",
    "entropy:1.5:shannon",
    "entropy:2:shannon",
    "entropy:2.5:shannon",
    "entropy:1.5:grassberger",
    "entropy:2:grassberger",
    "entropy:3:grassberger",
    "recursive:1:2",
    "recursive:2:2",
    "recursive:3:3",
    "recursive:0.5:1",
]
LIKENESS = [
    "equal:0.2",
    "equal:0.35",
    "basic:0.5",
    "basic:1",
    "basic:2",
    "enhanced:0.5",
    "enhanced:1",
    "enhanced:3",
    "delta:0.5",
    "delta:1",
    "delta:2",
]
ORDERED = ["ordered:0.05", "ordered:0.1", "ordered:0.2"]
HIERARCHICAL = ["hierarchical:0.1", "hierarchical:0.2", "hierarchical:0.35"]


def table(
    rng: np.random.Generator, values: list[str], classes: int, max_size: int, concentration: float
) -> tuple[list[str], list[str]]:
    """Random classes of 1..max_size records with Dirichlet-skewed value shares; rows shuffled."""
    cls: list[str] = []
    sens: list[str] = []
    base = rng.dirichlet(np.ones(len(values)))
    for c in range(classes):
        size = int(rng.integers(1, max_size + 1))
        shares = rng.dirichlet(base * concentration * len(values) + 1e-3)
        picks = rng.choice(len(values), size=size, p=shares)
        cls += [f"c{c}"] * size
        sens += [values[i] for i in picks]
    order = rng.permutation(len(cls))
    return [cls[i] for i in order], [sens[i] for i in order]


def run(
    rows: tuple[list[str], list[str]],
    models: list[str],
    hierarchy: list[list[str]] | None,
    decimal: bool,
) -> tuple[str, dict[str, list[str]]]:
    """Run SensitiveRef on the rows; the command (with placeholder paths) and ARX's outliers."""
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.csv"
        data.write_text(
            "cls;s\n" + "".join(f"{c};{s}\n" for c, s in zip(*rows, strict=True)), encoding="utf-8"
        )
        args = [
            "java",
            "-cp",
            f"classes:{(ARX / 'cp.txt').read_text().strip()}:ref/sensitive",
            "SensitiveRef",
            str(data),
        ]
        if hierarchy is not None:
            hfile = Path(tmp) / "hierarchy.csv"
            hfile.write_text("".join(";".join(r) + "\n" for r in hierarchy), encoding="utf-8")
            args += ["--hierarchy", str(hfile)]
        if decimal:
            args.append("--decimal")
        out = subprocess.run(args + models, cwd=ARX, check=True, capture_output=True, text=True)
        command = " ".join(shlex.quote(a) for a in args[:3]) + " SensitiveRef DATA.csv"
        command += " --hierarchy HIERARCHY.csv" if hierarchy is not None else ""
        command += " --decimal" if decimal else ""
    results: dict[str, list[str]] = {}
    for line in out.stdout.splitlines():
        spec, _, suppressed = line.partition("\t")
        results[spec] = [c for c in suppressed.split(",") if c]
    assert set(results) == set(models), out.stdout
    return f"cd /tmp/arx && {command} {' '.join(models)}", results


def write(
    name: str,
    rows: tuple[list[str], list[str]],
    models: list[str],
    hierarchy: list[list[str]] | None = None,
    decimal: bool = False,
) -> None:
    """Run one case and store it as ``<name>.json``."""
    command, results = run(rows, models, hierarchy, decimal)
    payload = {
        "generator": "tests/data/arx_sensitive/generate.py",
        "command": command,
        "arx": "ARX 3.9 (compiled at /tmp/arx/classes), SensitiveRef.java",
        "decimal": decimal,
        "hierarchy": hierarchy,
        "rows": {"cls": rows[0], "s": rows[1]},
        "suppressed": results,
    }
    (HERE / f"{name}.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")


def buckets(rng: np.random.Generator, cases: int) -> None:
    """ARX's ``Distribution(int[], int[])`` bucket arrays for random value lists -> buckets.json."""
    lists = []
    for _ in range(cases):
        n = int(rng.integers(1, 41))
        codes = rng.choice(int(rng.integers(n, 3 * n + 2)), size=n, replace=False)
        lists.append(([int(c) for c in codes], [int(f) for f in rng.integers(1, 9, size=n)]))
    text = "".join(",".join(map(str, c)) + ";" + ",".join(map(str, f)) + "\n" for c, f in lists)
    args = [
        "java",
        "-cp",
        f"classes:{(ARX / 'cp.txt').read_text().strip()}:ref/sensitive",
        "BucketRef",
    ]
    out = subprocess.run(args, cwd=ARX, check=True, capture_output=True, text=True, input=text)
    tables = [
        [[int(x) for x in pair.split(":")] for pair in line.split(" ")]
        for line in out.stdout.splitlines()
    ]
    payload = {
        "generator": "tests/data/arx_sensitive/generate.py",
        "command": "cd /tmp/arx && "
        + " ".join(shlex.quote(a) for a in args[:3])
        + " BucketRef < CASES (one 'codes;freqs' line per case)",
        "arx": "ARX 3.9 Distribution(int[] elements, int[] frequencies).getBuckets()",
        "cases": [
            {"codes": c, "freqs": f, "buckets": t} for (c, f), t in zip(lists, tables, strict=True)
        ],
    }
    (HERE / "buckets.json").write_text(json.dumps(payload) + "\n", encoding="utf-8")


def main() -> None:
    """All cases (fixed seeds)."""
    rng = np.random.default_rng(13)
    buckets(np.random.default_rng(7), 150)
    words = [
        "Adm-clerical",
        "craft-repair",
        "Exec",
        "prof-specialty",
        "Sales",
        "tech",
        "Zeta",
        "armed",
    ]
    rows = table(rng, words, classes=60, max_size=14, concentration=2.0)
    write("strings", rows, DIVERSITY + LIKENESS + ORDERED)
    many = [f"v{i:02d}" for i in range(24)]
    rows = table(rng, many, classes=50, max_size=30, concentration=0.3)
    write("singletons", rows, DIVERSITY + LIKENESS)
    numbers = ["1", "2", "3", "5", "8", "10", "20", "100", "0.5"]
    rows = table(rng, numbers, classes=50, max_size=12, concentration=1.0)
    write("numbers_decimal", rows, ORDERED + LIKENESS, decimal=True)
    write("numbers_string", rows, ORDERED)
    leaves = [f"d{i}" for i in range(10)]
    nested = [[v, f"g{i // 3}", f"G{i // 6}", "*"] for i, v in enumerate(leaves)]
    rows = table(rng, leaves, classes=60, max_size=15, concentration=1.0)
    write("hierarchy", rows, [*HIERARCHICAL, "equal:0.2"], hierarchy=nested)
    roots = [[v, f"g{i // 2}", f"top{(i // 4)}"] for i, v in enumerate(leaves)]
    write("hierarchy_roots", rows, HIERARCHICAL, hierarchy=roots)


if __name__ == "__main__":
    main()
