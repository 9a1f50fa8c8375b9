"""Step 4, Method: the families a table can be released with, and generalization's form.

``/method`` lists the method pages the app serves. ``/method/generalize`` is
the form of :class:`~anonlab.runs.generalize_settings.GeneralizeSettings`:
full-domain generalization, local recoding or Mondrian; the privacy models of
:data:`anonlab.privacy.spec.MODELS` with their parameters, written as the
CLI's ``--criterion`` spells them and checked by the same
:func:`~anonlab.privacy.spec.normalize_criterion`; the metric, suppression
limit, search (the genetic search's ``[genetic]`` table too), level bounds, the static
metric's losses and the number of alternatives to list; the release's risk settings
(thresholds, a sampling weights column, the hierarchies of sensitive attributes). The
form gives the settings values under the names a TOML file uses, and
:func:`anonlab.ui.forms.start_run` runs them as ``anonlab generalize
--config`` would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from anonlab.errors import AnonlabError
from anonlab.ui.current import columns_with, current_table, table_values
from anonlab.ui.forms import number, start_run, text
from anonlab.ui.templating import render
from anonlab.ui.workspace import LoadedTable

#: the method pages, in the order the index shows them: (path, name, what it does)
FAMILIES: tuple[tuple[str, str, str], ...] = (
    (
        "/method/generalize",
        "Generalization",
        "Full-domain generalization with hierarchies (an optimal lattice search), ARX's local "
        "recoding, or Mondrian's multidimensional partitions, under privacy models "
        "(k-anonymity, l-diversity, t-closeness, delta-presence, ...).",
    ),
    (
        "/method/suppress",
        "Cell suppression",
        "Blank the fewest key cells until every record is k-anonymous.",
    ),
    (
        "/method/microaggregate",
        "Microaggregation",
        "Replace numeric values by the means of groups of at least k similar records (MDAV).",
    ),
    (
        "/method/mask",
        "Masking",
        "sdcMicro's masking methods: PRAM, recoding, noise, rank swapping, shuffling.",
    ),
    ("/method/perturb", "Perturbation", "Keyed perturbation of numeric columns."),
    ("/method/risk", "Risk", "The re-identification risk of a table as it is."),
    ("/method/fuse", "Fusion", "Tables of several parties, fused under one privacy model."),
    ("/compare", "Compare", "Several methods on one risk-utility map."),
)

#: rows of privacy models the form offers (k has its own field)
CRITERIA_ROWS = 4
#: alternatives listed by default, so that the Explore page has a solution space to show
DEFAULT_ALTERNATIVES = 10


def _last(request: Request) -> dict[tuple[str, str], dict[str, Any]]:
    """The settings values each table's form was last run with, to fill the form again."""
    state = request.app.state
    if not hasattr(state, "last_values"):
        state.last_values = {}
    last: dict[tuple[str, str], dict[str, Any]] = state.last_values
    return last


async def index(request: Request) -> Response:
    served = {getattr(route, "path", None) for route in request.app.routes}
    families = [f for f in FAMILIES if f[0] in served]
    workspace = request.app.state.workspace
    table = current_table(request) if workspace.tables else None
    return render(request, "method.html", families=families, table=table)


def _models() -> list[dict[str, Any]]:
    """The privacy models and their parameters, for the form's choices and its help."""
    from anonlab.privacy.spec import MODELS

    return [
        {
            "name": m.name,
            "sensitive": m.sensitive,
            "params": [
                {"name": n, "example": p.example.strip('"'), "required": p.required}
                for n, p in m.params.items()
            ],
        }
        for m in MODELS.values()
    ]


def _choices() -> dict[str, list[str]]:
    from anonlab.lattice.metrics import METRICS
    from anonlab.runs.generalize_settings import AggregateName, RecodingName, SearchName

    return {
        "recoding": list(get_args(RecodingName)),
        "search": list(get_args(SearchName)),
        "aggregate": list(get_args(AggregateName)),
        "metric": list(METRICS),
    }


