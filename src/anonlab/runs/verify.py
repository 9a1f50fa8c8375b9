"""The ``verify`` run: re-check a release on disk and write the JSON report of its findings.

:func:`run_verify` calls :func:`anonlab.verify.verify_report` (the family's
independent checker) and, when ``report`` names a file, writes what it found
through :class:`~anonlab.outputs.Outputs`: the command, the parameters, the
files checked (with their SHA-256), ``ok``, ``findings`` (one line each) and
``line`` (what the command prints). A finding is a result, not an error: the
report is written either way; a check that cannot run writes nothing.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from anonlab.outputs import Outputs
from anonlab.paths import is_url
from anonlab.runs.common import (
    RunResult,
    paths_convention,
    reads_urls,
    stage_report,
    stored_path,
)
from anonlab.settings import Settings

if TYPE_CHECKING:
    from anonlab.progress import ProgressFn
    from anonlab.verify import VerifyResult

__all__ = ["VerifySettings", "run_verify"]


class VerifySettings(Settings):
    """What ``verify`` checks and where its findings go.

    ``report_in`` is the JSON report written with the release; ``release``,
    ``input`` (a file or a database URL) and ``key`` override the paths it
    names; ``report`` is the JSON report of this check (default: none).
    """

    path_fields: ClassVar[tuple[str, ...]] = ("report_in", "release", "input", "key", "report")
    input_fields: ClassVar[tuple[str, ...]] = ("report_in", "release", "input", "key")
    output_fields: ClassVar[tuple[str, ...]] = ("report",)

    report_in: str
    release: str | None = None
    input: str | None = None
    key: str | None = None
    #: a masking run's seed (never in its report): the release is drawn again and compared
    seed: int | None = Field(default=None, ge=0, exclude=True)
    report: str | None = None
    #: fsspec's options for a release, input or report named by URL: never written to a report
    storage_options: dict[str, Any] = Field(default_factory=dict, exclude=True)


def _checked_files(settings: VerifySettings, result: VerifyResult) -> dict[str, str | None]:
    """The files the check read, as the report describes its inputs (SHA-256 and size)."""
    files: dict[str, str | None] = {"report": settings.report_in}
    if is_url(result.release):
        files["release"] = str(result.release)
    else:
        release = Path(result.release)
        files["release"] = str(release) if release.is_file() else None
    if settings.key is not None:
        files["key"] = settings.key
    return files


def verify_report_dict(
    settings: VerifySettings, result: VerifyResult, seconds: float, report: Path | None
) -> dict[str, Any]:
    """The JSON report of one check: header, ``ok``, ``findings``, ``line`` and run time."""
    from anonlab.report import report_header

    params: dict[str, Any] = {
        "report_in": stored_path(settings.report_in, report),
        "release": stored_path(settings.release, report),
        "input": stored_path(settings.input, report),
        "key": stored_path(settings.key, report),
        "report": stored_path(settings.report, report),
    }
    out = report_header("verify", params, dict(_checked_files(settings, result)))
    out["paths"] = paths_convention(report)
    out["checked_command"] = result.command
    out["checked_release"] = stored_path(result.release, report)
    out["ok"] = result.ok
    out["findings"] = list(result.findings)
    out["line"] = result.line()
    out["runtime_seconds"] = seconds
    return out


@reads_urls
def run_verify(settings: VerifySettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Check the release ``settings.report_in`` describes; write the findings' report if asked.

    The result's ``report`` holds ``ok`` and ``findings`` (empty: the release
    holds); ``written`` is the report file, if one was asked for. A check that
    cannot run (a file missing, a report of another kind) raises an
    :class:`~anonlab.errors.AnonlabError` and writes nothing. ``progress`` is
    accepted as every run's is; the check reports no steps.
    """
    from anonlab.verify import verify_report

    started = time.perf_counter()
    target: str | Path | None = settings.report
    if target is not None and not is_url(target):
        target = Path(target)
    where = target if isinstance(target, Path) else None  # a URL report's paths: absolute
    inputs = [p for p in (settings.report_in, settings.release, settings.key) if p is not None]
    with Outputs({"report": target}, inputs=inputs) as outputs:
        result = verify_report(
            settings.report_in,
            release=settings.release,
            input=settings.input,
            key=settings.key,
            seed=settings.seed,
        )
        report = verify_report_dict(settings, result, time.perf_counter() - started, where)
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, written=written)
