"""The entropy-based information loss, classification and static metrics on Adult.

For each metric (Adult, the 8 quasi-identifiers of ARX's tests, 5-anonymity, 4 %
suppression, the settings of ``tests/data/arx_metrics_more/adult.json``) this measures the
flash search: nodes checked, search CPU seconds (``SearchResult.cpu_seconds``, median of 3
runs after a warm-up, in-process), and the CPU per node of the metric's value alone
(median of 3 passes over 300 seeded nodes whose classes are computed beforehand); and
whether the optimum's value is ARX's (the stored ``arx_optimum_loss``, printed by ARX 3.9).
Results: ``benchmarks/results/metrics_more.json``.

    python benchmarks/metrics_more.py             # about a minute
    python benchmarks/metrics_more.py --markdown  # the table from the saved results
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from anonlab.dataset import Dataset
from anonlab.hierarchy import Hierarchy
from anonlab.lattice import STRATEGIES
from anonlab.lattice.freqset import FrequencyEngine
from anonlab.lattice.lattice import Lattice
from anonlab.lattice.metrics import LossContext, NodeClasses, loss_text, metric_by_name
from anonlab.lattice.search import SearchContext
from anonlab.privacy import KAnonymity, max_suppressed

REPO = Path(__file__).resolve().parents[1]
REFS = REPO / "tests" / "data" / "arx_metrics_more" / "adult.json"
OUT = REPO / "benchmarks" / "results" / "metrics_more.json"


def label(case: dict[str, Any]) -> str:
    """A row's name."""
    extras = [f"gs={case['gs_factor']}"] if "gs_factor" in case else []
    if case.get("targets"):
        extras.append("targets=" + "+".join(case["targets"]))
    if case.get("aggregate"):
        extras.append(case["aggregate"])
    return " ".join([case["metric"], *extras])


def measure(repeats: int) -> list[dict[str, Any]]:
    """Every Adult case of the reference file with 4 % suppression."""
    doc = json.loads(REFS.read_text(encoding="utf-8"))
    frame = pd.read_csv(REPO / doc["data"], sep=";", dtype=str, keep_default_na=False)
    hierarchies = {q: Hierarchy.from_csv(REPO / p) for q, p in doc["hierarchies"].items()}
    dataset = Dataset.from_frame(frame, hierarchies, other="insensitive")
    rows = []
    for case in doc["cases"]:
        if case["suppression"] == 0:
            continue
        options = {
            k: case[k]
            for k in ("gs_factor", "aggregate", "weights", "targets", "static_loss")
            if k in case
        }
        cpu, checked, text = [], 0, ""
        for run in range(repeats + 1):
            engine = FrequencyEngine(dataset, keep_base_index=True)
            metric = metric_by_name(
                case["metric"],
                LossContext(dataset, engine.base_tuples, engine.bottom.counts),
                **options,
            )
            ctx = SearchContext(
                Lattice(dataset.heights),
                engine,
                [KAnonymity(case["k"])],
                max_suppressed(case["suppression"], dataset.n),
                metric,
            )
            result = STRATEGIES["flash"](ctx)
            if run:
                cpu.append(result.cpu_seconds)
            checked, text = result.nodes_checked, loss_text(metric.value(result.classes))
        nodes = random.Random(5).sample([n[0] for n in case["nodes"]], 300)
        classes = []
        for levels in nodes:
            fs = engine.roll_up(engine.bottom, levels)
            classes.append(NodeClasses(fs, (fs.counts < case["k"]) & (fs.counts > 0)))
        per_node = []
        for _ in range(repeats):
            start = time.process_time()
            for node in classes:
                metric.value(node)
            per_node.append((time.process_time() - start) / len(classes))
        rows.append(
            {
                "metric": label(case),
                "nodes_checked": checked,
                "search_cpu_s": statistics.median(cpu),
                "value_cpu_us_per_node": statistics.median(per_node) * 1e6,
                "optimum_loss": text,
                "arx_optimum_loss": case["arx_optimum_loss"],
                "same_optimum": text == case["arx_optimum_loss"],
            }
        )
        print(rows[-1], flush=True)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The results as a Markdown table."""
    out = [
        "| metric | nodes checked (of 4320) | flash search CPU s | value CPU per node (µs) "
        "| optimum value | ARX's optimum value |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['metric']} | {r['nodes_checked']} | {r['search_cpu_s']:.2f} | "
            f"{r['value_cpu_us_per_node']:.0f} | {r['optimum_loss']} | "
            f"{r['arx_optimum_loss']} |"
        )
    return "\n".join(out)


def main() -> None:
    """Measure (or print the saved table with ``--markdown``)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(OUT.read_text(encoding="utf-8"))["rows"]))
        return
    rows = measure(args.repeats)
    OUT.write_text(
        json.dumps(
            {"command": "python benchmarks/metrics_more.py", "numpy": np.__version__, "rows": rows},
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    print(markdown(rows))


if __name__ == "__main__":
    main()
