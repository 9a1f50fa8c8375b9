"""Writes the small random tables of tests/data/arx_metrics (seeded, reproducible)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

OUT = Path(__file__).resolve().parents[1]


def write(path: Path, rows: Sequence[Sequence[object]]) -> None:
    """Write ``rows`` as semicolon-separated lines."""
    path.write_text("".join(";".join(map(str, r)) + "\n" for r in rows), encoding="utf-8")


def small(rng: random.Random) -> None:
    """The 400-row table ``small`` with zip, age, sex and job hierarchies."""
    d = OUT / "small"
    d.mkdir(parents=True, exist_ok=True)
    # zip: 16 leaves in the hierarchy, 12 used; 3 levels
    zips = [f"1{a}{b}" for a in range(4) for b in range(4)]
    write(d / "hierarchy_zip.csv", [[z, z[:2] + "*", z[:1] + "**", "*"] for z in zips])
    # age 15..64 in the hierarchy, data 20..59
    write(
        d / "hierarchy_age.csv",
        [
            [
                a,
                f"{a // 5 * 5}-{a // 5 * 5 + 4}",
                f"{a // 10 * 10}-{a // 10 * 10 + 9}",
                "<40" if a < 40 else ">=40",
                "*",
            ]
            for a in range(15, 65)
        ],
    )
    write(d / "hierarchy_sex.csv", [["F", "*"], ["M", "*"]])
    # job: a label repeated on two levels ("Private" and "Gov" groups of one value)
    write(
        d / "hierarchy_job.csv",
        [
            ["Private", "Private", "*"],
            ["Gov", "Gov", "*"],
            ["Self-inc", "Self", "*"],
            ["Self-not-inc", "Self", "*"],
            ["Never", "Other", "*"],
            ["Without-pay", "Other", "*"],
        ],
    )
    jobs = ["Private"] * 6 + ["Gov"] * 2 + ["Self-inc", "Self-not-inc", "Never", "Without-pay"]
    used = zips[:12]
    rows: list[list[object]] = [["zip", "age", "sex", "job", "note"]]
    for i in range(400):
        z = used[min(int(rng.expovariate(0.35)), 11)]
        a = rng.randint(20, 59) if rng.random() < 0.7 else rng.choice([25, 31, 47])
        rows.append([z, a, rng.choice("FFM"), rng.choice(jobs), f"n{i % 7}"])
    write(d / "small.csv", rows)


def tiny(rng: random.Random) -> None:
    """The 60-row table ``tiny`` with three small hierarchies."""
    d = OUT / "tiny"
    d.mkdir(parents=True, exist_ok=True)
    write(
        d / "hierarchy_a.csv",
        [["a1", "A", "*"], ["a2", "A", "*"], ["a3", "B", "*"], ["a4", "B", "*"], ["a5", "C", "*"]],
    )
    write(d / "hierarchy_b.csv", [[str(v), f"{v // 2}x", f"{v // 4}xx", "*"] for v in range(8)])
    write(d / "hierarchy_c.csv", [["u", "*"], ["v", "*"], ["w", "*"]])
    rows: list[list[object]] = [["a", "b", "c"]]
    for _ in range(60):
        rows.append(
            [
                rng.choice(["a1", "a1", "a1", "a2", "a3", "a4"]),
                rng.randint(0, 6),
                rng.choice("uuvw"),
            ]
        )
    write(d / "tiny.csv", rows)


def subset() -> None:
    """Every 10th row of Adult: the research subset of the delta-presence references."""
    d = OUT / "subset"
    d.mkdir(parents=True, exist_ok=True)
    lines = (OUT.parents[2] / "data/adult/adult.csv").read_text(encoding="utf-8").splitlines()
    (d / "adult_every_10th.csv").write_text(
        "\n".join([lines[0], *lines[1::10]]) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    r = random.Random(13)
    small(r)
    tiny(r)
    subset()
