"""A database output on a real PostgreSQL server (issue 21): killed at random points, the
previous table is intact or the new one complete, on both write paths.

Runs only where a PostgreSQL server (``initdb``, ``pg_ctl`` under
``/usr/lib/postgresql/*/bin``) and a driver (psycopg, psycopg2 or pg8000) are
installed; it starts its own throw-away cluster in a temporary folder, on a
Unix socket only (no TCP port), and stops it at the end.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from anonlab import database
from anonlab.errors import AnonlabError
from killing import fork_server, generalize_args, kill_delays, write_people

ROWS = 5_000  # a server write is slower than SQLite: fewer rows, the same window
KILLS = 6
DRIVERS = {
    "psycopg": "postgresql+psycopg",
    "psycopg2": "postgresql+psycopg2",
    "pg8000": "postgresql+pg8000",
}


def _server_bin() -> Path | None:
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return found[-1].parent if found else None


def _driver() -> str | None:
    return next(
        (
            scheme
            for module, scheme in DRIVERS.items()
            if importlib.util.find_spec(module) is not None
        ),
        None,
    )


BIN, SCHEME = _server_bin(), _driver()
pytestmark = pytest.mark.skipif(
    BIN is None or SCHEME is None,
    reason="needs a PostgreSQL server (initdb and pg_ctl under /usr/lib/postgresql/*/bin) "
    f"and a driver ({', '.join(DRIVERS)}); found server={BIN}, driver={SCHEME}",
)


def _as_user() -> dict[str, Any]:
    """PostgreSQL refuses to run as root: run it as ``postgres`` (or ``nobody``) then."""
    if os.geteuid() != 0:
        return {}
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return {"user": entry.pw_uid, "group": entry.pw_gid}
    pytest.skip("running as root and there is no postgres or nobody user to run PostgreSQL")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The URL of a fresh database on a throw-away cluster (trust authentication, socket).

    Its folder is a new one under the system's temporary folder, not pytest's (which is
    the owner's only, where the user running PostgreSQL could not enter).
    """
    assert BIN is not None and SCHEME is not None
    root = Path(tempfile.mkdtemp(prefix="anonlab-pg-"))
    who = _as_user()
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if who:
        for path in (root, sock):
            os.chown(path, who["user"], who["group"])
    run: dict[str, Any] = {"capture_output": True, "timeout": 120, **who}
    subprocess.run(
        [
            str(BIN / "initdb"),
            "-D",
            str(data),
            "-U",
            "anonlab",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        ],
        check=True,
        **run,
    )
    options = f"-c listen_addresses='' -c unix_socket_directories={sock} -c fsync=off"
    subprocess.run(
        [
            str(BIN / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-w",
            "-l",
            str(root / "log"),
            "start",
        ],
        check=True,
        **run,
    )
    try:
        yield f"{SCHEME}://anonlab@/postgres?host={sock}"
    finally:
        subprocess.run(
            [str(BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], check=False, **run
        )
        shutil.rmtree(root, ignore_errors=True)


def _reset(url: str) -> None:
    """Only the previous table ``t`` (two rows) and another table in the database."""
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            names = (
                conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))
                .scalars()
                .all()
            )
            for name in names:
                conn.execute(text(f'DROP TABLE "{name}"'))
            conn.execute(text("CREATE TABLE t (name TEXT, age INTEGER)"))
            conn.execute(text("INSERT INTO t VALUES ('ann', 31), ('bob', 47)"))
            conn.execute(text("CREATE TABLE other (x INTEGER)"))
    finally:
        engine.dispose()


def _state(url: str) -> tuple[list[Any], list[Any], list[Any]]:
    """The public tables (less a killed rename-path writer's ``anonlab_new_...``), the
    columns of ``t`` and its rows."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = (
                conn.execute(
                    text(
                        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename "
                        "NOT LIKE 'anonlab_new_%' ORDER BY 1"
                    )
                )
                .scalars()
                .all()
            )
            columns = conn.execute(
                text(
                    "SELECT column_name, data_type FROM information_schema.columns WHERE "
                    "table_name = 't' ORDER BY ordinal_position"
                )
            ).all()
            rows = conn.execute(text("SELECT * FROM t ORDER BY 1")).all()
    finally:
        engine.dispose()
    return list(tables), [tuple(c) for c in columns], [tuple(r) for r in rows]


class _Writing:
    """Whether another session holds an exclusive lock on a table: a write has begun (the
    ``DROP`` of ``t``, or the ``CREATE`` of a staged table)."""

    def __init__(self, url: str) -> None:
        self.engine = create_engine(url)
        self.conn = self.engine.connect()

    def __call__(self) -> bool:
        held = self.conn.execute(
            text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'relation' AND mode = "
                "'AccessExclusiveLock' AND pid <> pg_backend_pid()"
            )
        ).scalar_one()
        self.conn.rollback()
        return bool(held)

    def close(self) -> None:
        self.conn.close()
        self.engine.dispose()


@pytest.mark.parametrize("path", ["transaction", "rename"])
def test_a_writer_killed_at_random_points_leaves_the_old_table_or_the_whole_new_one(
    tmp_path: Path, server: str, path: str
) -> None:
    source = write_people(tmp_path / "people.csv", ROWS)
    args = generalize_args(source, server)
    writing = _Writing(server)
    try:
        driver = SCHEME.partition("+")[2] if SCHEME else ""
        with fork_server(path, (driver, "sqlalchemy.dialects.postgresql")) as forks:
            _reset(server)
            old = _state(server)
            full = forks.run(args, writing)
            assert full.code == 0 and full.write_seconds is not None
            new = _state(server)
            assert len(new[2]) == ROWS and new[1] != old[1]
            outcomes = []
            for delay in kill_delays(5432, full.write_seconds, KILLS):
                _reset(server)
                run = forks.run(args, writing, kill_after=delay)
                state = _state(server)
                assert state in (old, new), f"killed {delay:.3f} s into the write: {state[:2]}"
                outcomes.append((run.killed, state == old))
    finally:
        writing.close()
    assert sum(killed and kept for killed, kept in outcomes) >= KILLS // 2, outcomes


def test_a_failing_insert_on_postgresql_changes_nothing(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow as pa

    for transactional in (database.TRANSACTIONAL_DDL, frozenset()):
        monkeypatch.setattr(database, "TRANSACTIONAL_DDL", transactional)
        _reset(server)
        old = _state(server)
        bad = pa.table({"n": pa.array([1, 2**63 + 5], pa.uint64())})  # too big for BIGINT
        with pytest.raises(AnonlabError, match="nothing was changed"):
            database.write_tables(server, [("t", bad)])
        assert _state(server) == old
