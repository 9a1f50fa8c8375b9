"""Files and folders named by URL (``s3://``, ``gs://``, ``abfs://``, ``https://``,
``memory://``, ``file://`` and every other fsspec protocol), read and written through fsspec.

A URL is never a local path: it is passed on as it is given, never resolved
against the current folder (:func:`anonlab.paths.is_url` tells one from a path
and from a SQLAlchemy URL). Its filesystem is opened by fsspec with the
run's *storage options* (credentials, endpoint, anonymous access...):
:func:`using_storage_options` sets them for what a run does in this thread,
and the engine's pieces carry them to the workers.

Problems are one-line :class:`~anonlab.errors.AnonlabError`: a protocol whose
package is not installed names the package to install (``s3://`` needs
``s3fs``); a missing file names the URL.

Outputs to a URL are written as local ones are, all or nothing
(:class:`anonlab.outputs.Outputs`): staged in this machine's temporary folder,
uploaded at the end under a hidden temporary name beside the target
(:func:`remote_temp`), and moved onto the target once every output is
uploaded. On an object store (S3, Google Cloud Storage, Azure Blob) a move is
a copy and a delete, not an atomic rename: a reader may see the target being
replaced for as long as the copy takes, and a folder's parts appear one by
one; a folder whose move fails is removed and the earlier release put back.
"""

from __future__ import annotations

import contextvars
import io
import posixpath
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from anonlab.errors import AnonlabError
from anonlab.paths import is_url, url_scheme
from anonlab.tempfiles import system_temp_folder, temp_path_for

__all__ = [
    "StorageOptions",
    "current_storage_options",
    "filesystem",
    "is_url",
    "shown_url",
    "using_storage_options",
]

#: fsspec's keyword arguments for a filesystem (``key``, ``secret``, ``anon``, ``endpoint_url``)
StorageOptions = Mapping[str, Any]

_OPTIONS: contextvars.ContextVar[tuple[tuple[str, Any], ...]] = contextvars.ContextVar(
    "anonlab_storage_options", default=()
)

#: protocol -> the package that gives fsspec that filesystem
PACKAGES = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
    "az": "adlfs",
    "adl": "adlfs",
    "http": "aiohttp",
    "https": "aiohttp",
    "sftp": "paramiko",
    "ssh": "paramiko",
    "smb": "smbprotocol",
    "hf": "huggingface_hub",
    "oci": "ocifs",
    "oss": "ossfs",
    "webdav": "webdav4",
    "dropbox": "dropboxdrivefs",
    "box": "boxfs",
}


def storage_items(options: StorageOptions | None) -> tuple[tuple[str, Any], ...]:
    """``options`` as a sorted tuple of pairs: what a piece carries to a worker."""
    return tuple(sorted((str(k), v) for k, v in (options or {}).items()))


def current_storage_options() -> dict[str, Any]:
    """The storage options set by :func:`using_storage_options` (``{}``: none)."""
    return dict(_OPTIONS.get())


@contextmanager
def using_storage_options(options: StorageOptions | None) -> Iterator[None]:
    """Open every URL's filesystem with ``options`` inside the ``with`` block (this thread)."""
    token = _OPTIONS.set(storage_items(options))
    try:
        yield
    finally:
        _OPTIONS.reset(token)


def shown_url(url: str) -> str:
    """``url`` as messages and reports show it: a password in it (``user:pw@``) as ``***``."""
    import re

    return re.sub(r"(://[^:/@]*:)[^/@]*@", r"\1***@", url)


def filesystem(url: str, options: StorageOptions | None = None) -> tuple[Any, str]:
    """The fsspec filesystem of ``url`` and the path on it.

    ``options`` default to the current ones (:func:`using_storage_options`). A
    protocol fsspec does not know, or whose package is not installed, is one
    line naming the URL and the package to install.
    """
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise AnonlabError(
            f"'{shown_url(url)}' is a URL, read through fsspec, which is not installed: "
            "pip install fsspec"
        ) from None
    given = current_storage_options() if options is None else dict(options)
    scheme = url_scheme(url) or ""
    try:
        fs, path = url_to_fs(url, **given)
    except ImportError as exc:
        package = PACKAGES.get(scheme)
        advice = f"pip install {package}" if package else str(exc).strip().splitlines()[0]
        raise AnonlabError(
            f"'{shown_url(url)}': the {scheme}:// filesystem needs a package that is not "
            f"installed: {advice}"
        ) from None
    except ValueError as exc:
        if "protocol" in str(exc).lower():
            raise AnonlabError(
                f"'{shown_url(url)}': the protocol {scheme}:// is not one fsspec knows: "
                "check the URL"
            ) from None
        raise AnonlabError(f"'{shown_url(url)}': {_line(exc)}: check the storage options") from None
    except TypeError as exc:  # an option the filesystem does not take
        raise AnonlabError(
            f"'{shown_url(url)}': the storage options do not suit the {scheme}:// "
            f"filesystem ({_line(exc)}): check them",
            parameter="storage_options",
        ) from None
    return fs, str(path)


