"""Temporary files beside an output, the stale ones a killed run left, and write errors.

Every output is first written to a hidden temporary file beside its target
(``.NAME.anonlab-HOST-PID-RANDOM.tmp``, created owner-only before anything is
written in it: :func:`temp_path_for`, :func:`create_private`). A run that was
killed leaves such files behind; :func:`remove_stale_temps` removes those of
this host whose process is gone or whose process id was given again to a
process started after they were written. :func:`write_error` turns the
operating system's errors while writing into one-line messages.

This module sits below :mod:`anonlab.outputs`, :mod:`anonlab.io` and
:mod:`anonlab.staging`, which all name and clean temporary paths this way.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import socket
import stat
import tempfile
from pathlib import Path

from anonlab.errors import AnonlabError


def system_temp_folder() -> Path:
    """The system's temporary folder, where database outputs are staged (never cleaned here)."""
    return Path(tempfile.gettempdir())


def _host() -> str:
    """This host's name as it appears in temporary file names (letters, digits, ``-``)."""
    name = re.sub(r"[^A-Za-z0-9-]+", "-", socket.gethostname()).strip("-")[:63]
    return name or "host"


_HOST = _host()
_TEMP = re.compile(rf"^\..+\.anonlab-{re.escape(_HOST)}-(?P<pid>\d+)-[0-9a-f]+\.tmp$")


def temp_path_for(target: Path) -> Path:
    """A fresh hidden temporary path beside ``target`` that names this host and process."""
    tag = f"{_HOST}-{os.getpid()}-{secrets.token_hex(4)}"
    return target.with_name(f".{target.name}.anonlab-{tag}.tmp")


def create_private(tmp: Path) -> None:
    """Create ``tmp`` empty and owner-only (0o600), failing if it exists.

    Called before a writer fills the temporary file, so a secret is never
    readable by others while it is being written.
    """
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # exists, owned by someone else (or no process id we can ask about)
    return True


#: seconds of doubt between a file's time and a process's start (the boot time is whole
#: seconds): within them a file counts as the process's own
START_SLACK = 2.0


def process_started(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), from ``/proc`` (Linux);
    ``None`` where that is not known."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
        ticks = int(fields[fields.rindex(")") + 2 :].split()[19])  # field 22, starttime
        boot = next(
            int(line.split()[1])
            for line in Path("/proc/stat").read_text(encoding="ascii").splitlines()
            if line.startswith("btime ")
        )
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _writer_gone(pid: int, written: float) -> bool:
    """Whether the process that made a temporary entry (last changed at ``written``) has
    ended: no process has its id, or the one that has it started after the entry last
    changed (a change time no one can set back, and one a rename renews)."""
    if not _process_alive(pid):
        return True
    started = process_started(pid)
    return started is not None and written < started - START_SLACK


def remove_stale_temps(folder: Path) -> list[Path]:
    """Remove the temporary files and staged folders in ``folder`` left by runs that no
    longer exist; returns them.

    Only this host's anonlab temporary entries (``.NAME.anonlab-HOST-PID-RANDOM.tmp``)
    whose writer is gone are removed (:func:`_writer_gone`); symbolic links are
    never followed and the system's temporary folder is never swept.
    """
    removed: list[Path] = []
    try:
        if folder.resolve() == system_temp_folder().resolve():
            return removed
        entries = list(folder.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP.match(entry.name)
        if match is None:
            continue
        try:
            info = entry.lstat()
            if not _writer_gone(int(match["pid"]), max(info.st_mtime, info.st_ctime)):
                continue
            if stat.S_ISREG(info.st_mode):
                entry.unlink()
            elif stat.S_ISDIR(info.st_mode):
                shutil.rmtree(entry)
            else:
                continue
            removed.append(entry)
        except OSError:
            continue
    return removed


_REASONS = {
    errno.ENOSPC: "no space left on device: free some space or write to another disk",
    errno.EDQUOT: "disk quota exceeded: free some space or write to another disk",
    errno.EACCES: "permission denied: choose a folder you may write to",
    errno.EPERM: "operation not permitted: choose a folder you may write to",
    errno.EROFS: "read-only file system: choose a writable folder",
    errno.ENAMETOOLONG: "the file name is too long: choose a shorter name",
    errno.EISDIR: "it is a folder: give a file name inside it",
}
_MESSAGES = {  # pyarrow's OSErrors often carry the reason in the text only
    "no space left": errno.ENOSPC,
    "quota": errno.EDQUOT,
    "permission denied": errno.EACCES,
    "read-only file system": errno.EROFS,
    "file name too long": errno.ENAMETOOLONG,
}


class WriteError(AnonlabError, OSError):
    """An output could not be written (disk full, no permission...): a one-line user error
    that is also the ``OSError`` it stands for (``errno`` kept)."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.errno = code


def write_error(target: object, exc: BaseException) -> WriteError:
    """A one-line error for an ``OSError`` (or ``MemoryError``) met while writing ``target``."""
    if isinstance(exc, WriteError):
        return exc
    if isinstance(exc, MemoryError):
        return WriteError(
            f"cannot write '{target}': not enough memory: free memory or write a smaller table",
            errno.ENOMEM,
        )
    code: int | None = getattr(exc, "errno", None)
    if code not in _REASONS:
        text = str(exc).lower()
        code = next((c for words, c in _MESSAGES.items() if words in text), code)
    reason = _REASONS.get(code) if code is not None else None
    if reason is None:
        detail = getattr(exc, "strerror", None) or str(exc).strip().splitlines()[0:1]
        reason = (detail if isinstance(detail, str) else " ".join(detail)) or type(exc).__name__
    return WriteError(f"cannot write '{target}': {reason}", code)


def default_mode() -> int:
    """Permissions an ordinary new file gets here: 0o666 less the process umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
