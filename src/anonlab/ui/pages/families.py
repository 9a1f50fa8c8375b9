"""The method pages of every family but generalization, and the risk-utility map.

- ``/method/microaggregate``, ``/method/mask``, ``/method/suppress``,
  ``/method/perturb``: a form of the family's settings model
  (:mod:`anonlab.ui.fields`) over a loaded table; the table's read settings
  and roles are the values' start, the masked columns default to its
  quasi-identifiers; "Run" starts the run (:func:`anonlab.ui.forms.start_run`),
  "settings.toml" downloads the values as the TOML file the command's
  ``--config`` reads (outputs beside it);
- ``/method/risk``: the risk of the loaded table as it is (another tool's
  release, say): :func:`anonlab.runs.risk.run_risk` as a job, the risk settings
  checked by the same model as every release's
  (:class:`~anonlab.risk.release.ReleaseRiskSettings`);
- ``/method/fuse``: fusion's settings over a fusion configuration on this
  machine (``fusion.toml``, which names the providers' files): ``fuse`` runs
  every provider in this process, so the app runs it as a job (``command.sh`` in
  its folder: the ``anonlab fuse`` command line that repeats it, since ``fuse``
  reads its configuration and flags, not a settings TOML); a networked run
  (``anonlab party``, one process per party on their own machines) cannot run
  from here, so the page gives the parties' commands (certificates, then one
  ``anonlab party`` per party) and shows a fusion report
  (``/method/fuse/report``) that such a run wrote;
- ``/compare``: methods of several families on one table, measured alike: the
  runs of this session on the table and any further ``[[method]]`` tables in
  TOML; its results show the R-U map (``/compare/{id}/map.png``) and the table.

The results of each run are ``templates/results/<command>.html``, which the run
page includes with ``job`` and ``report``.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from anonlab.errors import AnonlabError
from anonlab.settings import validate_settings
from anonlab.ui import current
from anonlab.ui.fields import (
    MASK_HELP,
    SET_BY_APP,
    FieldGroup,
    FormField,
    model_fields,
    parse_fields,
    toml_value,
)
from anonlab.ui.forms import new_job, settings_model, start_run, with_outputs
from anonlab.ui.jobs import DONE, Job, JobStore
from anonlab.ui.templating import render
from anonlab.ui.workspace import LoadedTable, Workspace

#: the families of this module: command -> (title, one line on what it does)
FAMILIES: dict[str, tuple[str, str]] = {
    "microaggregate": (
        "Microaggregation",
        "Groups of k to 2k-1 similar records share their mean (numeric), mode (nominal) or "
        "median (ordinal): the masked columns are the quasi-identifiers.",
    ),
    "mask": (
        "Masking",
        "sdcMicro's masking methods (PRAM, top/bottom coding, global recoding, noise, rank "
        "swapping, shuffling), their parameters named as sdcMicro's.",
    ),
    "suppress": (
        "Cell suppression",
        "Single key cells are blanked until every combination of the keys is k-anonymous "
        "(sdcMicro's localSuppression).",
    ),
    "perturb": (
        "Perturbation",
        "Numeric columns transformed (orthogonal, rotation, Gaussian noise) and measured by "
        "the attacks that would undo it; the key that undoes it stays in the run's folder.",
    ),
    "risk": (
        "Risk of a table",
        "The re-identification risk of the table as it is (another tool's release, say): "
        "prosecutor, journalist and marketer risk, records at risk, class sizes, l and t.",
    ),
    "fuse": (
        "Fusion",
        "Several providers' tables fused into one that meets every anonymity template.",
    ),
    "compare": (
        "Risk-utility map",
        "Methods of several families on one table, measured alike: one utility loss and one "
        "linkage risk each, on one map.",
    ),
}

#: the parameter that holds the masked columns of a table family (prefilled with the QIs)
MASKED: dict[str, str] = {
    "microaggregate": "columns",
    "mask": "columns",
    "suppress": "qi",
    "perturb": "columns",
}

#: the roles of the columns a method does not mask, as the role settings name them
ROLE_NAMES = ("identifying", "sensitive", "insensitive")


# ---------------------------------------------------------------------------
# The loaded table and its roles
# ---------------------------------------------------------------------------


def _workspace(request: Request) -> Workspace:
    workspace: Workspace = request.app.state.workspace
    return workspace


def _jobs(request: Request) -> JobStore:
    jobs: JobStore = request.app.state.jobs
    return jobs


def column_names(table: LoadedTable) -> list[str]:
    """The table's columns, in its order."""
    return [str(c["name"]) for c in table.columns]


