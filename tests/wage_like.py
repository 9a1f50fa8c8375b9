"""A generated census table with the shape of ISLR's Wage (the data is not shipped).

Nominal ``maritl``, ``race``, ``education`` and ``jobclass`` coded as in
Wage (``"1. White"``), a constant ``region`` (Wage has one), 5-digit
``zip`` codes, an ``interviewed`` date from 2003 to 2009 and a ``wage``.
``examples/census/wage.csv`` is :func:`wage_like` written by
:func:`write_wage_like` (a test keeps the two equal).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

MARITL = ["1. Never Married", "2. Married", "3. Widowed", "4. Divorced", "5. Separated"]
RACE = ["1. White", "2. Black", "3. Asian", "4. Other"]
EDUCATION = [
    "1. < HS Grad",
    "2. HS Grad",
    "3. Some College",
    "4. College Grad",
    "5. Advanced Degree",
]
JOBCLASS = ["1. Industrial", "2. Information"]
ZIPS = [
    f"{z:05d}"
    for z in (
        10001,
        10002,
        10003,
        10011,
        10012,
        10013,
        11201,
        11205,
        11215,
        7030,
        7302,
        7306,
        19103,
        19104,
        19107,
        12207,
        12208,
        14201,
    )
]


def wage_like(rows: int = 600, seed: int = 20) -> pd.DataFrame:
    """``rows`` records of a Wage-like census table, the same for the same ``seed``."""
    rng = np.random.default_rng(seed)
    days = rng.integers(0, (pd.Timestamp("2009-12-31") - pd.Timestamp("2003-01-01")).days + 1, rows)
    interviewed = pd.Timestamp("2003-01-01") + pd.to_timedelta(days, unit="D")
    return pd.DataFrame(
        {
            "age": rng.integers(18, 81, rows).astype(str),
            "maritl": rng.choice(MARITL, rows, p=[0.22, 0.65, 0.02, 0.07, 0.04]),
            "race": rng.choice(RACE, rows, p=[0.83, 0.09, 0.06, 0.02]),
            "education": rng.choice(EDUCATION, rows, p=[0.09, 0.32, 0.22, 0.23, 0.14]),
            "jobclass": rng.choice(JOBCLASS, rows),
            "region": "2. Middle Atlantic",
            "zip": rng.choice(ZIPS, rows),
            "interviewed": interviewed.strftime("%Y-%m-%d"),
            "wage": np.round(rng.lognormal(4.6, 0.35, rows), 2).astype(str),
        }
    )


def write_wage_like(path: Path) -> Path:
    """Write :func:`wage_like` as CSV (comma-separated, header, no index)."""
    wage_like().to_csv(path, index=False, lineterminator="\n")
    return path
