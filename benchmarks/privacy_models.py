"""Every privacy model of issue 13 on Adult: anonlab's flash search beside ARX 3.9.

For the issue's three golden configurations and one configuration per model (Adult, the 8
quasi-identifiers of ARX's tests, sensitive attribute occupation, ARX's loss metric with
generalization/suppression factor 0.5 unless the golden case says otherwise, practical
monotonicity off), this measures

* anonlab: nodes checked, search CPU seconds (``SearchResult.cpu_seconds``) and CPU seconds of the
  whole ``anonymize()`` call, median of 3 runs after a warm-up, in-process;
* ARX 3.9.2 (its optimal FLASH search) through the command-line harness of
  ``/tmp/arx/ref/harness`` (``run.sh``, see its ARX.md): nodes checked (``ARXNode.isChecked`` over
  the expanded lattice, as ARX's own tests count them) and the thread CPU time of
  ``ARXAnonymizer.anonymize`` (which also encodes the data), median of 3 runs after a warm-up in
  the same JVM;

and whether both reach the same optimum (the loss as ARX prints it). Without Java or the harness
the ARX columns are ``n/a``. Results: ``benchmarks/results/privacy_models.json``.

    python benchmarks/privacy_models.py              # all configurations (5-10 minutes)
    python benchmarks/privacy_models.py --only k-map # configurations whose name contains "k-map"
    python benchmarks/privacy_models.py --markdown   # the table from the saved results
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from anonlab.dataset import Roles
from anonlab.generalize import anonymize, model_dataset, resolve_criteria
from anonlab.hierarchy import Hierarchy
from anonlab.io import read_table

REPO = Path(__file__).resolve().parents[1]
ADULT = REPO / "data" / "adult"
SUBSET = REPO / "tests" / "data" / "arx" / "adult_subset.csv"
OUT = REPO / "benchmarks" / "results" / "privacy_models.json"
HARNESS = Path("/tmp/arx/ref/harness/run.sh")
QIS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "salary-class",
]
OCC = "occupation"
HIER_OCC = str(ADULT / "hierarchy_occupation.csv")
USA = 317_238_626  # ARX's ARXPopulationModel.Region.USA
LOSS = {"metric": "loss", "gs_factor": 0.5, "aggregate": "geometric_mean"}

#: name -> (criteria, suppression, metric options); the first three are the issue's golden cases
CONFIGS: dict[str, tuple[list[dict[str, Any]], float, dict[str, Any]]] = {
    "golden 1: entropy-l-diversity l=5": (
        [{"model": "entropy-l-diversity", "attribute": OCC, "l": 5, "estimator": "shannon"}],
        0.04,
        {"metric": "entropy_with_suppression"},
    ),
    "golden 2: recursive-cl-diversity c=4 l=5": (
        [{"model": "recursive-cl-diversity", "attribute": OCC, "c": 4.0, "l": 5}],
        1.0,
        {"metric": "loss", "gs_factor": 0.5, "aggregate": "rank"},
    ),
    "golden 3: hierarchical t=0.2 + k=5": (
        [
            {"model": "k-anonymity", "k": 5},
            {
                "model": "hierarchical-distance-t-closeness",
                "attribute": OCC,
                "t": 0.2,
                "hierarchy": HIER_OCC,
            },
        ],
        0.05,
        {"metric": "loss", "gs_factor": 0.5, "aggregate": "rank"},
    ),
    "k-anonymity k=5": ([{"model": "k-anonymity", "k": 5}], 0.04, LOSS),
    "distinct-l-diversity l=3": (
        [{"model": "distinct-l-diversity", "attribute": OCC, "l": 3}],
        0.04,
        LOSS,
    ),
    "entropy-l-diversity l=3 grassberger": (
        [{"model": "entropy-l-diversity", "attribute": OCC, "l": 3, "estimator": "grassberger"}],
        0.04,
        LOSS,
    ),
    "recursive-cl-diversity c=3 l=3": (
        [{"model": "recursive-cl-diversity", "attribute": OCC, "c": 3.0, "l": 3}],
        0.04,
        LOSS,
    ),
    "equal-distance-t-closeness t=0.2": (
        [{"model": "equal-distance-t-closeness", "attribute": OCC, "t": 0.2}],
        0.04,
        LOSS,
    ),
    "hierarchical-distance-t-closeness t=0.2": (
        [
            {
                "model": "hierarchical-distance-t-closeness",
                "attribute": OCC,
                "t": 0.2,
                "hierarchy": HIER_OCC,
            }
        ],
        0.04,
        LOSS,
    ),
    "ordered-distance-t-closeness t=0.2": (
        [{"model": "ordered-distance-t-closeness", "attribute": OCC, "t": 0.2}],
        0.04,
        LOSS,
    ),
    "basic-beta-likeness beta=5": (
        [{"model": "basic-beta-likeness", "attribute": OCC, "beta": 5.0}],
        0.4,
        LOSS,
    ),
    "enhanced-beta-likeness beta=2": (
        [{"model": "enhanced-beta-likeness", "attribute": OCC, "beta": 2.0}],
        0.1,
        LOSS,
    ),
    "delta-disclosure delta=1.5": (
        [{"model": "delta-disclosure", "attribute": OCC, "delta": 1.5}],
        0.1,
        LOSS,
    ),
    "delta-presence 0.05..0.15": (
        [{"model": "delta-presence", "dmin": 0.05, "dmax": 0.15, "subset": str(SUBSET)}],
        0.05,
        LOSS,
    ),
    "k-map k=5 (population table)": (
        [{"model": "k-map", "k": 5, "subset": str(SUBSET)}],
        0.05,
        LOSS,
    ),
    "k-map k=3 (zero-truncated Poisson)": (
        [
            {
                "model": "k-map",
                "k": 3,
                "significance": 0.01,
                "estimator": "zero-truncated-poisson",
                "population_size": USA,
            }
        ],
        0.05,
        LOSS,
    ),
    "average-risk 0.01": ([{"model": "average-risk", "threshold": 0.01}], 0.04, LOSS),
    "sample-uniqueness 0.01": ([{"model": "sample-uniqueness", "threshold": 0.01}], 0.04, LOSS),
    "population-uniqueness 0.0001 (dankar)": (
        [
            {
                "model": "population-uniqueness",
                "threshold": 0.0001,
                "estimator": "dankar",
                "population_size": USA,
            }
        ],
        0.04,
        LOSS,
    ),
}


def sensitive_of(criteria: list[dict[str, Any]]) -> list[str]:
    """The attributes the criteria protect."""
    return sorted({c["attribute"] for c in criteria if "attribute" in c})


def harness_config(
    criteria: list[dict[str, Any]], suppression: float, metric: dict[str, Any]
) -> dict[str, Any]:
    """The ARX harness's configuration (ARX's view: k-map's research subset inside the data)."""
    return {
        "data": str(ADULT / "adult.csv"),
        "delimiter": ";",
        "qis": {q: str(ADULT / f"hierarchy_{q}.csv") for q in QIS},
        "sensitive": sensitive_of(criteria),
        "criteria": criteria,
        "suppression": suppression,
        "practical_monotonicity": False,
        **metric,
    }


