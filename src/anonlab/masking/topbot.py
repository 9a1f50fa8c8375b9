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
from pydantic import model_validator

from anonlab.masking.registry import Masked, MaskingMethod, MethodParams
from anonlab.masking.values import is_numeric, number_text, numbers_of


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


def topbot(frame: pd.DataFrame, columns: Sequence[str], params: Any, seed: int | None) -> Masked:
    """Top/bottom code each of ``columns`` (module text); the section counts the coded
    values per column."""
    p: TopBotParams = params
    top, top_to = p.limit("top")
    bottom, bottom_to = p.limit("bottom")
    released: dict[str, pd.Series] = {}
    counts: dict[str, dict[str, int]] = {}
    for name in columns:
        x, _ = numbers_of(frame[name], name)
        above = (x > top) if top is not None else np.zeros(len(x), dtype=bool)
        below = (x < bottom) if bottom is not None else np.zeros(len(x), dtype=bool)
        if is_numeric(frame[name]):  # a DataFrame's numbers stay numbers
            coded = x.copy()
            if top_to is not None:
                coded[above] = top_to
            if bottom_to is not None:
                coded[below] = bottom_to
            series = pd.Series(coded, index=frame.index, name=name)
            whole = all(v is None or float(v).is_integer() for v in (top_to, bottom_to))
            if pd.api.types.is_integer_dtype(frame[name]) and whole:
                series = series.astype(frame[name].dtype)  # whole numbers stay whole
            released[name] = series
        else:  # text: the values not coded keep their text
            out = frame[name].copy()
            if top_to is not None and above.any():
                out[above] = number_text(top_to)
            if bottom_to is not None and below.any():
                out[below] = number_text(bottom_to)
            released[name] = out
        counts[name] = {"top_coded": int(above.sum()), "bottom_coded": int(below.sum())}
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
