"""Kill ``anonlab`` at random points of its write (issue 21): a fork server and its runs.

Starting ``anonlab`` costs more than a second of imports, so a kill test that
started one process per kill would spend its time importing. The server
imports everything once, then forks one child per run: the child runs the real
command line (``anonlab.cli.app.main``) and is the process the test kills with
``SIGKILL``, at a random point after its write has begun.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

SERVER = r"""
import json, os, sys
import anonlab.cli.app as cli
from anonlab import database
import pandas, pyarrow, pyarrow.parquet, pydantic, sqlalchemy, sqlite3  # imported once
import sqlalchemy.dialects.sqlite
import anonlab.generalize, anonlab.lattice.flash, anonlab.privacy.spec, anonlab.report
import anonlab.runs.generalize, anonlab.sinks
import importlib
for module in sys.argv[2:]:  # the database's driver and dialect
    importlib.import_module(module)
cli.app
if sys.argv[1] == "rename":  # the path of databases without transactional DDL
    database.TRANSACTIONAL_DDL = frozenset()
for line in sys.stdin:
    args = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.dup2(2, 1)  # the child's output never enters the protocol
        sys.argv = ["anonlab", *args]
        code = 0
        try:
            cli.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        os._exit(code)
    print(pid, flush=True)
    print(os.waitpid(pid, 0)[1], flush=True)
"""
RUN_TIMEOUT = 120.0  # seconds a run may take before the test gives up on it


@dataclass(frozen=True)
class Run:
    """One forked run: whether it was killed, its exit code, seconds from start to end of
    its write (``None`` when the write was never seen to begin)."""

    killed: bool
    code: int
    write_seconds: float | None


class ForkServer:
    """A process that runs ``anonlab`` command lines in forked children, one at a time."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process

    def run(
        self, args: list[str], started: Callable[[], bool], kill_after: float | None = None
    ) -> Run:
        """Run ``anonlab args``; ``kill_after`` seconds after ``started()`` first holds (its
        write has begun), kill it with ``SIGKILL``."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(args) + "\n")
        self.process.stdin.flush()
        pid = int(self.process.stdout.readline())
        began = _wait_for(started, pid)
        if kill_after is not None and began is not None:
            time.sleep(kill_after)
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        status = int(self.process.stdout.readline())
        ended = time.monotonic()
        return Run(
            killed=os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL,
            code=os.waitstatus_to_exitcode(status),
            write_seconds=None if began is None else ended - began,
        )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_for(started: Callable[[], bool], pid: int) -> float | None:
    """When ``started()`` first held (``None``: the run ended before)."""
    deadline = time.monotonic() + RUN_TIMEOUT
    while time.monotonic() < deadline:
        if started():
            return time.monotonic()
        if not _alive(pid):
            return None
        time.sleep(0.0005)
    raise AssertionError(f"the run did not begin its write in {RUN_TIMEOUT} s")


@contextmanager
def fork_server(
    path: str = "transaction", imports: tuple[str, ...] = (), env: dict[str, str] | None = None
) -> Iterator[ForkServer]:
    """A :class:`ForkServer` that has imported ``imports`` too; ``path="rename"`` makes it
    write as on MySQL (new table, then renames) whatever the database."""
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, path, *imports],
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    try:
        yield ForkServer(process)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=RUN_TIMEOUT)
        assert process.stdout is not None
        process.stdout.close()


def kill_delays(seed: int, window: float, count: int) -> list[float]:
    """``count`` random delays over a write of ``window`` seconds (a seeded draw, so a
    failure can be run again as it was)."""
    rng = random.Random(seed)
    return [rng.uniform(0.0, window) for _ in range(count)]


def write_people(path: Path, rows: int) -> Path:
    """A CSV of ``rows`` people (``age`` 0..99 and a free-text ``note``) and, beside it,
    ``age.csv``: a hierarchy for ``age`` (the year, its decade, ``*``)."""
    lines = ["age,note"] + [f"{i % 100},note number {i} of the table" for i in range(rows)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    hierarchy = [f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*" for a in range(100)]
    (path.parent / "age.csv").write_text("\n".join(hierarchy) + "\n", encoding="utf-8")
    return path


def generalize_args(source: Path, url: str, table: str = "t") -> list[str]:
    """``anonlab generalize`` of :func:`write_people`'s table into ``url``'s ``table``."""
    return [
        "generalize",
        str(source),
        "--qi",
        f"age={source.parent / 'age.csv'}",
        "--other",
        "insensitive",
        "--k",
        "2",
        "--no-verify",
        "--quiet",
        "--output",
        url,
        "--output-table",
        table,
    ]
