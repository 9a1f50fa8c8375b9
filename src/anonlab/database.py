"""Tables in a database, read and written through SQLAlchemy.

A database is named by a SQLAlchemy URL (``dialect+driver://user:password@host/name``;
``sqlite:///path/to/file.db`` for SQLite). Reading takes either a ``table``
name or an SQL ``query``; writing replaces one table inside one transaction,
so a reader of the database sees the old table or the new one, never half of
it (on databases whose DDL is transactional, such as SQLite and PostgreSQL;
SQLite's driver is made to keep its ``DROP``/``CREATE`` in the transaction).
An input is read on a read-only connection: a query that would change the
database is refused.

SQLAlchemy is imported only when a URL is used. Passwords never appear in
messages: URLs are shown with the password masked.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anonlab.errors import AnonlabError

if TYPE_CHECKING:
    import pyarrow as pa
    from sqlalchemy.engine import URL, Connection, Engine

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
INSERT_ROWS = 10_000  # rows sent to the database per INSERT batch
_PACKAGES = {  # driver module -> the package that installs it
    "psycopg": "'psycopg[binary]'", "psycopg2": "psycopg2-binary", "MySQLdb": "mysqlclient",
    "pymysql": "PyMySQL", "pyodbc": "pyodbc", "oracledb": "oracledb", "pymssql": "pymssql",
}


def is_database_url(value: object) -> bool:
    """Whether ``value`` is a string (or path-like) that looks like a SQLAlchemy URL."""
    if isinstance(value, DatabaseTarget):
        return True
    if not isinstance(value, str | os.PathLike):
        return False
    return _URL.match(os.fspath(value)) is not None


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
        return make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise AnonlabError(f"{name} '{_masked_text(url)}' is not a valid database URL "
                           f"({_first_line(exc)}): write it as "
                           "dialect://user:password@host/database, e.g. sqlite:///data.db",
                           parameter=name) from None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


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

    A SQLite file to read (``must_exist``) must be there: SQLite would
    otherwise create an empty database and report a missing table.
    """
    from sqlalchemy import create_engine
    from sqlalchemy.exc import NoSuchModuleError

    parsed = parse_url(url, name)
    shown = parsed.render_as_string(hide_password=True)
    path = sqlite_file(parsed)
    if path is not None and must_exist and not path.is_file():
        what = "is a folder" if path.is_dir() else "does not exist"
        raise AnonlabError(f"{name} '{shown}': the SQLite file '{path}' {what}: check the path "
                           "(sqlite:///relative.db or sqlite:////absolute.db)", parameter=name)
    try:
        return create_engine(parsed)
    except NoSuchModuleError:
        raise AnonlabError(f"{name} '{shown}': SQLAlchemy has no dialect "
                           f"'{parsed.drivername}': check the URL's scheme (e.g. sqlite, "
                           "postgresql, mysql)", parameter=name) from None
    except ImportError as exc:
        module = getattr(exc, "name", None) or _first_line(exc)
        package = _PACKAGES.get(module.split(".")[0], module)
        raise AnonlabError(f"{name} '{shown}': the database driver '{module}' is not "
                           f"installed: install it (pip install {package}) or name another "
                           "driver in the URL (dialect+driver://...)", parameter=name) from None


def check_target(name: str, target: DatabaseTarget) -> None:
    """Check a database output before any work: URL, driver, table name, SQLite folder."""
    if not target.table.strip():
        raise AnonlabError(f"{name} {target}: the table name is empty: name the table to "
                           "write", parameter=name)
    engine = open_engine(target.url, name, must_exist=False)
    engine.dispose()
    path = sqlite_file(engine.url)
    if path is None:
        return
    if path.is_dir():
        raise AnonlabError(f"{name} {target}: '{path}' is a folder: give a database file",
                           parameter=name)
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise AnonlabError(f"{name} {target}: folder '{folder}' is not a writable folder: "
                           "choose another database path", parameter=name)


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
    raise AnonlabError(f"table '{table}' does not exist in '{shown}': it has "
                       f"{listed or 'no tables'}", parameter="table")


