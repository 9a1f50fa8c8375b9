"""Settings of every run: the shared rules every family's model follows.

Every family's settings is a pydantic model derived from :class:`Settings`.
The same rules hold for all of them:

- a TOML file holds the parameters under their Python names (``block_size``;
  a name with a dash, such as ``block-size``, is read as the same parameter);
- relative paths in a TOML file are relative to the file's folder
  (the model's ``path_fields`` name which parameters are paths);
- values given directly (command-line flags, keyword arguments) override the
  file; ``None`` means "not given";
- the first invalid value becomes one :class:`AnonlabError` naming the
  parameter (see :func:`settings_error`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from anonlab.errors import AnonlabError
from anonlab.io import PathLike


def split_names(items: str | Sequence[str] | None) -> list[str]:
    """Column names from ``"a,b"`` or repeated flags (``["a", "b,c"]``); ``None`` gives []."""
    if items is None:
        return []
    parts = [items] if isinstance(items, str) else list(items)
    return [name.strip() for part in parts for name in str(part).split(",") if name.strip()]


# ---------------------------------------------------------------------------
# The shared rules (every family)
# ---------------------------------------------------------------------------


class Settings(BaseModel):
    """Base of every family's settings: unknown names refused, paths resolved.

    Subclasses list in ``path_fields`` the parameters that hold a path (or a
    list of paths, or a table of name -> path); :meth:`load` resolves them
    against the TOML file's folder.
    """

    # defer_build: a model's validator is built when it first validates, so a command pays
    # only for its own settings, not for every model of the modules it imports
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)
    path_fields: ClassVar[tuple[str, ...]] = ()
    input_fields: ClassVar[tuple[str, ...]] = ("input", "table", "query", "sheet")
    output_fields: ClassVar[tuple[str, ...]] = ("output", "report", "html", "plot", "key")

    def __init__(self, **values: Any) -> None:
        """Validate ``values``; the first problem becomes one :class:`AnonlabError`."""
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise settings_error(exc) from None

    @classmethod
    def load(cls, config: PathLike | None = None, /, **overrides: Any) -> Self:
        """Settings from an optional TOML file, with ``overrides`` (not ``None``) on top.

        Giving another input than the file's while keeping the file's outputs
        would write the new table's results over the old one's: refused.
        """
        values: dict[str, Any] = {}
        if config is not None:
            path = Path(config)
            values = resolve_paths(read_toml(path), path.parent, cls.path_fields)
            check_input_override(values, overrides, cls.input_fields, cls.output_fields)
        return validate_settings(cls, merge_settings(values, overrides))


def check_input_override(
    config: dict[str, Any],
    overrides: dict[str, Any],
    input_fields: Iterable[str],
    output_fields: Iterable[str],
) -> None:
    """Refuse a new input that would reuse the config file's own output paths."""
    changed, kept = outputs_taken_over(config, overrides, input_fields, output_fields)
    if changed is not None and kept:
        raise AnonlabError(
            f"{changed} differs from the config file's, but its {', '.join(kept)} would be "
            f"written to the config's paths (over the other table's results): give "
            f"{', '.join(kept)} for the new {changed} too", parameter=changed)


S = TypeVar("S", bound=BaseModel)


