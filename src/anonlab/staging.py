"""Writing a partitioned Parquet dataset atomically: a staged folder renamed at the end.

The parts are written into a hidden temporary folder beside the target
(named as :func:`anonlab.tempfiles.temp_path_for` names temporary files), and
:meth:`StagedFolder.commit` renames it onto the target, so a failed or
killed run never leaves half a dataset under the target's name. A target
that already exists may only be a folder holding Parquet parts and nothing
else (an earlier release): it is replaced. Any other existing target is
refused, so no user file is ever deleted.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from types import TracebackType

from anonlab.errors import AnonlabError
from anonlab.tempfiles import temp_path_for, write_error

_PART = re.compile(r"^part-\d+\.parquet$")


def _this_host() -> str:
    """This host's name as :func:`anonlab.tempfiles.temp_path_for` writes it."""
    name = temp_path_for(Path("x")).name
    return name[len(".x.anonlab-") : name.rindex(f"-{os.getpid()}-")]


_TEMP_FOLDER = re.compile(rf"^\..+\.anonlab-{re.escape(_this_host())}-(?P<pid>\d+)-[0-9a-f]+\.tmp$")


def is_part_name(name: str) -> bool:
    """Whether ``name`` (a path relative to a release folder) names a Parquet part this module
    writes (``part-00000.parquet``)."""
    return _PART.match(name) is not None


def _replaceable(folder: Path) -> bool:
    """Whether ``folder`` holds only Parquet parts this module writes."""
    return all(entry.is_file() and _PART.match(entry.name) for entry in folder.iterdir())


def holds_release(folder: Path) -> bool:
    """Whether ``folder`` is an earlier dataset of parts: a folder of one or more Parquet parts
    this module writes, and nothing else."""
    return folder.is_dir() and any(folder.iterdir()) and _replaceable(folder)


def remove_stale_folders(folder: Path) -> None:
    """Remove staged folders in ``folder`` left by this host's processes that are gone
    (killed runs); other hosts' folders are left alone."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        match = _TEMP_FOLDER.match(entry.name)
        if match is None or not entry.is_dir():
            continue
        try:
            os.kill(int(match["pid"]), 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except (PermissionError, OverflowError):
            continue


def check_target(target: Path) -> None:
    """Refuse a target that exists and is not an earlier dataset of parts."""
    if target.is_file():
        raise AnonlabError(
            f"output '{target}' is a file, but the engine writes a folder of "
            "Parquet parts: name a folder",
            parameter="output",
        )
    if target.is_dir() and not _replaceable(target):
        raise AnonlabError(
            f"output '{target}' is a folder holding other files than Parquet "
            "parts: name a new folder (it is not emptied for you)",
            parameter="output",
        )


class StagedFolder:
    """A temporary folder beside ``target``, renamed onto it by :meth:`commit`.

    Use it as a context manager: an exception inside removes the temporary
    folder (nothing is written); after :meth:`commit` it is the target.
    """

    def __init__(self, target: Path) -> None:
        self.target = Path(target)
        check_target(self.target)
        parent = self.target.parent if str(self.target.parent) else Path(".")
        try:
            parent.mkdir(parents=True, exist_ok=True)
            remove_stale_folders(parent)
            # absolute: the workers of a cluster write into it from folders of their own
            self.path = temp_path_for(self.target).absolute()
            self.path.mkdir()
        except OSError as exc:
            raise write_error(self.target, exc) from None
        self.committed = False

    def commit(self) -> Path:
        """Rename the staged folder onto the target (replacing an earlier dataset); the
        half-written parts of killed workers (hidden ``.part-*.tmp``) are removed first."""
        if self.committed:
            return self.target
        check_target(self.target)
        self.drop_partial()
        old: Path | None = None
        try:
            if self.target.exists():
                old = temp_path_for(self.target)
                os.replace(self.target, old)
            os.replace(self.path, self.target)
        except OSError as exc:
            if old is not None and not self.target.exists():
                os.replace(old, self.target)
            raise write_error(self.target, exc) from None
        self.committed = True
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.target

    def drop_partial(self) -> None:
        """Remove the half-written parts of killed workers (hidden ``.part-*.tmp``: a task
        that ran again wrote its part whole)."""
        for entry in self.path.iterdir():
            if entry.name.startswith(".part-") and entry.name.endswith(".tmp"):
                entry.unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove the staged folder (nothing is written)."""
        if not self.committed:
            shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> StagedFolder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is not None:
            self.discard()
