"""The search's CPU per node against ARX, before and after, over interleaved rounds (issues 22, 23).

Reads the results of ``benchmarks/profitability.py`` and ``benchmarks/small_table.py`` saved for
each round, "before" (an older commit's ``src`` on ``PYTHONPATH``) and "after", from
``benchmarks/results/per_node_round5b/`` (``profitability_{before,after}_r<N>.json``,
``small_table_{before,after}_r<N>.json``), and prints for each case or row the median over the
rounds of anonlab's search CPU (each run already a median), of ARX's CPU measured beside it,
and of the ratio within each round. ``--json`` also writes them to
``benchmarks/results/per_node_round5b.json``.

    python benchmarks/per_node_rounds.py
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
ROUNDS = RESULTS / "per_node_round5b"


def _load(kind: str, when: str) -> list[dict[str, Any]]:
    files = sorted(ROUNDS.glob(f"{kind}_{when}_r*.json"))
    return [json.loads(f.read_text()) for f in files]


def _profit_rows(doc: dict[str, Any]) -> dict[str, tuple[float, float, int, int]]:
    out = {}
    for r in doc["rows"]:
        if r["case"] in ("Profit#3", "Profit#4", "Profit#5"):
            ours, arx = r["anonlab"], r["arx"]
            out[r["case"]] = (
                ours["search_cpu_seconds"],
                arx["cpu_seconds"],
                ours["nodes_checked"],
                arx["nodes_checked"],
            )
    return out


def _small_rows(doc: dict[str, Any]) -> dict[str, tuple[float, float, int, int]]:
    out = {}
    for r in doc["rows"]:
        key = f"k={r['k']}, {r['suppression']:.0%}"
        ours, arx = r["anonlab"], r["arx"]
        out[key] = (ours["search_cpu_s"], arx["cpu_s"], ours["nodes_checked"], arx["nodes_checked"])
    return out


def combine(kind: str) -> list[dict[str, Any]]:
    """Per case or row: medians over the rounds, before and after."""
    parse = _profit_rows if kind == "profitability" else _small_rows
    table: dict[str, dict[str, Any]] = {}
    for when in ("before", "after"):
        for doc in _load(kind, when):
            for key, (ours, arx, nodes, arx_nodes) in parse(doc).items():
                row = table.setdefault(key, {"key": key, "nodes": nodes, "arx_nodes": arx_nodes})
                row.setdefault(when, []).append(
                    {"anonlab": ours, "arx": arx, "ratio": ours / arx, "at": doc.get("measured_at")}
                )
    for row in table.values():
        for when in ("before", "after"):
            runs = row.get(when, [])
            row[f"{when}_median"] = {
                k: statistics.median(r[k] for r in runs) for k in ("anonlab", "arx", "ratio")
            }
    return list(table.values())


def markdown(kind: str, rows: list[dict[str, Any]]) -> str:
    """The combined table (CPU in ms for the small table, s for the profitability cases)."""
    scale, unit = (1e3, "ms") if kind == "small_table" else (1.0, "s")
    head = (
        f"| {'row' if kind == 'small_table' else 'case'} | nodes (anonlab / ARX) | rounds | "
        f"before {unit} | ARX {unit} | before / ARX | after {unit} | ARX {unit} | after / ARX |\n"
        "|---|---|---|---|---|---|---|---|---|"
    )
    lines = [head]
    for r in rows:
        b, a = r["before_median"], r["after_median"]
        lines.append(
            f"| {r['key']} | {r['nodes']} / {r['arx_nodes']} | {len(r['after'])} | "
            f"{b['anonlab'] * scale:.3g} | {b['arx'] * scale:.3g} | {b['ratio']:.2f} | "
            f"{a['anonlab'] * scale:.3g} | {a['arx'] * scale:.3g} | **{a['ratio']:.2f}** |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="write the combined figures")
    args = parser.parse_args()
    combined = {kind: combine(kind) for kind in ("profitability", "small_table")}
    for kind, rows in combined.items():
        print(markdown(kind, rows))
        print()
    if args.json:
        (RESULTS / "per_node_round5b.json").write_text(json.dumps(combined, indent=1) + "\n")


if __name__ == "__main__":
    main()
