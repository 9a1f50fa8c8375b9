"""A run's outputs, written all together or not at all.

:class:`Outputs` is the one place where a run's files come into being:

1. every output path is checked before any work starts (not an input, not
   another output, not a folder, its folder creatable);
2. each output is written to a hidden temporary file beside its target
   (``.NAME.anonlab-HOST-PID-RANDOM.tmp``, created owner-only before anything
   is written in it) as the run produces it;
3. only when everything is written are the temporary files renamed onto their
   targets, in one go at :meth:`Outputs.commit`; on any error they are removed
   and no target is touched.

Temporary files and staged folders left by a run that was killed (``kill
-9``) carry that run's host name and process id; every run on the same host,
as it starts, removes those in each of its outputs' folders whose process is
gone, or whose process id now belongs to a process started after they were
last written (the id was reused): never another live run's, other hosts'
files, files of other programs, nor anything in the system's temporary folder
(:func:`remove_stale_temps`).

Inputs are never overwritten: an output may not be an input file, lie inside
an input folder (a Parquet dataset), be the file of an input SQLite database,
nor be a table of an input database. An input given as a bare database URL
(its table named elsewhere) protects its whole database unless the input's
table is given too (``input_tables``).

An output may also be a table in a database (:class:`DatabaseTarget`: a
SQLAlchemy URL and a table name). It is checked up front too (the URL parses,
its driver imports, a SQLite file's folder is writable), staged as a Parquet
file in the system's temporary folder (so the run can read it back and
verify it like any other release) and written at :meth:`Outputs.commit`,
before any file is renamed, inside one transaction.

Writing errors of the operating system (a full disk, a folder without write
permission, a read-only file system) become one-line :class:`AnonlabError`
messages naming the output (:func:`write_error`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from anonlab.database import (
    DatabaseTarget,
    check_target,
    is_database_url,
    masked,
    parse_url,
    sqlite_file,
)
from anonlab.errors import AnonlabError
from anonlab.paths import PathLike, is_url, lost_slash, url_scheme
from anonlab.tempfiles import (
    create_private,
    default_mode,
    remove_stale_temps,
    system_temp_folder,
    temp_path_for,
    write_error,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from anonlab.staging import StagedFolder

Target = PathLike | DatabaseTarget


def _database_target(name: str, value: object) -> DatabaseTarget | None:
    """``value`` as a database target; a bare URL (no table named) is refused."""
    if isinstance(value, DatabaseTarget):
        return value
    if is_database_url(value):
        raise AnonlabError(
            f"{name} '{masked(str(value))}' is a database URL: name the table "
            "to write in it as well",
            parameter=name,
        )
    return None


def output_target(value: PathLike | None, table: str | None, name: str = "output") -> Target | None:
    """An output setting as a target: a file path, or a database table for a URL.

    ``table`` names the table to write when ``value`` is a SQLAlchemy URL
    (one-line error when it is missing, or given for a file).
    """
    if value is None:
        return None
    if not is_database_url(value):
        if table is not None:
            raise AnonlabError(
                f"{name}_table '{table}' is given but {name} '{value}' is not a "
                "database URL: leave the table out, or write to a URL such as "
                "sqlite:///out.db",
                parameter=f"{name}_table",
            )
        return value
    if table is None or not table.strip():
        raise AnonlabError(
            f"{name}_table is needed: {name} '{masked(str(value))}' is a "
            "database URL; name the table to write",
            parameter=f"{name}_table",
        )
    return DatabaseTarget(str(value), table)


def _check_not_input(name: str, shown: str, resolved: Path, inputs: Iterable[Path]) -> None:
    """Refuse an output file (``resolved``) that is an input or lies inside an input folder."""
    for item in inputs:
        where = item.resolve()
        if where == resolved:
            raise AnonlabError(
                f"{name} '{shown}' is also an input: choose another path (inputs are never "
                "overwritten)",
                parameter=name,
            )
        if where.is_dir() and resolved.is_relative_to(where):
            raise AnonlabError(
                f"{name} '{shown}' is inside the input folder '{item}': choose a path outside "
                "it (inputs are never overwritten)",
                parameter=name,
            )


def database_key(url: str) -> tuple[str, ...]:
    """What identifies the database of ``url``: a SQLite file's resolved path, else the
    backend, host, port and database name (user, password and driver left out)."""
    try:
        parsed = parse_url(url, "url")
    except AnonlabError:
        return ("url", url.strip())
    path = sqlite_file(parsed)
    if path is not None:
        return ("sqlite", str(path.resolve()))
    return (
        parsed.get_backend_name(),
        (parsed.host or "").lower(),
        str(parsed.port or ""),
        parsed.database or "",
    )


def _database_file(url: str) -> Path | None:
    """The resolved file of a SQLite URL (``None`` for other databases)."""
    try:
        path = sqlite_file(parse_url(url, "url"))
    except AnonlabError:
        return None
    return None if path is None else path.resolve()


def _table_key(target: DatabaseTarget) -> tuple[tuple[str, ...], str]:
    return database_key(target.url), target.table.strip().casefold()


def _file_path(name: str, value: Target) -> Path:
    """Output ``name``'s file: ``value``, which is no database table here."""
    if isinstance(value, DatabaseTarget):
        raise TypeError(f"output {name} is a database table, not a file")
    meant = lost_slash(value)
    if meant is not None:
        raise AnonlabError(
            f"{name} '{value}' reads as a URL that lost a '/': write it as '{meant}' "
            "(a URL is never a local path)",
            parameter=name,
        )
    return Path(value)


