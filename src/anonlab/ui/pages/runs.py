"""Step 5, Runs: every run of the session, one run's progress, its cancel and its result.

A run's page follows its job (:mod:`anonlab.ui.jobs`) through ``/runs/{id}/state``
(JSON: the step and count of the library's last progress call), offers to
cancel it (the run stops at its next progress call; its outputs are staged and
moved only at the end, so nothing is written), and once done shows what the
report says in a few lines, then the family's own section: the template
``results/{command}.html`` when there is one, given ``job`` and ``report``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from anonlab.ui.jobs import Job, JobStore
from anonlab.ui.templating import render


def jobs_of(request: Request) -> JobStore:
    """The session's jobs."""
    jobs: JobStore = request.app.state.jobs
    return jobs


def job_of(request: Request) -> Job:
    """The job the path's ``{id}`` names; an :class:`AnonlabError` when there is none."""
    return jobs_of(request).get(request.path_params["id"])


def summary(report: dict[str, Any]) -> list[tuple[str, str]]:
    """The figures every release's report has, as (label, text) rows."""
    from anonlab.risk.figures import release_classes, release_suppressed

    rows: list[tuple[str, str]] = []
    if report.get("records") is not None:
        rows.append(("records", str(report["records"])))
    suppressed = release_suppressed(report)
    if suppressed is not None:
        rows.append(("suppressed records", str(suppressed)))
    classes = release_classes(report)
    if classes is not None:
        rows.append(("equivalence classes", str(classes)))
    risk = report.get("risk")
    prosecutor = risk.get("prosecutor") if isinstance(risk, dict) else None
    if isinstance(prosecutor, dict) and prosecutor.get("highest") is not None:
        rows.append(
            (
                "prosecutor risk",
                f"highest {prosecutor['highest']:.4g}, average {prosecutor['average']:.4g}",
            )
        )
    for warning in report.get("risk_warnings") or []:
        rows.append(("risk warning", str(warning)))
    if report.get("verified") is not None:
        rows.append(("verified", "yes" if report["verified"] else "no"))
    if report.get("runtime_seconds") is not None:
        rows.append(("time", f"{report['runtime_seconds']:.2f} s"))
    return rows


async def index(request: Request) -> Response:
    jobs = sorted(jobs_of(request).jobs.values(), key=lambda j: j.started, reverse=True)
    return render(request, "runs.html", jobs=jobs)


async def show(request: Request) -> Response:
    job = job_of(request)
    report = job.result.report if job.result is not None else None
    return render(
        request,
        "run.html",
        job=job,
        report=report,
        summary=summary(report) if report is not None else [],
        written=[p.name for p in job.result.written] if job.result is not None else [],
    )


async def state(request: Request) -> Response:
    return JSONResponse(job_of(request).state())


async def cancel(request: Request) -> Response:
    """Ask the run to stop at its next progress call; nothing is written."""
    job = job_of(request)
    job.cancel.set()
    return RedirectResponse(f"/runs/{job.id}", status_code=303)


ROUTES: list[BaseRoute] = [
    Route("/runs", index, methods=["GET"]),
    Route("/runs/{id}", show, methods=["GET"]),
    Route("/runs/{id}/state", state, methods=["GET"]),
    Route("/runs/{id}/cancel", cancel, methods=["POST"]),
]