#: what each setting of the genetic search does (docs/generalization.md, "Heuristic searches")
GENETIC_HELP = {
    "subpopulation_size": "random nodes in each of the two sub-populations",
    "iterations": "iterations (generations) at most",
    "immigration_interval": "iterations between two migrations of the fittest",
    "immigration_fraction": "share that migrates (ARX casts it to a whole number: below 1, none)",
    "elite_fraction": "share of the fittest kept as they are",
    "crossover_fraction": "share replaced by children of two parents",
    "production_fraction": "share of the fittest the parents are drawn from",
    "mutation_probability": "share of the quasi-identifiers a mutation may change at most",
    "seed": "seed of Java's random draws (ARX's deterministic one: -559038737)",
}


def genetic_fields() -> list[dict[str, Any]]:
    """The genetic search's settings (:class:`~anonlab.lattice.genetic.GeneticSettings`, the
    keys of a TOML ``[genetic]`` table), each with its kind and ARX's default."""
    from dataclasses import fields

    from anonlab.lattice.genetic import GeneticSettings

    return [
        {
            "name": f.name,
            "kind": "float" if "float" in str(f.type) else "int",
            "default": "random" if f.default is None else f.default,
            "help": GENETIC_HELP.get(f.name, ""),
        }
        for f in fields(GeneticSettings)
    ]


async def generalize_form(request: Request) -> Response:
    from anonlab.generalize_aggregate import AGGREGATE_FUNCTIONS

    table = current_table(request)
    table_values(table)  # every column has a role before anything runs
    last = _last(request).get((table.id, "generalize"), {})
    return render(
        request,
        "generalize_form.html",
        table=table,
        qis=columns_with(table, "qi"),
        sensitive=columns_with(table, "sensitive"),
        models=_models(),
        choices=_choices(),
        rows=CRITERIA_ROWS,
        last=last,
        default_alternatives=DEFAULT_ALTERNATIVES,
        aggregates=list(AGGREGATE_FUNCTIONS),
        genetic=genetic_fields(),
        released=[c["name"] for c in table.columns if table.roles.get(c["name"]) != "identifying"],
    )


def criteria_of(form: FormData) -> list[dict[str, Any]]:
    """The privacy models of the form's rows (model, attribute, ``KEY=VALUE,...``) and of its
    text area (one ``--criterion`` text a line), each checked and spelled out as the settings
    keep it, its file parameters absolute."""
    from anonlab.privacy.spec import normalize_criterion, resolve_criteria_paths

    flags: list[str] = []
    for i in range(CRITERIA_ROWS):
        model = text(form, f"model_{i}")
        if model is None:
            continue
        parts = [model, text(form, f"attribute_{i}"), text(form, f"parameters_{i}")]
        flags.append(":".join(p for p in parts if p))
    more = text(form, "criteria_text")
    if more is not None:
        flags.extend(line.strip() for line in more.splitlines() if line.strip())
    # a file parameter (subset, population, hierarchy) as the run reads it: from the app's
    # folder, written out absolute so that the settings file reads the same file anywhere
    return list(resolve_criteria_paths([normalize_criterion(f) for f in flags], Path.cwd()))