def check_output_path(name: str, path: Path, inputs: Iterable[Path]) -> None:
    """Refuse an output that is an input, lies inside an input folder, is a folder, or lies
    under a file."""
    _check_not_input(name, str(path), path.resolve(), inputs)
    if path.is_dir():
        raise AnonlabError(
            f"{name} '{path}' is a folder: give a file name inside it", parameter=name
        )
    _check_writable_parent(name, path)


def _check_writable_parent(name: str, path: Path) -> None:
    """The nearest existing folder above ``path`` must be a folder this process may write."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise AnonlabError(
            f"{name} '{path}': '{folder}' is a file, not a folder: choose another path",
            parameter=name,
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        raise AnonlabError(
            f"{name} '{path}': folder '{folder}' is not writable: choose a writable path",
            parameter=name,
        )


def check_output_folder(name: str, path: Path, inputs: Iterable[Path]) -> None:
    """Refuse a folder output that is an input or lies inside one, is a file, is a folder
    holding anything but Parquet parts, or lies under a file (its parent must be writable)."""
    from anonlab.staging import check_target

    _check_not_input(name, str(path), path.resolve(), inputs)
    for item in inputs:  # an input inside the output folder would be replaced with it
        if item.resolve().is_relative_to(path.resolve()):
            raise AnonlabError(
                f"{name} '{path}' holds the input '{item}': choose another "
                "folder (inputs are never overwritten)",
                parameter=name,
            )
    check_target(path)
    _check_writable_parent(name, path)


class Outputs:
    """The outputs of one run: checked first, staged as they come, renamed together.

    ``targets`` maps each output's parameter name (``output``, ``report``,
    ``html``, ``key``...) to its path, a :class:`DatabaseTarget`, or ``None``
    when not asked for. ``inputs`` are the run's inputs that no output may
    overwrite: files, folders (Parquet datasets), database tables
    (:class:`DatabaseTarget`) or bare database URLs. A bare URL's table is not
    known, so no database output may go to that database unless
    ``input_tables`` names the input's table (then only that table is
    refused). Use it as a context manager: whatever was staged but not
    committed is removed on exit.

    ``folders`` names the outputs that are folders of Parquet parts (a
    partitioned release written by an engine): such a target may not exist
    unless it is an earlier dataset of parts (then it is replaced); it is
    staged as a hidden folder beside it (:meth:`stage_folder`) and renamed
    onto it at :meth:`commit`, before the files.
    """

    def __init__(  # noqa: PLR0915 - one check per kind of target, in one pass
        self,
        targets: Mapping[str, Target | None],
        inputs: Iterable[Target | None] = (),
        *,
        input_tables: Iterable[DatabaseTarget] = (),
        folders: Collection[str] = (),
    ) -> None:
        given = [p for p in inputs if p is not None]
        known = [p for p in given if isinstance(p, DatabaseTarget)] + list(input_tables)
        texts = [os.fspath(p) for p in given if not isinstance(p, DatabaseTarget)]
        urls = [p for p in texts if is_database_url(p)]
        input_urls = [p for p in texts if is_url(p)]
        input_paths = [Path(p) for p in texts if not is_database_url(p) and not is_url(p)]
        database_files = [
            f for f in map(_database_file, [*urls, *(t.url for t in known)]) if f is not None
        ]
        protected = {_table_key(t) for t in known}
        whole = {database_key(u) for u in urls} - {database_key(t.url) for t in known}
        self._targets: dict[str, Path] = {}
        self._tables: dict[str, DatabaseTarget] = {}
        self._urls: dict[str, str] = {}  # outputs named by URL (s3://, memory://...)
        seen: dict[object, str] = {}
        files: dict[Path, str] = {}  # resolved file -> the output that writes it
        for name, value in targets.items():
            if value is None:
                continue
            table = _database_target(name, value)
            where: object
            if table is not None:
                check_target(name, table)
                key = _table_key(table)
                if key in protected:
                    raise AnonlabError(
                        f"{name} {table} is also an input: choose another table "
                        "(inputs are never overwritten)",
                        parameter=name,
                    )
                if key[0] in whole:
                    raise AnonlabError(
                        f"{name} {table} is in the input's database: write the release to "
                        "another database or give the input's table so they can be told apart",
                        parameter=name,
                    )
                file = _database_file(table.url)
                if file is not None:
                    _check_not_input(name, str(file), file, input_paths)
                    other = files.get(file)
                    if other is not None and other not in self._tables:
                        raise AnonlabError(
                            f"{name} {table} is in the file '{file}' given as {other}: give "
                            "each output its own path",
                            parameter=name,
                        )
                    files.setdefault(file, name)
                where = key
                self._tables[name] = table
            elif is_url(value) and not isinstance(value, DatabaseTarget):
                url = os.fspath(value)
                check_output_url(name, url, input_urls, folder=name in folders)
                where = ("url", url.rstrip("/"))
                self._urls[name] = url
            else:
                path = _file_path(name, value)
                check = check_output_folder if name in folders else check_output_path
                check(name, path, [*input_paths, *database_files])
                where = path.resolve()
                other = files.get(where)
                if other is not None and other in self._tables:
                    raise AnonlabError(
                        f"{name} '{value}' is the database file of {other}: give each output "
                        "its own path",
                        parameter=name,
                    )
                files[where] = name
                self._targets[name] = path
            if where in seen:
                raise AnonlabError(
                    f"{name} '{value}' is given as both {seen[where]} and {name}: give each "
                    "output its own path",
                    parameter=name,
                )
            seen[where] = name
        self._staged: dict[str, tuple[Path, bool]] = {}
        self._created: list[Path] = []  # folders this run made, removed again if it fails
        self._folder_names = set(folders) & (set(self._targets) | set(self._urls))
        self._staged_folders: dict[str, StagedFolder] = {}
        self._scratch: dict[str, Path] = {}  # local folders staging the URL outputs
        self._uploaded: dict[str, str] = {}  # URL output -> its uploaded temporary URL
        for parent in {p.parent for p in self._targets.values()}:
            remove_stale_temps(parent)

    def is_folder(self, name: str) -> bool:
        """Whether output ``name`` is a folder of Parquet parts."""
        return name in self._folder_names

    def stage_folder(self, name: str) -> StagedFolder:
        """The hidden folder that folder output ``name`` is written into (an engine writes its
        parts there); renamed onto the target at :meth:`commit`, removed on failure."""
        from anonlab.staging import StagedFolder

        if name not in self._folder_names:
            raise ValueError(f"output '{name}' is not a folder output")
        previous = self._staged_folders.pop(name, None)
        if previous is not None:
            previous.discard()
        if name in self._urls:  # staged here, uploaded at commit
            target = self._scratch_for(name) / _url_name(self._urls[name])
        else:
            target = self._targets[name]
            self._created += _make_folder(target)
        staged = StagedFolder(target)
        self._staged_folders[name] = staged
        return staged

    def staged_folder(self, name: str) -> Path | None:
        """The hidden folder output ``name`` was staged to (``None`` before)."""
        staged = self._staged_folders.get(name)
        return None if staged is None else staged.path

    def _scratch_for(self, name: str) -> Path:
        """The private local folder where URL output ``name`` is staged before its upload."""
        folder = self._scratch.get(name)
        if folder is None:
            try:
                folder = Path(tempfile.mkdtemp(prefix=".anonlab-out-", dir=system_temp_folder()))
            except OSError as exc:
                raise write_error(self._urls[name], exc) from None
            self._scratch[name] = folder
        return folder

    def __contains__(self, name: str) -> bool:
        return name in self._targets or name in self._tables or name in self._urls

    def names(self) -> list[str]:
        """The outputs asked for: the files, the URLs, then the database tables."""
        return [*self._targets, *self._urls, *self._tables]

    def path(self, name: str) -> Path | None:
        """The target path of file output ``name`` (``None`` when not asked for, a URL or a
        database)."""
        return self._targets.get(name)

    def target(self, name: str) -> Path | str | DatabaseTarget | None:
        """Where output ``name`` goes: a file path, a URL, a database table, or ``None``."""
        return self._targets.get(name) or self._urls.get(name) or self._tables.get(name)

    def staged(self, name: str) -> Path | None:
        """The temporary file output ``name`` was staged to (``None`` before it is staged)."""
        entry = self._staged.get(name)
        return None if entry is None else entry[0]

    def stage(self, name: str, write: Callable[[Path], object], *, private: bool = False) -> None:
        """Write output ``name`` now, to a temporary file, with ``write(temporary_path)``.

        ``private`` outputs (secret keys) are readable by their owner only.
        A database output is staged in the system's temporary folder; write it
        with ``write_table(frame, tmp, format_of=outputs.target(name))``.
        Does nothing when ``name`` was not asked for.
        """
        target = self.target(name)
        if target is None:
            return
        if isinstance(target, DatabaseTarget):
            tmp = temp_path_for(system_temp_folder() / _safe_name(target.table))
        elif isinstance(target, str):  # a URL: staged here, uploaded at commit
            tmp = temp_path_for(self._scratch_for(name) / _url_name(target))
        else:
            self._created += _make_folder(target)
            tmp = temp_path_for(target)
        try:
            create_private(tmp)
            write(tmp)
            os.chmod(
                tmp,
                0o600 if private or not isinstance(target, Path) else default_mode(),
            )
        except (OSError, MemoryError) as exc:
            tmp.unlink(missing_ok=True)
            raise write_error(target, exc) from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        previous = self._staged.pop(name, None)
        if previous is not None:
            previous[0].unlink(missing_ok=True)
        self._staged[name] = (tmp, private)

    def commit(self) -> list[Path]:
        """Write every staged output to its target; returns the file targets written.

        Database tables are written first, one transaction per database, so
        a database that refuses leaves every file target untouched; then the
        staged files are renamed onto their targets.
        """
        self._commit_tables()
        self._upload()
        written: list[Path] = []
        for name, staged in list(self._staged_folders.items()):
            if name in self._urls:
                continue
            written.append(staged.commit())
            del self._staged_folders[name]
        for name, (tmp, _private) in list(self._staged.items()):
            if name in self._urls:
                continue
            target = self._targets[name]
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise write_error(target, exc) from None
            written.append(target)
            del self._staged[name]
        self._created.clear()  # the folders now hold the outputs: they stay
        self._move_uploaded()
        return written

    def _upload(self) -> None:
        """Upload every staged URL output to a hidden temporary URL beside its target (the
        slow part, done before any target is touched)."""
        from anonlab import urls

        for name, url in self._urls.items():
            staged = self._staged_folders.get(name)
            if staged is not None:
                staged.drop_partial()
            local = staged.path if staged is not None else self.staged(name)
            if local is None:
                continue
            remote = urls.remote_temp(url)
            self._uploaded[name] = remote
            try:
                urls.upload(local, remote)
            except (OSError, ValueError, NotImplementedError) as exc:
                raise write_error(urls.shown_url(url), exc) from None

    def _move_uploaded(self) -> None:
        """Move each uploaded URL output onto its target; an earlier folder release there is
        moved aside first and removed after."""
        from anonlab import urls

        for name, remote in list(self._uploaded.items()):
            url = self._urls[name]
            old: str | None = None
            try:
                if name in self._folder_names:
                    if urls.kind(url) == "folder":
                        old = urls.remote_temp(url)
                        urls.move(url, old)
                    urls.move(remote, url.rstrip("/"))
                else:
                    urls.move(remote, url)
            except (OSError, ValueError, NotImplementedError) as exc:
                if name in self._folder_names:  # no half folder: the earlier release back
                    with contextlib.suppress(OSError, ValueError, NotImplementedError):
                        urls.remove(url.rstrip("/"))
                        if old is not None:
                            urls.move(old, url.rstrip("/"))
                raise write_error(urls.shown_url(url), exc) from None
            del self._uploaded[name]
            if old is not None:
                urls.remove(old)
        self._remove_scratch()

    def _remove_scratch(self) -> None:
        for name in list(self._urls):
            staged = self._staged_folders.pop(name, None)
            if staged is not None:
                staged.discard()
            entry = self._staged.pop(name, None)
            if entry is not None:
                entry[0].unlink(missing_ok=True)
            folder = self._scratch.pop(name, None)
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    def _commit_tables(self) -> None:
        from anonlab.database import write_tables

        by_url: dict[str, list[tuple[str, str]]] = {}
        for name, table in self._tables.items():
            if name in self._staged:
                by_url.setdefault(table.url, []).append((name, table.table))
        for url, entries in by_url.items():
            tables = [(table, _staged_table(self._staged[name][0])) for name, table in entries]
            write_tables(url, tables, name=entries[0][0])
            for name, _table in entries:
                self._staged.pop(name)[0].unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove every staged temporary file, and the folders made for them; no target is
        touched."""
        if self._uploaded:
            from anonlab import urls

            for remote in self._uploaded.values():
                try:
                    urls.remove(remote)
                except (OSError, ValueError, AnonlabError):
                    continue
            self._uploaded.clear()
        self._remove_scratch()
        for tmp, _private in self._staged.values():
            tmp.unlink(missing_ok=True)
        self._staged.clear()
        for staged in self._staged_folders.values():
            staged.discard()
        self._staged_folders.clear()
        for folder in reversed(self._created):  # deepest first; only if still empty
            try:
                folder.rmdir()
            except OSError:
                continue
        self._created.clear()

    def __enter__(self) -> Outputs:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.discard()


