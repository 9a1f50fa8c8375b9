"""Step 6, Explore: generalization's solution space and what the release did to each QI.

The solution space is the report's ``alternatives`` list
(:attr:`GeneralizeSettings.alternatives`: the best transformations that satisfy
the privacy models, the optimum as node 1, each with its loss, suppressed
records and highest prosecutor risk). Releasing another node is an ``apply``
run of that report with ``node`` (:class:`ApplySettings`), the same run as
``anonlab apply REPORT INPUT --node N``. The distributions are each
quasi-identifier's value counts in the input and in the release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from anonlab.errors import AnonlabError, present
from anonlab.ui.forms import OUTPUT_NAMES, number, start_run, text
from anonlab.ui.jobs import DONE, Job, JobStore
from anonlab.ui.pages.runs import job_of, jobs_of
from anonlab.ui.templating import render

#: the values shown per quasi-identifier's distribution (the most frequent; the rest summed)
SHOWN_VALUES = 15
#: the commands whose runs have a solution space
GENERALIZATION = ("generalize", "apply")


def finished(job: Job) -> Job:
    """``job``, refused with one line unless it is a generalization run that is done."""
    if job.command not in GENERALIZATION:
        raise AnonlabError(f"run {job.id} is a {job.command} run: explore is for generalization")
    if job.status != DONE or job.result is None:
        raise AnonlabError(f"run {job.id} is {job.status}: explore a run that is done")
    return job


def source_job(jobs: JobStore, job: Job) -> tuple[Job | None, dict[str, Any]]:
    """The generalize run whose report lists the alternatives of ``job``, and that report:
    ``job`` itself for a generalize run; for an apply run, the run whose report it applied
    (``None`` when that report was not made in this session)."""
    from anonlab.io import read_json

    if job.command == "generalize":
        return job, present(job.result, "the run's result").report
    report_in = Path(job.values["report_in"])
    for other in jobs.jobs.values():
        if other.folder == report_in.parent and other.result is not None:
            return other, other.result.report
    report: dict[str, Any] = read_json(report_in)
    return None, report


def quasi_identifiers(report: dict[str, Any]) -> list[str]:
    """The quasi-identifiers of a generalization report, in the table's order."""
    return [c for c, role in (report.get("roles") or {}).items() if role == "quasi"]


def released_node(job: Job, alternatives: list[dict[str, Any]]) -> int | None:
    """The node of ``alternatives`` whose levels ``job`` released (``None``: none of them)."""
    levels = present(job.result, "the run's result").report.get("transformation")
    return next((a["node"] for a in alternatives if a["levels"] == levels), None)


def read_pair(job: Job) -> tuple[Any, Any]:
    """The input and the release of ``job`` as text tables, row for row."""
    from anonlab.io import read_table

    options: dict[str, Any] = {"delimiter": job.values.get("delimiter")}
    for name in ("sheet", "table", "query"):
        if job.values.get(name):
            options[name] = job.values[name]
    original = read_table(job.values["input"], strings="dictionary", **options)
    release = read_table(job.folder / OUTPUT_NAMES["output"], strings="dictionary")
    return original, release


def distributions(job: Job, qis: list[str]) -> list[dict[str, Any]]:
    """Per quasi-identifier, its values' counts before (input) and after (release): the
    :data:`SHOWN_VALUES` most frequent of each, the others summed."""
    original, release = read_pair(job)
    out: list[dict[str, Any]] = []
    for column in qis:
        if column not in original.columns or column not in release.columns:
            continue
        sides = {}
        for side, frame in (("before", original), ("after", release)):
            counts = frame[column].value_counts(sort=True)
            counts = counts[counts > 0]
            top = [(str(v), int(n)) for v, n in counts.iloc[:SHOWN_VALUES].items()]
            rest = int(counts.iloc[SHOWN_VALUES:].sum())
            sides[side] = {
                "values": top,
                "distinct": len(counts),
                "others": rest,
                "most": max((n for _, n in top), default=1),
            }
        out.append({"column": column, **sides})
    return out


def _cache(request: Request) -> dict[str, list[dict[str, Any]]]:
    state = request.app.state
    if not hasattr(state, "distributions"):
        state.distributions = {}
    cache: dict[str, list[dict[str, Any]]] = state.distributions
    return cache


async def page(request: Request) -> Response:
    job = finished(job_of(request))
    source, report = source_job(jobs_of(request), job)
    result = present(job.result, "the run's result")
    qis = quasi_identifiers(result.report)
    cache = _cache(request)
    if job.id not in cache:
        cache[job.id] = await run_in_threadpool(distributions, job, qis)
    alternatives = report.get("alternatives") or []
    return render(
        request,
        "explore.html",
        job=job,
        source=source,
        alternatives=alternatives,
        metric=report.get("metric"),
        qis=list((report.get("transformation") or {}).keys()) or qis,
        released=released_node(job, alternatives),
        levels=result.report.get("transformation") or {},
        bounds=report.get("level_bounds") or {},
        distributions=cache[job.id],
    )


def apply_values(source: Job) -> dict[str, Any]:
    """The settings values of an ``apply`` run of ``source``'s report (its ``node`` or
    ``levels`` still to choose): the same input and read settings, risk settings and checks
    as ``source``."""
    from anonlab.runs.generalize_settings import ApplySettings

    skip = {*OUTPUT_NAMES, "output_table", "plot"}
    values = {
        k: v for k, v in source.values.items() if k in ApplySettings.model_fields and k not in skip
    }
    values["report_in"] = str(source.folder / OUTPUT_NAMES["report"])
    return values


def chosen_levels(form: FormData, qis: list[str]) -> dict[str, int]:
    """The levels the form's ``level_I`` fields give the quasi-identifiers (left empty: the
    report's level)."""
    levels: dict[str, int] = {}
    for i, column in enumerate(qis):
        level = number(form, f"level_{i}", int)
        if level is not None:
            levels[column] = level
    return levels


async def choose(request: Request) -> Response:
    """Release node N of the run's alternatives, or the levels the form gives: an ``apply``
    run of its report with ``node`` or ``levels``."""
    job = finished(job_of(request))
    if job.command != "generalize" or job.result is None:
        raise AnonlabError(f"run {job.id} is an apply run: choose from its generalize run")
    report = job.result.report
    if not report.get("transformation"):
        raise AnonlabError(f"run {job.id} has no full-domain transformation to apply")
    form = await request.form()
    values = apply_values(job)
    if text(form, "node") is None:
        levels = chosen_levels(form, list(report["transformation"]))
        if not levels:
            raise AnonlabError("give a level for at least one quasi-identifier")
        values["levels"] = levels
        return start_run(request, "apply", values)
    node = number(form, "node", int)
    listed = report.get("alternatives") or []
    if not 1 <= node <= len(listed):
        raise AnonlabError(
            f"node {node} is not in the list of run {job.id}: choose 1 to {len(listed)}"
        )
    values["node"] = node
    return start_run(request, "apply", values)


ROUTES: list[BaseRoute] = [
    Route("/runs/{id}/explore", page, methods=["GET"]),
    Route("/runs/{id}/explore", choose, methods=["POST"]),
]
