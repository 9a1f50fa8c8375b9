"""Re-check a release on disk against the JSON report of the run that made it.

:func:`verify_report` reads the report, finds the release and the original
input (in the report, or as given), and runs the family's independent
checker. A path in a report is absolute, or relative: it is looked for first
beside the report file, then in the current folder (reports of earlier
versions stored paths as given on the command line).

The report keys each family relies on are listed in ``docs/verify.md``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

from anonlab.errors import AnonlabError
from anonlab.io import file_sha256, read_json, read_table
from anonlab.paths import PathLike, is_url, shown_path

if TYPE_CHECKING:
    from anonlab.hierarchy import Hierarchy

T = TypeVar("T")
RELEASING = (
    "generalize",
    "mondrian",
    "local-recoding",
    "apply",
    "microaggregate",
    "perturb",
    "fuse",
    "party",
    "suppress",
    "mask",
)


@dataclass(frozen=True)
class VerifyResult:
    """What the check of one release found (no findings: the release holds)."""

    command: str
    release: str
    findings: tuple[str, ...]
    summary: str

    @property
    def ok(self) -> bool:
        """Whether the release holds."""
        return not self.findings

    def line(self) -> str:
        """One line: the summary when it holds, else the first finding (and how many more)."""
        if self.ok:
            return self.summary
        more = len(self.findings) - 1
        return f"{self.command} release '{self.release}' does not hold: {self.findings[0]}" + (
            f" (and {more} more finding{'s' if more > 1 else ''})" if more else ""
        )


@dataclass
class _Context:
    """The report and what was given, with path resolution and reading."""

    report: dict[str, Any]
    report_path: Path | str  # str: a URL (s3://...)
    release: Path | str | None  # str: a URL
    input: Path | str | None  # str: a database URL
    key: Path | None
    seed: int | None = None  # a masking run's seed, which its report never holds
    params: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        params = self.report.get("parameters")
        self.params = params if isinstance(params, dict) else {}

    def value(self, name: str, *, where: Mapping[str, Any] | None = None) -> Any:
        """A key of the report (top level first, then its parameters); missing is an error."""
        for scope in (where,) if where is not None else (self.report, self.params):
            if name in scope and scope[name] is not None:
                return scope[name]
        raise AnonlabError(
            f"the report '{self.report_path}' has no '{name}': give the JSON "
            "report written by the run that made the release"
        )

    def stored(self, stored: str, what: str, base: Path | None = None) -> Path:
        """A path from a report: absolute, else beside the report (``base``), else from here."""
        p = Path(stored)
        if p.is_absolute():
            candidates = [p]
        else:
            beside = (
                self.report_path.resolve().parent
                if isinstance(self.report_path, Path)
                else Path.cwd()  # a report at a URL stores its paths absolute
            )
            candidates = [(base or beside) / p, p]
        for candidate in candidates:
            if candidate.exists():
                return shown_path(candidate)  # as messages print it: out/a.csv
        tried = " or ".join(f"'{c}'" for c in dict.fromkeys(candidates))
        raise AnonlabError(
            f"{what} is needed: the report names '{stored}', which is not at "
            f"{tried}; give its path",
            parameter=what,
        )

    def release_path(self) -> Path:
        """The release: as given, else the report's ``output``."""
        if isinstance(self.release, Path):
            return _existing(self.release, "release")
        stored = self.params.get("output") or self.report.get("output")
        if not stored:
            raise AnonlabError(
                "release is needed: the report names no release file; give its path",
                parameter="release",
            )
        if _is_url(str(stored)):
            raise AnonlabError(
                f"release is needed as a file: the report's release is in the "
                f"database '{stored}'; export the table and give its path",
                parameter="release",
            )
        return self.stored(str(stored), "release")

    def input_source(self, sha_of: Mapping[str, Any] | None = None) -> Path | str:
        """The original input: as given, else the report's ``input``; checked by its SHA-256.

        A database URL (the run read a table or query) is returned as it is.
        """
        if isinstance(self.input, str):
            return self.input
        if self.input is not None:
            path = _existing(self.input, "input")
        else:
            stored = self.params.get("input")
            if not stored:
                raise AnonlabError(
                    "input is needed: the report names no input file; give its path",
                    parameter="input",
                )
            if _is_url(str(stored)):
                return str(stored)
            path = self.stored(str(stored), "input")
        _same_file(path, (sha_of or self.report.get("inputs") or {}).get("data"), "input")
        return path

    def read_input(self) -> pd.DataFrame:
        """The original table, read as the run read it (delimiter, sheet, table or query)."""
        source = self.input_source()
        if isinstance(source, str):
            return read_table(
                source, table=self.params.get("table"), query=self.params.get("query")
            )
        delimiter = self.params.get("delimiter") or None
        sheet = self.params.get("sheet") if source.suffix.lower() in (".xlsx", ".xlsm") else None
        return read_table(source, delimiter=delimiter, sheet=sheet)

    def read_release(self) -> tuple[Path | str, pd.DataFrame]:
        """The release's path and table (a CSV's delimiter sniffed).

        A release the run wrote to a database table (``output`` a SQLAlchemy
        URL, ``output_table`` its table) is read from there; its "path" is the
        URL (as the report stores it, without password) with the table after ``#``.
        """
        stored = self.params.get("output")
        table = self.params.get("output_table")
        if self.release is None and stored and _is_url(str(stored)) and table:
            return f"{stored}#{table}", read_table(str(stored), table=str(table))
        if isinstance(self.release, str):  # given as a URL
            return self.release, read_table(self.release)
        if self.release is None and stored and is_url(str(stored)):  # written to a URL
            return str(stored), read_table(str(stored))
        path = self.release_path()
        return path, read_table(path)


