"""A custodian's first hour on a census table shaped like ISLR's Wage (issue 20).

The table is generated here (seeded NumPy, 3,000 rows, Wage's 11 columns and
roughly its marginal frequencies); it is not in the repository. The age
hierarchy comes from the interval builder, the nominal ones are ARX CSV files
the test writes. Under 5-anonymity with distinct 2-diversity of
``health_ins`` and 1 % suppression the optimum releases ``age`` as ``*``;
capping ``age`` with ``--max-level age=2`` gives a verified release that keeps
ten-year age bands.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from anonlab.checker import check_k_anonymity
from anonlab.cli.app import app
from anonlab.hierarchy import SUPPRESSED, interval_hierarchy

QIS = ["year", "age", "maritl", "race", "education"]
runner = CliRunner()

#: the nominal hierarchies, value -> label at level 1 (level 2 is '*')
NOMINAL = {
    "year": {str(y): "2003-2005" if y < 2006 else "2006-2009" for y in range(2003, 2010)},
    "maritl": {
        v: "married" if v == "2. Married" else "not married"
        for v in ["1. Never Married", "2. Married", "3. Widowed", "4. Divorced", "5. Separated"]
    },
    "race": {
        v: "white" if v == "1. White" else "not white"
        for v in ["1. White", "2. Black", "3. Asian", "4. Other"]
    },
    "education": {
        v: "no college" if v[0] in "12" else "college"
        for v in [
            "1. < HS Grad",
            "2. HS Grad",
            "3. Some College",
            "4. College Grad",
            "5. Advanced Degree",
        ]
    },
}


def wage_table(seed: int = 2026, n: int = 3000) -> pd.DataFrame:
    """A table shaped like ISLR's Wage: its columns, value labels and rough frequencies."""
    rng = np.random.default_rng(seed)

    def pick(values: list[str], weights: list[int]) -> np.ndarray:
        return rng.choice(values, size=n, p=np.asarray(weights) / np.sum(weights))

    age = np.clip(np.round(rng.normal(42.4, 11.5, size=n)), 18, 80).astype(int)
    logwage = rng.normal(4.65, 0.35, size=n)
    return pd.DataFrame(
        {
            "year": pick(list(NOMINAL["year"]), [513, 485, 447, 392, 386, 388, 389]),
            "age": age.astype(str),
            "maritl": pick(list(NOMINAL["maritl"]), [648, 2074, 19, 204, 55]),
            "race": pick(list(NOMINAL["race"]), [2480, 293, 190, 37]),
            "education": pick(list(NOMINAL["education"]), [268, 971, 650, 685, 426]),
            "region": "2. Middle Atlantic",
            "jobclass": pick(["1. Industrial", "2. Information"], [1544, 1456]),
            "health": pick(["1. <=Good", "2. >=Very Good"], [858, 2142]),
            "health_ins": pick(["1. Yes", "2. No"], [2083, 917]),
            "logwage": np.round(logwage, 6).astype(str),
            "wage": np.round(np.exp(logwage), 6).astype(str),
        }
    )


def _write_inputs(folder: Path) -> list[str]:
    """The table and its hierarchy files; returns the ``--qi`` flags."""
    frame = wage_table()
    frame.to_csv(folder / "wage.csv", index=False)
    interval_hierarchy(frame["age"].unique(), [5, 10, 20]).write(folder / "h_age.csv")
    for column, groups in NOMINAL.items():
        lines = [f"{value};{group};*" for value, group in groups.items()]
        (folder / f"h_{column}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [flag for q in QIS for flag in ("--qi", f"{q}={folder / f'h_{q}.csv'}")]


def _generalize(folder: Path, qi_flags: list[str], name: str, *extra: str) -> dict[str, Any]:
    result = runner.invoke(
        app,
        [
            "generalize",
            str(folder / "wage.csv"),
            *qi_flags,
            "--sensitive",
            "health_ins",
            "--insensitive",
            "region,jobclass,health,logwage,wage",
            "--k",
            "5",
            "--criterion",
            "distinct-l-diversity:health_ins:l=2",
            "--suppression",
            "1%",
            "--output",
            str(folder / f"{name}.csv"),
            "--report",
            str(folder / f"{name}.json"),
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads((folder / f"{name}.json").read_text())
    return report


def _two_diverse(release: pd.DataFrame) -> bool:
    """Every released class holds both values of health_ins (suppressed rows aside)."""
    kept = release[~(release[QIS] == SUPPRESSED).all(axis=1)]
    return bool((kept.groupby(QIS)["health_ins"].nunique() >= 2).all())


def test_the_table_has_wages_shape() -> None:
    frame = wage_table()
    assert frame.shape == (3000, 11)
    assert list(frame.columns) == [
        "year",
        "age",
        "maritl",
        "race",
        "education",
        "region",
        "jobclass",
        "health",
        "health_ins",
        "logwage",
        "wage",
    ]
    assert frame["age"].astype(int).min() >= 18 and frame["age"].astype(int).max() <= 80
    assert frame["maritl"].value_counts().index[0] == "2. Married"


def test_capping_age_keeps_it_in_a_verified_release(tmp_path: Path) -> None:
    qi_flags = _write_inputs(tmp_path)
    free = _generalize(tmp_path, qi_flags, "free")
    assert free["transformation"] == {"year": 0, "age": 4, "maritl": 1, "race": 2, "education": 0}
    assert set(pd.read_csv(tmp_path / "free.csv", dtype=str)["age"]) == {SUPPRESSED}

    capped = _generalize(
        tmp_path, qi_flags, "capped", "--max-level", "age=2", "--alternatives", "3"
    )
    levels = capped["transformation"]
    assert isinstance(levels, dict) and levels["age"] == 2
    assert capped["verified"] is True
    assert capped["level_bounds"] == {
        "year": [0, 2],
        "age": [0, 2],
        "maritl": [0, 2],
        "race": [0, 2],
        "education": [0, 2],
    }
    listed = capped["alternatives"]
    assert isinstance(listed, list) and len(listed) == 3
    assert all(a["levels"]["age"] <= 2 for a in listed)

    release = pd.read_csv(tmp_path / "capped.csv", dtype=str)
    suppressed = (release[QIS] == SUPPRESSED).all(axis=1)
    assert int(suppressed.sum()) == capped["suppressed_records"] <= 30
    assert check_k_anonymity(release, QIS, 5, 30) == []
    assert _two_diverse(release)
    bands = release.loc[~suppressed, "age"].map(lambda t: re.fullmatch(r"(\d+)-(\d+)", t))
    assert all(m is not None and int(m[2]) - int(m[1]) == 9 and int(m[1]) % 10 == 0 for m in bands)
    ages = wage_table()["age"].astype(int)
    kept = ~suppressed.to_numpy()
    lows = release.loc[kept, "age"].str.split("-").str[0].astype(int).to_numpy()
    assert np.array_equal(lows, (ages.to_numpy()[kept] // 10) * 10)

    checked = runner.invoke(app, ["verify", str(tmp_path / "capped.json")])
    assert checked.exit_code == 0, checked.output
