"""Runs started from the app: one run in a thread, with progress and cancel.

A job calls its ``work`` (for a family's run: :func:`anonlab.runs.run` with the
settings the form built, exactly as the CLI does) with a progress function that
records the library's progress calls (:mod:`anonlab.progress`) and raises
:class:`RunCancelled` at the next call once the user cancelled. Every run
writes its outputs all or nothing (staged, then moved), so a cancelled run
leaves no output behind. One job runs at a time: a run may use most of the
machine's memory.
"""

from __future__ import annotations

import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anonlab.errors import AnonlabError, AnonlabWarning
from anonlab.progress import ProgressFn
from anonlab.runs.common import RunResult

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"


class RunCancelled(BaseException):
    """Raised inside a run's progress call when the user cancelled it.

    A ``BaseException``, so that no ``except Exception`` inside a run (a
    comparison that keeps going after one method fails) swallows it.
    """


@dataclass
class Job:
    """One run: what it does, the settings values behind it, its state, progress and result.

    ``values`` are the settings as a TOML file holds them (what the export offers,
    so that ``anonlab COMMAND --config`` repeats the run); ``folder`` receives the
    run's outputs.
    """

    id: str
    command: str
    values: dict[str, Any]
    work: Callable[[ProgressFn], RunResult]
    folder: Path
    status: str = QUEUED
    step: str = ""
    done: int = 0
    total: int | None = None
    error: str | None = None
    trace: str | None = None
    #: the library's warnings to the user during the run (the CLI prints them), one line each
    warned: list[str] = field(default_factory=list)
    result: RunResult | None = None
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)

    def progress(self, step: str, done: int, total: int | None) -> None:
        """The run's progress function: records the call, or stops the run if cancelled."""
        if self.cancel.is_set():
            raise RunCancelled
        self.step, self.done, self.total = step, done, total

    def state(self) -> dict[str, Any]:
        """What the progress display shows (JSON-ready; no record values)."""
        end = self.finished if self.finished is not None else time.monotonic()
        return {
            "id": self.id,
            "command": self.command,
            "status": self.status,
            "step": self.step,
            "done": self.done,
            "total": self.total,
            "error": self.error,
            "seconds": round(end - self.started, 1),
        }


class JobStore:
    """The session's jobs, by id; at most one runs at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.jobs: dict[str, Job] = {}

    def start(self, job: Job) -> Job:
        """Run ``job`` in a thread; refused while another job runs."""
        _route_warnings()
        with self._lock:
            if any(j.status in (QUEUED, RUNNING) for j in self.jobs.values()):
                raise AnonlabError("a run is going on: wait for it or cancel it first")
            self.jobs[job.id] = job
        threading.Thread(target=_work, args=(job,), name=f"anonlab-{job.id}", daemon=True).start()
        return job

    def get(self, job_id: str) -> Job:
        try:
            return self.jobs[job_id]
        except KeyError:
            raise AnonlabError(f"no run '{job_id}'") from None

    def cancel_all(self) -> None:
        """Ask every running job to stop (at exit)."""
        for job in self.jobs.values():
            job.cancel.set()


#: the job the current thread runs, if any (:func:`_show_warning` files its warnings there)
_running = threading.local()
#: what showed warnings before :func:`_route_warnings`
_shown_before: list[Any] = [warnings.showwarning]


def _route_warnings() -> None:
    """Have a job's warnings to the user shown on its page rather than in the server's
    terminal (``warnings.showwarning`` is the process's; others' warnings go on to the
    function it had)."""
    if warnings.showwarning is not _show_warning:
        _shown_before[0] = warnings.showwarning
        warnings.showwarning = _show_warning


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    job = getattr(_running, "job", None)
    if job is not None and issubclass(category, AnonlabWarning):
        job.warned.append(" ".join(str(message).split()))
        return
    _shown_before[0](message, category, filename, lineno, file, line)


def _work(job: Job) -> None:
    job.status = RUNNING
    _running.job = job
    try:
        job.result = job.work(job.progress)
        job.status = DONE
    except RunCancelled:
        job.status = CANCELLED
    except AnonlabError as exc:
        job.error, job.status = str(exc), FAILED
    except (OSError, MemoryError) as exc:
        job.error, job.status = f"{type(exc).__name__}: {exc}", FAILED
    except Exception as exc:  # a bug: shown to the user in one line, kept for the log
        job.error = f"internal error ({type(exc).__name__}): please report it"
        job.status = FAILED
        job.trace = traceback.format_exc()
    finally:
        _running.job = None
        job.finished = time.monotonic()
