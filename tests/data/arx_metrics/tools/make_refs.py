"""Runs MetricsRef (ARX 3.9) on the test tables and stores its values in tests/data/arx_metrics.

Usage: ``python3 make_refs.py [tiny small adult subset]``. Needs java and a compiled
ARX 3.9 in ``$ARX_HOME`` (default /tmp/arx: ``classes/``, ``cp.txt`` listing its jars),
with this folder's MetricsRef.java compiled into ``$ARX_HOME/ref/metrics``:
``javac -cp "classes:$(cat cp.txt)" -d ref/metrics MetricsRef.java``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any, NotRequired, TypedDict

REPO = Path(__file__).resolve().parents[4]
OUT = REPO / "tests/data/arx_metrics"
ARX = Path(os.environ.get("ARX_HOME", "/tmp/arx"))
CP = f"{ARX}/ref/metrics:{ARX}/classes:" + ":".join(
    str(ARX / p) for p in (ARX / "cp.txt").read_text().strip().split(":")
)


class Dataset(TypedDict):
    """One reference table: its data, quasi-identifiers with hierarchies, top levels and k."""

    data: str
    subset: NotRequired[str]
    qis: list[str]
    hierarchy: str
    heights: list[int]
    k: int


Case = dict[str, Any]
"""One MetricsRef setting (metric, suppression, optional k, gs_factor, aggregate, weights)."""

METRICS = [
    "loss",
    "precision",
    "precision_with_suppression",
    "height",
    "discernibility",
    "discernibility_with_suppression",
    "aecs",
    "entropy",
    "entropy_with_suppression",
    "normalized_entropy",
    "ambiguity",
    "kl_divergence",
]

DATASETS: dict[str, Dataset] = {
    "adult": {
        "data": "data/adult/adult.csv",
        "qis": [
            "sex",
            "age",
            "race",
            "marital-status",
            "education",
            "native-country",
            "workclass",
            "salary-class",
        ],
        "hierarchy": "data/adult/hierarchy_{}.csv",
        "heights": [1, 4, 1, 2, 3, 2, 2, 1],
        "k": 5,
    },
    "subset": {
        "data": "data/adult/adult.csv",
        "subset": "tests/data/arx_metrics/subset/adult_every_10th.csv",
        "qis": [
            "sex",
            "age",
            "race",
            "marital-status",
            "education",
            "native-country",
            "workclass",
            "salary-class",
        ],
        "hierarchy": "data/adult/hierarchy_{}.csv",
        "heights": [1, 4, 1, 2, 3, 2, 2, 1],
        "k": 5,
    },
    "small": {
        "data": "tests/data/arx_metrics/small/small.csv",
        "qis": ["zip", "age", "sex", "job"],
        "hierarchy": "tests/data/arx_metrics/small/hierarchy_{}.csv",
        "heights": [3, 4, 1, 2],
        "k": 3,
    },
    "tiny": {
        "data": "tests/data/arx_metrics/tiny/tiny.csv",
        "qis": ["a", "b", "c"],
        "hierarchy": "tests/data/arx_metrics/tiny/hierarchy_{}.csv",
        "heights": [2, 3, 1],
        "k": 2,
    },
}

ADULT_EXTRA = [
    [0, 3, 0, 1, 1, 1, 1, 0],
    [1, 0, 1, 1, 2, 2, 2, 1],
    [0, 3, 0, 0, 1, 1, 1, 0],
    [1, 4, 0, 0, 3, 1, 2, 1],
    [0, 1, 0, 1, 1, 1, 1, 0],
    [1, 2, 0, 1, 2, 1, 1, 1],
]


def nodes_for(name: str, spec: Dataset, count: int) -> tuple[str, list[list[int]] | None]:
    """The nodes MetricsRef evaluates: all for the small tables, a seeded sample on Adult."""
    if name not in ("adult", "subset"):
        return "all", None
    rng = random.Random(7)
    chosen = [[0] * 8, list(spec["heights"]), *ADULT_EXTRA]
    while len(chosen) < count:
        node = [rng.randint(0, h) for h in spec["heights"]]
        if node not in chosen:
            chosen.append(node)
    return ";".join(",".join(map(str, n)) for n in chosen), chosen


def run(name: str, spec: Dataset, case: Case, count: int) -> Case:
    """Run MetricsRef for one case and return the case with ARX's optimum and node values."""
    hier = ",".join(f"{q}={REPO / spec['hierarchy'].format(q)}" for q in spec["qis"])
    nodes, _ = nodes_for(name, spec, count)
    weights = case.get("weights")
    args = [
        str(REPO / spec["data"]),
        hier,
        str(case.get("k", spec["k"])),
        repr(case["suppression"]),
        case["metric"],
        repr(case.get("gs_factor", 0.5)),
        case.get("aggregate") or "-",
        ",".join(f"{q}:{w!r}" for q, w in weights.items()) if weights else "-",
        nodes,
    ]
    if "subset" in spec:  # delta-presence with [0, 1]: only the research subset is released
        args += [str(REPO / spec["subset"]), "0.0:1.0"]
    cmd = ["java", "-cp", CP, "MetricsRef", *args]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()
    head = json.loads(out[0])
    rows = [json.loads(line) for line in out[1:]]
    assert head["qis"].split(",") == spec["qis"], head
    return {
        **case,
        "k": case.get("k", spec["k"]),
        "command": "java -cp 'ref/metrics:classes:$(cat cp.txt)' MetricsRef "
        + " ".join(f"'{a}'" for a in args).replace(str(REPO) + "/", ""),
        "arx_optimum": head["optimum"],
        "nodes": [
            {
                "levels": json.loads(r["node"]),
                "anonymous": r["anonymous"],
                "loss": r["loss"],
                "values": r["values"],
            }
            for r in rows
        ],
    }


