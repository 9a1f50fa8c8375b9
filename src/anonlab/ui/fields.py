"""Form fields from a settings model: one input per parameter, named as in the TOML file.

A family's page shows the parameters of its settings model (the CLI's, so a new
parameter of the model shows up on the page) except those the app sets itself:
how the table is read (from the loaded table), the outputs (in the run's folder),
the engine (the app runs in this process) and the roles of the columns the method
does not mask (from the roles page). Each :class:`FormField` is named by the
parameter's TOML name (``k``, ``block_size``; a method's parameter of ``mask`` as
``parameters.<method>.<name>``), and :func:`parse_fields` turns the submitted form
back into the values a TOML file would hold: numbers as numbers, lists as lists, a
value equal to the parameter's default left out (so ``settings.toml`` holds what
the user chose). The model itself then validates them, with the CLI's one-line
errors.

Widgets by the parameter's type: a choice (``Literal``) is a select, ``bool`` a
checkbox (a select with "default" when ``None`` has a meaning of its own),
``int``/``float`` a number, a list of column names a multiple select of the
table's columns, a list of numbers or of other names comma-separated text, and anything richer (a
table such as ``importance``, ``combs``, a ``str | dict`` such as PRAM's ``matrix``)
a TOML value typed as in the file (``{education = 3}``, ``[[2, 3]]``) or plain
text, which the model's own validators read as the command line's text.
"""

from __future__ import annotations

import math
import tomllib
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from starlette.datastructures import FormData

from anonlab.errors import AnonlabError

#: parameters the app sets itself, never shown as a field
SET_BY_APP = frozenset(
    {
        # how the table is read: the loaded table's settings
        "input",
        "delimiter",
        "sheet",
        "table",
        "query",
        "storage_options",
        # outputs: the run's folder
        "output",
        "output_table",
        "report",
        "html",
        "key",
        "plot",
        "releases",
        # the engine: the app runs in this process, outputs as files
        "engine",
        "scheduler",
        "workers",
        "memory_limit",
        # roles of the columns the method does not mask: the roles page
        "identifying",
        "sensitive",
        "insensitive",
    }
)

#: parameters that name columns of the table (a multiple select of its columns)
COLUMN_LISTS = frozenset(
    {
        "columns",
        "nominal",
        "ordinal",
        "qi",
        "strata",
        "attacker_columns",
        "attacker",
        "categorical",
        "predictors",
    }
)
#: parameters that name one column (a select of the table's columns)
ONE_COLUMN = frozenset({"weights"})

#: the risk settings every release takes (shown apart, under "Risk of the release")
RISK_FIELDS = (
    "attacker_columns",
    "risk_threshold",
    "population_size",
    "sampling_fraction",
    "weights",
    "sensitive_hierarchies",
    "max_risk",
    "fail_on_risk",
)

#: parameters shown first when a model has them: the method, then what it masks
FIRST = ("config", "method", "columns", "qi", "attacker", "nominal", "ordinal", "k")

#: help of a parameter, by TOML name (the command line's help, for a form)
HELP: dict[str, str] = {
    "k": "Smallest group (or frequency) size.",
    "variant": "exact MDAV, or scalable (k-d blocks, numeric columns only).",
    "block_size": "Largest block of the scalable variant.",
    "region_rows": "Records per region when the scalable variant runs by regions.",
    "columns": "Columns the method masks (the quasi-identifiers).",
    "nominal": "Nominal columns: each group gets its mode.",
    "ordinal": "Ordinal columns: each group gets its lower median.",
    "orders": 'Order of an ordinal column\'s values, e.g. {size = ["S", "M", "L"]}.',
    "method": "The method.",
    "aggr": "Aggregation of a group's values.",
    "seed": "Random seed: the same seed gives the same release (empty: a fresh one).",
    "verify": "Re-read the release and check it with the independent checker before "
    "anything is written.",
    "other": "Role of every column given no other role: 'insensitive' releases them as they are.",
    "qi": "Key variables (sdcMicro's keyVars).",
    "importance": "Rank per key, 1 = blanked last, e.g. {sex = 1, age = 2} "
    "(default: fewer distinct values, more important).",
    "combs": 'Combination sizes, each SIZE or SIZE=K, e.g. "2,3=5" (default: all keys '
    "together, k).",
    "strata": "Columns within each of whose values the keys are made k-anonymous.",
    "alpha": "How much a record with blanks counts in another's frequency, 0..1 "
    "(1: sdcMicro's, a blank matches every value).",
    "min_privacy": "obt: least P = R x S of every library matrix.",
    "rho": "rbt: least Var(A - A') of the two columns of a pair, r1,r2 or r.",
    "noise": "gdp: deviation of the Gaussian noise on z-scores.",
    "library": "obt: matrix library JSON on this machine, reused when it exists, else "
    "built and written there (empty: none).",
    "clusters": "k of k-means and Ward in the report.",
    "attack_records": "The report's attacks and checks run on at most this many records.",
    "known": "Numbers of known records the report's attacks try, e.g. 2,5,10.",
    "internal": "Make the report and HTML the custodian's secret copy (each block's "
    "pairing and figures).",
    "attacker_columns": "Columns the attacker is assumed to know (default: the masked columns).",
    "risk_threshold": "Extra thresholds for records at risk, e.g. 0.09 (0.2, 0.1 and 0.05 always).",
    "population_size": "Size of the population the table was sampled from.",
    "sampling_fraction": "Share of the population in the table, e.g. 0.01.",
    "weights": "Column of sampling weights, for sdcMicro's individual risk.",
    "sensitive_hierarchies": "Hierarchy file of a sensitive attribute, for t-closeness with "
    'hierarchical distance, e.g. {salary = "/path/hierarchy_salary.csv"}.',
    "max_risk": "Warn when the highest prosecutor risk is above this.",
    "fail_on_risk": "Refuse a release that draws a risk warning (nothing written).",
    "attacker": "Columns the attacker knows (the quasi-identifiers).",
    "categorical": "Attacker columns whose numbers are category codes.",
    "threshold": "Re-identification probability a record counts as at risk from.",
    "sample": "Original records linked on a larger table, a seeded sample.",
    "score": "Replace the config's fusion.score: sensitivity or tds.",
    "keep_id": "Keep the record-id column in the fused table (default: the config's).",
}

