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
  parameter (see :func:`settings_error`);
- no silent overwrite: a run whose parameters differ from the TOML file's
  may not write to the file's own outputs (they hold the results of the
  file's parameters); it names its own outputs, or passes ``overwrite=True``
  (see :func:`check_overwrite`). Outputs (``output_fields``) and the
  parameters that change neither the release nor a figure of the report
  (``neutral_fields``) may be overridden freely.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from anonlab.errors import AnonlabError
from anonlab.paths import PathLike


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
    output_fields: ClassVar[tuple[str, ...]] = (
        "output",
        "output_table",
        "report",
        "html",
        "plot",
        "key",
    )
    #: parameters that change neither the release nor a figure of its report: where and
    #: how many processes run the work, the independent check, the judgement of the risk
    neutral_fields: ClassVar[tuple[str, ...]] = (
        "scheduler",
        "workers",
        "memory_limit",
        "verify",
        "max_risk",
        "fail_on_risk",
        "storage_options",
    )

    def __init__(self, **values: Any) -> None:
        """Validate ``values``; the first problem becomes one :class:`AnonlabError`."""
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise settings_error(exc) from None

    @classmethod
    def load(
        cls, config: PathLike | None = None, /, *, overwrite: bool = False, **overrides: Any
    ) -> Self:
        """Settings from an optional TOML file, with ``overrides`` (not ``None``) on top.

        Giving another input than the file's while keeping the file's outputs
        would write the new table's results over the old one's: refused. So is
        any other parameter that differs from the file's while an output is
        the file's, unless ``overwrite`` (see :func:`check_overwrite`).
        """
        values: dict[str, Any] = {}
        if config is not None:
            path = Path(config)
            values = resolve_paths(read_toml(path), path.parent, cls.path_fields)
            check_input_override(values, overrides, cls.input_fields, cls.output_fields)
            check_overwrite(cls, path, values, overrides, overwrite=overwrite)
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
            f"{', '.join(kept)} for the new {changed} too",
            parameter=changed,
        )


S = TypeVar("S", bound=BaseModel)


# ---------------------------------------------------------------------------
# No silent overwrite: a changed run names its own outputs
# ---------------------------------------------------------------------------


class OverwriteError(AnonlabError):
    """A run with other parameters than its config file's would write to the file's outputs.

    ``changed`` are the parameters that differ, ``kept`` the outputs still the
    file's (with ``paths``, as the file names them). The message names them as
    Python parameters; :meth:`for_flags` names them as the command's flags.
    """

    def __init__(self, config: Path, changed: list[str], kept: list[str], paths: list[str]) -> None:
        self.config, self.changed, self.kept, self.paths = config, changed, kept, paths
        super().__init__(self._line(str, "overwrite=True"), parameter=changed[0])

    def for_flags(self, flags: dict[str, str] | None = None) -> str:
        """The message with every parameter shown as the flag that sets it."""
        table = flags or {}
        return self._line(
            lambda name: table.get(name, "--" + name.replace("_", "-")), "--overwrite"
        )

    def _line(self, spell: Callable[[str], str], overwrite: str) -> str:
        changed = _and([spell(name) for name in self.changed])
        kept = _and([spell(name) for name in self.kept])
        verb = "differs" if len(self.changed) == 1 else "differ"
        return (
            f"{changed} {verb} from config '{self.config}', but {kept} would still be "
            f"written to the config's {', '.join(self.paths)}, over the results of its "
            f"own parameters: give {kept} for this run, or {overwrite} to replace them"
        )


