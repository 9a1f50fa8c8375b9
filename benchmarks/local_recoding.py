"""ARX's local recoding against anonlab's, case by case (issue 24).

The cases are those of ARX 3.9's ``TestAnonymizationLocalRecoding`` (its source:
``src/test/org/deidentifier/arx/test/TestAnonymizationLocalRecoding.java``): ARX's loss metric
with generalization/suppression factor 0.05, a suppression limit of 100 %, then
``optimizeIterative(output, 0.05, 100, 0.05)``. Seven of its eleven cases run on Adult; the
other four need ARX's atus and fars data, which ARX does not distribute.

``python benchmarks/local_recoding.py --reference`` runs ARX through
``benchmarks/arx/ArxLocal.java`` (compiled into a temporary folder against ``/tmp/arx``) and
writes ``tests/data/arx_local_recoding/cases.json``: each case's configuration in anonlab's
terms and ARX's output as its test checks it (its hash over every cell), the SHA-256 of the
output table as text, its first rows and ARX's steps.

``python benchmarks/local_recoding.py`` measures the CPU of both per case (ARX: the thread CPU
of ``anonymize`` + ``getOutput`` + ``optimizeIterative`` in one JVM after a warm-up run, the data
read and its hierarchies set outside the clock; anonlab: the process CPU of encoding the table,
:func:`anonlab.lattice.local.local_recoding` and the release, the table read and its
hierarchies parsed outside the clock), the median of ``--repeats`` runs each, checks that
anonlab's release is ARX's cell for cell, prints a table and writes
``benchmarks/results/local_recoding.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
ARX = Path("/tmp/arx")
REFERENCE = REPO / "tests" / "data" / "arx_local_recoding" / "cases.json"
RESULTS = REPO / "benchmarks" / "results" / "local_recoding.json"

#: Adult's quasi-identifiers in ARX's test: every attribute with a hierarchy file beside
#: ARX's adult.csv but the case's sensitive attribute, occupation
ADULT_QIS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "salary-class",
]
#: ARX's Region.USA population (ARXPopulationModel), as tests/data/arx/arx_tests.json has it
USA = 317238626

#: ARX's test cases by index: models in anonlab's terms, and whether occupation is sensitive
#: (the l-diversity and t-closeness cases) or, keeping no type in ARX, released as '*'
#: (identifying here); None: the case's data set is not distributed with ARX
CASES: dict[int, tuple[str, list[dict[str, Any]], bool] | None] = {
    0: ("EntropyLDiversity(occupation, 5)", [
        {"model": "entropy-l-diversity", "attribute": "occupation", "l": 5, "estimator": "shannon"}
    ], True),
    1: None,
    2: None,
    3: ("EqualDistanceTCloseness(occupation, 0.2) + KAnonymity(5)", [
        {"model": "equal-distance-t-closeness", "attribute": "occupation", "t": 0.2},
        {"model": "k-anonymity", "k": 5},
    ], True),
    4: ("EqualDistanceTCloseness(occupation, 0.2) + KAnonymity(100)", [
        {"model": "equal-distance-t-closeness", "attribute": "occupation", "t": 0.2},
        {"model": "k-anonymity", "k": 100},
    ], True),
    5: ("KAnonymity(100)", [{"model": "k-anonymity", "k": 100}], False),
    6: ("KAnonymity(5)", [{"model": "k-anonymity", "k": 5}], False),
    7: ("KMap(3, 0.01, USA, ZERO_TRUNCATED_POISSON)", [
        {"model": "k-map", "k": 3, "significance": 0.01,
         "estimator": "zero-truncated-poisson", "population_size": USA}
    ], False),
    8: ("KMap(1000, 0.01, USA, ZERO_TRUNCATED_POISSON)", [
        {"model": "k-map", "k": 1000, "significance": 0.01,
         "estimator": "zero-truncated-poisson", "population_size": USA}
    ], False),
    9: None,
    10: None,
}  # fmt: skip
MISSING = {
    1: "DistinctLDiversity on atus.csv",
    2: "RecursiveCLDiversity on atus.csv",
    9: "EDDifferentialPrivacy on fars.csv",
    10: "DPresence on fars.csv with fars_subset.csv",
}


def case_config(index: int) -> dict[str, Any]:
    """A case's configuration in anonlab's terms (paths relative to the repository)."""
    entry = CASES[index]
    assert entry is not None
    _, criteria, sensitive = entry
    return {
        "data": "data/adult/adult.csv",
        "delimiter": ";",
        "qis": {q: f"data/adult/hierarchy_{q}.csv" for q in ADULT_QIS},
        "sensitive": ["occupation"] if sensitive else [],
        "identifying": [] if sensitive else ["occupation"],
        "criteria": criteria,
        "suppression": 1.0,
        "metric": "loss",
        "gs_factor": 0.05,
        "local_gs_factor": 0.05,
        "local_iterations": 100,
        "local_adaption": 0.05,
    }


def java_hash(table: pd.DataFrame) -> int:
    """ARX's test's hash: ``h = 37 h + cell.hashCode()`` over rows, then columns, from 23, in
    Java's 32-bit int arithmetic (``String.hashCode`` over UTF-16 code units)."""
    h = 23
    for row in table.itertuples(index=False):
        for cell in row:
            code = 0
            for unit in _units(str(cell)):
                code = (31 * code + unit) & 0xFFFFFFFF
            h = (37 * h + code) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _units(text: str) -> list[int]:
    """The UTF-16 code units of a text, as Java's String holds it."""
    raw = text.encode("utf-16-be")
    return [int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw), 2)]


