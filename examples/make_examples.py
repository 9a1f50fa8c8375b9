"""Rebuild the small example inputs the documentation uses: ``python examples/make_examples.py``.

Every file is derived deterministically (a fixed seed, a fixed stride), so a rebuild gives
the same rows:

- ``adult_other.csv``: a second Adult-shaped table: of every 15th record of
  ``data/adult/adult.csv`` from the 8th on, those whose class at the levels of the README's
  release (``examples/adult.toml``: k = 5, 1 % suppression) holds at least 5 of them, so
  ``anonlab apply`` of that release holds on it too (``;``-separated, same columns; its
  values are covered by Adult's hierarchies);
- ``adult_parts/``: the same records as a folder of two Parquet parts (every column text);
- ``people.csv``: 400 synthetic people (``name``, ``age`` 18-79, ``sex`` Male/Female,
  ``income``, ``region``, ``diagnosis``); ``age`` and ``sex`` fall in Adult's
  hierarchies ``data/adult/hierarchy_age.csv`` and ``hierarchy_sex.csv``;
- ``people.db``: a SQLite database with the table ``people`` (the rows of ``people.csv``);
- ``survey.xlsx``: an Excel workbook with the sheets ``wave1`` and ``wave2`` (the first and
  the last 200 people).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from anonlab import Generalizer, GeneralizeSettings

HERE = Path(__file__).resolve().parent
ADULT = HERE.parent / "data" / "adult" / "adult.csv"
QIS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
]
K = 5
SEED = 20
PEOPLE = 400
STRIDE, FIRST = 15, 7
REGIONS = ["North", "South", "East", "West"]
DIAGNOSES = ["asthma", "diabetes", "flu", "hypertension", "migraine", "none"]


def release_levels(adult: pd.DataFrame) -> dict[str, int]:
    """The levels of ``examples/adult.toml``'s optimum on Adult."""
    settings = GeneralizeSettings.load(str(HERE / "adult.toml"))
    g = Generalizer(
        k=settings.k,
        suppression=settings.suppression,
        search=settings.search,
        metric=settings.metric,
    )
    g.fit_transform(adult, {q: hierarchy_path(q) for q in QIS}, sensitive=["salary-class"])
    return dict(g.transformation_)


def hierarchy_path(qi: str) -> str:
    """Adult's hierarchy file of ``qi``."""
    return str(ADULT.parent / f"hierarchy_{qi}.csv")


def generalized_keys(frame: pd.DataFrame, levels: dict[str, int]) -> pd.Series:
    """Each record's QI tuple at ``levels``, by Adult's hierarchy files, as one string."""
    columns = []
    for qi, level in levels.items():
        hierarchy = pd.read_csv(
            hierarchy_path(qi), sep=";", header=None, dtype=str, keep_default_na=False
        )
        columns.append(frame[qi].map(dict(zip(hierarchy[0], hierarchy[level], strict=True))))
    return pd.concat(columns, axis=1).astype(str).agg("|".join, axis=1)


def adult_other() -> pd.DataFrame:
    """Every ``STRIDE``-th Adult record from ``FIRST`` on, in classes of ``K`` or more."""
    adult = pd.read_csv(ADULT, sep=";", dtype=str, keep_default_na=False)
    sample = adult.iloc[FIRST::STRIDE].reset_index(drop=True)
    keys = generalized_keys(sample, release_levels(adult))
    return sample[keys.map(keys.value_counts()) >= K].reset_index(drop=True)


def people() -> pd.DataFrame:
    """``PEOPLE`` synthetic records: a name, two numeric and three nominal columns."""
    rng = np.random.default_rng(SEED)
    age = rng.integers(18, 80, PEOPLE)
    return pd.DataFrame(
        {
            "name": [f"Person {i:04d}" for i in range(1, PEOPLE + 1)],
            "age": age,
            "sex": rng.choice(["Male", "Female"], PEOPLE),
            "income": (18_000 + 600 * (age - 18) + rng.normal(0, 8_000, PEOPLE))
            .round(-2)
            .astype(int),
            "region": rng.choice(REGIONS, PEOPLE),
            "diagnosis": rng.choice(DIAGNOSES, PEOPLE),
        }
    )


def write_parts(frame: pd.DataFrame, folder: Path, parts: int = 2) -> None:
    """``frame`` as ``parts`` Parquet files ``part-0.parquet``... in ``folder``."""
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    for i, piece in enumerate(np.array_split(np.arange(len(frame)), parts)):
        frame.iloc[piece].to_parquet(folder / f"part-{i}.parquet", index=False)


def write_database(frame: pd.DataFrame, path: Path, table: str) -> None:
    """``frame`` as the table ``table`` of a new SQLite database at ``path``."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as connection:
        frame.to_sql(table, connection, index=False)
    connection.close()


def write_workbook(frame: pd.DataFrame, path: Path) -> None:
    """``frame``'s first and second halves as the sheets ``wave1`` and ``wave2``."""
    half = len(frame) // 2
    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        frame.iloc[:half].to_excel(writer, sheet_name="wave1", index=False)
        frame.iloc[half:].to_excel(writer, sheet_name="wave2", index=False)


def main() -> None:
    """Write every example input beside this script."""
    other = adult_other()
    other.to_csv(HERE / "adult_other.csv", sep=";", index=False)
    write_parts(other, HERE / "adult_parts")
    table = people()
    table.to_csv(HERE / "people.csv", index=False)
    write_database(table, HERE / "people.db", "people")
    write_workbook(table, HERE / "survey.xlsx")


if __name__ == "__main__":
    main()
