"""Runs MetricsMoreRef (ARX 3.9) and stores its values in tests/data/arx_metrics_more.

Usage: ``python3 make_refs.py [tiny small random random2 adult subset]``. Needs java and a
compiled ARX 3.9 in ``$ARX_HOME`` (default /tmp/arx: ``classes/``, ``cp.txt`` listing its
jars), with this folder's MetricsMoreRef.java compiled into ``$ARX_HOME/ref/metrics_more``:
``javac -cp "classes:$(cat cp.txt)" -d ref/metrics_more MetricsMoreRef.java``.
Every node of every lattice is evaluated.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NotRequired, TypedDict

REPO = Path(__file__).resolve().parents[4]
OUT = REPO / "tests/data/arx_metrics_more"
ARX = Path(os.environ.get("ARX_HOME", "/tmp/arx"))
CP = f"{ARX}/ref/metrics_more:{ARX}/classes:" + ":".join(
    str(ARX / p) for p in (ARX / "cp.txt").read_text().strip().split(":")
)


class Dataset(TypedDict):
    """One reference table: its data, quasi-identifiers with hierarchies, heights, k, targets."""

    data: str
    subset: NotRequired[str]
    qis: list[str]
    hierarchy: str
    heights: list[int]
    k: int
    suppression: float
    targets: list[list[str]]


Case = dict[str, Any]

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
DATASETS: dict[str, Dataset] = {
    "tiny": {
        "data": "tests/data/arx_metrics/tiny/tiny.csv",
        "qis": ["a", "b", "c"],
        "hierarchy": "tests/data/arx_metrics/tiny/hierarchy_{}.csv",
        "heights": [2, 3, 1],
        "k": 2,
        "suppression": 0.1,
        "targets": [["c"], ["a", "c"]],
    },
    "small": {
        "data": "tests/data/arx_metrics/small/small.csv",
        "qis": ["zip", "age", "sex", "job"],
        "hierarchy": "tests/data/arx_metrics/small/hierarchy_{}.csv",
        "heights": [3, 4, 1, 2],
        "k": 3,
        "suppression": 0.1,
        "targets": [["note"], ["job"], ["job", "note"], ["sex", "note"]],
    },
    "random": {
        "data": "tests/data/arx_metrics_more/random/random.csv",
        "qis": ["p", "q", "r"],
        "hierarchy": "tests/data/arx_metrics_more/random/hierarchy_{}.csv",
        "heights": [3, 2, 2],
        "k": 3,
        "suppression": 0.1,
        "targets": [["label"], ["label", "coin"], ["p", "label"], ["q"]],
    },
    "random2": {
        "data": "tests/data/arx_metrics_more/random2/random2.csv",
        "qis": ["p", "q", "r"],
        "hierarchy": "tests/data/arx_metrics_more/random2/hierarchy_{}.csv",
        "heights": [3, 2, 2],
        "k": 4,
        "suppression": 0.08,
        "targets": [["label"], ["r", "coin"]],
    },
    "adult": {
        "data": "data/adult/adult.csv",
        "qis": ADULT_QIS,
        "hierarchy": "data/adult/hierarchy_{}.csv",
        "heights": [1, 4, 1, 2, 3, 2, 2, 1],
        "k": 5,
        "suppression": 0.04,
        "targets": [["salary-class"], ["occupation"], ["occupation", "salary-class"]],
    },
    "subset": {
        "data": "data/adult/adult.csv",
        "subset": "tests/data/arx_metrics/subset/adult_every_10th.csv",
        "qis": ADULT_QIS,
        "hierarchy": "data/adult/hierarchy_{}.csv",
        "heights": [1, 4, 1, 2, 3, 2, 2, 1],
        "k": 5,
        "suppression": 0.04,
        "targets": [["occupation", "salary-class"]],
    },
}


def static_table(spec: Dataset, skew: int) -> dict[str, list[float]]:
    """Per-level losses for ``static``: rising, with uneven steps (some levels equal)."""
    out = {}
    for i, (q, h) in enumerate(zip(spec["qis"], spec["heights"], strict=True)):
        values = [0.0]
        for level in range(1, h + 1):
            step = [0.1, 0.25, 0.0, 0.7, 1.3][(i + level + skew) % 5]
            values.append(round(values[-1] + step, 2))
        out[q] = values
    return out


def cases(name: str) -> list[Case]:
    """The settings run on one table."""
    spec = DATASETS[name]
    s = spec["suppression"]
    first, second = spec["qis"][:2]
    weights = {first: 0.5, second: 2.0}
    if name == "subset":
        return [
            {"metric": "entropy_information_loss", "suppression": s},
            {"metric": "classification", "suppression": s, "targets": spec["targets"][0]},
        ]
    if name == "adult":
        return [
            {"metric": "entropy_information_loss", "suppression": s},
            {"metric": "entropy_information_loss", "suppression": s, "gs_factor": 0.3},
            {"metric": "entropy_information_loss", "suppression": 0.0},
            *[
                {"metric": "classification", "suppression": s, "targets": t}
                for t in spec["targets"]
            ],
            {
                "metric": "classification",
                "suppression": s,
                "gs_factor": 0.8,
                "targets": spec["targets"][2],
            },
            {"metric": "classification", "suppression": 0.0, "targets": spec["targets"][2]},
            {"metric": "static", "suppression": s, "static_loss": static_table(spec, 0)},
            {
                "metric": "static",
                "suppression": s,
                "static_loss": static_table(spec, 2),
                "aggregate": "geometric_mean",
                "weights": weights,
            },
        ]
    out: list[Case] = []
    for supp in (s, 0.0):
        out.append({"metric": "entropy_information_loss", "suppression": supp})
        for t in spec["targets"]:
            out.append({"metric": "classification", "suppression": supp, "targets": t})
    for gs in (0.0, 0.3, 0.8, 1.0):
        out.append({"metric": "entropy_information_loss", "suppression": s, "gs_factor": gs})
        out.append(
            {
                "metric": "classification",
                "suppression": s,
                "gs_factor": gs,
                "targets": spec["targets"][-1],
            }
        )
    out.append({"metric": "static", "suppression": s, "static_loss": static_table(spec, 0)})
    for i, agg in enumerate(("arithmetic_mean", "geometric_mean", "sum", "max", "rank")):
        out.append(
            {
                "metric": "static",
                "suppression": s,
                "aggregate": agg,
                "static_loss": static_table(spec, i + 1),
                **({"weights": weights} if i % 2 == 0 else {}),
            }
        )
    return out


def run(name: str, spec: Dataset, case: Case) -> Case:
    """Run MetricsMoreRef for one case: ARX's optimum and every node's value."""
    hier = ",".join(f"{q}={REPO / spec['hierarchy'].format(q)}" for q in spec["qis"])
    weights = case.get("weights")
    table = case.get("static_loss")
    args = [
        str(REPO / spec["data"]),
        hier,
        str(spec["k"]),
        repr(case["suppression"]),
        case["metric"],
        repr(case.get("gs_factor", 0.5)),
        case.get("aggregate") or "-",
        ",".join(f"{q}:{w!r}" for q, w in weights.items()) if weights else "-",
        "all",
        ",".join(case["targets"]) if case.get("targets") else "-",
        ";".join(f"{q}:" + "/".join(repr(v) for v in vs) for q, vs in table.items())
        if table
        else "-",
        str(REPO / spec["subset"]) if "subset" in spec else "-",
    ]
    cmd = ["java", "-cp", CP, "MetricsMoreRef", *args]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()
    head = json.loads(out[0])
    assert head["qis"].split(",") == spec["qis"], head
    rows = [json.loads(line) for line in out[1:]]
    return {
        **case,
        "k": spec["k"],
        "command": "java -cp 'ref/metrics_more:classes:$(cat cp.txt)' MetricsMoreRef "
        + " ".join(f"'{a}'" for a in args).replace(str(REPO) + "/", ""),
        "arx_optimum": None if head["optimum"] == "null" else json.loads(head["optimum"]),
        "arx_optimum_loss": head["optimum_loss"],
        "nodes": [[json.loads(r["node"]), r["loss"], r["values"]] for r in rows],
    }


def dump(doc: dict[str, Any]) -> str:
    """JSON with one stored case per block, one node per line."""
    head = {k: v for k, v in doc.items() if k != "cases"}
    parts = [json.dumps(head, indent=1)[:-2] + ',\n "cases": [']
    for i, case in enumerate(doc["cases"]):
        meta = {k: v for k, v in case.items() if k != "nodes"}
        nodes = ",\n   ".join(json.dumps(n, separators=(",", ":")) for n in case["nodes"])
        parts.append(
            "  "
            + json.dumps(meta)[:-1]
            + ', "nodes": [\n   '
            + nodes
            + "]}"
            + ("," if i + 1 < len(doc["cases"]) else "")
        )
    parts.append(" ]\n}\n")
    return "\n".join(parts)


def main() -> None:
    """Write one JSON file per table named on the command line (default: all)."""
    for name in sys.argv[1:] or list(DATASETS):
        spec = DATASETS[name]
        results = []
        for case in cases(name):
            results.append(run(name, spec, case))
            print(name, case, len(results[-1]["nodes"]), file=sys.stderr)
        doc = {
            "about": "Entropy-based information loss, classification and static metric as ARX "
            "3.9 prints them (ARXNode.getHighestScore() after ARXResult.getOutput(node),"
            " the node unchecked first) at every node, with k-anonymity marking the "
            "suppressed classes, and ARX's global optimum; made by "
            "tests/data/arx_metrics_more/tools/make_refs.py running "
            "MetricsMoreRef.java; 'command' is run in the ARX folder. Each node is "
            "[levels, loss, per-attribute values or null].",
            "dataset": name,
            "data": spec["data"],
            **(
                {"subset": spec["subset"], "delta_presence": [0.0, 1.0]} if "subset" in spec else {}
            ),
            "qis": spec["qis"],
            "hierarchies": {q: spec["hierarchy"].format(q) for q in spec["qis"]},
            "cases": results,
        }
        (OUT / f"{name}.json").write_text(dump(doc), encoding="utf-8")


if __name__ == "__main__":
    main()
