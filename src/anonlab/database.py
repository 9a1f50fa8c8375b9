"""Tables in a database, read and written through SQLAlchemy.

A database is named by a SQLAlchemy URL (``dialect+driver://user:password@host/name``;
``sqlite:///path/to/file.db`` for SQLite). Reading takes either a ``table``
name or an SQL ``query``; writing replaces tables so that a reader of the
database, and a writer killed at any point, sees the old table or the new
one, never half of it:

* on databases whose DDL is transactional (:data:`TRANSACTIONAL_DDL`: SQLite,
  PostgreSQL, SQL Server) the ``DROP``, ``CREATE`` and every ``INSERT`` are
  one transaction (SQLite's driver is made to keep its DDL in it);
* elsewhere (MySQL, MariaDB, Oracle and any other dialect, where DDL commits
  on its own) the rows go into a new table of a unique name first, which
  then takes the old table's name as the last step (MySQL and MariaDB: one
  atomic ``RENAME TABLE``); on a failure before that the new table is
  dropped again.

An input is read on a read-only connection: a query that would change the
database is refused.

SQLAlchemy is imported only when a URL is used. Passwords never appear in
messages: URLs are shown with the password masked.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anonlab.errors import AnonlabError, first_line
from anonlab.paths import is_url

if TYPE_CHECKING:
    import pyarrow as pa
    from sqlalchemy.engine import URL, Connection, Engine

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
INSERT_ROWS = 10_000  # rows sent to the database per INSERT batch
TRANSACTIONAL_DDL = frozenset({"sqlite", "postgresql", "mssql"})  # DROP/CREATE roll back
_SWAP_PREFIX = "anonlab_"  # staged tables: anonlab_new_<hex>_<i>, anonlab_old_<hex>_<i>
_PACKAGES = {  # driver module -> the package that installs it
    "psycopg": "'psycopg[binary]'",
    "psycopg2": "psycopg2-binary",
    "MySQLdb": "mysqlclient",
    "pymysql": "PyMySQL",
    "pyodbc": "pyodbc",
    "oracledb": "oracledb",
    "pymssql": "pymssql",
}


def is_database_url(value: object) -> bool:
    """Whether ``value`` is a string (or path-like) that looks like a SQLAlchemy URL (not a
    file URL such as ``s3://...``: :func:`anonlab.paths.is_url`)."""
    if isinstance(value, DatabaseTarget):
        return True
    if not isinstance(value, str | os.PathLike):
        return False
    text = os.fspath(value)
    return _URL.match(text) is not None and not is_url(text)  # s3://, memory://: files


@dataclass(frozen=True)
class DatabaseTarget:
    """A table in a database, as an output: the SQLAlchemy ``url`` and the ``table`` name."""

    url: str
    table: str

    def __str__(self) -> str:
        return f"{masked(self.url)} table '{self.table}'"


def masked(url: str) -> str:
    """``url`` with its password replaced by ``***`` (messages, reports); a path as it is."""
    if "://" not in url:
        return url
    if is_url(url):  # a file URL (s3://, https://): no SQLAlchemy URL to parse
        return _masked_text(url)
    try:
        return parse_url(url, "url").render_as_string(hide_password=True)
    except AnonlabError:
        return _masked_text(url)


def _masked_text(url: str) -> str:
    """``url`` with all from ``user:`` to the last ``@`` as ``***`` (not parsed)."""
    return re.sub(r"(://[^:/@]*:).*@", r"\1***@", url)


def parse_url(url: str, name: str) -> URL:
    """The parsed SQLAlchemy URL, or a one-line error naming the parameter ``name``."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise AnonlabError(
            f"{name} '{_masked_text(url)}' is not a valid database URL "
            f"({first_line(exc)}): write it as "
            "dialect://user:password@host/database, e.g. sqlite:///data.db",
            parameter=name,
        ) from None
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise AnonlabError(
            f"{name} '{parsed.render_as_string(hide_password=True)}' is not a "
            f"valid database URL: port {parsed.port} is not a port number (1 "
            "to 65535)",
            parameter=name,
        )
    return parsed


def _cause(exc: BaseException, url: URL) -> str:
    """The first line of the driver's own error behind ``exc``, the password masked."""
    text = first_line(getattr(exc, "orig", None) or exc).split(" (Background on ")[0]
    if url.password:
        text = text.replace(str(url.password), "***")
    return text


def sqlite_file(url: URL) -> Path | None:
    """The file of a SQLite URL (``None`` for other databases and in-memory SQLite)."""
    if url.get_backend_name() != "sqlite":
        return None
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return Path(database)


def open_engine(url: str, name: str, *, must_exist: bool) -> Engine:
    """An engine for ``url`` (the driver imported, nothing connected yet).

    A URL the dialect refuses (a SQLite URL with a user, password or host;
    an argument the driver does not take) is a one-line error, as are an
    unknown dialect and a driver that is not installed. A SQLite file to read
    (``must_exist``) must be there: SQLite would otherwise create an empty
    database and report a missing table.
    """
    parsed = parse_url(url, name)
    shown = parsed.render_as_string(hide_password=True)
    engine = _create_engine(parsed, name, shown)
    path = sqlite_file(parsed)
    if path is not None and must_exist and not path.is_file():
        engine.dispose()
        what = "is a folder" if path.is_dir() else "does not exist"
        raise AnonlabError(
            f"{name} '{shown}': the SQLite file '{path}' {what}: check the path "
            "(sqlite:///relative.db or sqlite:////absolute.db)",
            parameter=name,
        )
    return engine


def _create_engine(parsed: URL, name: str, shown: str) -> Engine:
    """``create_engine(parsed)``, every refusal (and SQLAlchemy warning) as one line."""
    from sqlalchemy import create_engine
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SAWarning

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SAWarning)
            return create_engine(parsed)
    except NoSuchModuleError:
        raise AnonlabError(
            f"{name} '{shown}': SQLAlchemy has no dialect "
            f"'{parsed.drivername}': check the URL's scheme (e.g. sqlite, "
            "postgresql, mysql)",
            parameter=name,
        ) from None
    except ImportError as exc:
        module = getattr(exc, "name", None) or first_line(exc)
        package = _PACKAGES.get(module.split(".")[0], module)
        raise AnonlabError(
            f"{name} '{shown}': the database driver '{module}' is not "
            f"installed: install it (pip install {package}) or name another "
            "driver in the URL (dialect+driver://...)",
            parameter=name,
        ) from None
    except (ArgumentError, SAWarning, TypeError, ValueError) as exc:
        if parsed.get_backend_name() == "sqlite" and (
            parsed.username or parsed.password or parsed.host or parsed.port
        ):
            reason = "a SQLite URL names a file only, with no user, password, host or port"
        else:
            reason = _cause(exc, parsed)
        raise AnonlabError(
            f"{name} '{shown}' is not a URL the {parsed.drivername} driver "
            f"accepts ({reason}): write it as sqlite:///relative.db, "
            "sqlite:////absolute.db or dialect://user:password@host/database",
            parameter=name,
        ) from None


