"""A database output under attack (issue 21): the writer killed at random points, the
database full during the inserts, a rename that fails; the previous table is intact each
time, and the message says what is true."""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from typer.testing import CliRunner

from anonlab import database
from anonlab.cli.app import app
from anonlab.errors import AnonlabError
from killing import fork_server, generalize_args, kill_delays, write_people

ROWS = 20_000  # the write takes about half a second: room for random kills
KILLS = 6
runner = CliRunner()

State = tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]


def _old_table(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute("CREATE TABLE t (name TEXT, age INTEGER)")
            conn.executemany("INSERT INTO t VALUES (?, ?)", [("ann", 31), ("bob", 47)])
            conn.execute("CREATE TABLE other (x INTEGER)")
    finally:
        conn.close()


def _state(db: Path) -> State:
    """The tables (name, CREATE statement less quotes) and all rows of ``t``; opening the
    file rolls a transaction a killed writer left (its hot journal) back, as every reader
    does."""
    conn = sqlite3.connect(db)
    try:
        tables = conn.execute(
            "SELECT name, replace(sql, '\"', '') FROM sqlite_master ORDER BY name"
        ).fetchall()  # a rename quotes the name
        rows = conn.execute("SELECT * FROM t ORDER BY rowid").fetchall()
    finally:
        conn.close()
    return tables, rows


def _without_staged(state: State) -> State:
    """``state`` less the tables a killed rename-path writer leaves (``anonlab_new_...``)."""
    tables, rows = state
    return [t for t in tables if not str(t[0]).startswith("anonlab_new_")], rows


@pytest.mark.parametrize("path", ["transaction", "rename"])
def test_a_writer_killed_at_random_points_leaves_the_old_table_or_the_whole_new_one(
    tmp_path: Path, path: str
) -> None:
    source = write_people(tmp_path / "people.csv", ROWS)
    pristine, db = tmp_path / "pristine.db", tmp_path / "out.db"
    _old_table(pristine)
    old = _state(pristine)
    args = generalize_args(source, f"sqlite:///{db}")
    journal = db.with_name(db.name + "-journal")
    with fork_server(path) as server:
        shutil.copy(pristine, db)
        full = server.run(args, journal.exists)  # uninterrupted: how long the write takes
        assert full.code == 0 and full.write_seconds is not None
        new = _state(db)
        assert len(new[1]) == ROWS and new[0] != old[0]
        outcomes = []
        for delay in kill_delays(21, full.write_seconds, KILLS):
            db.unlink()
            shutil.copy(pristine, db)
            run = server.run(args, journal.exists, kill_after=delay)
            state = _without_staged(_state(db))
            assert state in (old, new), f"killed {delay:.3f} s into the write: {state[0]}"
            outcomes.append((run.killed, state == old))
    assert sum(killed and kept for killed, kept in outcomes) >= KILLS // 2, outcomes


@pytest.fixture
def page_limit() -> Iterator[dict[str, int]]:
    """Every SQLite connection opened while it is set may grow its file to ``pages`` pages
    only (``PRAGMA max_page_count``: SQLITE_FULL, what a full disk gives)."""
    limit: dict[str, int] = {}

    def cap(dbapi_connection: Any, _record: Any) -> None:
        if "pages" in limit and isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.execute(f"PRAGMA max_page_count = {limit['pages']}")

    event.listen(Engine, "connect", cap)
    yield limit
    event.remove(Engine, "connect", cap)


def _one_error_line(result: Any) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return str(lines[0])


def test_a_full_database_during_the_inserts_leaves_the_previous_table(
    tmp_path: Path, page_limit: dict[str, int]
) -> None:
    source = write_people(tmp_path / "people.csv", 5_000)
    db, report = tmp_path / "out.db", tmp_path / "r.json"
    _old_table(db)
    old = _state(db)
    pages = sqlite3.connect(db).execute("PRAGMA page_count").fetchone()[0]
    page_limit["pages"] = pages + 4  # the DROP and CREATE fit, the rows do not
    result = runner.invoke(
        app, [*generalize_args(source, f"sqlite:///{db}"), "--report", str(report)]
    )
    line = _one_error_line(result)
    assert "writing table 't'" in line and "failed (database or disk is full)" in line
    assert "nothing was changed (any previous table 't' is as it was)" in line
    assert _state(db) == old  # the message is true
    assert not report.exists()  # all or nothing: the report waits for the table
    assert sorted(p.name for p in tmp_path.iterdir()) == ["age.csv", "out.db", "people.csv"]


def test_a_full_database_on_the_rename_path_drops_the_new_table(
    tmp_path: Path, page_limit: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(database, "TRANSACTIONAL_DDL", frozenset())
    db = tmp_path / "out.db"
    _old_table(db)
    old = _state(db)
    page_limit["pages"] = sqlite3.connect(db).execute("PRAGMA page_count").fetchone()[0] + 4
    data = pa.table({"name": [f"p{i}" for i in range(5_000)], "age": list(range(5_000))})
    with pytest.raises(
        AnonlabError, match=re.escape("failed (database or disk is full): nothing was changed")
    ):
        database.write_tables(f"sqlite:///{db}", [("t", data)])
    assert _state(db) == old  # and no anonlab_new_ table left


def _unshare_works() -> bool:
    if shutil.which("unshare") is None or sys.platform != "linux":
        return False
    done = subprocess.run(
        [
            "unshare",
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            "mount -t tmpfs -o size=64k tmpfs /mnt",
        ],
        capture_output=True,
        check=False,
        timeout=30,
    )
    return done.returncode == 0


FULL_DISK = r"""
set -u
mount -t tmpfs -o size=160k tmpfs "$FULL"
cp "$WORK/old.db" "$FULL/out.db"
cp "$WORK/old.csv" "$FULL/out.csv"
"$ANONLAB" $DB_ARGS --output "sqlite:///$FULL/out.db" --output-table t 2> "$WORK/db.err"
echo $? > "$WORK/db.rc"
"$ANONLAB" $CSV_ARGS --output "$FULL/out.csv" 2> "$WORK/csv.err"
echo $? > "$WORK/csv.rc"
ls -A "$FULL" > "$WORK/left.txt"
cp "$FULL/out.db" "$FULL/out.csv" "$WORK/after/"
"""


@pytest.mark.skipif(
    not _unshare_works(),
    reason="needs a private tmpfs mount (unshare "
    "--user --map-root-user --mount), which this machine does not allow",
)
def test_a_really_full_disk_leaves_the_previous_table_and_the_previous_csv(tmp_path: Path) -> None:
    source = write_people(tmp_path / "people.csv", 20_000)
    _old_table(tmp_path / "old.db")
    (tmp_path / "old.csv").write_text("age,note\n1,the previous release\n", encoding="utf-8")
    (tmp_path / "full").mkdir()
    (tmp_path / "after").mkdir()
    base = generalize_args(source, "unused")[:-4]
    env = {
        **os.environ,
        "WORK": str(tmp_path),
        "FULL": str(tmp_path / "full"),
        "ANONLAB": str(Path(sys.executable).with_name("anonlab")),
        "DB_ARGS": " ".join(base),
        "CSV_ARGS": " ".join(base),
    }
    subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", FULL_DISK],
        env=env,
        check=True,
        timeout=120,
    )
    for kind in ("db", "csv"):
        assert (tmp_path / f"{kind}.rc").read_text().strip() == "2"
        lines = (tmp_path / f"{kind}.err").read_text().splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), lines
    db_line = (tmp_path / "db.err").read_text()
    assert (
        "failed (database or disk is full): the write was rolled back, nothing was "
        "changed" in db_line
    )
    assert "no space left on device" in (tmp_path / "csv.err").read_text()
    assert _state(tmp_path / "after" / "out.db") == _state(tmp_path / "old.db")
    assert (tmp_path / "after" / "out.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()
    assert (tmp_path / "left.txt").read_text().split() == ["out.csv", "out.db"]


class _FailRename:
    """Make the ``n``-th ``ALTER TABLE ... RENAME`` of any engine fail (``n`` counts from 1),
    and the undo renames too when ``undo`` is false."""

    def __init__(self, n: int, undo: bool = True) -> None:
        self.n, self.undo, self.seen = n, undo, 0

    def __call__(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if " RENAME TO " not in statement:
            return
        self.seen += 1
        if self.seen == self.n or (not self.undo and self.seen > self.n):
            raise OperationalError(statement, {}, Exception("injected: rename refused"))


@pytest.fixture
def rename_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[_FailRename]]:
    """Write as on databases without transactional DDL; a :class:`_FailRename` put in the
    list is called before every statement."""
    monkeypatch.setattr(database, "TRANSACTIONAL_DDL", frozenset())
    hooks: list[_FailRename] = []

    def before(*args: Any) -> None:
        for hook in hooks:
            hook(*args)

    event.listen(Engine, "before_cursor_execute", before)
    yield hooks
    event.remove(Engine, "before_cursor_execute", before)


def _data(rows: int) -> pa.Table:
    return pa.table(
        {
            "name": [f"p{i}" for i in range(rows)],
            "age": list(range(rows)),
            "score": [i / 3 for i in range(rows)],
        }
    )


def test_the_rename_path_replaces_the_table_and_leaves_no_staged_table(
    tmp_path: Path, rename_path: list[_FailRename]
) -> None:
    db = tmp_path / "out.db"
    _old_table(db)
    database.write_tables(f"sqlite:///{db}", [("t", _data(5)), ("u", _data(2))])
    tables, rows = _state(db)
    assert [t[0] for t in tables] == ["other", "t", "u"]
    assert rows == [(f"p{i}", i, i / 3) for i in range(5)]


def test_a_failing_rename_is_undone_and_the_message_says_nothing_changed(
    tmp_path: Path, rename_path: list[_FailRename]
) -> None:
    db = tmp_path / "out.db"
    _old_table(db)
    old = _state(db)
    rename_path.append(_FailRename(2))  # the old table moved aside, the new one refused
    with pytest.raises(
        AnonlabError, match=re.escape("failed (injected: rename refused): nothing was changed")
    ):
        database.write_tables(f"sqlite:///{db}", [("t", _data(5))])
    assert _state(db) == old


def test_a_rename_that_cannot_be_undone_says_where_the_rows_are(
    tmp_path: Path, rename_path: list[_FailRename]
) -> None:
    db = tmp_path / "out.db"
    _old_table(db)
    rename_path.append(_FailRename(2, undo=False))
    with pytest.raises(AnonlabError) as caught:
        database.write_tables(f"sqlite:///{db}", [("t", _data(5))])
    message = str(caught.value)
    found = re.search(
        r"there is no table 't': the previous one is now '(anonlab_old_\w+)' "
        r"and the new rows are in '(anonlab_new_\w+)'",
        message,
    )
    assert found, message
    conn = sqlite3.connect(db)
    try:  # the message is true
        assert conn.execute(f"SELECT * FROM {found[1]}").fetchall() == [("ann", 31), ("bob", 47)]
        assert len(conn.execute(f"SELECT * FROM {found[2]}").fetchall()) == 5
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 't'").fetchone() == (
            0,
        )
    finally:
        conn.close()


def test_a_value_the_database_cannot_hold_is_one_error_and_nothing_changes(tmp_path: Path) -> None:
    db = tmp_path / "out.db"
    _old_table(db)
    old = _state(db)
    huge = pa.table({"n": pa.array([1, 2**64 - 1], pa.uint64())})
    with pytest.raises(AnonlabError, match="nothing was changed"):
        database.write_tables(f"sqlite:///{db}", [("t", huge)])
    assert _state(db) == old