def _is_url(text: str) -> bool:
    """A database or file URL (``sqlite:///...``, ``s3://...``): never a local path."""
    return "://" in text


def _without_identifying(
    ctx: _Context, original: pd.DataFrame, release: pd.DataFrame
) -> tuple[pd.DataFrame, list[str]]:
    """The input without the columns the run dropped as identifying, and findings if present.

    Identifying columns are those the report's ``roles`` call so, else its
    ``parameters.identifying``.
    """
    roles = ctx.report.get("roles")
    if isinstance(roles, dict):
        dropped = [str(c) for c, r in roles.items() if r == "identifying"]
    else:
        dropped = [str(c) for c in ctx.params.get("identifying") or []]
    findings = [
        f"identifying column '{c}' is in the release" for c in dropped if c in release.columns
    ]
    kept = original.drop(columns=[c for c in dropped if c in original.columns])
    return kept, findings


def _existing(path: Path, what: str) -> Path:
    if not path.exists():
        raise AnonlabError(f"{what} '{path}' does not exist: check the path", parameter=what)
    return path


def _same_file(path: Path, recorded: Any, what: str) -> None:
    """Refuse a file whose SHA-256 differs from the one the report recorded for it."""
    expected = recorded.get("sha256") if isinstance(recorded, dict) else None
    if expected and path.is_file() and file_sha256(path) != expected:
        raise AnonlabError(
            f"{what} '{path}' is not the file the report was made from (its "
            "SHA-256 differs): give the file the release was made with",
            parameter=what,
        )


def verify_report(
    report_path: PathLike,
    release: PathLike | None = None,
    input: PathLike | None = None,
    key: PathLike | None = None,
    seed: int | None = None,
) -> VerifyResult:
    """Check the release a JSON report describes against the report and the original input.

    ``release`` and ``input`` override the paths the report holds (``input``
    may be a database URL, read with the report's ``table`` or ``query``); ``key``
    is a perturbation's key file (the report never names it), which adds the
    check that the key undoes the release; ``seed`` a masking run's seed (its report
    never holds it), with which the release is drawn again and compared.
    """
    path: Path | str = os.fspath(report_path) if is_url(report_path) else Path(report_path)
    report = read_json(path)
    if not isinstance(report, dict) or not isinstance(report.get("command"), str):
        raise AnonlabError(
            f"'{path}' is not an anonlab report: give the JSON report written with the release"
        )
    command = report["command"]
    handler = _HANDLERS.get(command)
    if handler is None:
        raise AnonlabError(
            f"report '{path}' is of '{command}', which makes no release: give "
            f"the report of one of {', '.join(RELEASING)}"
        )
    source = str(input) if input is not None and _is_url(str(input)) else _path(input)
    given = os.fspath(release) if release is not None and is_url(release) else _path(release)
    ctx = _Context(report, path, given, source, _path(key), seed)
    return handler(ctx)


def _path(value: PathLike | None) -> Path | None:
    return None if value is None else Path(value)