def table_values(table: LoadedTable) -> dict[str, Any]:
    """The settings values every run on ``table`` starts from: how it is read, and the
    roles of the columns the method does not mask (refused until every column has one)."""
    values = current.table_values(table, hierarchies=False)
    return {k: v for k, v in values.items() if v is not None}


# ---------------------------------------------------------------------------
# The forms of the table families
# ---------------------------------------------------------------------------


def family_groups(command: str, table: LoadedTable | None) -> list[FieldGroup]:
    """The fieldsets of ``command``'s page: the method's parameters (a masking method's in a
    set of their own each), then the risk settings."""
    model = settings_model(command)
    prefill: dict[str, Any] = {}
    masked = MASKED.get(command)
    if masked is not None and table is not None:
        prefill.update(masked_prefill(command, table))
        if "sensitive_hierarchies" in model.model_fields:
            sensitive = current.columns_with(table, "sensitive")
            trees = {c: table.hierarchies.get(c) for c in sensitive}
            trees = {c: p for c, p in trees.items() if p}
            if trees:
                prefill["sensitive_hierarchies"] = trees
    fields = model_fields(model, skip=("parameters",), values=prefill, command=command)
    if command == "mask":
        from anonlab.masking.registry import method_names

        choices = tuple(method_names())
        fields = [
            replace(f, kind="select", choices=choices) if f.key == "method" else f for f in fields
        ]
    groups = [
        FieldGroup("method", "Parameters", [f for f in fields if f.group != "risk"]),
        FieldGroup(
            "risk",
            "Risk of the release",
            [f for f in fields if f.group == "risk"],
            note="How the release's re-identification risk is measured and judged.",
            open=False,
        ),
    ]
    if command == "mask":
        groups[1:1] = mask_method_groups()
    return groups


#: the column types of the Load page's preview that hold numbers
NUMBER_TYPES = ("integer", "decimal")


def masked_prefill(command: str, table: LoadedTable) -> dict[str, list[str]]:
    """What the masked-columns fields show first: the table's quasi-identifiers; for
    microaggregation the numeric ones as ``columns`` and the others as ``nominal`` (the
    Load page's column types), for perturbation the numeric ones alone."""
    qi = current.columns_with(table, "qi")
    types = {str(c["name"]): c.get("type") for c in table.columns}
    numeric = [c for c in qi if types.get(c) in NUMBER_TYPES]
    if command == "microaggregate":
        other = [c for c in qi if c not in numeric]
        return {k: v for k, v in (("columns", numeric), ("nominal", other)) if v}
    if command == "perturb":
        return {"columns": numeric} if numeric else {}
    return {MASKED[command]: qi} if qi else {}


def mask_method_groups() -> list[FieldGroup]:
    """One fieldset per masking method: its parameters, named ``parameters.<method>.<name>``."""
    from anonlab.masking.registry import get_method, method_names

    out = []
    for name in method_names():
        method = get_method(name)
        fields = model_fields(
            method.params, prefix=f"parameters.{name}.", help_texts=MASK_HELP, skip=()
        )
        out.append(
            FieldGroup(
                f"parameters.{name}",
                f"{name}: {method.summary}",
                fields,
                note=f"sdcMicro's {method.sdcmicro}",
            )
        )
    return out


