"""What a user writes for a privacy model, turned into criterion objects.

A privacy model is given in one of two spellings, the same names either way:

* a TOML table of the ``[[criteria]]`` array (or a dict in Python)::

    [[criteria]]
    model = "recursive-cl-diversity"
    attribute = "occupation"
    c = 4.0
    l = 5

* a flag text, ``MODEL[:ATTRIBUTE][:KEY=VALUE,KEY=VALUE...]``::

    --criterion "recursive-cl-diversity:occupation:c=4,l=5"
    --criterion "k-anonymity:k=5"
    --criterion "ordered-distance-t-closeness:grade:t=0.2,order=A,B,C,D"

  The text up to the first ``:`` is the model. The next part is the
  sensitive attribute when it holds no ``=`` (the sensitive models need one,
  the others take none). The rest are ``KEY=VALUE`` pairs separated by
  commas; a comma that is not followed by ``KEY=`` belongs to the value, so a
  list (``order``) is written with commas between its items. An attribute
  name cannot hold ``:`` or ``=`` in this spelling (use the TOML one).

:func:`normalize_criterion` checks either spelling against :data:`MODELS`
(unknown model, unknown, missing or ill-typed parameter: one
:class:`~anonlab.errors.AnonlabError` about parameter ``criteria`` naming the
model and the parameter) and returns a plain dict of typed values, the form the
settings and reports keep. :func:`build_criterion` makes the criterion object
from it, importing the model's class lazily from its module (each class is
found by its ``name``); :func:`bind_criteria` gives each criterion the
dataset (a sensitive attribute must be a column with the sensitive role).
Ranges (``l >= 1``, ``0 <= t <= 1`` ...) are checked by the criteria's own
constructors, data-level facts (``l`` above the number of distinct values, a
hierarchy missing a value) by their ``bind``.

The top-level ``k = N`` of the settings is a shorthand for a ``k-anonymity``
criterion (:func:`criteria_with_k`). ARX 3.9 takes at most one k-anonymity,
one k-map and one delta-presence model (``ARXConfiguration.addPrivacyModel``;
``inclusion``, ARX's ``Inclusion``, is a delta-presence there, so at most one of
the two); so does this module, and ``k`` together with a ``k-anonymity``
criterion is refused rather than guessed at.
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anonlab.errors import AnonlabError

if TYPE_CHECKING:
    from anonlab.dataset import Dataset
    from anonlab.privacy.base import Criterion

PARAMETER = "criteria"


@dataclass(frozen=True)
class Param:
    """One parameter of a model: its type (``int``, ``float``, ``str``, ``list``) and rules.

    ``choices`` limits a text parameter to named values; ``path`` marks a file
    name (resolved against the TOML file's folder); ``example`` is a value
    used in messages.
    """

    kind: type
    example: str
    required: bool = True
    choices: tuple[str, ...] = ()
    path: bool = False


@dataclass(frozen=True)
class Model:
    """A privacy model users can name: module of its class, whether it protects an
    attribute, its parameters, and which parameters exclude or need each other.

    ``one_of`` lists groups of which exactly one parameter must be given;
    ``needs`` maps a parameter to those that must come with it; ``excludes``
    maps a parameter to those that must not.
    """

    name: str
    module: str
    sensitive: bool
    params: Mapping[str, Param]
    one_of: tuple[tuple[str, ...], ...] = ()
    needs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    excludes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


_INT_L = Param(int, "3")
_T = Param(float, "0.2")
_BETA = Param(float, "1.0")
_THRESHOLD = Param(float, "0.05")
#: the cost-benefit figures of the profitability models (ARX's defaults when left out)
_COSTS = {
    "publisher_benefit": Param(float, "1200", False),
    "publisher_loss": Param(float, "300", False),
    "adversary_gain": Param(float, "300", False),
    "adversary_cost": Param(float, "4", False),
}

#: every model a user can name, in the order of ARX 3.9's documentation
MODELS: dict[str, Model] = {
    m.name: m
    for m in (
        Model("k-anonymity", "base", False, {"k": Param(int, "5")}),
        Model("distinct-l-diversity", "diversity", True, {"l": _INT_L}),
        Model(
            "entropy-l-diversity",
            "diversity",
            True,
            {
                "l": Param(float, "3"),
                "estimator": Param(str, '"shannon"', False, ("shannon", "grassberger")),
            },
        ),
        Model("recursive-cl-diversity", "diversity", True, {"c": Param(float, "4.0"), "l": _INT_L}),
        Model("equal-distance-t-closeness", "closeness", True, {"t": _T}),
        Model(
            "hierarchical-distance-t-closeness",
            "closeness",
            True,
            {"t": _T, "hierarchy": Param(str, '"hierarchy_occupation.csv"', path=True)},
        ),
        Model(
            "ordered-distance-t-closeness",
            "closeness",
            True,
            {"t": _T, "order": Param(list, '["low", "mid", "high"]', False)},
        ),
        Model("basic-beta-likeness", "likeness", True, {"beta": _BETA}),
        Model("enhanced-beta-likeness", "likeness", True, {"beta": _BETA}),
        Model("delta-disclosure", "likeness", True, {"delta": Param(float, "1.0")}),
        Model(
            "delta-presence",
            "presence",
            False,
            {
                "dmin": Param(float, "0.0"),
                "dmax": Param(float, "0.5"),
                "subset": Param(str, '"research_subset.csv"', path=True),
            },
        ),
        Model(
            "inclusion",
            "presence",
            False,
            {"subset": Param(str, '"research_subset.csv"', path=True)},
        ),
        Model(
            "k-map",
            "presence",
            False,
            {
                "k": Param(int, "5"),
                "population": Param(str, '"population.csv"', False, path=True),
                "estimator": Param(str, '"poisson"', False, ("poisson", "zero-truncated-poisson")),
                "significance": Param(float, "0.01", False),
                "population_size": Param(int, "1000000", False),
            },
            one_of=(("population", "estimator"),),
            needs={"estimator": ("significance", "population_size")},
            excludes={"population": ("significance", "population_size")},
        ),
        Model("profitability-prosecutor", "profitability", False, dict(_COSTS)),
        Model("profitability-prosecutor-no-attack", "profitability", False, dict(_COSTS)),
        Model(
            "profitability-journalist",
            "profitability",
            False,
            {"subset": Param(str, '"research_subset.csv"', path=True), **_COSTS},
        ),
        Model(
            "profitability-journalist-no-attack",
            "profitability",
            False,
            {"subset": Param(str, '"research_subset.csv"', path=True), **_COSTS},
        ),
        Model("average-risk", "riskbased", False, {"threshold": _THRESHOLD}),
        Model("sample-uniqueness", "riskbased", False, {"threshold": _THRESHOLD}),
        Model(
            "population-uniqueness",
            "riskbased",
            False,
            {
                "threshold": _THRESHOLD,
                "estimator": Param(str, '"dankar"', False, ("pitman", "zayatz", "snb", "dankar")),
                "sampling_fraction": Param(float, "0.01", False),
                "population_size": Param(int, "1000000", False),
                "iterations_per_try": Param(int, "1000", False),
            },
            one_of=(("sampling_fraction", "population_size"),),
        ),
    )
}

#: models of which ARX 3.9 takes one instance at most
SINGLE_INSTANCE = (
    "k-anonymity",
    "k-map",
    "delta-presence",
    "inclusion",
    "profitability-prosecutor",
    "profitability-prosecutor-no-attack",
    "profitability-journalist",
    "profitability-journalist-no-attack",
)
#: models that name the research subset (the table is then its population)
SUBSET_MODELS = (
    "delta-presence",
    "inclusion",
    "profitability-journalist",
    "profitability-journalist-no-attack",
)


def _fail(message: str) -> AnonlabError:
    return AnonlabError(f"{PARAMETER}: {message}", parameter=PARAMETER)


@contextmanager
def criteria_errors() -> Iterator[None]:
    """Errors about the criteria (``parameter="criteria"``) start with ``criteria:``.

    The criteria's constructors and ``bind`` name their model in their
    messages; this puts the parameter's name in front, as every message about
    one parameter does, so that the command line can show its flag there.
    """
    try:
        yield
    except AnonlabError as exc:
        if exc.parameter == PARAMETER and not str(exc).startswith(PARAMETER):
            raise _fail(str(exc)) from None
        raise


def _model(name: Any) -> Model:
    """The model named ``name``; an error lists the known ones."""
    model = MODELS.get(str(name).strip().lower()) if isinstance(name, str) else None
    if model is None:
        raise _fail(f"model {name!r} is unknown: choose one of {', '.join(MODELS)}")
    return model


def _what(model: Model, attribute: str | None) -> str:
    """``model 'x'`` or ``model 'x' on 'attr'``, for messages."""
    return f"model '{model.name}'" + (f" on '{attribute}'" if attribute else "")


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


def _convert(model: Model, attribute: str | None, key: str, value: Any) -> Any:
    """``value`` as the parameter's type (a flag's text converted, a TOML value checked)."""
    param = model.params[key]
    what = _what(model, attribute)
    hint = f"e.g. {key} = {param.example}"
    if param.kind is int:
        number = _as_number(value, what, key, hint)
        if not float(number).is_integer():
            raise _fail(f"{what}: {key} must be a whole number (got {value!r}): {hint}")
        return int(number)
    if param.kind is float:
        return float(_as_number(value, what, key, hint))
    if param.kind is list:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple) or not all(
            isinstance(v, str | int | float) and not isinstance(v, bool) for v in items
        ):
            raise _fail(f"{what}: {key} must be a list of values (got {value!r}): {hint}")
        return [str(v).strip() if isinstance(value, str) else str(v) for v in items]
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise _fail(f"{what}: {key} must be a text (got {value!r}): {hint}")
    text = value.strip()
    if param.choices:
        text = text.lower()
        if text not in param.choices:
            raise _fail(
                f"{what}: {key} {value!r} is unknown: choose one of {', '.join(param.choices)}"
            )
    return text


def _as_number(value: Any, what: str, key: str, hint: str) -> float:
    """A finite number from a number or its text; bools and other types are refused."""
    if isinstance(value, bool):
        raise _fail(f"{what}: {key} must be a number (got {value!r}): {hint}")
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _fail(f"{what}: {key} must be a number (got {value!r}): {hint}") from None
    else:
        raise _fail(f"{what}: {key} must be a number (got {value!r}): {hint}")
    if not math.isfinite(number):
        raise _fail(f"{what}: {key} must be a finite number (got {value!r}): {hint}")
    return number


# ---------------------------------------------------------------------------
# The two spellings
# ---------------------------------------------------------------------------

_PAIR_SPLIT = re.compile(r",(?=\s*[A-Za-z_][A-Za-z0-9_-]*\s*=)")


def parse_criterion_flag(text: str) -> dict[str, Any]:
    """The flag spelling ``MODEL[:ATTRIBUTE][:KEY=VALUE,...]`` as a dict of texts.

    The result still needs :func:`normalize_criterion` (it holds the values
    as text).
    """
    model_name, _, rest = str(text).strip().partition(":")
    model = _model(model_name)
    out: dict[str, Any] = {"model": model.name}
    head, sep, tail = rest.partition(":")
    if sep and "=" not in head:
        out["attribute"], pairs = head, tail
    elif not sep and rest and "=" not in rest:
        out["attribute"], pairs = rest, ""
    else:
        pairs = rest
    for pair in _PAIR_SPLIT.split(pairs) if pairs.strip() else []:
        key, eq, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not eq or not key:
            raise _fail(
                f"'{text}' is not MODEL[:ATTRIBUTE][:KEY=VALUE,...]: e.g. "
                "distinct-l-diversity:occupation:l=3"
            )
        if key in out:
            raise _fail(f"'{text}' gives {key} twice: give it once")
        out[key] = value.strip()
    return out


def normalize_criterion(spec: Mapping[str, Any] | str) -> dict[str, Any]:
    """One model's settings, checked, as ``{"model", ["attribute"], parameters...}``.

    ``spec`` is a dict (TOML table, Python) or a flag text. Parameters the
    user did not give are left out (the criterion's defaults apply); keys
    keep :data:`MODELS`'s order.
    """
    raw = parse_criterion_flag(spec) if isinstance(spec, str) else spec
    if not isinstance(raw, Mapping):
        raise _fail(
            f"each criterion is a table with a model (got {raw!r}): e.g. "
            'model = "k-anonymity", k = 5'
        )
    values = {str(k).replace("-", "_"): v for k, v in raw.items()}
    if "model" not in values:
        raise _fail(
            f'a criterion names no model (got {dict(raw)!r}): add e.g. model = "k-anonymity"'
        )
    model = _model(values.pop("model"))
    attribute = _attribute(model, values.pop("attribute", None))
    what = _what(model, attribute)
    unknown = [k for k in values if k not in model.params]
    if unknown:
        known = ", ".join(["attribute", *model.params] if model.sensitive else model.params)
        raise _fail(f"{what} takes no parameter {unknown[0]}: its parameters are {known}")
    given = {
        k: _convert(model, attribute, k, values[k])
        for k in model.params
        if values.get(k) is not None
    }
    _check_combination(model, attribute, given)
    out: dict[str, Any] = {"model": model.name}
    if attribute is not None:
        out["attribute"] = attribute
    out.update(given)
    return out


def _attribute(model: Model, value: Any) -> str | None:
    """The protected attribute: required by the sensitive models, refused by the others."""
    if not model.sensitive:
        if value is not None:
            raise _fail(
                f"model '{model.name}' protects no single attribute: remove attribute = {value!r}"
            )
        return None
    if not isinstance(value, str) or not value.strip():
        raise _fail(
            f"model '{model.name}' needs attribute, the sensitive column it "
            'protects: add attribute = "occupation" (or MODEL:COLUMN:... as a flag)'
        )
    return value.strip()


def _check_combination(model: Model, attribute: str | None, given: Mapping[str, Any]) -> None:
    """Missing parameters, and the ``one_of``, ``needs`` and ``excludes`` rules."""
    what = _what(model, attribute)
    for key, param in model.params.items():
        if param.required and key not in given:
            raise _fail(f"{what} needs {key}: add {key} = {param.example}")
    for group in model.one_of:
        present = [k for k in group if k in given]
        if len(present) != 1:
            options = " or ".join(f"{k} = {model.params[k].example}" for k in group)
            verb = "takes only one of" if present else "needs one of"
            raise _fail(f"{what} {verb} {', '.join(group)}: give {options}")
    _check_pairs(model, what, given)


def _check_pairs(model: Model, what: str, given: Mapping[str, Any]) -> None:
    """A parameter given without one it ``needs``, or with one it ``excludes``."""
    for key, needed in model.needs.items():
        missing = [other for other in needed if key in given and other not in given]
        if missing:
            raise _fail(
                f"{what} with {key} needs {missing[0]}: add "
                f"{missing[0]} = {model.params[missing[0]].example}"
            )
    for key, refused in model.excludes.items():
        extra = [other for other in refused if key in given and other in given]
        if extra:
            raise _fail(f"{what} with {key} takes no {extra[0]}: remove {extra[0]}")


def normalize_criteria(specs: Iterable[Mapping[str, Any] | str] | None) -> list[dict[str, Any]]:
    """Every criterion checked (:func:`normalize_criterion`), and no model given twice.

    ARX's single-instance models (k-anonymity, k-map, delta-presence,
    inclusion) may appear once, and delta-presence and inclusion not together
    (each names the research subset); any other model once per attribute.
    """
    out = [normalize_criterion(s) for s in (specs or [])]
    _check_one_subset(out)
    seen: set[tuple[str, str | None]] = set()
    for item in out:
        key = (item["model"], None if item["model"] in SINGLE_INSTANCE else item.get("attribute"))
        if key in seen:
            on = f" on '{key[1]}'" if key[1] else ""
            raise _fail(f"model '{key[0]}'{on} is given twice: give it once")
        seen.add(key)
    return out


def _check_one_subset(items: Sequence[Mapping[str, Any]]) -> None:
    """delta-presence and inclusion together are refused: ARX takes one research subset
    (``Inclusion`` is a ``DPresence``, of which ``addPrivacyModel`` takes one)."""
    models = {str(item["model"]) for item in items}
    if {"delta-presence", "inclusion"} <= models:
        raise _fail(
            "delta-presence and inclusion each name the research subset: give one "
            "(delta-presence alone, to bound delta)"
        )
    named = sorted(models & set(SUBSET_MODELS))
    if len(named) > 1:
        raise _fail(
            f"{' and '.join(named)} each name the research subset: give one of them "
            "(a release has one research subset)"
        )


def criteria_with_k(
    specs: Sequence[Mapping[str, Any] | str], k: int | None
) -> list[dict[str, Any]]:
    """The criteria with the ``k`` shorthand as a k-anonymity criterion (placed first).

    ``k`` and a ``k-anonymity`` criterion together are refused: ARX takes one
    k-anonymity model, and which of two values was meant cannot be told.
    Without any criterion and without ``k``, the default is 2-anonymity.
    """
    items = normalize_criteria(specs)
    has_k = any(s["model"] == "k-anonymity" for s in items)
    if k is not None and has_k:
        other = next(s["k"] for s in items if s["model"] == "k-anonymity")
        raise AnonlabError(
            f"k = {k} and a k-anonymity criterion with k = {other} are both "
            "given: give k or the criterion, not both",
            parameter="k",
        )
    if k is not None:
        return [normalize_criterion({"model": "k-anonymity", "k": k}), *items]
    if not items:
        return [normalize_criterion({"model": "k-anonymity", "k": 2})]
    return items


def resolve_criteria_paths(specs: Any, base: Path) -> Any:
    """The path parameters (``hierarchy``, ``subset``, ``population``) made relative to
    ``base`` (a TOML file's folder), like the other path settings; other values unchanged."""
    if not isinstance(specs, list):
        return specs
    out = []
    for spec in specs:
        if isinstance(spec, Mapping):
            model = MODELS.get(str(spec.get("model", "")).strip().lower())
            spec = dict(spec)
            for key, param in model.params.items() if model else ():
                value = spec.get(key)
                if param.path and isinstance(value, str) and value and "://" not in value:
                    spec[key] = str(base / value)
        out.append(spec)
    return out


def path_parameters(spec: Mapping[str, Any]) -> dict[str, str]:
    """The file parameters of one normalized criterion: ``{key: path}``."""
    model = MODELS[spec["model"]]
    return {k: str(spec[k]) for k, p in model.params.items() if p.path and k in spec}


# ---------------------------------------------------------------------------
# Criterion objects
# ---------------------------------------------------------------------------


def criterion_class(model_name: str) -> type[Criterion]:
    """The class of a model, found by its ``name`` in its module (imported on first use)."""
    from anonlab.privacy.base import Criterion

    model = _model(model_name)
    try:
        module = importlib.import_module(f"anonlab.privacy.{model.module}")
    except ModuleNotFoundError:
        module = None
    for _, cls in inspect.getmembers(module, inspect.isclass) if module else ():
        if issubclass(cls, Criterion) and not inspect.isabstract(cls) and cls.name == model.name:
            return cls
    raise _fail(
        f"model '{model.name}' is not available in this installation "
        f"(anonlab.privacy.{model.module} has no class for it)"
    )


def build_criterion(spec: Mapping[str, Any] | str) -> Criterion:
    """The criterion object for one model's settings (dict or flag text).

    The class gets the parameters as keyword arguments named as in the
    settings (``attribute``, ``l``, ``c``, ...); its constructor checks their
    ranges.
    """
    values = normalize_criterion(spec)
    cls = criterion_class(values.pop("model"))
    with criteria_errors():
        return cls(**values)


def build_criteria(specs: Iterable[Mapping[str, Any] | str]) -> list[Criterion]:
    """:func:`build_criterion` for each of ``specs`` (checked together first)."""
    return [build_criterion(s) for s in normalize_criteria(specs)]


def describe(criterion: Criterion) -> dict[str, Any]:
    """A criterion as settings spell it: ``{"model", ["attribute"], parameters...}``."""
    out: dict[str, Any] = {"model": criterion.name}
    if criterion.attribute is not None:
        out["attribute"] = criterion.attribute
    out.update(criterion.parameters())
    return out


def bind_criteria(criteria: Iterable[Criterion], dataset: Dataset) -> None:
    """Give each criterion the dataset it will judge, once before the search.

    Each criterion's :meth:`~anonlab.privacy.base.Criterion.bind` takes what
    it needs from the data and checks it: a criterion on a sensitive
    attribute needs a column with the sensitive role
    (:meth:`anonlab.dataset.Dataset.sensitive_attribute` says what is wrong
    otherwise), ``l`` above the number of distinct values or a hierarchy
    missing a value are refused.
    """
    with criteria_errors():
        for criterion in criteria:
            criterion.bind(dataset)