def _url_name(url: str) -> str:
    """The last component of a URL (its file or folder name)."""
    return url.rstrip("/").rpartition("/")[2] or "output"


#: fsspec protocols that read only (fsspec's HTTP filesystem has no writing)
READ_ONLY_PROTOCOLS = frozenset({"http", "https"})


def is_release_url(url: str) -> bool:
    """Whether ``url`` names a folder holding an earlier release: Parquet parts and nothing
    else (what :func:`anonlab.runs.common.is_folder_output` asks of a URL)."""
    from anonlab import urls
    from anonlab.staging import is_part_name

    if url_scheme(url) in READ_ONLY_PROTOCOLS or urls.kind(url) != "folder":
        return False
    names = [relative for relative, _ in urls.files_under(url)]
    return bool(names) and all(is_part_name(n) for n in names)


def check_output_url(name: str, url: str, inputs: Iterable[str], *, folder: bool) -> None:
    """Refuse an output URL that is an input, lies inside an input folder or holds one, whose
    filesystem cannot be opened (its package missing), that is a folder where a file is
    written (or a file where a folder of Parquet parts is), or a folder holding anything but
    Parquet parts; a secret key (``key``) is never written to a URL."""
    from anonlab import urls

    shown = urls.shown_url(url)
    if name == "key":
        raise AnonlabError(
            f"{name} '{shown}' is a URL: a secret key is written to a local file only "
            "(owner-only permissions, which a URL cannot promise): give a local path",
            parameter=name,
        )
    if url_scheme(url) in READ_ONLY_PROTOCOLS:
        raise AnonlabError(
            f"{name} '{shown}': fsspec reads {url_scheme(url)}:// URLs but cannot write them: "
            "write to a store (s3://, gs://, abfs://...) or a local path",
            parameter=name,
        )
    target = url.rstrip("/")
    for item in inputs:
        given = item.rstrip("/")
        if given == target:
            raise AnonlabError(
                f"{name} '{shown}' is also an input: choose another URL (inputs are never "
                "overwritten)",
                parameter=name,
            )
        if target.startswith(given + "/") or given.startswith(target + "/"):
            raise AnonlabError(
                f"{name} '{shown}' lies inside the input '{urls.shown_url(item)}' or holds "
                "it: choose another URL (inputs are never overwritten)",
                parameter=name,
            )
    found = urls.kind(url)
    if not folder and found == "folder":
        raise AnonlabError(
            f"{name} '{shown}' is a folder: give a file name inside it", parameter=name
        )
    if folder and found == "file":
        raise AnonlabError(
            f"{name} '{shown}' is a file, but the engine writes a folder of Parquet parts: "
            "name a folder",
            parameter=name,
        )
    if folder and found == "folder":
        from anonlab.staging import is_part_name

        names = [relative for relative, _ in urls.files_under(url)]
        if not all(is_part_name(n) for n in names):
            raise AnonlabError(
                f"{name} '{shown}' is a folder holding other files than Parquet parts: name "
                "a new folder (it is not emptied for you)",
                parameter=name,
            )


def _make_folder(target: Path) -> list[Path]:
    """Make ``target``'s folder and any missing parents; returns those made, outermost first."""
    missing: list[Path] = []
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(target, exc) from None
    return missing[::-1]


def _safe_name(table: str) -> str:
    """A table name usable in a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", table) or "table"


def _staged_table(path: Path) -> pa.Table:
    """A staged release read back: Parquet with its types, CSV or Excel as text."""
    import pyarrow.parquet as pq

    from anonlab.sources import file_format, read_csv_text, read_excel, sniff_delimiter

    fmt = file_format(path)
    if fmt == "parquet":
        return pq.read_table(path)
    if fmt == "excel":
        return read_excel(path, None, header=True, text=True)
    return read_csv_text(path, sniff_delimiter(path), '"', header=True)
