"""A release written to a database table, re-read, verified and audited from there."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from anonlab.cli.app import app
from anonlab.io import read_table

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "adult.toml"
runner = CliRunner()


def test_generalize_writes_its_release_to_a_sqlite_table(tmp_path: Path) -> None:
    db, csv, rep = tmp_path / "out.db", tmp_path / "r.csv", tmp_path / "r.json"
    args = ["generalize", "--config", str(EXAMPLE), "--quiet"]
    done = runner.invoke(
        app, [*args, "--output", f"sqlite:///{db}", "--output-table", "k5", "--report", str(rep)]
    )
    assert done.exit_code == 0, done.output
    assert (
        runner.invoke(
            app, [*args, "--output", str(csv), "--report", str(tmp_path / "c.json")]
        ).exit_code
        == 0
    )
    from_db = read_table(f"sqlite:///{db}", table="k5")
    assert from_db.equals(read_table(csv))
    audit = runner.invoke(app, ["verify", str(rep)])
    assert audit.exit_code == 0, audit.output
    with sqlite3.connect(db) as conn:  # tamper: one record's age out of its class
        conn.execute("UPDATE k5 SET age = '17' WHERE rowid = 1")
    assert runner.invoke(app, ["verify", str(rep)]).exit_code == 1


def test_a_database_url_without_a_table_is_refused_before_any_work(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    done = runner.invoke(
        app,
        [
            "generalize",
            "--config",
            str(EXAMPLE),
            "--quiet",
            "--output",
            f"sqlite:///{db}",
            "--report",
            str(tmp_path / "r.json"),
        ],
    )
    assert done.exit_code == 2
    assert done.output.startswith("Error: --output")
    assert not db.exists() and not (tmp_path / "r.json").exists()


def test_another_table_of_the_input_database_may_take_the_release(tmp_path: Path) -> None:
    db = tmp_path / "people.db"
    frame = read_table(
        Path(__file__).resolve().parents[1] / "data" / "adult" / "adult.csv", delimiter=";"
    )
    with sqlite3.connect(db) as conn:
        frame.to_sql("adult", conn, index=False)
    base = [
        "generalize",
        "--config",
        str(EXAMPLE),
        "--quiet",
        f"sqlite:///{db}",
        "--table",
        "adult",
        "--report",
        str(tmp_path / "r.json"),
        "--output",
        f"sqlite:///{db}",
        "--output-table",
    ]
    refused = runner.invoke(app, [*base, "adult"])  # the input table itself
    assert refused.exit_code == 2 and "also an input" in refused.output
    done = runner.invoke(app, [*base, "adult_k5"])
    assert done.exit_code == 0, done.output
    assert read_table(f"sqlite:///{db}", table="adult").equals(frame)
