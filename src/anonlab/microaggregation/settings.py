"""Validated settings of ``microaggregate``, ``evaluate`` and ``tradeoff`` (TOML + flags).

A TOML file uses the long flag names (``lambda``, ``tau``, ``gamma`` as
arrays; ``orders`` as a table of ordinal column = list of values in order);
relative paths in it are relative to the file's folder. Flags override it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from anonlab.errors import AnonlabError
from anonlab.metrics.tradeoff import DEFAULT_GAMMA, DEFAULT_TAU
from anonlab.metrics.utility import DEFAULT_LAMBDA
from anonlab.microaggregation.scalable import DEFAULT_BLOCK_SIZE

T = TypeVar("T", bound=BaseModel)

PATH_KEYS = ("input", "original", "masked", "output", "report", "html", "plot")


class _Common(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    delimiter: str | None = None
    columns: str | list[str] | None = "all-numeric"
    nominal: list[str] = []
    ordinal: list[str] = []
    orders: dict[str, list[str]] = {}
    report: str | None = None
    html: str | None = None
    quiet: bool = False


class _Measures(BaseModel):
    lambda_: list[float] = Field(default=list(DEFAULT_LAMBDA), alias="lambda")
    tau: list[float] = list(DEFAULT_TAU)
    gamma: list[float] = list(DEFAULT_GAMMA)
    p: str | float | list[float] | None = None
    workers: int = 1


class MicroaggregateSettings(_Common):
    """Everything ``anonlab microaggregate`` needs."""

    input: str
    k: int = 3
    variant: Literal["exact", "scalable"] = "exact"
    block_size: int = DEFAULT_BLOCK_SIZE
    output: str | None = None


class EvaluateSettings(_Common, _Measures):
    """Everything ``anonlab evaluate`` needs."""

    original: str
    masked: str


class TradeoffSettings(_Common, _Measures):
    """Everything ``anonlab tradeoff`` needs."""

    input: str
    k: str | int | list[int] = "3-10"
    variant: Literal["exact", "scalable"] = "exact"
    block_size: int = DEFAULT_BLOCK_SIZE
    plot: str | None = None


def first_error(exc: ValidationError) -> str:
    """One line naming the first invalid setting."""
    err = exc.errors()[0]
    where = ".".join(str(x) for x in err["loc"]) or "settings"
    if err["type"] == "missing":
        return f"setting '{where}' is missing: give it as an argument, a flag or in the TOML file"
    if err["type"] == "extra_forbidden":
        return f"unknown setting '{where}': check the spelling (see --help)"
    return f"setting '{where}': {err['msg']} (got {err.get('input')!r})"


def resolve_paths(config: dict[str, Any], base: Path) -> dict[str, Any]:
    """Make a TOML file's relative paths relative to its folder."""
    out = dict(config)
    for key in PATH_KEYS:
        if isinstance(out.get(key), str):
            out[key] = str(base / out[key])
    return out


def validate(model: type[T], values: dict[str, Any]) -> T:
    """Validate merged settings into ``model``; the first problem becomes a one-line error."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise AnonlabError(first_error(exc)) from None


def parse_k_range(spec: str | int | list[int]) -> list[int]:
    """``"3-10"``, ``"3,5,10"``, ``5`` or ``[3, 5]`` to a sorted list of distinct k."""
    try:
        if isinstance(spec, int):
            values = [spec]
        elif isinstance(spec, list):
            values = [int(v) for v in spec]
        elif "-" in spec.strip() and "," not in spec:
            a, b = spec.split("-", 1)
            values = list(range(int(a), int(b) + 1))
        else:
            values = [int(v) for v in spec.split(",") if v.strip()]
    except ValueError:
        raise AnonlabError(f"--k '{spec}' is not a k, a list (3,5,10) or a range (3-10)") from None
    if not values:
        raise AnonlabError(f"--k '{spec}' holds no value: give e.g. 3-10")
    return sorted(set(values))


def parse_weights(text: str | None) -> list[float] | None:
    """``"0.5,0,0.5"`` to floats (``None`` stays ``None``)."""
    if text is None:
        return None
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise AnonlabError(f"weights '{text}' are not comma-separated numbers") from None


def parse_orders(items: list[str] | None) -> dict[str, list[str]] | None:
    """Repeated ``--order COLUMN=v1,v2,...`` flags to a mapping."""
    if not items:
        return None
    out: dict[str, list[str]] = {}
    for item in items:
        col, sep, values = item.partition("=")
        if not sep or not col.strip() or not values.strip():
            raise AnonlabError(f"--order '{item}' is not COLUMN=v1,v2,...")
        out[col.strip()] = [v.strip() for v in values.split(",") if v.strip()]
    return out