def run_arx(config: dict[str, Any], repeats: int) -> dict[str, Any] | None:
    """ARX's result (median CPU of ``repeats`` runs after one warm-up), or None without Java."""
    if shutil.which("java") is None or not HARNESS.is_file():
        return None
    proc = subprocess.run(
        [str(HARNESS), "-", "--repeat", str(repeats), "--warmup", "1"],
        input=json.dumps(config),
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"ARX harness failed: {proc.stderr[-1000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    if "error" in result:
        raise RuntimeError(f"ARX harness: {result['error']}")
    return result


def anonlab_spec(criteria: list[dict[str, Any]]) -> tuple[Path, list[dict[str, Any]]]:
    """The table anonlab releases and its criteria: k-map with a research subset is, in
    anonlab's terms, the subset released against the population table."""
    table = ADULT / "adult.csv"
    specs = []
    for c in criteria:
        spec = dict(c)
        if spec["model"] == "k-map" and "subset" in spec:
            table = Path(spec.pop("subset"))
            spec["population"] = str(ADULT / "adult.csv")
        specs.append(spec)
    return table, specs


def run_anonlab(
    criteria: list[dict[str, Any]], suppression: float, metric: dict[str, Any], repeats: int
) -> dict[str, Any]:
    """anonlab's flash search: nodes checked, median search and anonymize() CPU, the optimum."""
    table, specs = anonlab_spec(criteria)
    frame = read_table(table, delimiter=";")
    hierarchies = {q: Hierarchy.from_csv(ADULT / f"hierarchy_{q}.csv") for q in QIS}
    model = resolve_criteria(specs)
    dataset = model_dataset(
        frame,
        hierarchies,
        model,
        roles=Roles.of(sensitive=sensitive_of(criteria), other="insensitive"),
        read_options={"delimiter": ";"},
    )
    options = {k: v for k, v in metric.items() if k != "metric"}

    def once() -> Any:
        return anonymize(
            dataset,
            criteria=model,
            suppression=suppression,
            metric=metric["metric"],
            search="flash",
            **options,
        )

    once()  # warm-up
    cpu, search_cpu, result = [], [], None
    for _ in range(repeats):
        started = time.process_time()
        result = once()
        cpu.append(time.process_time() - started)
        search_cpu.append(result.search.cpu_seconds)
    assert result is not None
    return {
        "nodes_checked": result.search.nodes_checked,
        "search_cpu_s": statistics.median(search_cpu),
        "anonymize_cpu_s": statistics.median(cpu),
        "transformation": [result.transformation[q] for q in QIS],
        "loss": result.information_loss_arx[metric["metric"]],
        "lattice_size": result.lattice_size,
    }


def measure(names: list[str], repeats: int) -> list[dict[str, Any]]:
    """One row per configuration."""
    rows = []
    for name in names:
        criteria, suppression, metric = CONFIGS[name]
        row: dict[str, Any] = {
            "config": name,
            "criteria": criteria,
            "suppression": suppression,
            **metric,
        }
        try:
            row["anonlab"] = run_anonlab(criteria, suppression, metric, repeats)
        except Exception as exc:  # a model not built yet must not stop the other rows
            row["anonlab"] = {"error": f"{type(exc).__name__}: {exc}"}
        arx = run_arx(harness_config(criteria, suppression, metric), repeats)
        row["arx"] = (
            None
            if arx is None
            else {
                "nodes_checked": arx["nodes_checked"],
                "cpu_s": arx["cpu_seconds"],
                "transformation": arx["transformation"],
                "loss": arx["highest_score"],
                "lattice_size": arx["lattice_size"],
                "version": arx["arx_version"],
            }
        )
        ours, theirs = row["anonlab"], row["arx"]
        row["same_optimum"] = (
            None if theirs is None or "error" in ours else ours["loss"] == theirs["loss"]
        )
        rows.append(row)
        print(line(row), flush=True)
    return rows


def _fmt(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def line(row: dict[str, Any]) -> str:
    """One printed line of the comparison."""
    ours, arx = row["anonlab"], row["arx"] or {}
    if "error" in ours:
        return f"{row['config']:<42} anonlab error: {ours['error']}"
    return (
        f"{row['config']:<42} anonlab {ours['nodes_checked']:>5} nodes "
        f"{ours['search_cpu_s']:7.3f} s search CPU | "
        f"ARX {_fmt(arx.get('nodes_checked'), '>5')} nodes "
        f"{_fmt(arx.get('cpu_s'), '7.3f')} s CPU"
        f" | same optimum: {row['same_optimum']}"
    )


def markdown(rows: list[dict[str, Any]]) -> str:
    """The results as the table of docs/benchmarks.md."""
    out = [
        "| configuration | suppression | ARX nodes | anonlab nodes | ARX CPU s | "
        "anonlab search CPU s | anonlab anonymize() CPU s | same optimum |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ours, arx = r["anonlab"], r["arx"] or {}
        if "error" in ours:
            out.append(
                f"| {r['config']} | {r['suppression']:.0%} | "
                f"{_fmt(arx.get('nodes_checked'), 'd')} | error | "
                f"{_fmt(arx.get('cpu_s'), '.3f')} | - | - | - |"
            )
            continue
        out.append(
            f"| {r['config']} | {r['suppression']:.0%} | "
            f"{_fmt(arx.get('nodes_checked'), 'd')} | {ours['nodes_checked']} | "
            f"{_fmt(arx.get('cpu_s'), '.3f')} | {ours['search_cpu_s']:.3f} | "
            f"{ours['anonymize_cpu_s']:.3f} | {r['same_optimum']} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs (default: 3)")
    parser.add_argument("--only", default=None, help="configurations whose name contains this")
    parser.add_argument(
        "--markdown", action="store_true", help="print the table from the saved results and stop"
    )
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(OUT.read_text())["rows"]))
        return
    names = [n for n in CONFIGS if args.only is None or args.only in n]
    rows = measure(names, args.repeats)
    if args.only is not None and OUT.is_file():  # keep the saved rows of the other configurations
        fresh = {r["config"]: r for r in rows}
        old = json.loads(OUT.read_text())["rows"]
        rows = [fresh.pop(r["config"], r) for r in old] + list(fresh.values())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    saved = {
        "measured_at": time.strftime("%Y-%m-%d %H:%M"),
        "repeats": args.repeats,
        "machine": "2 cores, shared",
        "rows": rows,
    }
    OUT.write_text(json.dumps(saved, indent=1) + "\n")
    print(markdown(rows))


if __name__ == "__main__":
    main()