def family_values(
    command: str, form: FormData, table: LoadedTable, groups: Sequence[FieldGroup]
) -> dict[str, Any]:
    """The settings values of a submitted family form: the table's, then the form's."""
    values = table_values(table)
    for group in groups:
        if group.key.startswith("parameters."):
            continue
        values.update(parse_fields(form, group.fields))
    if command == "mask":
        chosen = values.get("method")
        for group in groups:
            if group.key == f"parameters.{chosen}":
                parameters = parse_fields(form, group.fields)
                if parameters:
                    values["parameters"] = parameters
    check_unmasked(command, values, table)
    return absolute_paths(values, settings_model(command).path_fields)


def _absolute(value: Any) -> Any:
    """A path typed on a page (text, or a table of them) made absolute, ``~`` expanded: the
    run reads it from the app's folder, and ``settings.toml`` must name the same file."""
    if isinstance(value, str) and value and "://" not in value:
        return str(Path(value).expanduser().resolve())
    if isinstance(value, Mapping):
        return {k: _absolute(v) for k, v in value.items()}
    return value


def absolute_paths(values: Mapping[str, Any], path_fields: Sequence[str]) -> dict[str, Any]:
    """``values`` with the paths the user typed absolute: the model's path parameters
    (``library``, ``sensitive_hierarchies``...) and a masking method's ``matrix``."""
    out = dict(values)
    for name in path_fields:
        if name in out and name != "input":
            out[name] = _absolute(out[name])
    parameters = out.get("parameters")
    if isinstance(parameters, Mapping) and "matrix" in parameters:
        out["parameters"] = {**parameters, "matrix": _absolute(parameters["matrix"])}
    return out


#: the parameters whose columns a method masks or reads besides ``MASKED``'s
READ_TOO = ("nominal", "ordinal", "strata")
#: a masking method's parameters that name columns it reads (released as they are)
READ_PARAMETERS = ("strata", "predictors")


def check_unmasked(command: str, values: Mapping[str, Any], table: LoadedTable) -> None:
    """Refuse, before the run, quasi-identifiers of the Roles page that the method neither
    masks nor reads: the run would find them with no role (the command line's refusal), and
    an attacker knows them. ``other = "insensitive"`` releases them as they are, as in the
    CLI."""
    masked = values.get(MASKED[command])
    if values.get("other") is not None or not isinstance(masked, list):
        return
    named = {*masked, *(c for name in READ_TOO for c in values.get(name) or ())}
    parameters = values.get("parameters") or {}
    for name in READ_PARAMETERS:
        given = parameters.get(name)
        named.update([given] if isinstance(given, str) else given or ())
    left = [c for c in current.columns_with(table, "qi") if c not in named]
    if left:
        raise AnonlabError(
            f"{', '.join(left)}: quasi-identifier(s) on the Roles page that "
            f"{MASKED[command]} does not mask: choose them in {MASKED[command]}, give them "
            "another role on the Roles page, or set other to 'insensitive' (released as "
            "they are)",
            parameter=MASKED[command],
        )


async def _family_page(request: Request, command: str) -> Response:
    if request.method == "POST":
        form = await request.form()
        table = current.current_table(request, str(form.get("table") or "") or None)
        groups = family_groups(command, table)
        values = family_values(command, form, table, groups)
        if form.get("action") == "toml":
            return settings_download(command, values)
        return start_run(request, command, values)
    table = current.current_table(request)
    return _form_page(request, command, table, family_groups(command, table))


def _form_page(
    request: Request,
    command: str,
    table: LoadedTable | None,
    groups: Sequence[FieldGroup],
    *,
    needs_table: bool = True,
    extra: str | None = None,
    after: str | None = None,
    **context: Any,
) -> Response:
    title, intro = FAMILIES[command]
    return render(
        request,
        "method_family.html",
        command=command,
        title=title,
        intro=intro,
        action=request.url.path,
        table=table,
        tables=list(_workspace(request).tables.values()),
        columns=column_names(table) if table is not None else [],
        roles=_roles_summary(table),
        groups=groups,
        needs_table=needs_table,
        extra=extra,
        after=after,
        download=(
            "Download the command line" if command in ("fuse", "risk") else "Download settings.toml"
        ),
        **context,
    )


