"""The ``generalize --recoding local`` run: ARX's local recoding (docs/generalization.md,
"Local recoding"), the release verified by the independent checker
(:mod:`anonlab.verify.local`), its risk, and every output written or none.

The generalize run hands its settings here when ``recoding`` is ``"local"``. The rows are read
in memory: each search on the suppressed records needs them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from anonlab.database import masked
from anonlab.errors import AnonlabError
from anonlab.progress import ProgressFn
from anonlab.risk.release import risk_last
from anonlab.runs.common import (
    RunResult,
    file_of,
    paths_convention,
    stage_release,
    stage_report,
    stored_path,
)
from anonlab.runs.generalize_settings import GENERALIZE_OUTPUTS, GeneralizeSettings
from anonlab.runs.generalize_steps import (
    aggregated_release,
    check_aggregated,
    check_parameters,
    criteria_files,
    generalize_outputs,
    load_hierarchies,
    read_input,
    release_loss,
    report_path,
    roles_report,
    stored_criteria,
    uses_engine,
)

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.hierarchy import Hierarchy


def check_local_settings(settings: GeneralizeSettings) -> None:
    """Refuse, in one line, what a local-recoding run does not do: the engines, level
    bounds, alternatives, the plot and HTML page, a heuristic search."""
    if uses_engine(settings):
        raise AnonlabError(
            "recoding local runs in memory: each search on the suppressed records needs "
            "their rows; use engine numpy with a file output",
            parameter="engine",
        )
    for name in ("min_level", "max_level"):
        if getattr(settings, name):
            raise AnonlabError(
                f"{name} bounds the full-domain search's levels: local recoding searches "
                f"the whole lattice each time; leave {name} out",
                parameter=name,
            )
    if settings.alternatives:
        raise AnonlabError(
            "alternatives lists full-domain transformations: a local recoding has several; "
            "leave alternatives out",
            parameter="alternatives",
        )
    if settings.plot:
        raise AnonlabError(
            "plot draws the full-domain class sizes: a local-recoding report has no plot "
            "yet; leave plot out (the report lists the records of each search)",
            parameter="plot",
        )
    if settings.html:
        raise AnonlabError(
            "html: the HTML page has no local-recoding section yet; leave html out (the "
            "JSON report lists every search)",
            parameter="html",
        )
    if settings.search not in ("flash", "ola", "degree", "exhaustive"):
        raise AnonlabError(
            f"recoding local needs an optimal search (flash, ola, degree or exhaustive), "
            f"as ARX's: not {settings.search}",
            parameter="search",
        )


def run_local(settings: GeneralizeSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Recode a table locally under its privacy model, verify, measure and write it.

    Steps: check the settings and every output path; build the criteria; load the
    hierarchies and the table; give every column its role; recode
    (:func:`anonlab.lattice.local.local_recoding`: the full-domain optimum, then the searches
    on the records still suppressed); stage the release and check it with
    :func:`anonlab.verify.local.check_local_recoding` by re-reading it (``settings.verify``);
    measure its risk; stage the report; rename them all into place. Any error leaves no
    output behind.
    """
    from anonlab.dataset import Role, without_role
    from anonlab.generalize import model_dataset, resolve_criteria
    from anonlab.lattice.local import local_recoding, local_release
    from anonlab.privacy import max_suppressed
    from anonlab.risk.release import release_risk_report

    started = time.perf_counter()
    check_local_settings(settings)
    specs = settings.model_criteria()
    files = criteria_files(specs)
    outputs = generalize_outputs(settings, files, folder=False)
    check_parameters(settings)
    criteria = resolve_criteria(specs)
    for criterion in criteria:
        if criterion.needs_population:
            raise AnonlabError(
                f"{criterion.name} judges records outside those still suppressed, which ARX "
                "does not recode locally: choose recoding full-domain",
                parameter="recoding",
            )
    read_options = {"delimiter": settings.delimiter} if settings.delimiter else {}
    with outputs:
        hierarchies = load_hierarchies(settings.qi)
        frame = read_input(settings)
        dataset = model_dataset(
            frame,
            hierarchies,
            criteria,
            roles=settings.roles,
            source=masked(settings.input),
            read_options=read_options,
        )
        result = local_recoding(
            dataset,
            criteria,
            settings.suppression,
            str(settings.metric),
            gs_factor=settings.gs_factor,
            aggregate=settings.aggregate,
            weights=settings.attribute_weights or None,
            search=settings.search,
            local_gs_factor=settings.local_gs_factor,
            iterations=settings.local_iterations,
            adaption=settings.local_adaption,
        )
        if progress is not None:
            progress("recoding locally", 1, 1)  # one step: the searches report nothing
        labelled = local_release(dataset, result)
        original = dataset.frame
        dropped = dataset.columns_with(Role.IDENTIFYING)
        limit = max_suppressed(settings.suppression, dataset.n)
        qi = [q.name for q in dataset.qis]
        release = aggregated_release(labelled, original, qi, settings)

        def check(written: pd.DataFrame) -> None:
            from anonlab.verify.local import check_local_recoding

            if settings.aggregate_qi:  # the searches' labels, then each aggregate
                check_aggregated(original, written, labelled, qi, settings)
                written = labelled
            problems = check_local_recoding(original, written, specs, hierarchies, limit, dropped)
            if problems:
                raise AnonlabError(f"verification failed, nothing written: {problems[0]}")

        as_written = stage_release(outputs, release, check if settings.verify else None)
        risk = release_risk_report(as_written, settings.sensitive, settings, qi=qi)
        by_other = without_role(
            original.columns,
            settings.qi,
            settings.identifying,
            settings.sensitive,
            settings.insensitive,
        )
        report = local_report(settings, hierarchies)
        report.update(result.summary(qi))
        report.update(
            records=dataset.n,
            metric=settings.metric,
            suppression_limit=settings.suppression,
            roles={c: r.value for c, r in dataset.roles.items()},
            verified=settings.verify,
            loss=release_loss(  # of the recoding, before any aggregate
                labelled if settings.aggregate_qi else as_written, original, hierarchies, qi
            ),
        )
        report.update(roles_report(dataset.roles, settings.other, by_other))
        report.update(risk)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=release, written=written)


def local_report(settings: GeneralizeSettings, hierarchies: dict[str, Hierarchy]) -> dict[str, Any]:
    """The JSON report's header and settings (docs/generalization.md, "Local recoding")."""
    from anonlab.report import report_header

    where = report_path(settings.report)
    params = settings.model_dump()
    for name in ("input", *GENERALIZE_OUTPUTS):
        params[name] = stored_path(params[name], where)
    params["qi"] = {c: stored_path(p, where) for c, p in settings.qi.items()}
    params["sensitive_hierarchies"] = {
        c: stored_path(p, where) for c, p in settings.sensitive_hierarchies.items()
    }
    params["criteria"] = stored_criteria(settings.criteria, where, nested=False)
    inputs: dict[str, Any] = {
        "data": file_of(settings.input),
        **{f"hierarchy:{c}": p for c, p in settings.qi.items()},
        **{f"hierarchy:{c}": p for c, p in settings.sensitive_hierarchies.items()},
        **criteria_files(settings.model_criteria()),
    }
    report = report_header("local-recoding", risk_last(params), inputs)
    report["paths"] = paths_convention(where)
    report["hierarchy_heights"] = {c: h.height for c, h in hierarchies.items()}
    return report