def _line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def remote_temp(url: str) -> str:
    """A fresh hidden temporary URL beside ``url`` (``.NAME.anonlab-HOST-PID-RANDOM.tmp``)."""
    head, _, name = url.rstrip("/").rpartition("/")
    return head + "/" + temp_path_for(Path(name)).name


def kind(url: str, options: StorageOptions | None = None) -> str | None:
    """``"file"``, ``"folder"`` or ``None`` (nothing there) for ``url``."""
    fs, path = filesystem(url, options)
    try:
        if fs.isdir(path):
            return "folder"
        if fs.isfile(path):
            return "file"
    except (OSError, ValueError) as exc:
        raise AnonlabError(f"cannot reach '{shown_url(url)}': {_line(exc)}") from None
    return None


def open_binary(url: str, options: StorageOptions | None = None) -> IO[bytes]:
    """``url`` opened for reading bytes (close it)."""
    fs, path = filesystem(url, options)
    try:
        handle: IO[bytes] = fs.open(path, "rb")
    except FileNotFoundError:
        raise AnonlabError(f"input '{shown_url(url)}' does not exist: check the URL") from None
    except OSError as exc:
        raise AnonlabError(f"cannot read '{shown_url(url)}': {_line(exc)}") from None
    return handle


def open_text(url: str, options: StorageOptions | None = None) -> IO[str]:
    """``url`` opened for reading UTF-8 text (a byte order mark skipped; line ends kept)."""
    return io.TextIOWrapper(open_binary(url, options), encoding="utf-8-sig", newline="")


def size(url: str, options: StorageOptions | None = None) -> int:
    """The size of the file at ``url`` in bytes."""
    fs, path = filesystem(url, options)
    return int(fs.size(path))


def files_under(url: str, options: StorageOptions | None = None) -> list[tuple[str, str]]:
    """The files under folder ``url``, recursively: (path relative to it, the file's URL)."""
    fs, root = filesystem(url, options)
    root = root.rstrip("/")
    found = []
    for path in fs.find(root, withdirs=False):
        relative = posixpath.relpath(str(path), root)
        found.append((relative, str(fs.unstrip_protocol(path))))
    return sorted(found)


def glob(pattern: str, options: StorageOptions | None = None) -> list[str]:
    """The URLs of the files matching ``pattern`` (``*``, ``?``, ``[...]``, ``**``)."""
    fs, path = filesystem(pattern, options)
    found = fs.glob(path, detail=True)  # name -> info: no second request per file
    return [str(fs.unstrip_protocol(p)) for p, info in found.items() if info["type"] == "file"]


@contextmanager
def local_copy(url: str, options: StorageOptions | None = None) -> Iterator[Path]:
    """A private copy of the file or folder at ``url`` in this machine's temporary folder,
    under the URL's own name (so its extension still tells its format); removed after."""
    where = kind(url, options)
    if where is None:
        raise AnonlabError(f"input '{shown_url(url)}' does not exist: check the URL")
    fs, path = filesystem(url, options)
    folder = Path(tempfile.mkdtemp(prefix=".anonlab-url-", dir=system_temp_folder()))
    local = folder / (posixpath.basename(path.rstrip("/")) or "input")
    try:
        try:
            if where == "folder":
                fs.get(path.rstrip("/") + "/", str(local), recursive=True)
                local.mkdir(exist_ok=True)
            else:
                fs.get(path, str(local))
        except FileNotFoundError:
            raise AnonlabError(f"input '{shown_url(url)}' does not exist: check the URL") from None
        except OSError as exc:
            raise AnonlabError(f"cannot read '{shown_url(url)}': {_line(exc)}") from None
        yield local
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def upload(local: Path, url: str, options: StorageOptions | None = None) -> None:
    """Copy the local file or folder ``local`` to ``url`` (a folder's files below it)."""
    fs, path = filesystem(url, options)
    if local.is_dir():
        files = [
            (str(f), path.rstrip("/") + "/" + f.relative_to(local).as_posix())
            for f in sorted(p for p in local.rglob("*") if p.is_file())
        ]
    else:
        files = [(str(local), path)]
    for source, target in files:
        _make_parent(fs, target)
        fs.put_file(source, target)


def _make_parent(fs: Any, path: str) -> None:
    """Make the folder of ``path`` where the filesystem has folders (a local disk); an object
    store, whose keys need none, may refuse or ignore it."""
    try:
        fs.makedirs(posixpath.dirname(path), exist_ok=True)
    except (OSError, NotImplementedError, ValueError):
        return


def move(source: str, target: str, options: StorageOptions | None = None) -> None:
    """Move ``source`` onto ``target`` on one filesystem (a folder with everything in it)."""
    fs, a = filesystem(source, options)
    _, b = filesystem(target, options)
    _make_parent(fs, b.rstrip("/"))
    fs.mv(a, b, recursive=fs.isdir(a))


def remove(url: str, options: StorageOptions | None = None) -> None:
    """Remove the file or folder at ``url``; nothing there is no error."""
    fs, path = filesystem(url, options)
    try:
        if fs.exists(path):
            fs.rm(path, recursive=fs.isdir(path))
    except FileNotFoundError:
        return