def fetch(url: str, *, table: str | None, query: str | None
          ) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The column names and rows of a database ``table`` or ``query`` (exactly one given)."""
    from sqlalchemy import literal_column, select
    from sqlalchemy import table as table_clause
    from sqlalchemy.exc import SQLAlchemyError

    if table is None and query is None:
        raise AnonlabError(f"table (or query) is needed to read the database '{masked(url)}': "
                           "give a table name or an SQL query", parameter="table")
    if table is not None and query is not None:
        raise AnonlabError(f"table and query are both given for the database '{masked(url)}': "
                           "give only one of them", parameter="table")
    engine = open_engine(url, "input", must_exist=True)
    shown = engine.url.render_as_string(hide_password=True)
    _read_only(engine)
    try:
        with engine.connect() as conn, _rolled_back(conn):
            if table is not None:
                schema, name = _find_table(conn, table, shown)
                # SELECT * FROM "name": no reflection of column types (nothing to warn about)
                statement: Any = select(literal_column("*")).select_from(
                    table_clause(name, schema=schema))
                result = conn.execute(statement)
            else:  # the user's SQL as written: ':word' in it is text, not a bind parameter
                result = conn.exec_driver_sql(query or "")
            if not result.returns_rows:
                raise AnonlabError(f"query on '{shown}' returns no rows: give a SELECT "
                                   "statement", parameter="query")
            names = [str(k) for k in result.keys()]  # noqa: SIM118 (a Result, not a dict)
            rows = [tuple(r) for r in result]
    except SQLAlchemyError as exc:
        what = f"table '{table}'" if table is not None else "the query"
        cause = getattr(exc, "orig", None) or exc
        if query is not None and _refused_write(engine, cause):
            raise AnonlabError(f"query on '{shown}' would change the database, but a query is "
                               f"read-only: an input is never changed ({_first_line(cause)}); "
                               "give a single SELECT statement", parameter="query") from None
        raise AnonlabError(f"cannot read {what} from '{shown}': {_first_line(cause)}",
                           parameter="table" if table is not None else "query") from None
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
            rows.append({n: None if isinstance(v, float) and math.isnan(v) else v
                         for n, v in zip(names, values, strict=True)})
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
    """Replace each named table in the database at ``url``, all inside one transaction.

    Every table is dropped if it exists, created with column types that follow
    the Arrow types (text, integer, double, boolean, decimal, date, timestamp)
    and filled; on any error the transaction is rolled back and the database
    is left as it was.
    """
    from sqlalchemy import Column, MetaData, Table, inspect
    from sqlalchemy.exc import SQLAlchemyError

    engine = open_engine(url, name, must_exist=False)
    shown = engine.url.render_as_string(hide_password=True)
    path = sqlite_file(engine.url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    _transactional_ddl(engine)
    try:
        with engine.begin() as conn:
            for table_name, data in tables:
                schema, plain = _split_table(table_name)
                if schema is not None and not inspect(conn).has_schema(schema):
                    schema, plain = None, table_name
                keys = [f"c{i}" for i in range(data.num_columns)]
                columns = [Column(n, _column_type(data.schema.field(i).type), key=k)
                           for i, (n, k) in enumerate(zip(data.column_names, keys,
                                                          strict=True))]
                sql_table = Table(plain, MetaData(), *columns, schema=schema)
                sql_table.drop(conn, checkfirst=True)
                sql_table.create(conn)
                for rows in _rows(data, keys):
                    conn.execute(sql_table.insert(), rows)
    except SQLAlchemyError as exc:
        cause = getattr(exc, "orig", None) or exc
        raise AnonlabError(f"cannot write to '{shown}': {_first_line(cause)}; nothing was "
                           "changed", parameter=name) from None
    finally:
        engine.dispose()
