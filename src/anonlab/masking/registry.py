"""The masking methods by name: each one's parameters (a settings model) and its function.

A method lives in a module of this package named in :data:`MODULES`; that module
defines ``METHOD``, a :class:`MaskingMethod`, and is imported only when the method is
used (so a method's imports cost nothing to the others). Adding a method is one line
in :data:`MODULES` and its module: the command line, the TOML settings, the Python
function and the run take their choices and parameters from here.

A method's function is ``apply(frame, columns, params, seed) -> Masked``: ``frame``
the whole table as the one reader reads it (every value text, a missing value
``""``), ``columns`` the columns to mask, ``params`` the method's parameters (its
:class:`MethodParams` model, validated) and ``seed`` the run's seed (``None`` for a
method that draws nothing). It returns the released values of the masked columns and
the report section that says what was done (docs/masking.md).

Random numbers: a method draws them from ``numpy.random.default_rng`` seeded with
``[seed, ...]`` sequences of its own documented layout (docs/masking.md, "Seeds"),
so that the independent checker (:mod:`anonlab.verify.masking`) can redraw them.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from anonlab.errors import AnonlabError

#: method name -> the module that defines its ``METHOD``
MODULES: dict[str, str] = {
    "pram": "anonlab.masking.pram",
    "topbot": "anonlab.masking.topbot",
    "recode": "anonlab.masking.recode",
    "noise": "anonlab.masking.noise",
    "rankswap": "anonlab.masking.rankswap",
    "shuffle": "anonlab.masking.shuffle",
}

#: which columns a method's measures treat as numbers and which as categories
Kind = Literal["numeric", "categorical"]


class MethodParams(BaseModel):
    """Base of every method's parameters: unknown names refused, values frozen.

    ``path_parameters`` name the parameters that hold a file path (resolved against
    a TOML file's folder, stored relative to the report like the run's own paths).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    path_parameters: ClassVar[tuple[str, ...]] = ()

    def read_columns(self) -> list[str]:
        """Columns the method reads besides the masked ones (e.g. strata), released as
        they are."""
        return []


@dataclass(frozen=True)
class Masked:
    """A method's released values of the masked columns and its report section."""

    columns: dict[str, pd.Series]
    section: dict[str, Any] = field(default_factory=dict)


class MaskFunction(Protocol):
    """``apply(frame, columns, params, seed)``: see the module text."""

    def __call__(
        self, frame: pd.DataFrame, columns: Sequence[str], params: Any, seed: int | None
    ) -> Masked: ...


@dataclass(frozen=True)
class MaskingMethod:
    """One masking method.

    ``name`` is its choice (``--method``), ``sdcmicro`` the sdcMicro function it
    follows, ``params`` its parameters' model, ``apply`` its function,
    ``randomized`` whether it draws random numbers (then the run's seed matters),
    ``kind`` how the measures read the masked columns, ``summary`` one line for
    ``--help``.
    """

    name: str
    sdcmicro: str
    params: type[MethodParams]
    apply: MaskFunction
    randomized: bool
    kind: Kind
    summary: str


def method_names() -> list[str]:
    """The methods there are, in :data:`MODULES` order (the command line's choices)."""
    return list(MODULES)


def get_method(name: str) -> MaskingMethod:
    """The method called ``name``; any other name is one :class:`AnonlabError`."""
    module = MODULES.get(name)
    if module is None:
        raise AnonlabError(
            f"method '{name}' is not a masking method: give one of {', '.join(MODULES)}",
            parameter="method",
        )
    method: MaskingMethod = importlib.import_module(module).METHOD
    return method


def method_params(method: MaskingMethod, values: Mapping[str, Any]) -> MethodParams:
    """``values`` validated by the method's parameters model; the first problem is one
    :class:`AnonlabError` naming the parameter."""
    try:
        return method.params.model_validate(dict(values))
    except ValidationError as exc:
        error = exc.errors()[0]
        name = ".".join(str(p) for p in error["loc"]) or "parameters"
        if error["type"] == "extra_forbidden":
            known = ", ".join(method.params.model_fields) or "none"
            raise AnonlabError(
                f"'{name}' is not a parameter of method {method.name} (its parameters: {known})",
                parameter=name,
            ) from None
        message = str(error["msg"]).removeprefix("Value error, ")
        raise AnonlabError(f"{name}: {message}", parameter=name) from None