#: help of a parameter that means something else in one command, by command and TOML name
COMMAND_HELP: dict[str, dict[str, str]] = {
    "microaggregate": {
        "method": "mdav, or sdcMicro's onedims (each column ranked alone), pca (first principal "
        "component), rmd (robust Mahalanobis distance, seeded), clustpca, influence (CLARA "
        "clusters, seeded).",
        "aggr": "What a group releases: mean, median, trim (trimmed mean) or onestep; for the "
        "methods other than mdav.",
        "trim": "Share cut off each end of a group for aggr trim, 0..0.5.",
        "strata": "Columns within each of whose values the groups are formed (released as "
        "they are).",
        "seed": "Seed of rmd's robust covariance and of clustpca's and influence's clusters "
        "(empty: drawn, and recorded in the report).",
    },
    "perturb": {
        "method": "obt (orthogonal), rbt (rotation of pairs), rotation, or gdp (Gaussian noise).",
        "columns": "Numeric columns to perturb (none chosen: every column no role names).",
        "seed": "Random seed: it regenerates the transform, so it is as secret as the key "
        "(empty: a fresh one).",
    },
    "mask": {"method": "The masking method; its parameters are in its own set below."},
    "compare": {"seed": "Seed of the sample of linked records."},
    "risk": {
        "attacker_columns": "Columns the attacker is assumed to know instead (default: qi).",
        "other": "'insensitive' counts every column given no role as insensitive (neither "
        "known to the attacker nor measured).",
    },
    "fuse": {
        "attacker_columns": "Columns of the fused table the attacker is assumed to know, "
        "comma-separated (default: every released column but the sensitive ones).",
        "weights": "Column of sampling weights of the fused table, for sdcMicro's individual risk.",
        "verify": "Re-read the fused table and check every template independently before "
        "anything is written.",
    },
}

#: help of a masking method's parameter, by name (sdcMicro's names, docs/masking.md)
MASK_HELP: dict[str, str] = {
    "matrix": "PRAM matrix CSV on this machine (levels naming the first row and column, rows "
    "summing to 1), or COL=FILE,COL=FILE; empty: invariant PRAM.",
    "pd": "Invariant PRAM: the matrix's least diagonal, one number or one per column.",
    "alpha": "Invariant PRAM: amount of perturbation, one number or one per column.",
    "strata": "Columns within each of whose values PRAM runs on its own.",
    "top": "Top code: values above this are replaced.",
    "top_replacement": "Value put in their place (default: the limit).",
    "bottom": "Bottom code: values below this are replaced.",
    "bottom_replacement": "Value put in their place (default: the limit).",
    "value": "sdcMicro's limit (with kind).",
    "replacement": "sdcMicro's replacement (with value).",
    "kind": "sdcMicro's kind: top or bottom.",
    "breaks": "Breaks B1,B2,... or one count of intervals.",
    "recode_method": "For a count: equidistant, logequidistant or equalamount (sdcMicro's method).",
    "labels": "One label per interval, L1,L2,... (default: R's).",
    "noise": "Noise in percent of each column's standard deviation.",
    "noise_method": "sdcMicro's method: additive, correlated, correlated2, restr, romm, outdect.",
    "delta": "correlated2's delta.",
    "p": "rankswap: percent of the records (sdcMicro's P); noise romm: p.",
    "r0": "rankswap: sdcMicro's R0 (default 0.95 when neither r0 nor k0 is given).",
    "k0": "rankswap: sdcMicro's K0.",
    "top_percent": "rankswap: sdcMicro's TopPercent.",
    "bottom_percent": "rankswap: sdcMicro's BottomPercent.",
    "extremes": "rankswap: permute (anonlab's) or mean (sdcMicro's top/bottom means).",
    "shuffle_method": "sdcMicro's method: ds, mvn or mlm.",
    "predictors": "The non-confidential numeric columns (the formula's right side), "
    "released as they are.",
}

