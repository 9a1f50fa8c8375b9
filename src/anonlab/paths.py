"""Paths as the library takes them and as its messages print them."""

from __future__ import annotations

import os
import re
from pathlib import Path

#: a path as every function of the library takes it: text or any ``os.PathLike``
PathLike = str | os.PathLike[str]


def shown_path(path: PathLike) -> Path:
    """A path as messages print it: normalized (``examples/../out/a.csv`` is
    ``out/a.csv``), relative to the current folder when it lies in it, else absolute."""
    absolute = Path(os.path.normpath(Path(path).absolute()))
    try:
        return absolute.relative_to(Path.cwd())
    except ValueError:
        return absolute


_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*)://")

#: protocols of fsspec's registry (``fsspec.registry.known_implementations``, fsspec 2026.9)
#: told without importing fsspec; any other protocol fsspec knows counts too
#: (:func:`is_url` asks fsspec's registry when a scheme is in neither list)
FSSPEC_PROTOCOLS = frozenset(
    {
        "abfs", "abfss", "adl", "az", "box", "dbfs", "dropbox", "file", "ftp", "gcs", "gdrive",
        "git", "github", "gs", "hdfs", "hf", "http", "https", "local", "memory", "oci", "oss",
        "s3", "s3a", "sftp", "smb", "ssh", "webdav", "webhdfs",
    }
)  # fmt: skip

#: SQLAlchemy's own dialects and common third-party ones: such a URL is a database
SQL_DIALECTS = frozenset(
    {
        "sqlite", "postgresql", "postgres", "mysql", "mariadb", "oracle", "mssql", "duckdb",
        "snowflake", "bigquery", "redshift", "cockroachdb", "trino", "presto", "clickhouse",
        "db2", "ibm_db_sa", "teradatasql", "hana", "sybase", "firebird", "access",
    }
)  # fmt: skip


def url_scheme(value: object) -> str | None:
    """The scheme of ``value`` when it is text of the form ``scheme://...``, lower-cased."""
    if not isinstance(value, str | os.PathLike):
        return None
    match = _SCHEME.match(os.fspath(value))
    return None if match is None else match["scheme"].lower()


def is_url(value: object) -> bool:
    """Whether ``value`` is an fsspec URL (``s3://``, ``gs://``, ``https://``, ``memory://``,
    ``file://``...): a file or folder read and written through fsspec, never a local path.

    A SQLAlchemy URL (``sqlite:///x.db``, ``postgresql+psycopg://...``) is not one. A scheme
    in neither :data:`FSSPEC_PROTOCOLS` nor :data:`SQL_DIALECTS` is an fsspec URL when
    fsspec's registry knows the protocol (fsspec is imported only then).
    """
    scheme = url_scheme(value)
    if scheme is None or "+" in scheme or scheme in SQL_DIALECTS:
        return False
    if scheme in FSSPEC_PROTOCOLS:
        return True
    try:
        from fsspec.registry import known_implementations, registry
    except ImportError:  # pragma: no cover - fsspec comes with dask, a dependency
        return False
    return scheme in known_implementations or scheme in registry


_LOST_SLASH = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):/(?!/)")


def lost_slash(value: object) -> str | None:
    """The URL a path was meant to be when it reads ``s3:/bucket/x``: a URL whose ``//`` a
    path type collapsed (``Path("s3://b/x")`` is ``s3:/b/x``); ``None`` for any other."""
    if not isinstance(value, str | os.PathLike):
        return None
    text = os.fspath(value)
    match = _LOST_SLASH.match(text)
    if match is None or match["scheme"].lower() not in FSSPEC_PROTOCOLS:
        return None
    return f"{match['scheme']}://{text[match.end() :]}"
