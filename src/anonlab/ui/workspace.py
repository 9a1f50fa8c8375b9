"""The state of one app session: a private folder, the loaded tables, their roles and hierarchies.

The app serves one custodian on their own machine, so the state lives in memory
in one :class:`Workspace`; files (uploads, built hierarchies, run outputs) live in
its private folder (mode 0700), which :meth:`Workspace.close` removes.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anonlab.errors import AnonlabError


@dataclass
class LoadedTable:
    """A table the user loaded: where it is read from and how, and what its columns are.

    ``read`` holds the read settings exactly as a settings model takes them
    (``input`` and, as needed, ``delimiter``, ``table``, ``query``, ``sheet``), so a
    run's settings start from a copy of it. ``roles`` maps each column to its role
    (``"qi"``, ``"sensitive"``, ``"insensitive"``, ``"identifying"``); ``hierarchies``
    maps a QI to its hierarchy file (ARX CSV) and ``numeric`` lists QIs released
    as ranges without a hierarchy.
    """

    id: str
    name: str
    read: dict[str, Any]
    columns: list[dict[str, Any]] = field(default_factory=list)
    rows: int | None = None
    roles: dict[str, str] = field(default_factory=dict)
    hierarchies: dict[str, str] = field(default_factory=dict)
    numeric: list[str] = field(default_factory=list)


class Workspace:
    """The session: a private folder and the tables loaded so far (thread-safe)."""

    def __init__(self, root: Path | None = None) -> None:
        self._owned = root is None
        self.root = Path(tempfile.mkdtemp(prefix="anonlab-ui-")) if root is None else root
        self.root.chmod(0o700)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.tables: dict[str, LoadedTable] = {}

    def folder(self, name: str) -> Path:
        """The subfolder ``name`` of the private folder (``uploads``, ``hierarchies``, ``runs``)."""
        path = self.root / name
        path.mkdir(mode=0o700, exist_ok=True)
        return path

    def new_id(self, prefix: str) -> str:
        """A fresh identifier such as ``t3`` (tables) or ``r7`` (runs)."""
        with self._lock:
            return f"{prefix}{next(self._ids)}"

    def add_table(self, table: LoadedTable) -> LoadedTable:
        with self._lock:
            self.tables[table.id] = table
        return table

    def table(self, table_id: str) -> LoadedTable:
        """The loaded table ``table_id``; an :class:`AnonlabError` if there is none."""
        try:
            return self.tables[table_id]
        except KeyError:
            raise AnonlabError(f"no loaded table '{table_id}': load a table first") from None

    def close(self) -> None:
        """Remove the private folder (uploads, hierarchies and run outputs) if it is ours."""
        if self._owned:
            shutil.rmtree(self.root, ignore_errors=True)
