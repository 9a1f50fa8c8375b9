"""Databases that cannot lose data (issue 21): atomic SQLite outputs, read-only inputs,
``risk`` on database URLs, and no password in a message."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from anonlab import database
from anonlab.cli.app import app
from anonlab.database import write_tables
from anonlab.errors import AnonlabError, ReleaseRiskWarning
from anonlab.io import read_table
from anonlab.runs.risk import run_risk

ROOT = Path(__file__).resolve().parents[1]
ADULT = ROOT / "data" / "adult" / "adult.csv"
runner = CliRunner()


def _old_table(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE t (name TEXT, age INTEGER)")
        conn.executemany("INSERT INTO t VALUES (?, ?)", [("ann", 31), ("bob", 47)])
    conn.close()


def _state(db: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The database's tables (name and CREATE statement) and the rows of ``t``."""
    conn = sqlite3.connect(db)
    try:
        tables = conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()
        rows = conn.execute("SELECT * FROM t ORDER BY rowid").fetchall()
    finally:
        conn.close()
    return tables, rows


def _new_table(rows: int) -> pa.Table:
    return pa.table(
        {
            "name": [f"p{i}" for i in range(rows)],
            "age": list(range(rows)),
            "score": [i / 3 for i in range(rows)],
        }
    )


def test_a_failure_during_the_inserts_leaves_the_previous_table_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "out.db"
    _old_table(db)
    before = _state(db)
    real = database._rows

    def refused_midway(table: pa.Table, names: list[str]) -> Iterator[list[dict[str, Any]]]:
        batches = real(table, names)
        yield next(batches)  # one batch in, then a value the driver cannot bind
        yield [{n: object() for n in names}]

    monkeypatch.setattr(database, "INSERT_ROWS", 10)
    monkeypatch.setattr(database, "_rows", refused_midway)
    with pytest.raises(AnonlabError, match="nothing was changed"):
        write_tables(f"sqlite:///{db}", [("t", _new_table(100))])
    assert _state(db) == before  # rows and schema; no other (staging) table


def test_a_table_is_still_replaced_and_other_tables_kept(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    _old_table(db)
    write_tables(f"sqlite:///{db}", [("u", _new_table(3)), ("t", _new_table(5))])
    tables, rows = _state(db)
    assert [name for name, _ in tables] == ["t", "u"]
    assert rows == [(f"p{i}", i, i / 3) for i in range(5)]


KILLED_WRITER = """
import os, signal, sys
import pandas as pd
import pyarrow as pa
from anonlab import database

real = database._rows
def killed(table, names):
    batches = real(table, names)
    yield next(batches)
    yield next(batches)
    os.kill(os.getpid(), signal.SIGKILL)  # kill -9 in the middle of the inserts
    yield from batches

database._rows = killed
database.INSERT_ROWS = 1000
rows = 50_000
data = pa.table({"name": [f"p{i}" for i in range(rows)], "age": list(range(rows))})
database.write_tables("sqlite:///" + sys.argv[1], [("t", data)])
"""


def test_a_writer_killed_mid_write_leaves_the_previous_table_intact(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    _old_table(db)
    before = _state(db)
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(db)],
        check=False,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert _state(db) == before  # SQLite rolls the interrupted transaction back


def _people(tmp_path: Path) -> Path:
    db = tmp_path / "people.db"
    _old_table(db)
    return db


@pytest.mark.parametrize(
    "query", ["DROP TABLE t", "DELETE FROM t", "INSERT INTO t VALUES ('eve', 20)"]
)
def test_a_query_that_writes_is_refused_and_the_input_unchanged(tmp_path: Path, query: str) -> None:
    db = _people(tmp_path)
    before = _state(db)
    with pytest.raises(AnonlabError, match="read-only") as caught:
        read_table(f"sqlite:///{db}", query=query)
    assert caught.value.parameter == "query"
    assert _state(db) == before
    done = runner.invoke(
        app,
        [
            "generalize",
            f"sqlite:///{db}",
            "--query",
            query,
            "--qi",
            f"age={ADULT.parent / 'hierarchy_age.csv'}",
            "--output",
            str(tmp_path / "o.csv"),
        ],
    )
    assert done.exit_code == 2
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: --query") and "read-only" in lines[0]
    assert _state(db) == before
    assert not (tmp_path / "o.csv").exists()


def test_a_read_query_still_reads(tmp_path: Path) -> None:
    db = _people(tmp_path)
    frame = read_table(f"sqlite:///{db}", query="SELECT name FROM t WHERE age > 40")
    assert frame["name"].tolist() == ["bob"]


def _adult_db(tmp_path: Path) -> tuple[Path, Path]:
    frame = read_table(ADULT, delimiter=";")
    csv = tmp_path / "adult.csv"
    frame.to_csv(csv, index=False)
    db = tmp_path / "adult.db"
    conn = sqlite3.connect(db)
    try:
        frame.to_sql("adult", conn, index=False)
    finally:
        conn.close()
    return db, csv


def test_risk_reads_a_database_table_as_it_reads_the_same_csv(tmp_path: Path) -> None:
    db, csv = _adult_db(tmp_path)
    qi = ["sex", "age", "race"]
    args = [
        "--qi",
        ",".join(qi),
        "--sensitive",
        "salary-class",
        "--other",
        "insensitive",
        "--quiet",
        "--report",
    ]
    from_db = runner.invoke(
        app, ["risk", f"sqlite:///{db}", "--table", "adult", *args, str(tmp_path / "db.json")]
    )
    assert from_db.exit_code == 0, from_db.output
    from_csv = runner.invoke(app, ["risk", str(csv), *args, str(tmp_path / "csv.json")])
    assert from_csv.exit_code == 0, from_csv.output
    sections = [json.loads((tmp_path / f"{n}.json").read_text())["risk"] for n in ("db", "csv")]
    assert sections[0] == sections[1]
    params = json.loads((tmp_path / "db.json").read_text())["parameters"]
    assert params["table"] == f"sqlite:///{db}" and params["table_name"] == "adult"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReleaseRiskWarning)
        api = run_risk(
            f"sqlite:///{db}",
            qi,
            table_name="adult",
            sensitive=["salary-class"],
            other="insensitive",
        )
        query = run_risk(
            f"sqlite:///{db}",
            qi,
            query="SELECT * FROM adult",
            sensitive=["salary-class"],
            other="insensitive",
        )
    assert api.report["risk"] == sections[1]
    assert query.report["risk"] == sections[1]