def _roles_summary(table: LoadedTable | None) -> list[tuple[str, list[str]]]:
    if table is None:
        return []
    labels = (
        ("qi", "quasi-identifiers"),
        ("sensitive", "sensitive"),
        ("insensitive", "insensitive"),
        ("identifying", "identifying"),
    )
    return [(label, current.columns_with(table, role)) for role, label in labels]


def settings_download(command: str, values: Mapping[str, Any]) -> Response:
    """``values`` validated by the command's model and given as the TOML file its
    ``--config`` reads, with the outputs named beside the file."""
    import tomli_w

    model = settings_model(command)
    full = with_outputs(values, Path("."), model)
    validate_settings(model, full)
    lines = [f"# anonlab {command} --config {command}.toml   (settings from the web app)"]
    if "/uploads/" in str(full.get("input", "")):
        lines.append("# input is the app's copy of the upload, removed when the app stops:")
        lines.append("# point it at your file")
    text = "\n".join(lines) + "\n" + tomli_w.dumps({k: v for k, v in full.items() if v is not None})
    return Response(
        text,
        media_type="application/toml",
        headers={"Content-Disposition": f'attachment; filename="{command}.toml"'},
    )


async def microaggregate_page(request: Request) -> Response:
    return await _family_page(request, "microaggregate")


async def mask_page(request: Request) -> Response:
    return await _family_page(request, "mask")


async def suppress_page(request: Request) -> Response:
    return await _family_page(request, "suppress")


async def perturb_page(request: Request) -> Response:
    return await _family_page(request, "perturb")


# ---------------------------------------------------------------------------
# Risk of a table
# ---------------------------------------------------------------------------

#: the risk settings' names in :func:`anonlab.runs.risk.run_risk`'s keywords
RISK_KEYWORDS = {"risk_threshold": "thresholds", "sensitive_hierarchies": "hierarchies"}
#: how the loaded table's read settings are passed to :func:`~anonlab.runs.risk.run_risk`
RISK_READ = {"delimiter": "delimiter", "sheet": "sheet", "table": "table_name", "query": "query"}


def risk_groups(table: LoadedTable | None) -> list[FieldGroup]:
    """The risk page's fields: the attacker's columns and the risk settings."""
    from anonlab.risk.release import ReleaseRiskSettings
    from anonlab.runs.common import RoleSettings

    qi = current.columns_with(table, "qi") if table is not None else []
    known = FormField(
        "qi",
        "qi",
        "columns",
        value=qi or None,
        required=True,
        help="The attacker's knowledge (sdcMicro's keyVars, ARX's quasi-identifiers).",
    )
    fields = model_fields(ReleaseRiskSettings, skip=("fail_on_risk",), command="risk")
    other = model_fields(RoleSettings, command="risk")
    return [
        FieldGroup(
            "method",
            "What the attacker knows",
            [known, *other],
            note="The table is measured as it is. Identifying columns are not measured (the "
            "risk is that of the attacker's columns, as if they were dropped); sensitive "
            "columns get their l and t.",
        ),
        FieldGroup("risk", "Risk settings", [f for f in fields]),
    ]


