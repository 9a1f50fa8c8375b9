"""The ``compare`` run: methods of every family on one table, measured alike (docs/compare.md).

:class:`CompareSettings` names one table (``input``, read as
:class:`~anonlab.runs.common.ReadSettings` say), the columns the ``attacker`` knows (the
quasi-identifiers every release is measured on) and a list of ``methods`` (TOML
``[[method]]`` tables): each a ``name`` (a label), a ``command`` (``generalize``, with
its ``recoding`` full-domain, ``mondrian`` or ``local``; ``microaggregate``; ``perturb``;
``suppress``; ``mask``) and that command's own settings under their TOML names. The
table, its reading options and the column roles (``identifying``, ``sensitive``,
``insensitive``, ``other``) are the top level's unless a method gives its own roles; a
method's risk section takes the attacker columns as its ``attacker_columns``.

:func:`run_compare` checks every method's settings before any work (a bad one is the
whole run's one-line error), then runs each through its family's own run function
(:func:`anonlab.runs.run`: read, method, the family's independent checker, risk), so
each release is the one the family's command writes. A method whose run fails (a
privacy model no release satisfies, say) is reported ``failed`` with its one-line error
and the others still run. Each release is measured against the table by
:func:`anonlab.metrics.compare.measure_release` (one utility loss, one linkage risk);
the report gives, per method, its settings, status, CPU seconds, those figures, its
records and suppressed records and cells, and the headline figures of its own risk
section and loss. ``releases`` (a folder) receives each release as
``<name>.csv``, as the family's command writes it (and re-reads and checks it); the
JSON report, the HTML page (a table and the R-U map) and the ``plot`` (the R-U map as a
PNG) are written together with them, or nothing is.
"""

from __future__ import annotations

import importlib
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pydantic import Field, field_validator, model_validator

from anonlab.errors import AnonlabError
from anonlab.metrics.compare import DEFAULT_SAMPLE, DEFAULT_THRESHOLD
from anonlab.outputs import Outputs
from anonlab.paths import PathLike
from anonlab.progress import ProgressFn
from anonlab.runs.common import (
    ReadSettings,
    RoleSettings,
    RunResult,
    file_of,
    paths_convention,
    reads_urls,
    stage_plot,
    stage_report,
    stored_path,
)
from anonlab.settings import Settings, read_toml, resolve_paths, split_names

if TYPE_CHECKING:
    import pandas as pd

#: each command a method may name: its settings model (module, class)
COMMANDS: dict[str, tuple[str, str]] = {
    "generalize": ("anonlab.runs.generalize_settings", "GeneralizeSettings"),
    "microaggregate": ("anonlab.runs.microaggregate", "MicroaggregateSettings"),
    "perturb": ("anonlab.runs.perturb", "PerturbSettings"),
    "suppress": ("anonlab.runs.suppress", "SuppressSettings"),
    "mask": ("anonlab.runs.mask", "MaskSettings"),
}
#: what a method takes from the top level unless it gives its own
INHERITED = (
    "input",
    "delimiter",
    "sheet",
    "table",
    "query",
    "storage_options",
    "identifying",
    "sensitive",
    "insensitive",
    "other",
)
#: the outputs compare writes itself: a method may not name them
METHOD_OUTPUTS = ("output", "output_table", "report", "html", "plot", "key")
#: a method's name is the file name of its release
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
#: the outputs of a compare run (beside one release per method)
COMPARE_OUTPUTS = ("report", "html", "plot")


def command_model(command: str) -> type[Settings]:
    """The settings model of a method's ``command``; one line naming the commands."""
    found = COMMANDS.get(command)
    if found is None:
        raise AnonlabError(
            f"command '{command}' is not one compare runs: give one of {', '.join(COMMANDS)}",
            parameter="method",
        )
    model: type[Settings] = getattr(importlib.import_module(found[0]), found[1])
    return model