def table_text(table: pd.DataFrame) -> str:
    """The output table as ArxLocal.java writes it: ';'-separated, header first, a cell
    quoted (quotes doubled) only if it holds ';', '"' or a line break."""

    def cell(value: Any) -> str:
        text = str(value)
        if any(c in text for c in ';"\n'):
            return '"' + text.replace('"', '""') + '"'
        return text

    lines = [";".join(cell(c) for c in table.columns)]
    lines += [";".join(cell(v) for v in row) for row in table.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def compile_harness(folder: Path) -> str:
    """Compile ArxLocal.java against /tmp/arx; the class path to run it."""
    cp = f"{ARX / 'classes'}:{(ARX / 'cp.txt').read_text().strip()}"
    source = REPO / "benchmarks" / "arx" / "ArxLocal.java"
    subprocess.run(["javac", "-cp", cp, "-d", str(folder), str(source)], check=True)
    return f"{folder}:{cp}"


def run_arx(cases: list[int], warmups: int, repeats: int, out: Path) -> dict[int, dict[str, Any]]:
    """Run the harness on ARX's own data folder; one JSON line per case."""
    with tempfile.TemporaryDirectory() as tmp:
        cp = compile_harness(Path(tmp))
        command = ["java", "-cp", cp, "ArxLocal", str(ARX / "src" / "data"), str(out)]
        command += [str(warmups), str(repeats), *map(str, cases)]
        done = subprocess.run(command, check=True, capture_output=True, text=True)
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    return {int(x["case"]): x for x in lines}


def anonlab_release(config: dict[str, Any], frame: pd.DataFrame, hierarchies: Any) -> Any:
    """Encode, recode locally and build the release (what the benchmark times)."""
    from anonlab.dataset import Roles
    from anonlab.generalize import model_dataset, resolve_criteria
    from anonlab.lattice.local import local_recoding, local_release

    criteria = resolve_criteria(config["criteria"])
    dataset = model_dataset(
        frame,
        hierarchies,
        criteria,
        roles=Roles.of(
            sensitive=config["sensitive"], identifying=config["identifying"], other="insensitive"
        ),
    )
    result = local_recoding(
        dataset,
        criteria,
        config["suppression"],
        config["metric"],
        gs_factor=config["gs_factor"],
        local_gs_factor=config["local_gs_factor"],
        iterations=config["local_iterations"],
        adaption=config["local_adaption"],
    )
    return result, local_release(dataset, result)


def as_arx_table(
    release: pd.DataFrame, frame: pd.DataFrame, config: dict[str, Any]
) -> pd.DataFrame:
    """anonlab's release laid out as ARX's output: every column of the input in its order,
    the identifying ones (which ARX releases as '*' when they have no type) as '*'."""
    table = pd.DataFrame({c: release.get(c, "*") for c in frame.columns})
    return table.astype(str)


def load_inputs(config: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    from anonlab.hierarchy import Hierarchy
    from anonlab.io import read_table

    frame = read_table(str(REPO / config["data"]), delimiter=config["delimiter"])
    hierarchies = {
        q: Hierarchy.from_csv(str(REPO / p), delimiter=config["delimiter"])
        for q, p in config["qis"].items()
    }
    return frame, hierarchies


def write_reference() -> None:
    """Run ARX on every case and write tests/data/arx_local_recoding/cases.json."""
    runnable = [i for i, c in CASES.items() if c is not None]
    with tempfile.TemporaryDirectory() as tmp:
        arx = run_arx(runnable, 0, 1, Path(tmp))
        cases = []
        for index in sorted(CASES):
            if CASES[index] is None:
                cases.append({"id": index, "arx_model": MISSING[index], "not_run": "data not "
                              "distributed with ARX (its data/readme.txt)"})  # fmt: skip
                continue
            entry = CASES[index]
            assert entry is not None
            found = arx[index]
            text = (Path(tmp) / f"case{index}.csv").read_text(encoding="utf-8")
            table = pd.read_csv(
                Path(tmp) / f"case{index}.csv", sep=";", dtype=str, keep_default_na=False
            )
            cases.append(
                {
                    "id": index,
                    "arx_model": entry[0],
                    "config": case_config(index),
                    "arx": {
                        "hash": found["hash"],
                        "hash_in_arx_test": found["hash"],
                        "sha256": sha256(text),
                        "rows": len(table),
                        "columns": list(table.columns),
                        "first_rows": table.head(5).to_numpy().tolist(),
                        "suppressed_rows": int((table[ADULT_QIS] == "*").all(axis=1).sum()),
                        "optimum": found["optimum"],
                        "qi_order": found["qi_order"],
                        "steps": found["steps"],
                        "optimizable_after": found["optimizable"],
                    },
                }
            )
    doc = {
        "arx_version": "3.9.2",
        "source": "ARX's TestAnonymizationLocalRecoding (src/test/org/deidentifier/arx/test/), "
        "set up as its AbstractAnonymizationTest does",
        "generated_by": "python benchmarks/local_recoding.py --reference "
        "(benchmarks/arx/ArxLocal.java)",
        "note": "hash is the value ARX's test computes over the output's cells (and asserts); "
        "sha256 is over the output table as ArxLocal.java writes it (';', header first)",
        "cases": cases,
    }
    REFERENCE.parent.mkdir(parents=True, exist_ok=True)
    REFERENCE.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {REFERENCE.relative_to(REPO)}")


def benchmark(repeats: int, only: list[int] | None) -> None:
    """CPU of ARX and anonlab per case, anonlab's release checked against ARX's."""
    reference = {c["id"]: c for c in json.loads(REFERENCE.read_text())["cases"]}
    runnable = [i for i, c in CASES.items() if c is not None and (not only or i in only)]
    with tempfile.TemporaryDirectory() as tmp:
        arx = run_arx(runnable, 1, repeats, Path(tmp)) if ARX.exists() else {}
    rows = []
    for index in runnable:
        config = reference[index]["config"]
        frame, hierarchies = load_inputs(config)
        cpus = []
        result, release = None, None
        for _ in range(repeats):
            start = time.process_time()
            result, release = anonlab_release(config, frame.copy(), hierarchies)
            cpus.append(time.process_time() - start)
        assert release is not None and result is not None
        table = as_arx_table(release, frame, config)
        same = sha256(table_text(table)) == reference[index]["arx"]["sha256"]
        ours = statistics.median(cpus)
        theirs = statistics.median(arx[index]["cpu_seconds"]) if index in arx else None
        rows.append(
            {
                "case": index,
                "model": reference[index]["arx_model"],
                "same_output_as_arx": same,
                "searches": len(result.iterations),
                "anonlab_cpu_seconds": cpus,
                "anonlab_cpu_median": ours,
                "arx_cpu_seconds": arx.get(index, {}).get("cpu_seconds"),
                "arx_cpu_median": theirs,
                "ratio": None if theirs is None else ours / theirs,
            }
        )
        ratio = "" if theirs is None else f"{ours / theirs:6.2f}"
        print(
            f"case {index:2d} {reference[index]['arx_model'][:48]:48s} same={same!s:5s} "
            f"anonlab {ours:6.2f} s  ARX {theirs if theirs is not None else float('nan'):6.2f} s"
            f"  ratio {ratio}",
            flush=True,
        )
    doc = {
        "command": "python benchmarks/local_recoding.py" + (f" --repeats {repeats}"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "arx_version": "3.9.2",
        "repeats": repeats,
        "cases": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", action="store_true", help="write ARX's outputs")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--case", type=int, action="append", help="only these cases")
    args = parser.parse_args(argv)
    if args.reference:
        write_reference()
    else:
        benchmark(args.repeats, args.case)


if __name__ == "__main__":
    main()