def _and(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def check_overwrite(
    model: type[Settings],
    config: Path,
    values: dict[str, Any],
    overrides: Mapping[str, Any],
    *,
    overwrite: bool = False,
) -> None:
    """Refuse a run that changes a parameter of ``config`` but writes to its outputs.

    ``values`` are the config file's (paths resolved). A parameter is changed
    when an override of it gives the validated settings another value than
    the file's (:func:`changed_parameters`); an output is kept when the file
    names it and the overrides do not. Both at once would put the results of
    other parameters under the file's names, without a word: refused with
    :class:`OverwriteError`, unless ``overwrite``.
    """
    if overwrite:
        return
    kept = [
        name
        for name in model.output_fields
        if values.get(name) is not None and not _given(overrides.get(name))
    ]
    if not kept:
        return
    changed = changed_parameters(model, values, overrides)
    if changed:
        paths = [_shown_path(values[name]) for name in kept]
        raise OverwriteError(config, changed, kept, paths)


def changed_parameters(
    model: type[Settings], values: Mapping[str, Any], overrides: Mapping[str, Any]
) -> list[str]:
    """The overridden parameters whose value differs from the config file's ``values``.

    Outputs and ``neutral_fields`` do not count. Both sides are compared once
    validated (so ``"1%"`` equals ``0.01``, and paths are compared resolved);
    when the file's values alone are not valid settings, every override that
    is not the file's own value counts. Invalid overrides count for nothing:
    validating the run reports them.
    """
    fields = _field_names(model)
    free = {*model.output_fields, *model.neutral_fields}
    given = {key: value for key, value in overrides.items() if _given(value)}
    candidates = [key for key in given if fields.get(key, key) not in free]
    if not candidates:
        return []
    merged = merge_settings(dict(values), dict(given))
    base_values = merge_settings(
        dict(values), {k: v for k, v in given.items() if k not in candidates}
    )
    new, base = _validated(model, merged), _validated(model, base_values)
    if new is None:
        return []
    paths = set(model.path_fields)
    if base is None:
        return [
            key for key in candidates if not _same_value(given[key], values.get(key), key in paths)
        ]
    return [
        key
        for key in candidates
        if not _same_value(
            getattr(new, fields.get(key, key), None),
            getattr(base, fields.get(key, key), None),
            key in paths,
        )
    ]


def _given(value: Any) -> bool:
    """Whether an override is given (``None`` and empty lists are not, as in merging)."""
    return value is not None and not (isinstance(value, list | tuple | dict) and not value)


def _field_names(model: type[Settings]) -> dict[str, str]:
    """Each parameter's name and alias (``lambda``), mapped to its field's name."""
    names = {name: name for name in model.model_fields}
    names.update({info.alias: name for name, info in model.model_fields.items() if info.alias})
    return names


def _validated(model: type[Settings], values: dict[str, Any]) -> Settings | None:
    """``values`` validated as ``model``, or ``None`` when they are not valid settings."""
    try:
        return model.model_validate(values)
    except (ValidationError, AnonlabError, ValueError, TypeError):
        return None


def _same_value(a: Any, b: Any, is_path: bool) -> bool:
    """Whether two parameter values are the same (paths compared resolved).

    A value that is no plain Python value (a DataFrame) equals only itself.
    """
    if is_path:
        a, b = _resolved(a), _resolved(b)
    if not (_plain(a) and _plain(b)):
        return a is b
    return bool(a == b)


def _plain(value: Any) -> bool:
    """Whether ``value`` is built of None, numbers, text, lists and dicts only."""
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(v) for v in value.values())
    return False


def _resolved(value: Any) -> Any:
    """A path (or list or table of paths) resolved; URLs and other values as they are."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        return value if "://" in value or not value else str(Path(value).resolve())
    if isinstance(value, list | tuple):
        return [_resolved(v) for v in value]
    if isinstance(value, dict):
        return {k: _resolved(v) for k, v in value.items()}
    return value


def _shown_path(value: Any) -> str:
    """An output as a message shows it: a path normalized (no ``dir/..``), a URL masked."""
    text = str(value)
    if "://" in text:
        from anonlab.database import masked

        return masked(text)
    return os.path.normpath(text)


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
        # normalized: a config in examples/ naming ../out/x.csv gives out/x.csv, not
        # examples/../out/x.csv, in every message and report
        return os.path.normpath(base / value) + ("/" if value.endswith("/") else "")
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
    changed = next(
        (
            name
            for name in input_fields
            if overrides.get(name) is not None
            and config.get(name) is not None
            and not _same_source(overrides[name], config[name])
        ),
        None,
    )
    if changed is None:
        return None, []
    return changed, [
        name
        for name in output_fields
        if config.get(name) is not None and overrides.get(name) is None
    ]


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
        return AnonlabError(
            f"{where} is missing: give it as an argument or in the TOML file", parameter=name
        )
    if kind == "extra_forbidden":
        return AnonlabError(f"{where} is not a known setting: check the spelling", parameter=name)
    message = str(err["msg"])
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
    return AnonlabError(f"{where}: {message} (got {err.get('input')!r})", parameter=name)