def risk_values(form: FormData, table: LoadedTable, groups: Sequence[FieldGroup]) -> dict[str, Any]:
    """The keywords of :func:`~anonlab.runs.risk.run_risk` for the loaded table, as its
    command line's flags give them (identifying columns are not measured: insensitive)."""
    from anonlab.risk.release import ReleaseRiskSettings

    given: dict[str, Any] = {}
    for group in groups:
        given.update(parse_fields(form, group.fields))
    qi = given.pop("qi", None)
    if not qi:
        raise AnonlabError("qi: name the columns the attacker knows", parameter="qi")
    other = given.pop("other", None)
    validate_settings(ReleaseRiskSettings, given)  # the one-line errors of every release's
    known = {*qi, *(given.get("attacker_columns") or ())}
    left = [c for c in current.columns_with(table, "qi") if c not in known]
    if left and other is None:
        raise AnonlabError(
            f"{', '.join(left)}: quasi-identifier(s) on the Roles page that qi does not name: "
            "choose them in qi, give them another role on the Roles page, or set other to "
            "'insensitive' (not known to the attacker)",
            parameter="qi",
        )
    read = {k: v for k, v in table.read.items() if v is not None}
    values: dict[str, Any] = {"table": read.get("input"), "qi": list(qi)}
    for name, keyword in RISK_READ.items():
        if read.get(name) is not None:
            values[keyword] = read[name]
    sensitive = current.columns_with(table, "sensitive")
    insensitive = current.columns_with(table, "insensitive") + current.columns_with(
        table, "identifying"
    )
    if sensitive:
        values["sensitive"] = sensitive
    if insensitive:
        values["insensitive"] = insensitive
    if other is not None:
        values["other"] = other
    for name, value in absolute_paths(given, ("sensitive_hierarchies",)).items():
        values[RISK_KEYWORDS.get(name, name)] = value
    return values


def risk_command_line(values: Mapping[str, Any]) -> str:
    """The ``anonlab risk`` command line that measures the same (``risk`` has no TOML)."""
    flags = {
        "table_name": "--table",
        "population_size": "--population",
        "thresholds": "--risk-threshold",
        "hierarchies": "--hierarchy",
    }
    words = ["anonlab", "risk", str(values["table"])]
    for name, value in values.items():
        if name == "table":
            continue
        flag = flags.get(name, "--" + name.replace("_", "-"))
        if name == "hierarchies":
            words += [w for c, p in value.items() for w in (flag, f"{c}={p}")]
        elif name == "thresholds":
            words += [w for t in value for w in (flag, str(t))]
        elif isinstance(value, list):
            words += [flag, ",".join(str(v) for v in value)]
        else:
            words += [flag, str(value)]
    return shlex.join(words)


def risk_job(workspace: Workspace, values: Mapping[str, Any]) -> Job:
    """A job measuring the risk ``values`` describe; its report in the run's folder, and
    ``command.sh`` the command line that measures the same."""
    from anonlab.progress import ProgressFn
    from anonlab.runs.common import RunResult
    from anonlab.runs.risk import run_risk

    job_id = workspace.new_id("r")
    folder = workspace.folder("runs") / job_id
    folder.mkdir(mode=0o700)
    full = {**values, "report": str(folder / "report.json")}
    (folder / "command.sh").write_text(risk_command_line(full) + "\n", encoding="utf-8")
    arguments = dict(full)
    table, qi = arguments.pop("table"), arguments.pop("qi")

    def work(progress: ProgressFn) -> RunResult:
        progress("risk", 0, None)
        return run_risk(table, qi, **arguments)

    return Job(id=job_id, command="risk", values=full, work=work, folder=folder)


async def risk_page(request: Request) -> Response:
    workspace = _workspace(request)
    if request.method == "POST":
        form = await request.form()
        table = current.current_table(request, str(form.get("table") or "") or None)
        values = risk_values(form, table, risk_groups(table))
        if form.get("action") == "toml":
            return Response(
                risk_command_line({**values, "report": "report.json"}) + "\n",
                media_type="text/x-shellscript",
                headers={"Content-Disposition": 'attachment; filename="risk.sh"'},
            )
        job = _jobs(request).start(risk_job(workspace, values))
        return RedirectResponse(f"/runs/{job.id}", status_code=303)
    table = current.current_table(request)
    return _form_page(request, "risk", table, risk_groups(table))


# ---------------------------------------------------------------------------
# Fusion
# ---------------------------------------------------------------------------