def check_target(name: str, target: DatabaseTarget) -> None:
    """Check a database output before any work: URL, driver, table name, SQLite folder."""
    if not target.table.strip():
        raise AnonlabError(
            f"{name} {target}: the table name is empty: name the table to write", parameter=name
        )
    engine = open_engine(target.url, name, must_exist=False)
    engine.dispose()
    path = sqlite_file(engine.url)
    if path is None:
        if engine.dialect.name == "sqlite" and engine.url.database in (None, "", ":memory:"):
            raise AnonlabError(
                f"{name} {target} is an in-memory SQLite database, gone when "
                "the run ends: name a file (sqlite:///out.db)",
                parameter=name,
            )
        return
    if path.is_dir():
        raise AnonlabError(
            f"{name} {target}: '{path}' is a folder: give a database file", parameter=name
        )
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise AnonlabError(
            f"{name} {target}: folder '{folder}' is not a writable folder: "
            "choose another database path",
            parameter=name,
        )


def _split_table(table: str) -> tuple[str | None, str]:
    """``schema.table`` as (schema, table); a plain name has no schema."""
    if "." in table:
        schema, _, name = table.partition(".")
        return schema, name
    return None, table


def _find_table(conn: Connection, table: str, shown: str) -> tuple[str | None, str]:
    """The (schema, name) of an existing table, or a one-line error listing the tables."""
    from sqlalchemy import inspect

    inspector = inspect(conn)
    if inspector.has_table(table):
        return None, table
    schema, name = _split_table(table)
    if schema is not None and inspector.has_table(name, schema=schema):
        return schema, name
    names = inspector.get_table_names()
    listed = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
    raise AnonlabError(
        f"table '{table}' does not exist in '{shown}': it has {listed or 'no tables'}",
        parameter="table",
    )