def read_toml(path: PathLike) -> dict[str, Any]:
    """Read a TOML settings file; one-line errors for a missing, folder, non-UTF-8 or bad file.

    Dashes in top-level names become underscores (``block-size`` = ``block_size``).
    """
    p = Path(path)
    if not p.exists():
        raise AnonlabError(f"config file '{p}' does not exist: check the path")
    if p.is_dir():
        raise AnonlabError(f"config '{p}' is a folder, not a file: name a TOML file")
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise AnonlabError(f"config file '{p}' is not UTF-8 text: re-save it as UTF-8") from None
    except OSError as exc:
        raise AnonlabError(f"cannot read config file '{p}': {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AnonlabError(f"config file '{p}' is not valid TOML: {exc}") from None
    return {str(k).replace("-", "_") if _is_identifier(k) else k: v for k, v in data.items()}


def _is_identifier(name: str) -> bool:
    return name.replace("-", "_").isidentifier()


def resolve_paths(values: dict[str, Any], base: Path, keys: Iterable[str]) -> dict[str, Any]:
    """``values`` with the relative paths under ``keys`` made relative to ``base``.

    A key's value may be a path, a list of paths or a table of name -> path.
    A SQLAlchemy URL (``scheme://...``) is not a path and stays as it is.
    """
    out = dict(values)
    for key in keys:
        out[key] = _resolve_value(out.get(key), base)
    return {k: v for k, v in out.items() if v is not None or k in values}


def _resolve_value(value: Any, base: Path) -> Any:
    if isinstance(value, str):
        if "://" in value or not value:
            return value
        # a trailing "/" names a folder output (a partitioned release): keep it
        return str(base / value) + ("/" if value.endswith("/") else "")
    if isinstance(value, list):
        return [_resolve_value(v, base) for v in value]
    if isinstance(value, dict):
        return {k: _resolve_value(v, base) for k, v in value.items()}
    return value


def outputs_taken_over(
    config: Mapping[str, Any],
    overrides: Mapping[str, Any],
    input_fields: Iterable[str],
    output_fields: Iterable[str],
) -> tuple[str | None, list[str]]:
    """The first input parameter ``overrides`` changes, and the config's outputs it keeps.

    ``config`` holds the config file's values with its paths resolved. An
    input is changed when both name one and they are not the same source
    (paths compared once resolved); a kept output is one the config names and
    ``overrides`` does not. ``(None, [])`` when no input changes.
    """
    changed = next((name for name in input_fields
                    if overrides.get(name) is not None and config.get(name) is not None
                    and not _same_source(overrides[name], config[name])), None)
    if changed is None:
        return None, []
    return changed, [name for name in output_fields
                     if config.get(name) is not None and overrides.get(name) is None]


def _same_source(a: Any, b: Any) -> bool:
    """Whether two inputs name the same source (paths compared once resolved)."""
    text_a, text_b = str(a), str(b)
    if "://" in text_a or "://" in text_b or "/" not in text_a + text_b:
        return text_a == text_b  # URLs, and table names, queries and sheets
    return Path(text_a).resolve() == Path(text_b).resolve()


def merge_settings(values: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``values`` overridden by every override actually given (not ``None``, not empty)."""
    merged = dict(values)
    for key, value in overrides.items():
        if value is None or (isinstance(value, list | tuple | dict) and len(value) == 0):
            continue
        merged[key] = value
    return merged


def validate_settings(model: type[S], values: dict[str, Any]) -> S:
    """Validate ``values`` as ``model``; the first problem becomes one :class:`AnonlabError`."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        raise settings_error(exc) from None


def settings_error(exc: ValidationError) -> AnonlabError:
    """One line naming the first invalid parameter, what is wrong and how to fix it."""
    err = exc.errors()[0]
    loc = [str(x) for x in err["loc"]]
    name = loc[0] if loc else "settings"
    where = ".".join(loc) or "settings"
    cause = err.get("ctx", {}).get("error")
    if isinstance(cause, AnonlabError):  # raised by a validator or a nested Settings
        if cause.parameter is not None or not loc:
            return cause
        return AnonlabError(f"{where}: {cause}", parameter=name)
    kind = err["type"]
    if kind == "missing":
        return AnonlabError(f"{where} is missing: give it as an argument or in the TOML file",
                            parameter=name)
    if kind == "extra_forbidden":
        return AnonlabError(f"{where} is not a known setting: check the spelling", parameter=name)
    message = str(err["msg"])
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    return AnonlabError(f"{where}: {message} (got {err.get('input')!r})", parameter=name)
