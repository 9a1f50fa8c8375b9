"""Top and bottom coding: sdcMicro's ``topBotCoding`` (docs/masking.md, "topbot").

sdcMicro's ``topBotCoding(x, value, replacement, kind)`` replaces every value above
``value`` (``kind = "top"``, strictly greater) or below it (``kind = "bottom"``,
strictly less) by ``replacement``. anonlab takes the same three parameters, and
``top``/``bottom`` with their replacements to code both tails in one run:
``top = v`` is ``value = v, kind = "top"``. A replacement left out is the limit
itself (sdcMicro requires one). Values at the limit, missing values and every other
value are released as they are (their text unchanged); a replaced value is written
as :func:`~anonlab.masking.values.number_text` spells it. Deterministic: the same
released values as sdcMicro's on the same data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Self

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import model_validator

from anonlab.masking.registry import Masked, MaskingMethod, MethodParams
from anonlab.masking.values import finite_floats, is_numeric, number_text, numbers_of


class TopBotParams(MethodParams):
    """``top``/``bottom`` limits with their replacements, or sdcMicro's ``value``,
    ``replacement`` and ``kind`` (``"top"``, sdcMicro's default, or ``"bottom"``)."""

    top: float | None = None
    top_replacement: float | None = None
    bottom: float | None = None
    bottom_replacement: float | None = None
    value: float | None = None
    replacement: float | None = None
    kind: Literal["top", "bottom"] = "top"

    @model_validator(mode="after")
    def _limits(self) -> Self:
        if self.value is not None:
            if (self.top if self.kind == "top" else self.bottom) is not None:
                raise ValueError(
                    f"value and {self.kind} give the same limit twice: give one of them"
                )
        elif self.replacement is not None:
            raise ValueError("replacement needs value (sdcMicro's limit): give value too")
        top, _ = self.limit("top")
        bottom, _ = self.limit("bottom")
        if top is None and bottom is None:
            raise ValueError("give a limit: top and/or bottom (or sdcMicro's value and kind)")
        for name in ("top", "bottom"):
            if self.limit(name)[0] is None and getattr(self, f"{name}_replacement") is not None:
                raise ValueError(f"{name}_replacement needs {name}: give {name} too")
        if top is not None and bottom is not None and bottom > top:
            raise ValueError(f"bottom {bottom:g} is above top {top:g}: give bottom <= top")
        return self

    def limit(self, kind: str) -> tuple[float | None, float | None]:
        """The ``kind`` (``"top"``/``"bottom"``) limit and its replacement (the limit when
        none is given); ``(None, None)`` without that limit."""
        if self.value is not None and self.kind == kind:
            value, replacement = self.value, self.replacement
        else:
            value, replacement = getattr(self, kind), getattr(self, f"{kind}_replacement")
        if value is None:
            return None, None
        return float(value), float(value if replacement is None else replacement)


def _code(
    x: NDArray[np.float64],
    out: NDArray[np.float64],
    steps: list[tuple[str, float, float, NDArray[np.bool_]]],
) -> None:
    """``x`` into ``out`` (which may be ``x``) with each step's values (``kind`` "top" or
    "bottom", its ``limit``, its replacement, where it codes) replaced. A replacement that
    is the limit itself is one pass, ``minimum(x, top)`` (``maximum`` for the bottom; a NaN
    stays NaN), but for a limit of 0, where the sign of a zero would change."""
    source = x
    for kind, limit, replacement, where in steps:
        if replacement == limit != 0:
            (np.minimum if kind == "top" else np.maximum)(source, replacement, out=out)
        else:
            if source is not out:
                np.copyto(out, source)
            np.copyto(out, replacement, where=where)
        source = out
    if source is not out:
        np.copyto(out, source)


def topbot(frame: pd.DataFrame, columns: Sequence[str], params: Any, seed: int | None) -> Masked:
    """Top/bottom code each of ``columns`` (module text); the section counts the coded
    values per column.

    A numeric column's coded values are its values with ``top_replacement`` written where
    ``x > top`` (and the same for the bottom), the coded columns rows of one array
    allocated once (ten arrays of a column each cost more in page faults than the coding
    itself); a column with no value beyond a limit is released as it is (its values
    shared, never written into).
    """
    p: TopBotParams = params
    top, top_to = p.limit("top")
    bottom, bottom_to = p.limit("bottom")
    released: dict[str, pd.Series] = {}
    counts: dict[str, dict[str, int]] = {}
    buffer: NDArray[np.float64] | None = None
    for j, name in enumerate(columns):
        column = frame[name]
        fast = finite_floats(column)
        x = fast if fast is not None else numbers_of(column, name)[0]
        above = (x > top) if top is not None else None
        below = (x < bottom) if bottom is not None else None
        n_above = 0 if above is None else int(np.count_nonzero(above))
        n_below = 0 if below is None else int(np.count_nonzero(below))
        counts[name] = {"top_coded": n_above, "bottom_coded": n_below}
        if not n_above and not n_below and (fast is not None or not is_numeric(column)):
            released[name] = column  # nothing coded: the column as it is
            continue
        if is_numeric(column):  # a DataFrame's numbers stay numbers
            coded = x  # a copy already unless ``fast``
            if fast is not None:
                if buffer is None:  # one allocation for every column (module text)
                    buffer = np.empty((len(columns), len(frame)), dtype=np.float64)
                coded = buffer[j]
            steps = [
                (kind, limit, to, mask)
                for kind, limit, to, mask, count in (
                    ("top", top, top_to, above, n_above),
                    ("bottom", bottom, bottom_to, below, n_below),
                )
                if count and limit is not None and to is not None and mask is not None
            ]
            _code(x, coded, steps)
            series = pd.Series(coded, index=frame.index, name=name, copy=False)
            whole = all(v is None or float(v).is_integer() for v in (top_to, bottom_to))
            if pd.api.types.is_integer_dtype(column) and whole:
                series = series.astype(column.dtype)  # whole numbers stay whole
            released[name] = series
        else:  # text: the values not coded keep their text
            out = column.copy()
            if n_above and above is not None and top_to is not None:
                out[above] = number_text(top_to)
            if n_below and below is not None and bottom_to is not None:
                out[below] = number_text(bottom_to)
            released[name] = out
    section = {
        "top": None if top is None else {"value": top, "replacement": top_to},
        "bottom": None if bottom is None else {"value": bottom, "replacement": bottom_to},
        "coded": counts,
    }
    return Masked(released, section)


METHOD = MaskingMethod(
    name="topbot",
    sdcmicro="topBotCoding",
    params=TopBotParams,
    apply=topbot,
    randomized=False,
    kind="numeric",
    summary="top/bottom coding: values above --top (below --bottom) replaced",
)