def fuse_groups() -> list[FieldGroup]:
    """The fusion page's fields: the configuration file, then FuseSettings' parameters."""
    model = settings_model("fuse")
    config = FormField(
        "config",
        "config",
        "text",
        required=True,
        help="The fusion configuration (fusion.toml) on this machine: parties, templates, "
        "taxonomies; its relative paths are read from its folder.",
    )
    fields = model_fields(
        model, skip=("config",), app_set=set(SET_BY_APP) - set(ROLE_NAMES), command="fuse"
    )
    from anonlab.runs.fusion import SCORES

    fields = [
        replace(f, help=f"Columns added to the config's {f.key} list, comma-separated.")
        if f.key in ROLE_NAMES
        else replace(f, kind="select", choices=tuple(SCORES))
        if f.key == "score"
        else replace(f, kind="names")  # no table here: the fused columns typed
        if f.kind == "columns"
        else replace(f, kind="text")
        if f.kind == "column"
        else f
        for f in fields
    ]
    return [
        FieldGroup("method", "Fusion", [config, *(f for f in fields if f.group != "risk")]),
        FieldGroup("risk", "Risk of the fused table", [f for f in fields if f.group == "risk"]),
    ]


def fuse_values(form: FormData, groups: Sequence[FieldGroup]) -> dict[str, Any]:
    """FuseSettings' values from the form; the configuration must be a file here."""
    values: dict[str, Any] = {}
    for group in groups:
        values.update(parse_fields(form, group.fields))
    values = absolute_paths(values, ("sensitive_hierarchies",))
    config = values.get("config")
    if not config:
        raise AnonlabError("config: give the path of the fusion configuration", parameter="config")
    path = Path(str(config)).expanduser()
    if not path.is_file():
        raise AnonlabError(f"config: no file '{config}' on this machine", parameter="config")
    values["config"] = str(path.resolve())
    from anonlab.fusion.config import load_config

    load_config(path)  # the configuration's own one-line errors, before any run
    return values


#: FuseSettings' names that the ``fuse`` command spells otherwise
FUSE_FLAGS = {"population_size": "--population", "sensitive_hierarchies": "--sensitive-hierarchy"}


def fuse_command_line(values: Mapping[str, Any], outputs: Mapping[str, str]) -> str:
    """The ``anonlab fuse`` command line of ``values`` with ``outputs`` (``fuse`` reads its
    fusion configuration and flags, not a settings TOML)."""
    words = ["anonlab", "fuse", str(values["config"])]
    for name, path in outputs.items():
        words += [f"--{name}", path]
    for name, value in values.items():
        flag = FUSE_FLAGS.get(name, "--" + name.replace("_", "-"))
        if name in ("config", *outputs) or value is None:
            continue
        if name == "keep_id":
            words.append("--keep-id" if value else "--drop-id")
        elif isinstance(value, bool):
            words.append(flag if value else f"--no-{flag[2:]}")
        elif isinstance(value, Mapping):
            words += [w for c, p in value.items() for w in (flag, f"{c}={p}")]
        elif name == "risk_threshold":
            words += [w for t in value for w in (flag, str(t))]
        elif isinstance(value, list):
            words += [flag, ",".join(str(v) for v in value)]
        else:
            words += [flag, str(value)]
    return shlex.join(words)


#: the risk settings a networked party takes on its command line (its roles, score and
#: keep_id are the configuration's: every party runs with the same ones)
PARTY_SETTINGS = (
    "attacker_columns",
    "max_risk",
    "fail_on_risk",
    "risk_threshold",
    "population_size",
    "sampling_fraction",
    "weights",
    "sensitive_hierarchies",
)