def _parsed(ctx: _Context, read: Callable[[], T]) -> T:
    """``read()`` of report values; a value of the wrong shape is a one-line error."""
    try:
        return read()
    except AnonlabError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AnonlabError(
            f"the report '{ctx.report_path}' is malformed ({type(exc).__name__}: "
            f"{exc}): give the JSON report written with the release"
        ) from None


# --------------------------------------------------------------------------- families


def _report_criteria(ctx: _Context, base: Path | None) -> list[dict[str, Any]]:
    """The privacy models a generalize or apply report lists, file parameters found from here.

    A report of an earlier version has k-anonymity only (its ``k``).
    """
    entries = ctx.report.get("criteria")
    if not isinstance(entries, list):
        return [{"model": "k-anonymity", "k": int(ctx.value("k"))}]
    specs = []
    for entry in entries:
        spec = {"model": str(entry["model"]), **dict(entry["parameters"])}
        for key in ("hierarchy", "subset", "population"):
            if isinstance(spec.get(key), str):
                spec[key] = str(ctx.stored(spec[key], f"{key} of model '{spec['model']}'", base))
        specs.append(spec)
    return specs


def _model_tables(
    specs: list[dict[str, Any]], original: pd.DataFrame, delimiter: Any
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """The released records' original rows and the population the presence models compare
    with: with delta-presence or inclusion the input is the population and the research
    subset what was released; with k-map on a population table, that table."""
    from anonlab.verify.criteria import research_rows

    sep = delimiter if isinstance(delimiter, str) and delimiter else None
    for spec in specs:
        if spec["model"] in (
            "delta-presence",
            "inclusion",
            "profitability-journalist",
            "profitability-journalist-no-attack",
        ):
            rows = research_rows(original, read_table(spec["subset"], delimiter=sep))
            if rows is None:
                raise AnonlabError(
                    f"the research subset '{spec['subset']}' is not a subset of "
                    "the input: give the input and subset the release was "
                    "made from",
                    parameter="input",
                )
            return original.iloc[rows].reset_index(drop=True), original
    for spec in specs:
        if spec["model"] == "k-map" and spec.get("population"):
            return original, read_table(spec["population"], delimiter=sep)
    return original, None


def _generalization(ctx: _Context) -> VerifyResult:
    from anonlab.verify.criteria import check_criteria
    from anonlab.verify.generalization import (
        check_generalization,
        expected_stars,
    )

    source = ctx.params
    inputs = ctx.report.get("inputs") or {}
    base = None
    if "qi" not in source and ctx.params.get("from_report"):
        # an apply report of an earlier version: hierarchies and roles live in the first report
        first = ctx.stored(str(ctx.value("from_report", where=ctx.params)), "from_report")
        earlier = read_json(first)
        if not isinstance(earlier, dict) or not isinstance(earlier.get("parameters"), dict):
            raise AnonlabError(
                f"'{first}' is not the generalize report the apply report was "
                "made from: give the JSON report written by 'anonlab generalize'"
            )
        source, inputs = earlier["parameters"], earlier.get("inputs") or {}
        base = first.resolve().parent
    qi_paths, levels, specs, suppression = _parsed(
        ctx,
        lambda: (
            {str(c): str(p) for c, p in dict(ctx.value("qi", where=source)).items()},
            {str(c): int(v) for c, v in dict(ctx.value("transformation")).items()},
            _report_criteria(ctx, None),
            float(
                next(
                    (
                        v
                        for v in (
                            ctx.params.get("suppression"),
                            ctx.report.get("suppression_limit"),
                        )
                        if v is not None
                    ),
                    0.0,
                )
            ),
        ),
    )
    identifying = _parsed(ctx, lambda: [str(c) for c in source.get("identifying") or []])
    # a quasi-identifier without a file is aggregated in the others' classes, not generalized
    hierarchies = _stored_hierarchies(ctx, {c: p for c, p in qi_paths.items() if p}, inputs, base)
    table, (release_path, release) = ctx.read_input(), ctx.read_release()
    original, population = _model_tables(specs, table, ctx.params.get("delimiter"))
    limit = math.floor(suppression * len(original) + 1e-9)
    qis = list(levels)
    aggregated, missing = _aggregated(ctx)
    findings: list[str] = []
    if aggregated and len(release) == len(original):
        # each aggregate against its class, the classes rebuilt from the original and levels
        from anonlab.verify.aggregation import check_aggregates, relabel_full_domain

        labelled = relabel_full_domain(original, release, hierarchies, levels, list(aggregated))
        findings += check_aggregates(original, release, labelled, qis, aggregated, missing)
        release = labelled
    findings += check_generalization(
        original, release, hierarchies, levels, identifying, max_suppressed=limit
    )
    if set(qis) <= set(release.columns) and len(release) == len(original):
        # the models are judged on a release of the right shape
        findings += check_criteria(
            original,
            release,
            specs,
            qis,
            limit,
            expected_star=expected_stars(original, hierarchies, levels),
            population=population,
            hierarchies=hierarchies,
            levels=levels,
        )
    findings = list(dict.fromkeys(findings))  # both checks name a missing quasi-identifier
    summary = ""
    if not findings:
        stars = int((release[qis].astype(str) == "*").all(axis=1).sum())
        models = _models_text(specs)
        summary = (
            f"{ctx.report['command']} release '{release_path}' holds: {len(release)} "
            f"records, every class of the {len(qis)} QIs meets {models}, {stars} "
            f"suppressed (limit {limit}); every QI value is its hierarchy label at the "
            "levels " + ", ".join(f"{c}={v}" for c, v in levels.items())
        )
        if aggregated:
            summary += " (" + ", ".join(f"{c}: its class's {f}" for c, f in aggregated.items())
            summary += " instead)"
    return VerifyResult(ctx.report["command"], str(release_path), tuple(findings), summary)


def _aggregated(ctx: _Context) -> tuple[dict[str, str], str]:
    """A generalization report's aggregated quasi-identifiers (``aggregate_qi``, column ->
    function) and its rule for missing values (``aggregate_missing``)."""
    return _parsed(
        ctx,
        lambda: (
            {str(c): str(f) for c, f in dict(ctx.params.get("aggregate_qi") or {}).items()},
            str(ctx.params.get("aggregate_missing") or "ignore"),
        ),
    )


def _microaggregation(ctx: _Context) -> VerifyResult:
    import numpy as np

    from anonlab.verify.microaggregation import check_microaggregation, released_groups
    from anonlab.verify.tables import numeric_matrix

    numeric, nominal, ordinal, orders, k = _parsed(
        ctx,
        lambda: (
            [str(c) for c in ctx.value("columns")],
            [str(c) for c in ctx.report.get("nominal") or []],
            [str(c) for c in ctx.report.get("ordinal") or []],
            {
                str(c): [str(v) for v in vs]
                for c, vs in dict(ctx.params.get("orders") or {}).items()
            },
            int(ctx.value("k")),
        ),
    )
    original, (release_path, release) = ctx.read_input(), ctx.read_release()
    original, findings = _without_identifying(ctx, original, release)
    aggr = str(ctx.report.get("aggr", "mean"))
    strata = [str(c) for c in ctx.report.get("strata") or []]
    per_column = bool(ctx.report.get("per_column", False))
    if not findings:
        findings = check_microaggregation(
            original,
            release,
            k,
            numeric=numeric,
            nominal=nominal,
            ordinal=ordinal,
            orders=orders,
            aggr=aggr,
            trim=float(ctx.report.get("trim", 0.0)),
            per_column=per_column,
            strata=strata,
        )
    summary = ""
    if not findings:
        values, _ = numeric_matrix(release, numeric, "release")
        first = values[:, :1] if per_column else values
        sizes = np.bincount(released_groups(release, first, [*nominal, *ordinal, *strata]))
        what = {"trim": "trimmed mean", "onestep": "one-step mean"}.get(aggr, aggr)
        kinds = [f"{len(numeric)} numeric column(s) the group {what}s"] if numeric else []
        kinds += ["groups formed in each column on its own"] if per_column else []
        kinds += [f"within strata {', '.join(strata)}"] if strata else []
        kinds += [f"{len(nominal)} nominal the group modes"] if nominal else []
        kinds += [f"{len(ordinal)} ordinal the lower medians"] if ordinal else []
        summary = (
            f"microaggregate release '{release_path}' holds: {len(release)} records in "
            f"{sizes.size} groups of >= {k} (smallest {int(sizes.min())}); "
            f"{'; '.join(kinds)}; other columns unchanged"
        )
    return VerifyResult("microaggregate", str(release_path), tuple(findings), summary)


def _perturbation(ctx: _Context) -> VerifyResult:
    from anonlab.verify.perturbation import ORTHOGONAL, check_perturbation, pairs_description

    method, columns = _parsed(
        ctx, lambda: (str(ctx.value("method")), [str(c) for c in ctx.value("columns")])
    )
    key_path = ctx.key
    if key_path is None and ctx.params.get("key"):
        key_path = ctx.stored(str(ctx.params["key"]), "key")
    key = read_json(_existing(key_path, "key")) if key_path is not None else None
    original, (release_path, release) = ctx.read_input(), ctx.read_release()
    original, findings = _without_identifying(ctx, original, release)
    if not findings:
        findings = check_perturbation(original, release, columns, method, key=key)
    parts = []
    if method in ORTHOGONAL:
        parts.append(
            f"the distances of {pairs_description(len(release))} equal those of the "
            "input's z-scores to 1e-9"
        )
    parts.append(
        "the key undoes it to the input" if key is not None else "not inverted (no key given)"
    )
    summary = (
        f"perturb ({method}) release '{release_path}' holds: {len(release)} records; "
        + "; ".join(parts)
        + "; other columns unchanged"
    )
    return VerifyResult("perturb", str(release_path), tuple(findings), summary)


def _fusion(ctx: _Context) -> VerifyResult:
    from anonlab.verify.fusion import check_fusion

    templates, records = _parsed(
        ctx,
        lambda: (
            [([str(c) for c in t["qid"]], int(t["k"])) for t in ctx.value("templates")],
            None if ctx.report.get("records") is None else int(ctx.report["records"]),
        ),
    )
    release_path, release = ctx.read_release()
    findings = check_fusion(release, templates, records)
    shown = "; ".join(f"<{', '.join(q)}; k={k}>" for q, k in templates)
    summary = (
        f"{ctx.report['command']} release '{release_path}' holds: {len(release)} records; "
        f"every group of each template has >= k records: {shown}"
    )
    return VerifyResult(ctx.report["command"], str(release_path), tuple(findings), summary)


def _mondrian(ctx: _Context) -> VerifyResult:
    """A Mondrian release (``generalize --recoding mondrian``): :mod:`anonlab.verify.recoding`."""
    from anonlab.verify.recoding import check_recoding

    qi_paths, numeric, specs = _parsed(
        ctx,
        lambda: (
            {str(c): str(p) for c, p in dict(ctx.value("qi")).items()},
            [str(c) for c in ctx.params.get("numeric") or []],
            _report_criteria(ctx, None),
        ),
    )
    identifying = _parsed(ctx, lambda: [str(c) for c in ctx.params.get("identifying") or []])
    inputs = ctx.report.get("inputs") or {}
    ordered = [c for c, p in qi_paths.items() if not p] + numeric
    hierarchies = _stored_hierarchies(
        ctx, {c: p for c, p in qi_paths.items() if p and c not in ordered}, inputs
    )
    table, (release_path, release) = ctx.read_input(), ctx.read_release()
    aggregated, _ = _aggregated(ctx)
    findings = check_recoding(
        table, release, specs, hierarchies, ordered, identifying, aggregated=aggregated
    )
    summary = ""
    if not findings:
        models = _models_text(specs)
        summary = (
            f"mondrian release '{release_path}' holds: {len(release)} records, every "
            f"quasi-identifier value covers its original, every class meets {models}, "
            "none suppressed"
        )
    return VerifyResult("mondrian", str(release_path), tuple(findings), summary)


def _stored_hierarchies(
    ctx: _Context,
    paths: dict[str, str],
    inputs: Mapping[str, Any],
    base: Path | None = None,
) -> dict[str, Hierarchy]:
    """The hierarchy files a report names (``paths``: column -> stored path), each found as
    :meth:`_Context.stored` finds it and checked against the run's ``inputs`` (the report's
    ``inputs`` section: each file's hash)."""
    from anonlab.hierarchy import Hierarchy

    hierarchies = {}
    for col, stored in paths.items():
        found = ctx.stored(stored, f"hierarchy of '{col}'", base)
        _same_file(found, inputs.get(f"hierarchy:{col}"), f"hierarchy of '{col}'")
        hierarchies[col] = Hierarchy.from_csv(found)
    return hierarchies


def _models_text(specs: list[dict[str, Any]]) -> str:
    """The models of a report's criteria, as a summary names them (``k-anonymity, l-diversity
    on 'disease'``)."""
    return ", ".join(
        s["model"] + (f" on '{s['attribute']}'" if s.get("attribute") else "") for s in specs
    )


def _local_recoding(ctx: _Context) -> VerifyResult:
    """A local-recoding release (``generalize --recoding local``): :mod:`anonlab.verify.local`,
    at most ``floor(suppression * n)`` records with ``*`` in every quasi-identifier."""
    import math

    from anonlab.verify.local import check_local_recoding

    qi_paths, specs, suppression = _parsed(
        ctx,
        lambda: (
            {str(c): str(p) for c, p in dict(ctx.value("qi")).items()},
            _report_criteria(ctx, None),
            float(ctx.params.get("suppression") or 0.0),
        ),
    )
    identifying = _parsed(ctx, lambda: [str(c) for c in ctx.params.get("identifying") or []])
    inputs = ctx.report.get("inputs") or {}
    hierarchies = _stored_hierarchies(ctx, qi_paths, inputs)
    table, (release_path, release) = ctx.read_input(), ctx.read_release()
    limit = math.floor(suppression * len(table))
    aggregated, _ = _aggregated(ctx)
    findings = check_local_recoding(
        table, release, specs, hierarchies, limit, identifying, aggregated=aggregated
    )
    summary = ""
    if not findings:
        models = _models_text(specs)
        summary = (
            f"local-recoding release '{release_path}' holds: {len(release)} records, every "
            f"quasi-identifier value covers its original, every class meets {models}, "
            f"at most {limit} suppressed"
        )
    return VerifyResult("local-recoding", str(release_path), tuple(findings), summary)


def _suppression(ctx: _Context) -> VerifyResult:
    from anonlab.verify.suppression import check_suppression

    keys, k, combs, strata, alpha, suppressed = _parsed(
        ctx,
        lambda: (
            [str(c) for c in ctx.value("keys")],
            int(ctx.value("k")),
            [(int(a), int(b)) for a, b in ctx.report.get("combs") or []],
            [str(c) for c in ctx.report.get("strata") or []],
            float(ctx.value("alpha")),
            {str(c): int(n) for c, n in dict(ctx.value("suppressed_per_key")).items()},
        ),
    )
    original, (release_path, release) = ctx.read_input(), ctx.read_release()
    original, findings = _without_identifying(ctx, original, release)
    if not findings:
        findings = check_suppression(
            original,
            release,
            keys,
            k,
            combs=combs or None,
            strata=strata,
            alpha=alpha,
            suppressed=suppressed,
        )
    summary = ""
    if not findings:
        summary = (
            f"suppress release '{release_path}' holds: {len(release)} records, "
            f"{sum(suppressed.values())} key cells blanked, every other cell its original; "
            f"{'every combination of ' + str(len(combs)) + ' size(s)' if combs else 'the keys'}"
            f" k-anonymous (alpha {alpha:g})"
        )
    return VerifyResult("suppress", str(release_path), tuple(findings), summary)


def _masking(ctx: _Context) -> VerifyResult:
    from anonlab.verify.masking import check_masking

    columns = _parsed(ctx, lambda: [str(c) for c in ctx.value("masked_columns")])
    original, (release_path, release) = ctx.read_input(), ctx.read_release()
    original, findings = _without_identifying(ctx, original, release)
    seeded = ctx.report if ctx.seed is None else {**ctx.report, "seed": ctx.seed}
    if not findings:
        findings = check_masking(original, release, columns, seeded)
    summary = ""
    if not findings:
        exact = " (redrawn from the seed)" if seeded.get("seed") is not None else ""
        summary = (
            f"mask release '{release_path}' holds: {len(release)} records, "
            f"{ctx.report.get('method')} on {', '.join(columns)} as the report says{exact}; "
            "every other column its original"
        )
    return VerifyResult("mask", str(release_path), tuple(findings), summary)


_HANDLERS: dict[str, Callable[[_Context], VerifyResult]] = {
    "generalize": _generalization,
    "mondrian": _mondrian,
    "local-recoding": _local_recoding,
    "apply": _generalization,
    "microaggregate": _microaggregation,
    "perturb": _perturbation,
    "fuse": _fusion,
    "party": _fusion,
    "suppress": _suppression,
    "mask": _masking,
}
