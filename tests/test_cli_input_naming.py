"""Every command names its table argument the same way in its refusals: "the INPUT argument".

A library error about the ``input`` parameter is shown with the command's spelling for it
(``cli.common.user_errors``); generalize and perturb said "the INPUT argument", suppress,
mask and microaggregate "INPUT". The engine's refusals (a missing path, a database input on
an engine) and the in-memory ones now read alike in every command.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from engines import assert_refused

MISSING = "does not exist: check the path"


def _commands(data_dir: Path, source: str) -> dict[str, list[str]]:
    hierarchy = data_dir / "adult" / "hierarchy_sex.csv"
    return {
        "generalize": ["generalize", source, "--qi", f"sex={hierarchy}", "--other", "insensitive"],
        "suppress": ["suppress", source, "--qi", "sex", "--other", "insensitive"],
        "mask": ["mask", source, "--method", "topbot", "--top", "3", "--columns", "x"],
        "microaggregate": ["microaggregate", source, "--variant", "scalable", "--k", "2"],
        "perturb": ["perturb", source, "--columns", "x,y"],
    }


@pytest.mark.parametrize("command", ["generalize", "suppress", "mask", "microaggregate", "perturb"])
@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_a_missing_input_on_an_engine(
    command: str, engine: str, data_dir: Path, tmp_path: Path
) -> None:
    args = _commands(data_dir, str(tmp_path / "missing.csv"))[command]
    args += ["--engine", engine, "--output", f"{tmp_path / 'out'}/"]
    line = assert_refused(args, tmp_path, MISSING)
    assert line.startswith("Error: the INPUT argument"), line


@pytest.mark.parametrize("command", ["generalize", "suppress"])
def test_a_database_input_on_the_numpy_engine(command: str, data_dir: Path, tmp_path: Path) -> None:
    database = tmp_path / "t.db"
    with sqlite3.connect(database) as db:
        pd.DataFrame({"sex": ["Male", "Female"], "x": [1.0, 2.0]}).to_sql("t", db, index=False)
    args = _commands(data_dir, f"sqlite:///{database}")[command]
    args += ["--table", "t", "--output", f"{tmp_path / 'out'}/"]
    line = assert_refused(args, tmp_path, "is a database: engine 'numpy' reads Parquet")
    assert line.startswith("Error: the INPUT argument 'sqlite:///"), line
