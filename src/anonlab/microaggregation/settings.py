"""Parsers of the microaggregation family's compact parameter spellings.

``k`` of a trade-off may be ``"3-10"``, ``"3,5,10"``, ``5`` or ``[3, 5]``;
weights may be written ``"0.5,0,0.5"``. The settings models themselves are
in :mod:`anonlab.runs.microaggregate`.
"""

from __future__ import annotations

from collections.abc import Sequence

from anonlab.errors import AnonlabError


def parse_k_range(spec: str | int | Sequence[int]) -> list[int]:
    """``"3-10"``, ``"3,5,10"``, ``5`` or ``[3, 5]`` to a sorted list of distinct k."""
    try:
        if isinstance(spec, bool):
            raise ValueError(spec)
        if isinstance(spec, int):
            values = [spec]
        elif isinstance(spec, str):
            values = _k_values(spec)
        else:
            values = [_whole(v) for v in spec]
    except (TypeError, ValueError):
        raise AnonlabError(
            f"k '{spec}' is not a k, a list (3,5,10) or a range (3-10)", parameter="k"
        ) from None
    if not values:
        raise AnonlabError(f"k '{spec}' holds no value: give e.g. 3-10", parameter="k")
    return sorted(set(values))


def _k_values(text: str) -> list[int]:
    """The k values of ``"3-10"`` (a range, both ends included) or ``"3,5,10"``."""
    if "-" in text.strip() and "," not in text:
        a, b = text.split("-", 1)
        return list(range(int(a), int(b) + 1))
    return [int(v) for v in text.split(",") if v.strip()]


def _whole(value: object) -> int:
    """``value`` as an int when it is one (not a bool, not a fraction)."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(value)
    return int(value)


def parse_weights(text: str | Sequence[float] | None) -> list[float] | None:
    """``"0.5,0,0.5"`` (or a list of numbers) to floats; ``None`` stays ``None``.

    Whether the weights add up to 1 is checked where they are used
    (:func:`anonlab.metrics.utility.weights`).
    """
    if text is None:
        return None
    try:
        if isinstance(text, str):
            return [float(v) for v in text.split(",") if v.strip()]
        return [float(v) for v in text]
    except (TypeError, ValueError):
        raise AnonlabError(
            f"weights '{text}' are not comma-separated numbers: e.g. 0.5,0,0.5"
        ) from None