def cases(name: str) -> list[Case]:
    """The settings run on one table."""
    out: list[Case] = []
    if name == "subset":
        return [{"metric": metric, "suppression": 0.04} for metric in METRICS]
    for metric in METRICS:
        out.append({"metric": metric, "suppression": 0.04 if name == "adult" else 0.1})
    if name != "adult":
        for metric in METRICS:
            out.append({"metric": metric, "suppression": 0.0})
    for agg in ["arithmetic_mean", "sum", "max", "rank"]:
        out.append({"metric": "loss", "suppression": 0.04, "aggregate": agg})
    for gs in [0.0, 0.3, 0.8, 1.0]:
        out.append({"metric": "loss", "suppression": 0.04, "gs_factor": gs})
    first, second = DATASETS[name]["qis"][:2]
    weights = {first: 0.5, second: 2.0}
    out.append({"metric": "loss", "suppression": 0.04, "weights": weights})
    out.append({"metric": "loss", "suppression": 0.04, "weights": weights, "aggregate": "rank"})
    out.append({"metric": "precision_with_suppression", "suppression": 0.04, "gs_factor": 0.2})
    out.append(
        {
            "metric": "precision_with_suppression",
            "suppression": 0.04,
            "gs_factor": 0.7,
            "aggregate": "geometric_mean",
            "weights": weights,
        }
    )
    out.append({"metric": "precision", "suppression": 0.04, "gs_factor": 0.8, "aggregate": "max"})
    out.append({"metric": "height", "suppression": 0.04, "aggregate": "rank", "weights": weights})
    out.append(
        {"metric": "entropy", "suppression": 0.04, "gs_factor": 0.7, "aggregate": "geometric_mean"}
    )
    out.append({"metric": "entropy_with_suppression", "suppression": 0.04, "gs_factor": 0.3})
    out.append(
        {
            "metric": "entropy_with_suppression",
            "suppression": 0.04,
            "gs_factor": 0.8,
            "weights": weights,
            "aggregate": "arithmetic_mean",
        }
    )
    out.append({"metric": "normalized_entropy", "suppression": 0.04, "aggregate": "rank"})
    out.append({"metric": "aecs", "suppression": 0.04, "gs_factor": 0.3})
    out.append({"metric": "aecs", "suppression": 0.04, "gs_factor": 0.8})
    return out


def dump(doc: dict[str, Any]) -> str:
    """JSON with one stored node per line."""
    cases = doc["cases"]
    head = {k: v for k, v in doc.items() if k != "cases"}
    parts = [json.dumps(head, indent=1)[:-2] + ',\n "cases": [']
    for i, case in enumerate(cases):
        meta = {k: v for k, v in case.items() if k != "nodes"}
        nodes = ",\n   ".join(json.dumps(n, separators=(",", ":")) for n in case["nodes"])
        parts.append(
            "  "
            + json.dumps(meta)[:-1]
            + ', "nodes": [\n   '
            + nodes
            + "]}"
            + ("," if i + 1 < len(cases) else "")
        )
    parts.append(" ]\n}\n")
    return "\n".join(parts)


def main() -> None:
    """Write one JSON file per table named on the command line (default: all)."""
    only = sys.argv[1:] or list(DATASETS)
    for name in only:
        spec = DATASETS[name]
        results = []
        for case in cases(name):
            results.append(run(name, spec, case, 24 if name == "subset" else 40))
            print(name, case, len(results[-1]["nodes"]), file=sys.stderr)
        doc = {
            "about": "Information loss printed by ARX 3.9 (ARXNode.getHighestScore() after "
            "ARXResult.getOutput(node), the node unchecked first so that ARX computes "
            "it) with k-anonymity marking the suppressed classes; made by "
            "tests/data/arx_metrics/tools/make_refs.py running MetricsRef.java; "
            "'command' is run in the ARX folder.",
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
