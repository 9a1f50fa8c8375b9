"""A census table shaped like ISLR's Wage (3,000 rows), generated, with its hierarchies.

The table is not in the repository; its shape is: ``age`` (18..80), nominal
``maritl``, ``race`` and ``education`` coded ``"1. ..."`` as in Wage, an
insensitive ``jobclass``, a sensitive ``health`` and a numeric ``wage``.
:func:`write_wage` writes ``wage.csv`` and one hierarchy CSV per
quasi-identifier into a folder, all from one seeded generator.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

ROWS = 3000
MARITL = ["1. Never Married", "2. Married", "3. Widowed", "4. Divorced", "5. Separated"]
RACE = ["1. White", "2. Black", "3. Asian", "4. Other"]
EDUCATION = [
    "1. < HS Grad",
    "2. HS Grad",
    "3. Some College",
    "4. College Grad",
    "5. Advanced Degree",
]
QI = ("age", "maritl", "race", "education")


def wage_frame(seed: int = 20) -> pd.DataFrame:
    """The Wage-like table: skewed categories so that a few records are rare."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 81, ROWS).astype(str),
            "maritl": rng.choice(MARITL, ROWS, p=[0.32, 0.58, 0.02, 0.07, 0.01]),
            "race": rng.choice(RACE, ROWS, p=[0.83, 0.09, 0.06, 0.02]),
            "education": rng.choice(EDUCATION, ROWS, p=[0.09, 0.32, 0.22, 0.23, 0.14]),
            "jobclass": rng.choice(["1. Industrial", "2. Information"], ROWS),
            "health": rng.choice(["1. <=Good", "2. >=Very Good"], ROWS, p=[0.28, 0.72]),
            "wage": np.round(rng.lognormal(4.65, 0.35, ROWS), 2).astype(str),
        }
    )


def _age_rows() -> list[list[str]]:
    """Age to decades, then 20-year bands, then ``*``."""
    rows = []
    for age in range(18, 81):
        decade = age // 10 * 10
        band = decade // 20 * 20
        rows.append([str(age), f"{decade}-{decade + 9}", f"{band}-{band + 19}", "*"])
    return rows


def _nominal_rows(values: list[str], groups: dict[str, str]) -> list[list[str]]:
    """A value, its named group, ``*``."""
    return [[v, groups[v], "*"] for v in values]


def write_wage(folder: Path, seed: int = 20) -> dict[str, Path]:
    """Write ``wage.csv`` and ``hierarchy_<qi>.csv`` into ``folder``; return the paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"table": folder / "wage.csv"}
    wage_frame(seed).to_csv(paths["table"], index=False)
    trees = {
        "age": _age_rows(),
        "maritl": _nominal_rows(
            MARITL,
            {
                MARITL[0]: "single",
                MARITL[1]: "partnered",
                MARITL[2]: "single",
                MARITL[3]: "single",
                MARITL[4]: "single",
            },
        ),
        "race": _nominal_rows(
            RACE,
            {RACE[0]: "White", RACE[1]: "not White", RACE[2]: "not White", RACE[3]: "not White"},
        ),
        "education": _nominal_rows(
            EDUCATION,
            {
                EDUCATION[0]: "school",
                EDUCATION[1]: "school",
                EDUCATION[2]: "college",
                EDUCATION[3]: "college",
                EDUCATION[4]: "college",
            },
        ),
    }
    for name, rows in trees.items():
        paths[name] = folder / f"hierarchy_{name}.csv"
        pd.DataFrame(rows).to_csv(paths[name], sep=";", header=False, index=False)
    return paths
