"""Check that a JSON document is an anonlab report before rendering it.

A foreign or malformed document gets one :class:`~anonlab.errors.AnonlabError`
line naming the first thing missing. Only the common header and the keys a
family's section cannot do without are required; every other key is
optional and its part of the page is left out when it is absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from anonlab.errors import AnonlabError

HEADER_KEYS = ("command", "anonlab_version", "parameters")

# keys a command's section needs, and the JSON type each must have
REQUIRED: dict[str, dict[str, type | tuple[type, ...]]] = {
    "generalize": {
        "records": int,
        "transformation": dict,
        "suppressed_records": int,
    },
    "apply": {"transformation": dict, "records": int, "suppressed_records": int},
    "microaggregate": {"k": int, "records": int},
    "evaluate": {"measures": dict},
    "tradeoff": {"points": list},
    "fuse": {"rounds": int, "templates": list, "cut": dict},
    "party": {"party": str, "role": str, "rounds": int},
    "perturb": {"method": str, "records": int},
    "attack": {"attacks": list},
    "compare": {"methods": list, "comparison": list},
}

# the release keys every family with roles and a risk section writes (docs/risk.md)
RELEASE_KEYS: dict[str, type | tuple[type, ...]] = {
    "roles": dict,
    "released_unchanged": list,
    "insensitive_by_other": list,
    "risk": dict,
    "risk_warnings": list,
    "attacker_knowledge": str,
}

# optional keys that, when present, must have this shape
OPTIONAL: dict[str, dict[str, type | tuple[type, ...]]] = {
    "generalize": {
        "k": int,  # null when the privacy model has no k-anonymity criterion
        "criteria": list,
        "class_sizes": dict,
        "information_loss": dict,
        "lattice_levels": list,
        "equivalence_classes": int,
        "distinct_values": dict,
        **RELEASE_KEYS,
    },
    "apply": {"distinct_values": dict, "criteria": list, **RELEASE_KEYS},
    "microaggregate": dict(RELEASE_KEYS),
    "tradeoff": {
        "roles": dict,
        "released_unchanged": list,
        "insensitive_by_other": list,
        "risk_by_k": dict,
        "attacker_knowledge": str,
    },
    "fuse": {
        "providers": list,
        "records": int,
        "specializations": list,
        "bytes_sent": dict,
        "dropped_templates": list,
        **RELEASE_KEYS,
    },
    "party": {
        "providers": list,
        "records": int,
        "templates": list,
        "cut": dict,
        "specializations": list,
        "bytes_sent": dict,
        "bytes_sent_detail": dict,
        "winners": list,
        **RELEASE_KEYS,
    },
    "perturb": {
        "columns": list,
        "blocks": list,
        "overall": dict,
        "attacks": list,
        "clustering": dict,
        "warnings": list,
        "privacy_summary": dict,
        "risk_of_unchanged": dict,
        **RELEASE_KEYS,
    },
    "attack": {"columns": list, "records": int, "warnings": list},
}

LATTICE_COUNTS = ("level", "nodes", "checked", "anonymous", "k_minimal")

_TYPE_NAMES = {
    int: "an integer",
    dict: "an object",
    list: "a list",
    float: "a number",
    str: "a string",
}


def _type_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kind)
    return _TYPE_NAMES.get(kind, kind.__name__)


def _is(value: Any, kind: type | tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return False
    if kind is int and isinstance(value, float) and value.is_integer():
        return True
    return isinstance(value, kind)


def validate_report(report: Any, source: str = "report") -> dict[str, Any]:
    """Return ``report`` if it is an anonlab report a section can be made of.

    Raises :class:`AnonlabError` naming the first missing or mistyped key.
    """
    _check_header(report, source)
    command = report["command"]
    for key, kind in REQUIRED.get(command, {}).items():
        if key not in report:
            raise AnonlabError(
                f"'{source}' ({command} report) is missing key '{key}': the file is "
                "truncated or edited; write it again with the command's --report"
            )
        _check_type(report, key, kind, source, command)
    for key, kind in OPTIONAL.get(command, {}).items():
        if report.get(key) is not None:
            _check_type(report, key, kind, source, command)
    if command in ("generalize", "apply"):
        _check_generalization(report, source, command)
    return dict(report)


def _check_header(report: Any, source: str) -> None:
    """The common header: an object with a command name, a version and parameters."""
    if not isinstance(report, Mapping):
        raise AnonlabError(
            f"'{source}' is not an anonlab report: expected a JSON object with the keys "
            f"{', '.join(HEADER_KEYS)}, got a JSON {type(report).__name__}"
        )
    for key in HEADER_KEYS:
        if key not in report:
            raise AnonlabError(
                f"'{source}' is not an anonlab report: key '{key}' is missing; give the "
                "--report JSON written by an anonlab command"
            )
    command = report["command"]
    if not isinstance(command, str) or not command:
        raise AnonlabError(f"'{source}': key 'command' must be a command name, got {command!r}")
    if not isinstance(report["parameters"], Mapping):
        raise AnonlabError(f"'{source}': key 'parameters' must be an object")
    inputs = report.get("inputs")
    if inputs is not None and not isinstance(inputs, Mapping):
        raise AnonlabError(f"'{source}': key 'inputs' must be an object")


def _check_type(
    report: Mapping[str, Any], key: str, kind: type | tuple[type, ...], source: str, command: str
) -> None:
    """One key of the JSON type ``kind``, else an error naming the key and both types."""
    if not _is(report[key], kind):
        raise AnonlabError(
            f"'{source}' ({command} report): key '{key}' must be {_type_name(kind)}, "
            f"got {type(report[key]).__name__}"
        )


def _int_like(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, str) and value.strip().lstrip("-").isdigit()


def _check_generalization(report: Mapping[str, Any], source: str, command: str) -> None:
    """Levels, class sizes and lattice counts must be whole numbers of the right sign."""
    where = f"'{source}' ({command} report)"
    for column, level in report["transformation"].items():
        if not _int_like(level) or isinstance(level, str) or level < 0:
            raise AnonlabError(
                f"{where}: transformation of '{column}' must be a whole "
                f"number >= 0 (a hierarchy level), got {level!r}"
            )
    sizes = report.get("class_sizes") or {}
    for size, count in sizes.items():
        if (
            not _int_like(size)
            or not _int_like(count)
            or isinstance(count, str)
            or int(size) < 1
            or count < 0
        ):
            raise AnonlabError(
                f"{where}: class_sizes must map a size (>= 1) to a count of "
                f"classes (>= 0), got {size!r}: {count!r}"
            )
    for i, row in enumerate(report.get("lattice_levels") or []):
        if not isinstance(row, Mapping):
            raise AnonlabError(f"{where}: lattice_levels[{i}] must be an object")
        for key in LATTICE_COUNTS:
            value = row.get(key)
            if value is not None and (not _int_like(value) or isinstance(value, str) or value < 0):
                raise AnonlabError(
                    f"{where}: lattice_levels[{i}].{key} must be a whole number >= 0, got {value!r}"
                )


def load_report(path: Path) -> dict[str, Any]:
    """Read and validate a JSON report file."""
    from anonlab.io import read_json

    return validate_report(read_json(path), str(path))