def fetch(
    url: str, *, table: str | None, query: str | None
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The column names and rows of a database ``table`` or ``query`` (exactly one given)."""
    from sqlalchemy import literal_column, select
    from sqlalchemy import table as table_clause
    from sqlalchemy.exc import SQLAlchemyError

    if table is None and query is None:
        raise AnonlabError(
            f"table (or query) is needed to read the database '{masked(url)}': "
            "give a table name or an SQL query",
            parameter="table",
        )
    if table is not None and query is not None:
        raise AnonlabError(
            f"table and query are both given for the database '{masked(url)}': "
            "give only one of them",
            parameter="table",
        )
    engine = open_engine(url, "input", must_exist=True)
    shown = engine.url.render_as_string(hide_password=True)
    _read_only(engine)
    try:
        with engine.connect() as conn, _rolled_back(conn):
            if table is not None:
                schema, name = _find_table(conn, table, shown)
                # SELECT * FROM "name": no reflection of column types (nothing to warn about)
                statement: Any = select(literal_column("*")).select_from(
                    table_clause(name, schema=schema)
                )
                result = conn.execute(statement)
            else:  # the user's SQL as written: ':word' in it is text, not a bind parameter
                result = conn.exec_driver_sql(query or "")
            if not result.returns_rows:
                raise AnonlabError(
                    f"query on '{shown}' returns no rows: give a SELECT statement",
                    parameter="query",
                )
            names = [str(k) for k in result.keys()]  # noqa: SIM118 (a Result, not a dict)
            rows = [tuple(r) for r in result]
    except SQLAlchemyError as exc:
        if query is not None and _refused_write(engine, getattr(exc, "orig", None) or exc):
            raise AnonlabError(
                f"query on '{shown}' would change the database, but a query is "
                f"read-only: an input is never changed ({_cause(exc, engine.url)}"
                "); give a single SELECT statement",
                parameter="query",
            ) from None
        if table is not None:
            raise AnonlabError(
                f"table '{table}' cannot be read from '{shown}': {_cause(exc, engine.url)}",
                parameter="table",
            ) from None
        raise AnonlabError(
            f"query cannot be run on '{shown}': {_cause(exc, engine.url)}; give "
            "a single SELECT statement",
            parameter="query",
        ) from None
    finally:
        engine.dispose()
    return names, rows


def _read_only(engine: Engine) -> None:
    """Make every connection of ``engine`` read-only where the database allows it.

    SQLite: ``PRAGMA query_only`` on each new connection (no statement can
    change the file, a second statement in the query is refused by the driver).
    Elsewhere each read runs in a transaction that is rolled back
    (:func:`_rolled_back`), declared ``READ ONLY`` where the database has it.
    """
    from sqlalchemy import event

    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _query_only(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("PRAGMA query_only = ON")
            finally:
                cursor.close()


@contextlib.contextmanager
def _rolled_back(conn: Connection) -> Iterator[None]:
    """A transaction on ``conn`` that is always rolled back (``READ ONLY`` where supported)."""
    transaction = conn.begin()
    try:
        if conn.dialect.name in ("postgresql", "mysql", "mariadb", "oracle"):
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        yield
    finally:
        if transaction.is_active:
            transaction.rollback()


def _refused_write(engine: Engine, cause: BaseException) -> bool:
    """Whether ``cause`` is the database refusing a write on a read-only connection."""
    text = str(cause).lower()
    if engine.dialect.name == "sqlite":
        return "readonly database" in text or "read-only" in text
    return "read-only" in text or "read only" in text


def _column_type(kind: pa.DataType) -> Any:
    """The SQLAlchemy column type that holds an Arrow column of type ``kind`` (else text)."""
    import pyarrow as pa
    from sqlalchemy import types as sqltypes

    choices: list[tuple[Callable[[pa.DataType], bool], Callable[[], Any]]] = [
        (pa.types.is_boolean, sqltypes.Boolean),
        (pa.types.is_integer, sqltypes.BigInteger),
        (pa.types.is_floating, lambda: sqltypes.Float(precision=53)),
        (pa.types.is_decimal, lambda: sqltypes.Numeric(kind.precision, kind.scale)),
        (pa.types.is_timestamp, lambda: sqltypes.DateTime(timezone=kind.tz is not None)),
        (pa.types.is_date, sqltypes.Date),
    ]
    return next((make() for test, make in choices if test(kind)), sqltypes.Text())


def _rows(table: pa.Table, names: Sequence[str]) -> Iterator[list[dict[str, Any]]]:
    """The rows of ``table`` as lists of dicts, :data:`INSERT_ROWS` at a time (NaN -> NULL)."""
    import math

    for batch in table.to_batches(max_chunksize=INSERT_ROWS):
        columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
        rows = []
        for values in zip(*columns, strict=True):
            rows.append(
                {
                    n: None if isinstance(v, float) and math.isnan(v) else v
                    for n, v in zip(names, values, strict=True)
                }
            )
        yield rows


def _transactional_ddl(engine: Engine) -> None:
    """On SQLite, put ``DROP``/``CREATE`` inside the transaction ``engine.begin()`` opens.

    Python's sqlite3 driver (before 3.12's ``autocommit=False``) commits on its
    own before DDL, so a write killed or failing after the ``DROP`` would leave
    the old table gone. SQLAlchemy's documented remedy for pysqlite: the
    driver's own transaction handling off (``isolation_level = None``) and a
    ``BEGIN`` emitted when SQLAlchemy begins. Other databases are left as they
    are (PostgreSQL's DDL is transactional already).
    """
    from sqlalchemy import event

    if engine.dialect.name != "sqlite":
        return

    @event.listens_for(engine, "connect")
    def _no_driver_transactions(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def write_tables(url: str, tables: Sequence[tuple[str, pa.Table]], name: str = "output") -> None:
    """Replace each named table in the database at ``url``, all or nothing.

    Every table is created with column types that follow the Arrow types
    (text, integer, double, boolean, decimal, date, timestamp) and filled.
    Where DDL is transactional (:data:`TRANSACTIONAL_DDL`) the old tables
    are dropped and the new ones made inside one transaction; elsewhere each
    new table is filled under a unique name and renamed onto the old one at
    the end (:func:`_replace_by_rename`). On any error the database is left
    as it was, and the one-line error says so (or says exactly what is not).
    """
    engine = open_engine(url, name, must_exist=False)
    path = sqlite_file(engine.url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    _transactional_ddl(engine)
    try:
        if engine.dialect.name in TRANSACTIONAL_DDL:
            _replace_in_transaction(engine, tables, name)
        else:
            _replace_by_rename(engine, tables, name)
    finally:
        engine.dispose()


def _write_errors() -> tuple[type[BaseException], ...]:
    """What a failing write raises: the database's errors, and a value it cannot hold."""
    from sqlalchemy.exc import SQLAlchemyError

    return SQLAlchemyError, OverflowError


def _listed(tables: Sequence[tuple[str, pa.Table]]) -> str:
    """``table 'a'`` or ``tables 'a', 'b'``."""
    names = ", ".join(f"'{t}'" for t, _ in tables)
    return f"table{'s' if len(tables) > 1 else ''} {names}"


def _failed(
    engine: Engine,
    tables: Sequence[tuple[str, pa.Table]],
    exc: BaseException,
    outcome: str,
    name: str,
) -> AnonlabError:
    """The one-line error of a failed write: what failed, why, and what the database holds."""
    shown = engine.url.render_as_string(hide_password=True)
    return AnonlabError(
        f"{name}: writing {_listed(tables)} to '{shown}' failed "
        f"({_cause(exc, engine.url)}): {outcome}",
        parameter=name,
    )


def _target(conn: Connection, table_name: str) -> tuple[str | None, str]:
    """The (schema, name) a table is written as: ``schema.table`` where that schema exists."""
    from sqlalchemy import inspect

    schema, plain = _split_table(table_name)
    if schema is not None and not inspect(conn).has_schema(schema):
        return None, table_name
    return schema, plain


def _sql_table(name: str, schema: str | None, data: pa.Table) -> Any:
    """The SQLAlchemy ``Table`` that holds ``data`` (column keys ``c0``, ``c1``...)."""
    from sqlalchemy import Column, MetaData, Table

    columns = [
        Column(n, _column_type(data.schema.field(i).type), key=f"c{i}")
        for i, n in enumerate(data.column_names)
    ]
    return Table(name, MetaData(), *columns, schema=schema)


def _insert(conn: Connection, sql_table: Any, data: pa.Table) -> None:
    """Insert every row of ``data`` into ``sql_table``, :data:`INSERT_ROWS` at a time."""
    keys = [f"c{i}" for i in range(data.num_columns)]
    for rows in _rows(data, keys):
        conn.execute(sql_table.insert(), rows)


def _replace_in_transaction(
    engine: Engine, tables: Sequence[tuple[str, pa.Table]], name: str
) -> None:
    """``DROP``, ``CREATE`` and ``INSERT`` every table in one transaction (rolled back on
    any error, and by the database itself when the writer dies)."""
    try:
        with engine.begin() as conn:
            for table_name, data in tables:
                schema, plain = _target(conn, table_name)
                sql_table = _sql_table(plain, schema, data)
                sql_table.drop(conn, checkfirst=True)
                sql_table.create(conn)
                _insert(conn, sql_table, data)
    except _write_errors() as exc:
        raise _failed(
            engine,
            tables,
            exc,
            "the write was rolled back, nothing was changed "
            f"(any previous {_listed(tables)} is as it was)",
            name,
        ) from None


@dataclass
class _Swap:
    """One table written by renaming: the target, its staged copy, where the old one goes."""

    schema: str | None
    table: str
    new: str
    old: str
    moved_old: bool = False  # the old table now has the name ``old``
    placed: bool = False  # the staged copy now has the name ``table``


def _replace_by_rename(engine: Engine, tables: Sequence[tuple[str, pa.Table]], name: str) -> None:
    """Fill each table under a new unique name, then rename it onto the old table.

    For databases whose DDL commits by itself (MySQL, MariaDB, Oracle...): the
    old table is untouched until every new table is complete; the renames
    come last (one atomic ``RENAME TABLE`` on MySQL and MariaDB, else
    ``ALTER TABLE ... RENAME TO`` per table, undone on a failure). A failure
    before the renames drops the staged tables again.
    """
    token = secrets.token_hex(4)
    swaps: list[_Swap] = []
    try:
        for i, (table_name, data) in enumerate(tables):
            with engine.begin() as conn:
                schema, plain = _target(conn, table_name)
                swap = _Swap(
                    schema,
                    plain,
                    f"{_SWAP_PREFIX}new_{token}_{i}",
                    f"{_SWAP_PREFIX}old_{token}_{i}",
                )
                swaps.append(swap)
                sql_table = _sql_table(swap.new, schema, data)
                sql_table.create(conn)
                _insert(conn, sql_table, data)
    except _write_errors() as exc:
        left = _drop_quietly(engine, [(s.schema, s.new) for s in swaps])
        raise _failed(engine, tables, exc, _untouched(tables, left), name) from None
    try:
        _rename_all(engine, swaps)
    except _write_errors() as exc:
        raise _failed(
            engine, tables, exc, _after_rename_failure(engine, tables, swaps), name
        ) from None
    _drop_quietly(engine, [(s.schema, s.old) for s in swaps if s.moved_old])


def _untouched(tables: Sequence[tuple[str, pa.Table]], left: list[str]) -> str:
    """The outcome of a failure before any rename: the old tables were never touched."""
    if not left:
        return f"nothing was changed (any previous {_listed(tables)} is as it was)"
    return (
        f"any previous {_listed(tables)} is as it was, but the partly filled new table "
        f"{', '.join(left)} could not be dropped: drop it by hand"
    )


def _qualified(engine: Engine, schema: str | None, table: str) -> str:
    """``table`` (with its schema) quoted as the database needs."""
    preparer = engine.dialect.identifier_preparer
    quoted = preparer.quote(table)
    return quoted if schema is None else f"{preparer.quote_schema(schema)}.{quoted}"


def _rename_all(engine: Engine, swaps: list[_Swap]) -> None:
    """Give every staged table its target's name, the old tables moved aside first."""
    from sqlalchemy import inspect

    with engine.connect() as conn:
        inspector = inspect(conn)
        existing = [s for s in swaps if inspector.has_table(s.table, schema=s.schema)]
    if engine.dialect.name in ("mysql", "mariadb"):  # one statement, atomic
        pairs = [
            (_qualified(engine, s.schema, s.table), _qualified(engine, s.schema, s.old))
            for s in existing
        ]
        pairs += [
            (_qualified(engine, s.schema, s.new), _qualified(engine, s.schema, s.table))
            for s in swaps
        ]
        with engine.begin() as conn:
            conn.exec_driver_sql("RENAME TABLE " + ", ".join(f"{a} TO {b}" for a, b in pairs))
        for s in swaps:
            s.moved_old, s.placed = s in existing, True
        return
    for s in swaps:  # each rename committed on its own: the flags say what is done
        if s in existing:
            _rename(engine, s.schema, s.table, s.old)
            s.moved_old = True
        _rename(engine, s.schema, s.new, s.table)
        s.placed = True


def _rename(engine: Engine, schema: str | None, table: str, to: str) -> None:
    """``ALTER TABLE schema.table RENAME TO to``, committed."""
    to_name = engine.dialect.identifier_preparer.quote(to)
    with engine.begin() as conn:
        conn.exec_driver_sql(f"ALTER TABLE {_qualified(engine, schema, table)} RENAME TO {to_name}")


def _after_rename_failure(
    engine: Engine, tables: Sequence[tuple[str, pa.Table]], swaps: list[_Swap]
) -> str:
    """Undo the renames done so far and drop the staged tables; the outcome, as it is."""
    broken: list[_Swap] = []
    for s in reversed(swaps):
        try:
            if s.placed:
                _rename(engine, s.schema, s.table, s.new)
                s.placed = False
            if s.moved_old:
                _rename(engine, s.schema, s.old, s.table)
                s.moved_old = False
        except _write_errors():
            broken.append(s)
    if broken:
        return "the renames could not all be undone: " + "; ".join(map(_where, broken))
    left = _drop_quietly(engine, [(s.schema, s.new) for s in swaps])
    return _untouched(tables, left)


def _where(s: _Swap) -> str:
    """Where the old and the new rows of one half-renamed table are."""
    if s.placed:
        return f"table '{s.table}' holds the new rows" + (
            f" and the previous one is now '{s.old}'" if s.moved_old else ""
        )
    return (
        f"there is no table '{s.table}': the previous one is now '{s.old}' and the new "
        f"rows are in '{s.new}'"
    )


def _drop_quietly(engine: Engine, names: Sequence[tuple[str | None, str]]) -> list[str]:
    """Drop the tables ``names`` where they exist; returns those that could not be dropped."""
    from sqlalchemy import MetaData, Table

    left = []
    for schema, table in names:
        try:
            with engine.begin() as conn:
                Table(table, MetaData(), schema=schema).drop(conn, checkfirst=True)
        except _write_errors():
            left.append(f"'{table}'")
    return left
