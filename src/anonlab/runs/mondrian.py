"""The ``generalize --recoding mondrian`` run: Mondrian's partitions (docs/mondrian.md), the
release verified by the independent checker (:mod:`anonlab.verify.recoding`), its risk, and
every output written or none.

The generalize run hands its settings here when ``recoding`` is ``"mondrian"``. The rows
are read in memory; the engines (``engine = "dask"``, a folder output) are refused for
now in one line.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from anonlab.database import masked
from anonlab.errors import AnonlabError
from anonlab.outputs import Outputs, output_target
from anonlab.progress import ProgressFn
from anonlab.risk.release import risk_last
from anonlab.runs.common import (
    RunResult,
    file_of,
    input_tables,
    paths_convention,
    stage_release,
    stage_report,
    stored_path,
)
from anonlab.runs.generalize_settings import GENERALIZE_OUTPUTS, GeneralizeSettings
from anonlab.runs.generalize_steps import (
    criteria_files,
    load_hierarchies,
    read_input,
    report_path,
    roles_report,
    stored_criteria,
    uses_engine,
)

if TYPE_CHECKING:
    import pandas as pd

    from anonlab.hierarchy import Hierarchy


def ordered_columns(settings: GeneralizeSettings) -> list[str]:
    """The quasi-identifiers cut in order: those without a hierarchy file and the numeric
    ones, in the order given."""
    bare = [c for c, p in settings.qi.items() if not p]
    return bare + [c for c in settings.numeric if c not in bare]


def check_mondrian_settings(settings: GeneralizeSettings) -> None:
    """Refuse, in one line, what a Mondrian run does not do: the engines, suppression, and
    the full-domain search's own settings."""
    if uses_engine(settings):
        raise AnonlabError(
            "recoding mondrian runs in memory: the engines (engine dask, a folder output) do "
            "not map Mondrian's partitions yet; use engine numpy with a file output",
            parameter="engine",
        )
    if settings.suppression > 0:
        raise AnonlabError(
            "recoding mondrian suppresses no record: leave suppression at 0 (the whole "
            "table must satisfy the model)",
            parameter="suppression",
        )
    for name in ("min_level", "max_level"):
        if getattr(settings, name):
            raise AnonlabError(
                f"{name} bounds the levels of full-domain generalization: Mondrian has no "
                f"levels; leave {name} out",
                parameter=name,
            )
    if settings.alternatives:
        raise AnonlabError(
            "alternatives lists full-domain transformations: Mondrian has none; leave "
            "alternatives out",
            parameter="alternatives",
        )
    if settings.plot:
        raise AnonlabError(
            "plot draws the full-domain class sizes: a Mondrian report has no plot yet; "
            "leave plot out (the report lists the class sizes)",
            parameter="plot",
        )