def test_risk_reads_an_excel_sheet(tmp_path: Path) -> None:
    frame = read_table(ADULT, delimiter=";").head(200)
    book = tmp_path / "adult.xlsx"
    with pd.ExcelWriter(book) as writer:
        frame.head(3).to_excel(writer, sheet_name="first", index=False)
        frame.to_excel(writer, sheet_name="adult", index=False)
    csv = tmp_path / "adult.csv"
    frame.to_csv(csv, index=False)
    args = ["--qi", "sex,age", "--other", "insensitive", "--quiet", "--report"]
    done = runner.invoke(
        app, ["risk", str(book), "--sheet", "adult", *args, str(tmp_path / "x.json")]
    )
    assert done.exit_code == 0, done.output
    assert runner.invoke(app, ["risk", str(csv), *args, str(tmp_path / "c.json")]).exit_code == 0
    sections = [json.loads((tmp_path / f"{n}.json").read_text())["risk"] for n in ("x", "c")]
    assert sections[0] == sections[1]


def test_risk_refuses_a_query_that_writes(tmp_path: Path) -> None:
    db, _ = _adult_db(tmp_path)
    done = runner.invoke(
        app,
        [
            "risk",
            f"sqlite:///{db}",
            "--query",
            "DROP TABLE adult",
            "--qi",
            "sex",
            "--other",
            "insensitive",
        ],
    )
    assert done.exit_code == 2
    assert done.output.startswith("Error: --query") and "read-only" in done.output
    assert read_table(f"sqlite:///{db}", table="adult").shape[0] > 0


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://alice:S3cretPW@127.0.0.1:1/db",  # driver missing, or nothing listening
        "postgresql+pg8000://alice:S3cretPW@127.0.0.1:1/db",
        "postgresql://alice:S3cretPW@127.0.0.1:notaport/db",  # not a URL SQLAlchemy parses
    ],
)
def test_an_unreachable_database_is_one_error_line_without_its_password(url: str) -> None:
    for extra in (["--table", "people"], []):
        done = runner.invoke(app, ["risk", url, *extra, "--qi", "sex,age"])
        assert done.exit_code == 2, done.output
        lines = done.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), done.output
        assert "S3cretPW" not in done.output and "***" in done.output


def test_masked_hides_every_password_form() -> None:
    assert database.masked("postgresql://a:S3cret@h/db") == "postgresql://a:***@h/db"
    assert "S3c@ret" not in database.masked("postgresql://a:S3c@ret@h:x/db")
    assert os.fspath(database.masked("data.csv")) == "data.csv"