def party_command_lines(values: Mapping[str, Any]) -> str:
    """The commands of a networked fusion over ``values["config"]``: the certificates, then
    one ``anonlab party`` per party of the configuration (a provider writes the fused
    table and its report, a helper its report), each to run on that party's own host."""
    from anonlab.fusion.config import load_config

    config = str(values["config"])
    loaded = load_config(Path(config))
    ca = loaded.tls.get("ca")  # the configuration's certificates, where --make-certs writes
    folder = Path(str(ca)).parent if ca else Path(config).parent / "certs"
    lines = [
        "# A networked fusion: one process per party, each on its own host with its own data,",
        "# all with the same configuration (docs/fusion-protocol.md). Certificates first:",
        shlex.join(["anonlab", "party", config, "--make-certs", str(folder)]),
    ]
    ignored = [k for k in ("score", "keep_id", *ROLE_NAMES, "other") if values.get(k) is not None]
    if ignored:
        lines.append(
            f"# {', '.join(ignored)}: a party takes them from the configuration only "
            "(its [fusion] table), not from its command line"
        )
    risk = {k: v for k, v in values.items() if k in PARTY_SETTINGS}
    for party in loaded.parties:
        outputs = {"report": f"{party.id}.json"}
        if party.role == "provider":
            outputs = {"output": f"{party.id}.csv", **outputs}
        line = fuse_command_line({"config": config, **risk}, outputs)
        words = shlex.split(line)
        words[1:3] = ["party", config, "--party", party.id]
        lines += [f"# on {party.id}'s host ({party.role}):", shlex.join(words)]
    return "\n".join(lines) + "\n"


#: the outputs of a fusion run from the app, in its folder
FUSE_OUTPUTS = {"output": "fused.csv", "report": "report.json", "html": "report.html"}


async def fuse_page(request: Request) -> Response:
    if request.method == "POST":
        form = await request.form()
        groups = fuse_groups()
        values = fuse_values(form, groups)
        if form.get("action") in ("toml", "party"):
            party = form.get("action") == "party"
            text = (
                party_command_lines(values)
                if party
                else fuse_command_line(values, FUSE_OUTPUTS) + "\n"
            )
            name = "parties.sh" if party else "fuse.sh"
            return Response(
                text,
                media_type="text/x-shellscript",
                headers={"Content-Disposition": f'attachment; filename="{name}"'},
            )
        job = new_job(_workspace(request), "fuse", values)
        outputs = {k: str(job.values[k]) for k in FUSE_OUTPUTS}
        line = fuse_command_line(job.values, outputs)
        (job.folder / "command.sh").write_text(line + "\n", encoding="utf-8")
        _jobs(request).start(job)
        return RedirectResponse(f"/runs/{job.id}", status_code=303)
    return _form_page(
        request,
        "fuse",
        None,
        fuse_groups(),
        needs_table=False,
        extra="method_fuse_extra.html",
        after="method_fuse_after.html",
    )


def read_fusion_report(path_text: str | None) -> dict[str, Any]:
    """A fusion report (``fuse`` or ``party``) on this machine, as JSON."""
    if not path_text:
        raise AnonlabError("path: give the path of a fusion report (JSON)", parameter="path")
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise AnonlabError(f"path: no file '{path_text}' on this machine", parameter="path")
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AnonlabError(f"'{path_text}' is not a JSON report: {exc}", parameter="path") from None
    if not isinstance(report, dict) or report.get("command") not in ("fuse", "party"):
        raise AnonlabError(
            f"'{path_text}' is not a fusion report (its command is not fuse or party)",
            parameter="path",
        )
    return report


async def fuse_report_page(request: Request) -> Response:
    path = request.query_params.get("path")
    report = read_fusion_report(path)
    return render(request, "method_fuse_report.html", report=report, source=path, job=None)


# ---------------------------------------------------------------------------
# The risk-utility map
# ---------------------------------------------------------------------------


def compare_groups(table: LoadedTable | None) -> list[FieldGroup]:
    model = settings_model("compare")
    prefill: dict[str, Any] = {}
    if table is not None:
        qi = current.columns_with(table, "qi")
        if qi:
            prefill["attacker"] = qi
    fields = model_fields(model, skip=("methods", "method"), values=prefill, command="compare")
    return [FieldGroup("method", "Measures", fields)]