def run_mondrian(settings: GeneralizeSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Partition a table by Mondrian under its privacy model, verify, measure and write it.

    Steps: check the settings and every output path; build the criteria (a model Mondrian
    cannot judge per partition is refused); load the hierarchies and the table (a
    quasi-identifier without a hierarchy file gets a flat one, only to encode it); give
    every column its role; partition (:func:`anonlab.mondrian.method.mondrian`); stage the
    release and check it with :func:`anonlab.verify.recoding.check_recoding` by re-reading
    it (``settings.verify``); measure its risk as a full-domain release's; stage the report
    and page; rename them all into place. Any error leaves no output behind.
    """
    from anonlab.dataset import without_role
    from anonlab.generalize import model_dataset, resolve_criteria
    from anonlab.mondrian.method import flat_hierarchies, mondrian, refuse_unjudgeable
    from anonlab.privacy import check_k
    from anonlab.risk.release import check_risk_columns, release_risk_report

    started = time.perf_counter()
    check_mondrian_settings(settings)
    specs = settings.model_criteria()
    files = criteria_files(specs)
    targets = {name: getattr(settings, name) for name in GENERALIZE_OUTPUTS}
    targets["output"] = output_target(settings.output, settings.output_table)
    outputs = Outputs(
        targets,
        inputs=[
            settings.input,
            *[p for p in settings.qi.values() if p],
            *settings.sensitive_hierarchies.values(),
            *files.values(),
        ],
        input_tables=input_tables(settings.input, settings.table),
    )
    if settings.k is not None:
        check_k(settings.k)
    criteria = resolve_criteria(specs)
    refuse_unjudgeable(criteria)
    ordered = ordered_columns(settings)
    with outputs:
        hierarchies = load_hierarchies({c: p for c, p in settings.qi.items() if p})
        frame = read_input(settings, categorical=True)
        bare = [c for c in ordered if c not in hierarchies]
        every = flat_hierarchies(frame, hierarchies, bare)
        dataset = model_dataset(
            frame,
            every,
            criteria,
            identifying=settings.identifying,
            sensitive=settings.sensitive,
            insensitive=settings.insensitive,
            other=settings.other,
            source=masked(settings.input),
        )
        from anonlab.dataset import Role

        dropped = dataset.columns_with(Role.IDENTIFYING)
        qi = [q.name for q in dataset.qis]
        check_risk_columns(
            [c for c in dataset.frame.columns if c not in dropped], settings.sensitive, settings, qi
        )
        if progress is not None:
            progress("partitioning", 0, 1)
        result = mondrian(dataset, criteria, ordered=ordered, relaxed=settings.relaxed)
        if progress is not None:
            progress("partitioning", 1, 1)
        original = dataset.frame
        cut_along = {c: h for c, h in hierarchies.items() if c not in ordered}

        def check(release: pd.DataFrame) -> None:
            verify_recoding(original, release, specs, cut_along, ordered, dropped)

        as_written = stage_release(
            outputs, result.release, check if settings.verify else None, categorical=True
        )
        risk = release_risk_report(as_written, settings.sensitive, settings, qi=qi)
        by_other = without_role(
            original.columns,
            settings.qi,
            settings.identifying,
            settings.sensitive,
            settings.insensitive,
            settings.numeric,
        )
        report = mondrian_report(settings, result.summary(), hierarchies)
        report["roles"] = {c: r.value for c, r in dataset.roles.items()}
        report["verified"] = settings.verify
        report.update(roles_report(dataset.roles, settings.other, by_other))
        report["distinct_values"] = {
            c: {
                "original": int(original[c].nunique(dropna=False)),
                "released": int(result.release[c].nunique(dropna=False)),
            }
            for c in qi
        }
        report.update(risk)
        report["runtime_seconds"] = time.perf_counter() - started
        stage_report(outputs, report)
        written = outputs.commit()
    return RunResult(report=report, release=result.release, written=written)


def verify_recoding(
    original: pd.DataFrame,
    release: pd.DataFrame,
    specs: list[dict[str, Any]],
    hierarchies: dict[str, Hierarchy],
    ordered: list[str],
    dropped: list[str],
) -> None:
    """Check a Mondrian release with the independent checker; the first problem is an error."""
    from anonlab.verify.recoding import check_recoding

    problems = check_recoding(original, release, specs, hierarchies, ordered, dropped)
    if problems:
        raise AnonlabError(f"verification failed, nothing written: {problems[0]}")


def mondrian_report(
    settings: GeneralizeSettings, summary: dict[str, Any], hierarchies: dict[str, Hierarchy]
) -> dict[str, Any]:
    """The JSON report's header, settings and Mondrian figures (docs/mondrian.md, "Report")."""
    from anonlab.report import report_header

    where = report_path(settings.report)
    params = settings.model_dump()
    for name in ("input", *GENERALIZE_OUTPUTS):
        params[name] = stored_path(params[name], where)
    params["qi"] = {c: stored_path(p, where) if p else "" for c, p in settings.qi.items()}
    params["sensitive_hierarchies"] = {
        c: stored_path(p, where) for c, p in settings.sensitive_hierarchies.items()
    }
    params["criteria"] = stored_criteria(settings.criteria, where, nested=False)
    inputs: dict[str, Any] = {
        "data": file_of(settings.input),
        **{f"hierarchy:{c}": p for c, p in settings.qi.items() if p},
        **{f"hierarchy:{c}": p for c, p in settings.sensitive_hierarchies.items()},
        **criteria_files(settings.model_criteria()),
    }
    report = report_header("mondrian", risk_last(params), inputs)
    report["paths"] = paths_convention(where)
    report.update(summary)
    report["criteria"] = stored_criteria(summary["criteria"], where, nested=True)
    return report
