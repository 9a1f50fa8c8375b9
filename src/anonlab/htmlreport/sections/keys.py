"""Finding a report key by name, whatever its case (``DR`` or ``dr``, ``S`` or ``s``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def find_key(report: Mapping[str, Any], name: str) -> str | None:
    """The key of ``report`` equal to ``name`` ignoring case (None if there is none)."""
    for key in report:
        if str(key).lower() == name.lower():
            return str(key)
    return None