Kind = Literal[
    "select",
    "columns",
    "column",
    "checkbox",
    "tristate",
    "integer",
    "number",
    "numbers",
    "names",
    "text",
    "toml",
]


@dataclass(frozen=True)
class FormField:
    """One parameter as a form input.

    ``name`` is the input's name (the TOML name, or ``parameters.<method>.<name>``),
    ``key`` the TOML name, ``kind`` the widget (module text), ``default`` the
    parameter's default (``None``: none), ``value`` what the input shows, ``required``
    whether the model needs it, ``choices`` a select's options.
    """

    name: str
    key: str
    kind: Kind
    default: Any = None
    value: Any = None
    required: bool = False
    choices: tuple[str, ...] = ()
    help: str = ""
    group: str = ""

    @property
    def shown(self) -> str:
        """The value as the input's text (lists comma-separated; TOML for a table)."""
        value = self.default if self.value is None else self.value
        if value is None:
            return ""
        if self.kind == "toml":
            return value if isinstance(value, str) else toml_value(value)
        if isinstance(value, list | tuple):
            return ",".join(_number_text(v) for v in value)
        if isinstance(value, float):
            return _number_text(value)
        return str(value)

    @property
    def selected(self) -> list[str]:
        """The columns a column list shows as chosen."""
        value = self.default if self.value is None else self.value
        if isinstance(value, str):
            return [value]
        return [str(v) for v in value or ()]

    @property
    def checked(self) -> bool:
        value = self.default if self.value is None else self.value
        return bool(value)


