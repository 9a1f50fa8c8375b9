"""Writes the random tables of tests/data/arx_metrics_more (seeded, reproducible).

Usage: ``python3 make_tables.py``. Each table has three quasi-identifiers with
hierarchies (one with leaf values the data lacks) and two target columns:
``label``, which follows the first quasi-identifier with noise, and ``coin``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

OUT = Path(__file__).resolve().parents[1]


def write(path: Path, rows: Sequence[Sequence[object]]) -> None:
    """Write ``rows`` as semicolon-separated lines."""
    path.write_text("".join(";".join(map(str, r)) + "\n" for r in rows), encoding="utf-8")


def table(name: str, rows: int, seed: int) -> None:
    """One table ``name`` of ``rows`` records and its hierarchies."""
    rng = random.Random(seed)
    d = OUT / name
    d.mkdir(parents=True, exist_ok=True)
    # p: 10 leaves, 8 used; 3 levels above
    leaves = [f"p{i}" for i in range(10)]
    write(
        d / "hierarchy_p.csv",
        [[v, f"p{int(v[1:]) // 2}x", f"p{int(v[1:]) // 4}xx", "*"] for v in leaves],
    )
    write(
        d / "hierarchy_q.csv",
        [[v, "lo" if v < "q3" else "hi", "*"] for v in ("q0", "q1", "q2", "q3", "q4")],
    )
    write(d / "hierarchy_r.csv", [[v, v[:1], "*"] for v in ("a1", "a2", "b1", "b2")])
    out: list[list[object]] = [["p", "q", "r", "label", "coin"]]
    for _ in range(rows):
        p = min(int(rng.expovariate(0.4)), 7)
        label = (
            ["yes", "no", "maybe"][p % 3]
            if rng.random() < 0.7
            else rng.choice(["yes", "no", "maybe"])
        )
        out.append(
            [
                f"p{p}",
                rng.choice(["q0", "q1", "q1", "q2", "q3", "q4"]),
                rng.choice(["a1", "a2", "b1", "b1", "b2"]),
                label,
                rng.choice("HT"),
            ]
        )
    write(d / f"{name}.csv", out)


if __name__ == "__main__":
    table("random", 150, 11)
    table("random2", 90, 23)