def _resolve_method(entry: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """A ``[[method]]`` table's paths made relative to the TOML file's folder ``base``: its
    command's path settings, a generalization's criteria files, a masking matrix."""
    out = dict(entry)
    command = out.get("command")
    if not isinstance(command, str) or command not in COMMANDS:
        return out  # refused with its one line when validated
    model = command_model(command)
    out = resolve_paths(out, base, model.path_fields)
    if command == "generalize" and isinstance(out.get("criteria"), list):
        from anonlab.privacy.spec import resolve_criteria_paths

        out["criteria"] = resolve_criteria_paths(out["criteria"], base)
    parameters = out.get("parameters")
    if command == "mask" and isinstance(parameters, Mapping) and "matrix" in parameters:
        out["parameters"] = {**parameters, **resolve_paths(dict(parameters), base, ("matrix",))}
    return out


class CompareSettings(ReadSettings, RoleSettings):
    """Everything :func:`run_compare` needs (module text).

    ``categorical`` names attacker columns whose numbers are category codes (measured as
    categories: a code released as another is a changed category, not a gap).
    ``threshold`` is the re-identification probability a record counts as at risk from
    (default 0.2); ``sample`` the original records whose linkage is computed on a larger
    table (default 5,000), drawn with ``seed``. ``report`` (JSON), ``html``, ``plot``
    (PNG of the R-U map) and ``releases`` (a folder, one ``<name>.csv`` per method) are
    written when given.
    """

    path_fields: ClassVar[tuple[str, ...]] = ("input", "report", "html", "plot", "releases")
    output_fields: ClassVar[tuple[str, ...]] = (*COMPARE_OUTPUTS, "releases")

    input: str
    attacker: list[str]
    methods: list[dict[str, Any]] = Field(default_factory=list, alias="method")
    threshold: float = Field(default=DEFAULT_THRESHOLD, gt=0.0, le=1.0)
    sample: int = Field(default=DEFAULT_SAMPLE, ge=1)
    seed: int = Field(default=0, ge=0)
    categorical: list[str] = Field(default_factory=list)
    report: str | None = None
    html: str | None = None
    plot: str | None = None
    releases: str | None = None

    @classmethod
    def load(
        cls, config: PathLike | None = None, /, *, overwrite: bool = False, **overrides: Any
    ) -> Self:
        """:meth:`Settings.load`, with each method's paths read relative to the TOML file."""
        from anonlab.settings import (
            check_input_override,
            check_overwrite,
            merge_settings,
            validate_settings,
        )

        values: dict[str, Any] = {}
        if config is not None:
            path = Path(config)
            values = resolve_paths(read_toml(path), path.parent, cls.path_fields)
            table = values.get("method")
            if isinstance(table, list):
                values["method"] = [
                    _resolve_method(m, path.parent) if isinstance(m, Mapping) else m for m in table
                ]
            check_input_override(values, overrides, cls.input_fields, cls.output_fields)
            check_overwrite(cls, path, values, overrides, overwrite=overwrite)
        return validate_settings(cls, merge_settings(values, overrides))

    @field_validator("attacker", "categorical", mode="before")
    @classmethod
    def _attacker(cls, value: Any) -> Any:
        return split_names(value) if isinstance(value, str | list | tuple) else value

    @model_validator(mode="after")
    def _methods(self) -> Self:
        """Some attacker columns, at least one method, names unique and usable as file
        names, and every method's settings valid (:meth:`method_settings`)."""
        if not self.attacker:
            raise AnonlabError(
                "attacker: name the columns the attacker knows (the quasi-identifiers)",
                parameter="attacker",
            )
        odd = [c for c in self.categorical if c not in self.attacker]
        if odd:
            raise AnonlabError(
                f"categorical names {', '.join(odd)}, not an attacker column: name attacker "
                "columns only",
                parameter="categorical",
            )
        if not self.methods:
            raise AnonlabError(
                "give at least one [[method]] table (name, command and its settings)",
                parameter="method",
            )
        seen: set[str] = set()
        for entry in self.methods:
            name = entry.get("name")
            if not isinstance(name, str) or NAME.match(name) is None:
                raise AnonlabError(
                    f"method name {name!r} must be letters, digits and . _ + - (at most 64, "
                    "a letter or digit first): it names the method's release file",
                    parameter="method",
                )
            if name in seen:
                raise AnonlabError(
                    f"method name '{name}' is given twice: give every method its own name",
                    parameter="method",
                )
            seen.add(name)
            self.method_settings(entry)
        return self

    def method_settings(self, entry: Mapping[str, Any], output: str | None = None) -> Settings:
        """A method's settings as its family's model (module text); ``output`` its release
        file. One line naming the method when they are not valid."""
        name = entry.get("name")
        values = {k: v for k, v in entry.items() if k not in ("name", "command")}
        command = entry.get("command")
        try:
            if not isinstance(command, str):
                raise AnonlabError(
                    f"give its command, one of {', '.join(COMMANDS)}", parameter="command"
                )
            model = command_model(command)
            for key in METHOD_OUTPUTS:
                if values.get(key) is not None:
                    raise AnonlabError(
                        f"{key} is written by compare (its release goes to releases): "
                        f"leave {key} out",
                        parameter=key,
                    )
            if values.get("verify") is False:
                raise AnonlabError(
                    "verify is always on in compare: every release is checked by its "
                    "family's checker; leave verify out",
                    parameter="verify",
                )
            given = values.get("input")
            if given is not None and Path(str(given)).resolve() != Path(self.input).resolve():
                raise AnonlabError(
                    "compare runs every method on the top-level input: leave input out",
                    parameter="input",
                )
            for key in INHERITED:
                if key in model.model_fields and values.get(key) is None:
                    value = getattr(self, key)
                    if value not in (None, [], {}):
                        values[key] = value
            if "attacker_columns" in model.model_fields and not values.get("attacker_columns"):
                values["attacker_columns"] = list(self.attacker)
            values["input"] = self.input
            if output is not None:
                values["output"] = output
            return model(**values)
        except AnonlabError as exc:
            raise AnonlabError(f"method '{name}': {exc}", parameter="method") from None


def _hierarchies(settings: Settings) -> dict[str, Any]:
    """The hierarchies a generalization method read its quasi-identifiers with (its labels
    are read with them); none for the other families."""
    from anonlab.runs.generalize_steps import load_hierarchies

    qi = getattr(settings, "qi", None)
    if not isinstance(qi, Mapping):
        return {}
    return load_hierarchies({c: p for c, p in qi.items() if p})


def _own_figures(report: Mapping[str, Any]) -> dict[str, Any]:
    """The headline figures a run's own report gives: its risk section's prosecutor risk,
    its loss (GCP) where it has one, its suppressed records and cells."""
    out: dict[str, Any] = {}
    risk = report.get("risk")
    if isinstance(risk, Mapping):
        prosecutor = risk.get("prosecutor")
        if isinstance(prosecutor, Mapping):
            out["prosecutor_highest"] = prosecutor.get("highest")
            out["prosecutor_average"] = prosecutor.get("average")
        out["sample_uniques"] = risk.get("sample_uniques")
    pram = report.get("risk_pram")
    if isinstance(pram, Mapping):
        out["pram_prosecutor_highest"] = pram.get("prosecutor_highest")
        out["pram_prosecutor_average"] = pram.get("prosecutor_average")
    loss = report.get("loss")
    if isinstance(loss, Mapping) and "gcp" in loss:
        out["gcp"] = loss["gcp"]
    for key in ("suppressed_records", "cells_suppressed", "k"):
        if isinstance(report.get(key), int | float):
            out[key] = report[key]
    return out


def _stored_entry(entry: Mapping[str, Any], report: Path | None) -> dict[str, Any]:
    """A method's settings as the report records them: its paths as :func:`stored_path`
    stores them."""
    command = entry.get("command")
    fields = command_model(command).path_fields if command in COMMANDS else ()
    out: dict[str, Any] = {}
    for key, value in entry.items():
        if key in fields and isinstance(value, str) and value:
            out[key] = stored_path(value, report)
        elif key in fields and isinstance(value, Mapping):
            out[key] = {k: stored_path(str(v), report) if v else v for k, v in value.items()}
        else:
            out[key] = value
    return out


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    if isinstance(exc, AnonlabError):
        return line
    return f"{type(exc).__name__}: {line}" if line else type(exc).__name__


def _run_method(
    s: CompareSettings,
    entry: Mapping[str, Any],
    original: pd.DataFrame,
    folder: Path | None,
    report_path: Path | None,
) -> tuple[dict[str, Any], Path | None]:
    """Run one method and measure its release: its report entry and its release file."""
    from anonlab.metrics.compare import measure_release
    from anonlab.runs import run

    name = str(entry["name"])
    row: dict[str, Any] = {
        "name": name,
        "command": entry["command"],
        "settings": _stored_entry({k: v for k, v in entry.items() if k != "name"}, report_path),
    }
    file = None if folder is None else folder / f"{name}.csv"
    cpu, wall = time.process_time(), time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            settings = s.method_settings(entry, None if file is None else str(file))
            if entry["command"] == "generalize":
                row["recoding"] = getattr(settings, "recoding", "full-domain")
            result = run(settings)
            run_cpu = time.process_time() - cpu
            if result.release is None:
                raise AnonlabError("the run returned no release")
            figures = measure_release(
                original,
                result.release,
                s.attacker,
                _hierarchies(settings),
                threshold=s.threshold,
                sample=s.sample,
                seed=s.seed,
                categorical=s.categorical,
            )
        except Exception as exc:  # a failing method is reported; the others still run
            row.update(status="failed", error=_one_line(exc))
            row["cpu_seconds"] = time.process_time() - cpu
            row["wall_seconds"] = time.perf_counter() - wall
            row["warnings"] = sorted({_one_line(w.message) for w in caught})  # type: ignore[arg-type]
            return row, None
    row["status"] = "ok"
    row["error"] = None
    row["cpu_seconds"] = time.process_time() - cpu
    row["run_cpu_seconds"] = run_cpu
    row["wall_seconds"] = time.perf_counter() - wall
    row.update(figures)
    row["own"] = _own_figures(result.report)
    row["verified"] = bool(result.report.get("verified", False))
    row["warnings"] = sorted({_one_line(w.message) for w in caught})  # type: ignore[arg-type]
    return row, file if file is not None and file.exists() else None


def summary_rows(methods: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per method of the comparison table (the page's and the command line's)."""
    rows: list[dict[str, Any]] = []
    for m in methods:
        ok = m.get("status") == "ok"
        rows.append(
            {
                "name": m["name"],
                "command": m["command"] + (f" ({m['recoding']})" if m.get("recoding") else ""),
                "status": m.get("status"),
                "utility_loss": m["utility_loss"]["overall"] if ok else None,
                "linkage_mean": m["linkage"]["mean"] if ok else None,
                "linkage_at_risk": m["linkage"]["at_risk"] if ok else None,
                "linkage_highest": m["linkage"]["highest"] if ok else None,
                "suppressed_records": m.get("suppressed_records"),
                "cpu_seconds": m.get("cpu_seconds"),
                "error": m.get("error"),
            }
        )
    return rows


@reads_urls
def run_compare(settings: CompareSettings, *, progress: ProgressFn | None = None) -> RunResult:
    """Run every method of ``settings`` on its table, measure every release alike and write
    the report, page, plot and releases together, or nothing (module text).

    ``progress`` hears ``("method NAME", i, methods)`` before each method.
    """
    from anonlab.io import read_table
    from anonlab.report import report_header

    s = settings
    started, cpu = time.perf_counter(), time.process_time()
    names = [str(m["name"]) for m in s.methods]
    targets: dict[str, str | None] = {name: getattr(s, name) for name in COMPARE_OUTPUTS}
    if s.releases is not None:
        for name in names:
            targets[f"release:{name}"] = str(Path(s.releases) / f"{name}.csv")
    files = {p for m in s.methods for p in _method_inputs(m)}
    with Outputs(targets, inputs=[file_of(s.input), *files]) as outputs:
        original = read_table(s.input, **s.read_options())
        absent = [c for c in s.attacker if c not in original.columns]
        if absent:
            raise AnonlabError(
                f"attacker names columns the table does not have: {', '.join(absent)} (it "
                f"has {', '.join(map(str, original.columns))})",
                parameter="attacker",
            )
        where = outputs.path("report")
        methods: list[dict[str, Any]] = []
        with tempfile.TemporaryDirectory(prefix="anonlab-compare-") as scratch:
            folder = Path(scratch) if s.releases is not None else None
            for i, entry in enumerate(s.methods):
                if progress is not None:
                    progress(f"method {entry['name']}", i, len(s.methods))
                row, file = _run_method(s, entry, original, folder, where)
                methods.append(row)
                if file is not None:
                    outputs.stage(f"release:{row['name']}", _copier(file))
            parameters = s.model_dump(by_alias=False)
            for key in s.path_fields:
                if isinstance(parameters.get(key), str):
                    parameters[key] = stored_path(parameters[key], where)
            parameters["methods"] = [m["settings"] | {"name": m["name"]} for m in methods]
            report = report_header("compare", parameters, {"data": file_of(s.input)})
            report["paths"] = paths_convention(where)
            report["attacker"] = list(s.attacker)
            report["records"] = len(original)
            report["threshold"] = s.threshold
            report["sample"] = s.sample
            report["sampled"] = len(original) > s.sample
            report["methods"] = methods
            report["comparison"] = summary_rows(methods)
            report["failed"] = [m["name"] for m in methods if m["status"] != "ok"]
            report["cpu_seconds"] = time.process_time() - cpu
            report["runtime_seconds"] = time.perf_counter() - started
            stage_report(outputs, report)
            stage_plot(outputs, report)
            written = outputs.commit()
    return RunResult(report, None, written)


def _copier(source: Path) -> Any:
    def copy(tmp: Path) -> None:
        shutil.copyfile(source, tmp)

    return copy


def _method_inputs(entry: Mapping[str, Any]) -> list[str]:
    """The files a method reads (hierarchies, a masking matrix), so that no output of the
    comparison is written over one."""
    found: list[str] = []
    qi = entry.get("qi")
    if isinstance(qi, Mapping):
        found.extend(str(p) for p in qi.values() if p)
    parameters = entry.get("parameters")
    if isinstance(parameters, Mapping) and isinstance(parameters.get("matrix"), str):
        found.append(parameters["matrix"])
    return found


def compare(
    settings: CompareSettings | Mapping[str, Any] | PathLike,
    *,
    progress: ProgressFn | None = None,
) -> RunResult:
    """Compare methods of every family on one table (docs/compare.md): ``settings`` are a
    :class:`CompareSettings`, their values as a dict (``methods`` a list of dicts, each a
    ``name``, a ``command`` and its settings), or a TOML file's path. Returns the report
    (``report["comparison"]``: one row per method) and the files written.

    Example: ``compare("examples/compare_tarragona.toml").report["comparison"]``.
    """
    if isinstance(settings, CompareSettings):
        chosen = settings
    elif isinstance(settings, Mapping):
        chosen = CompareSettings(**settings)
    else:
        chosen = CompareSettings.load(settings)
    return run_compare(chosen, progress=progress)