def _number_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def toml_value(value: Any) -> str:
    """``value`` as one TOML value, tables inline (what a field of kind ``toml`` shows); an
    empty table or list shows as nothing."""
    if isinstance(value, Mapping):
        if not value:
            return ""
        return "{" + ", ".join(f"{_toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]" if value else ""
    import tomli_w

    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()


def _toml_key(key: Any) -> str:
    text = str(key)
    if text and all(c.isalnum() or c in "-_" for c in text) and text.isascii():
        return text
    return toml_value(text)


def _plain(annotation: Any) -> tuple[list[Any], bool]:
    """The types of a parameter's annotation without ``None``, and whether ``None`` is one."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = list(typing.get_args(annotation))
    else:
        args = [annotation]
    plain = [a for a in args if a is not type(None)]
    return plain, len(plain) != len(args)


def _kind(name: str, info: FieldInfo) -> tuple[Kind, tuple[str, ...]]:
    """The widget of a parameter (module text) and a select's choices."""
    types_, optional = _plain(info.annotation)
    origins = [typing.get_origin(t) for t in types_]
    if name in ONE_COLUMN:
        return "column", ()
    if name in COLUMN_LISTS and (list in origins or types_ == [str]):
        return "columns", ()
    if set(types_) <= {int, float} and len(types_) > 1:
        return "number", ()
    if len(types_) == 1:
        return _kind_of(types_[0], optional)
    return "toml", ()


def _kind_of(only: Any, optional: bool) -> tuple[Kind, tuple[str, ...]]:
    """The widget of a parameter of one type (``None`` aside)."""
    if typing.get_origin(only) is Literal:
        return "select", tuple(str(a) for a in typing.get_args(only))
    if only is bool:
        return ("tristate" if optional else "checkbox"), ()
    simple: dict[Any, Kind] = {int: "integer", float: "number", str: "text"}
    if only in simple:
        return simple[only], ()
    if typing.get_origin(only) is list:
        (item,) = typing.get_args(only) or (str,)
        if item in (int, float):
            return "numbers", ()
        if item is str:
            return "names", ()
    return "toml", ()


def _default(info: FieldInfo) -> Any:
    if info.is_required():
        return None
    return info.get_default(call_default_factory=True)


def model_fields(
    model: type[BaseModel],
    *,
    skip: Iterable[str] = (),
    prefix: str = "",
    values: Mapping[str, Any] | None = None,
    help_texts: Mapping[str, str] = HELP,
    command: str = "",
    app_set: Iterable[str] = SET_BY_APP,
) -> list[FormField]:
    """The form fields of ``model``'s parameters, its own first, the risk settings last
    (``group`` ``"risk"``); ``skip`` and ``app_set`` (those the app sets) left out; ``values``
    prefill them; ``command``'s own help texts win (:data:`COMMAND_HELP`)."""
    omitted = set(skip) | (set(app_set) if not prefix else set())
    help_texts = {**help_texts, **COMMAND_HELP.get(command, {})}
    given = dict(values or {})
    ordered: list[str] = []
    for cls in model.__mro__:
        for name in getattr(cls, "__annotations__", {}):
            if name in model.model_fields and name not in ordered:
                ordered.append(name)
    first = [n for n in FIRST if n in ordered]
    ordered = (
        first
        + [n for n in ordered if n not in RISK_FIELDS and n not in first]
        + [n for n in RISK_FIELDS if n in model.model_fields]
    )
    out: list[FormField] = []
    for name in ordered:
        if name in omitted:
            continue
        info = model.model_fields[name]
        key = info.alias or name
        kind, choices = _kind(name, info)
        out.append(
            FormField(
                name=f"{prefix}{key}",
                key=key,
                kind=kind,
                default=_default(info),
                value=given.get(key),
                required=info.is_required(),
                choices=choices,
                help=help_texts.get(key, ""),
                group="risk" if name in RISK_FIELDS and not prefix else "",
            )
        )
    return out


def _text(form: FormData, name: str) -> str | None:
    value = form.get(name)
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def _number(text: str, name: str, kind: type[int] | type[float]) -> int | float:
    try:
        number = kind(text)
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise AnonlabError(f"{name}: '{text}' is not {what}", parameter=name) from None
    if isinstance(number, float) and not math.isfinite(number):
        raise AnonlabError(f"{name}: give a finite number, not '{text}'", parameter=name)
    return number


def parse_field(form: FormData, f: FormField) -> Any:
    """The value of ``f`` in ``form`` as a TOML file holds it; ``None`` when not given."""
    if f.kind == "checkbox":
        return form.get(f.name) is not None
    if f.kind == "columns":
        chosen = [str(v) for v in form.getlist(f.name) if str(v).strip()]
        return chosen or None
    text = _text(form, f.name)
    if text is None:
        return None
    if f.kind == "tristate":
        return {"true": True, "false": False}.get(text)
    if f.kind == "integer":
        return _number(text, f.key, int)
    if f.kind == "number":
        number = _number(text, f.key, float)
        return int(number) if isinstance(f.default, int) and float(number).is_integer() else number
    if f.kind == "numbers":
        items = [t.strip() for t in text.split(",") if t.strip()]
        return [_number(t, f.key, float) for t in items]
    if f.kind == "names":
        return [t.strip() for t in text.split(",") if t.strip()]
    if f.kind == "toml":
        return _toml_or_text(text)
    return text


def _toml_or_text(text: str) -> Any:
    """A TOML table, array or quoted string (``{a = 1}``, ``[1, 2]``, ``"x"``) or else the
    text as typed, which the model reads as the command line's text (``2,3=5``; a bare ``2``
    stays the text ``"2"``, as the command line gives it)."""
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    if isinstance(value, dict | list) or text.startswith(('"', "'")):
        return value
    return text


def parse_fields(form: FormData, fields: Sequence[FormField]) -> dict[str, Any]:
    """The values of ``fields`` in ``form`` by TOML name: those not given, and those equal
    to their parameter's default, left out."""
    out: dict[str, Any] = {}
    for f in fields:
        value = parse_field(form, f)
        if value is None or _same(value, f.default):
            continue
        out[f.key] = value
    return out


def _same(value: Any, default: Any) -> bool:
    if isinstance(value, list) and isinstance(default, list | tuple):
        if len(value) != len(default):
            return False
        return all(_same(a, b) for a, b in zip(value, default, strict=True))
    if isinstance(value, int | float) and isinstance(default, int | float):
        if isinstance(value, bool) or isinstance(default, bool):
            return value is default
        return float(value) == float(default)
    return bool(value == default)


@dataclass
class FieldGroup:
    """Fields shown together (a fieldset): ``key`` names it (``data-group``)."""

    key: str
    title: str
    fields: list[FormField] = field(default_factory=list)
    note: str = ""
    open: bool = True