def compared_runs(jobs: JobStore, table: LoadedTable | None) -> list[Job]:
    """This session's finished runs on ``table`` of a family compare runs."""
    from anonlab.runs.compare import COMMANDS

    if table is None:
        return []
    source = table.read.get("input")
    return [
        j
        for j in jobs.jobs.values()
        if j.status == DONE and j.command in COMMANDS and j.values.get("input") == source
    ]


def method_entry(job: Job) -> dict[str, Any]:
    """A run's settings as a ``[[method]]`` table: its own parameters; input, read
    settings, roles and outputs come from the comparison."""
    from anonlab.runs.compare import INHERITED, METHOD_OUTPUTS

    entry: dict[str, Any] = {"name": f"{job.command}-{job.id}", "command": job.command}
    for key, value in job.values.items():
        if key in INHERITED or key in METHOD_OUTPUTS or key in ("verify", "attacker_columns"):
            continue
        if value is not None:
            entry[key] = value
    return entry


def entry_text(entry: Mapping[str, Any]) -> str:
    """A method's own settings as TOML lines would give them, on one line."""
    return "; ".join(
        f"{k} = {toml_value(v) or ('{}' if isinstance(v, Mapping) else '[]')}"
        for k, v in entry.items()
        if k not in ("name", "command")
    )


def more_methods(text: str | None) -> list[dict[str, Any]]:
    """Further ``[[method]]`` tables, as TOML."""
    if not text:
        return []
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AnonlabError(f"method: the methods are not TOML: {exc}", parameter="method") from None
    methods = data.get("method")
    if not isinstance(methods, list) or set(data) != {"method"}:
        raise AnonlabError(
            "method: give [[method]] tables (name, command and its settings) and nothing else",
            parameter="method",
        )
    return [dict(m) for m in methods]


def compare_values(
    form: FormData, table: LoadedTable, jobs: JobStore, groups: Sequence[FieldGroup]
) -> dict[str, Any]:
    values = table_values(table)
    for group in groups:
        values.update(parse_fields(form, group.fields))
    chosen = {str(v) for v in form.getlist("runs")}
    methods = [method_entry(j) for j in compared_runs(jobs, table) if j.id in chosen]
    extra = form.get("more")
    methods += more_methods(extra if isinstance(extra, str) else None)
    values["method"] = methods
    return values


async def compare_page(request: Request) -> Response:
    jobs = _jobs(request)
    if request.method == "POST":
        form = await request.form()
        table = current.current_table(request, str(form.get("table") or "") or None)
        values = compare_values(form, table, jobs, compare_groups(table))
        if form.get("action") == "toml":
            return settings_download("compare", values)
        return start_run(request, "compare", values)
    table = current.current_table(request)
    runs = compared_runs(jobs, table)
    return _form_page(
        request,
        "compare",
        table,
        compare_groups(table),
        extra="compare_methods.html",
        runs=[(j, method_entry(j)) for j in runs],
        shown={j.id: entry_text(method_entry(j)) for j in runs},
    )


async def compare_map(request: Request) -> Response:
    """The R-U map (PNG) a comparison run wrote."""
    job = _jobs(request).get(request.path_params["job_id"])
    plot = job.values.get("plot")
    if job.command != "compare" or job.status != DONE or not plot or not Path(plot).is_file():
        raise AnonlabError(f"run '{job.id}' has no risk-utility map")
    return FileResponse(plot, media_type="image/png")


ROUTES: list[BaseRoute] = [
    Route("/method/microaggregate", microaggregate_page, methods=["GET", "POST"]),
    Route("/method/mask", mask_page, methods=["GET", "POST"]),
    Route("/method/suppress", suppress_page, methods=["GET", "POST"]),
    Route("/method/perturb", perturb_page, methods=["GET", "POST"]),
    Route("/method/risk", risk_page, methods=["GET", "POST"]),
    Route("/method/fuse", fuse_page, methods=["GET", "POST"]),
    Route("/method/fuse/report", fuse_report_page, methods=["GET"]),
    Route("/compare", compare_page, methods=["GET", "POST"]),
    Route("/compare/{job_id}/map.png", compare_map, methods=["GET"]),
]