def _levels(form: FormData, prefix: str, qis: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, column in enumerate(qis):
        level = number(form, f"{prefix}_{i}", int)
        if level is not None:
            out[column] = level
    return out


def _recoding_values(form: FormData, table: LoadedTable) -> dict[str, Any]:
    """The recoding and the settings that belong to it (Mondrian's, local recoding's)."""
    recoding = text(form, "recoding") or "full-domain"
    if recoding not in _choices()["recoding"]:
        raise AnonlabError(f"recoding '{recoding}' is unknown: full-domain, local or mondrian")
    if recoding == "full-domain":
        return {}
    # the class-size plot is drawn for full-domain releases only
    values: dict[str, Any] = {"recoding": recoding, "plot": None}
    if recoding == "mondrian":
        if table.numeric:
            values["numeric"] = list(table.numeric)
        if text(form, "relaxed") is not None:
            values["relaxed"] = True
        return values
    # the HTML page has no local-recoding section (generalize refuses html for it)
    values["html"] = None
    for name, kind in (
        ("local_gs_factor", float),
        ("local_iterations", int),
        ("local_adaption", float),
    ):
        given = number(form, name, kind)
        if given is not None:
            values[name] = given
    return values


def _search_values(form: FormData) -> dict[str, Any]:
    """Suppression limit, metric and its parameters, search and its limits, as given."""
    from anonlab.runs.generalize_settings import parse_suppression
    from anonlab.settings import split_names

    values: dict[str, Any] = {}
    suppression = text(form, "suppression")
    if suppression is not None:
        values["suppression"] = parse_suppression(suppression)
    for name in ("metric", "search", "aggregate"):
        chosen = text(form, name)
        if chosen is not None and chosen not in _choices()[name]:
            raise AnonlabError(f"{name} '{chosen}' is unknown: choose one of the list")
        if chosen is not None:
            values[name] = chosen
    for name, kind in (
        ("gs_factor", float),
        ("time_limit", float),
        ("step_limit", int),
        ("heuristic_threshold", int),
    ):
        given = number(form, name, kind)
        if given is not None:
            values[name] = given
    targets = split_names(text(form, "targets"))
    if targets:
        values["targets"] = targets
    if text(form, "practical_monotonicity") is not None:
        values["practical_monotonicity"] = True
    genetic = _genetic_values(form)
    if genetic:
        from anonlab.lattice.plan import plan_search

        # the search's own checks (genetic settings for search genetic only, each in range)
        plan_search(
            values.get("search", "flash"),
            time_limit=values.get("time_limit"),
            step_limit=values.get("step_limit"),
            heuristic_threshold=values.get("heuristic_threshold"),
            genetic=genetic,
        )
        values["genetic"] = genetic
    return values


def _genetic_values(form: FormData) -> dict[str, Any]:
    """The ``[genetic]`` table: the genetic search's settings the form gives."""
    values: dict[str, Any] = {}
    for field in genetic_fields():
        name = field["name"]
        given = number(form, f"genetic_{name}", float if field["kind"] == "float" else int)
        if given is not None:
            values[name] = given
    return values


def _per_qi_values(form: FormData, qis: list[str]) -> dict[str, Any]:
    """What the form gives each quasi-identifier: level bounds, the metric's weight, the
    static metric's loss per level, and the aggregate it is released as (ARX's
    microaggregation), each only where given."""
    from anonlab.generalize_aggregate import AGGREGATE_FUNCTIONS, MISSING_RULES

    values: dict[str, Any] = {}
    for name in ("min_level", "max_level"):
        levels = _levels(form, name, qis)
        if levels:
            values[name] = levels
    weights = {}
    aggregates = {}
    for i, column in enumerate(qis):
        weight = number(form, f"weight_{i}", float)
        if weight is not None:
            weights[column] = weight
        function = text(form, f"aggregate_qi_{i}")
        if function is not None:
            if function not in AGGREGATE_FUNCTIONS:
                raise AnonlabError(
                    f"aggregate '{function}' of '{column}' is unknown: choose one of "
                    f"{', '.join(AGGREGATE_FUNCTIONS)}"
                )
            aggregates[column] = function
    if weights:
        values["attribute_weights"] = weights
    losses = _static_loss(form, qis)
    if losses:
        values["static_loss"] = losses
    if aggregates:
        values["aggregate_qi"] = aggregates
        missing = text(form, "aggregate_missing")
        if missing is not None and missing not in MISSING_RULES:
            raise AnonlabError(f"aggregate_missing '{missing}' is unknown: ignore or zero")
        if missing is not None:
            values["aggregate_missing"] = missing
    return values


def _static_loss(form: FormData, qis: list[str]) -> dict[str, list[float]]:
    """The static metric's loss per level of each quasi-identifier the form gives one for,
    read as the ``--static-loss COLUMN=V0,V1,...`` flags are (the same checks)."""
    from anonlab.runs.generalize_settings import parse_static_loss_flags

    given = [(column, text(form, f"static_loss_{i}")) for i, column in enumerate(qis)]
    return parse_static_loss_flags(f"{column}={loss}" for column, loss in given if loss)


def _risk_values(form: FormData, table: LoadedTable) -> dict[str, Any]:
    """How the release's risk is measured and judged (:class:`ReleaseRiskSettings`), as given:
    the attacker's columns, the highest acceptable risk, the population, further thresholds,
    the sampling weights column and the hierarchies of sensitive attributes."""
    from anonlab.settings import split_names

    values: dict[str, Any] = {}
    attacker = split_names(text(form, "attacker_columns"))
    if attacker:
        values["attacker_columns"] = attacker
    for name in ("max_risk", "population_size", "sampling_fraction"):
        given = number(form, name, float)
        if given is not None:
            values[name] = given
    thresholds = split_names(text(form, "risk_threshold"))
    if thresholds:
        values["risk_threshold"] = [_threshold(t) for t in thresholds]
    weights = text(form, "weights")
    if weights is not None:
        if weights not in [c["name"] for c in table.columns]:
            raise AnonlabError(
                f"weights: '{weights}' is not a column of '{table.name}'", parameter="weights"
            )
        values["weights"] = weights
    hierarchies = _sensitive_hierarchies(form, table)
    if hierarchies:
        values["sensitive_hierarchies"] = hierarchies
    return values


def _threshold(value: str) -> float:
    """One risk threshold's text as a number (its range is the settings' check)."""
    try:
        return float(value)
    except ValueError:
        raise AnonlabError(
            f"risk_threshold: '{value}' is not a number: e.g. 0.09", parameter="risk_threshold"
        ) from None


def _sensitive_hierarchies(form: FormData, table: LoadedTable) -> dict[str, str]:
    """Each sensitive attribute's hierarchy file the form names, a file on this machine,
    written out absolute (read from the app's folder), as the settings file must name it."""
    out: dict[str, str] = {}
    for i, column in enumerate(columns_with(table, "sensitive")):
        given = text(form, f"sensitive_hierarchy_{i}")
        if given is None:
            continue
        path = Path(given).expanduser().resolve()
        if not path.is_file():
            raise AnonlabError(
                f"sensitive_hierarchies: no file '{given}' on this machine for '{column}'",
                parameter="sensitive_hierarchies",
            )
        out[column] = str(path)
    return out


def generalize_values(form: FormData, table: LoadedTable) -> dict[str, Any]:
    """The settings values (TOML names) the generalization form gives for ``table``."""
    values = table_values(table)
    qis = list(values["qi"])
    values.update(_recoding_values(form, table))
    k = number(form, "k", int)
    if k is not None:
        values["k"] = k
    criteria = criteria_of(form)
    if criteria:
        values["criteria"] = criteria
    values.update(_search_values(form))
    values.update(_risk_values(form, table))
    values.update(_per_qi_values(form, qis))
    alternatives = number(form, "alternatives", int)
    if alternatives and values.get("recoding", "full-domain") == "full-domain":
        values["alternatives"] = alternatives
    return values


async def generalize_run(request: Request) -> Response:
    form = await request.form()
    table = current_table(request, text(form, "table"))
    values = generalize_values(form, table)
    _last(request)[(table.id, "generalize")] = {k: v for k, v in form.items() if v}
    return start_run(request, "generalize", values)


ROUTES: list[BaseRoute] = [
    Route("/method", index, methods=["GET"]),
    Route("/method/generalize", generalize_form, methods=["GET"]),
    Route("/method/generalize", generalize_run, methods=["POST"]),
]
