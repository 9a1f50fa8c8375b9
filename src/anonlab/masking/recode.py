"""Global recoding of numbers into intervals: sdcMicro's ``globalRecode`` (docs/masking.md).

sdcMicro's ``globalRecode(x, breaks, labels, method)`` is R's ``cut`` with
``dig.lab = 8``:

- ``breaks`` several numbers: the intervals ``(b0,b1], (b1,b2], ...`` (R's
  ``cut(x, breaks)``, ``right = TRUE``, ``include.lowest = FALSE``);
- ``breaks`` one number ``b > 1``: ``b`` intervals whose breaks ``method``
  computes, the first closed (``include.lowest = TRUE``): ``equidistant``
  ``seq(min - 1, max + 1, length.out = b + 1)``, rounded to whole numbers when that
  leaves them distinct; ``logEqui`` the same on ``log(x)``, then ``exp``;
  ``equalAmount`` the type-7 quantiles of ``x`` at ``0, 1/b, ..., 1``; ``b = 1``:
  the one interval ``(min - 1, max + 1]``;
- labels ``(a,b]`` (``[a,b]`` for a closed first interval), each break written
  by C's ``%.{d}g`` for the least ``d`` from 8 to 12 that keeps adjacent breaks
  apart (R's ``formatC``), or ``labels`` given, one per interval.

Where anonlab differs (on purpose, docs/masking.md): with breaks given, sdcMicro
releases a value that sits on the lowest break as missing (NA: ``(b0,b1]`` leaves
``b0`` out); anonlab keeps it in the first interval, then written ``[b0,b1]`` (the
label says the truth). A value outside the breaks, which sdcMicro also makes NA,
is refused in one line. ``equalAmount`` quantiles that coincide are jittered by
sdcMicro (R's random ``jitter``); anonlab keeps the distinct ones (fewer intervals,
the same for every run) and says so in the report. Every other released value is
sdcMicro's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from typing import Any, Literal

import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import NDArray
from pydantic import field_validator, model_validator

from anonlab.errors import AnonlabError
from anonlab.masking.registry import Masked, MaskingMethod, MethodParams
from anonlab.masking.values import finite_floats, is_numeric, numbers_of

RecodeMethod = Literal["equidistant", "logequidistant", "equalamount"]
#: sdcMicro's spellings of ``method``
SDC_METHODS = {"logEqui": "logequidistant", "equalAmount": "equalamount"}
#: R's ``cut`` as sdcMicro calls it: ``dig.lab = 8`` significant digits at least
DIG_LAB = 8


class RecodeParams(MethodParams):
    """``breaks`` (several numbers, or one count of intervals), ``recode_method`` for a
    count (sdcMicro's ``method``: ``equidistant``, ``logequidistant``/``logEqui``,
    ``equalamount``/``equalAmount``), ``labels`` one per interval (default R's)."""

    breaks: list[float]
    recode_method: RecodeMethod = "equidistant"
    labels: list[str] | None = None

    @field_validator("breaks", mode="before")
    @classmethod
    def _breaks(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return [float(x) for x in value.split(",") if x.strip()]
            except ValueError:
                raise ValueError(f"'{value}' is not a comma-separated list of numbers") from None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return [value]
        return value

    @field_validator("recode_method", mode="before")
    @classmethod
    def _method(cls, value: Any) -> Any:
        return SDC_METHODS.get(value, value) if isinstance(value, str) else value

    @field_validator("labels", mode="before")
    @classmethod
    def _labels(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [x.strip() for x in value.split(",")]
        return value

    @model_validator(mode="after")
    def _check(self) -> RecodeParams:
        if not self.breaks or not all(math.isfinite(b) for b in self.breaks):
            raise ValueError("breaks must be finite numbers: a count of intervals or the breaks")
        if len(self.breaks) == 1:
            count = self.breaks[0]
            if count != round(count) or count < 1:
                raise ValueError(
                    f"breaks {count:g}: one number is a count of intervals, a whole number >= 1"
                )
        elif len(set(self.breaks)) != len(self.breaks):
            raise ValueError(f"breaks {self.breaks} repeat a number: give distinct breaks")
        return self


def r_format(value: float, digits: int) -> str:
    """R's ``formatC(value, digits = digits, width = 1)`` of a double: C's ``%.{digits}g``."""
    return f"{value:.{digits}g}"


def interval_labels(breaks: NDArray[np.float64], closed_first: bool) -> list[str]:
    """R's ``cut`` labels for sorted ``breaks`` (``dig.lab = 8``; module text)."""
    nb = len(breaks)
    texts: list[str] = []
    ok = False
    for digits in range(DIG_LAB, max(12, DIG_LAB) + 1):
        texts = [r_format(float(b), digits) for b in breaks]
        if all(texts[i] != texts[i + 1] for i in range(nb - 1)):
            ok = True
            break
    if not ok:
        return [f"Range_{i + 1}" for i in range(nb - 1)]
    labels = [f"({texts[i]},{texts[i + 1]}]" for i in range(nb - 1)]
    if closed_first:
        labels[0] = "[" + labels[0][1:]
    return labels


def _r_seq(start: float, stop: float, count: int) -> NDArray[np.float64]:
    """R's ``seq(start, stop, length.out = count)``: the ends exact, the inner points
    ``start + i * ((stop - start) / (count - 1))``."""
    if count == 1:
        return np.array([start])
    step = (stop - start) / (count - 1)
    inner = start + np.arange(1, count - 1, dtype=np.float64) * step
    return np.concatenate([[start], inner, [stop]])


def _rounded_if_distinct(breaks: NDArray[np.float64]) -> NDArray[np.float64]:
    """The breaks rounded half to even (R's ``round``) when that keeps them distinct."""
    rounded = np.round(breaks)
    return rounded if len(np.unique(rounded)) == len(rounded) else breaks


def r_quantile7(sorted_x: NDArray[np.float64], probs: NDArray[np.float64]) -> NDArray[np.float64]:
    """R's ``quantile(x, probs)`` (type 7) as R computes it: index ``1 + (n-1) p``, the
    value at its floor, moved by ``h`` towards the next where that differs."""
    n = len(sorted_x)
    index = 1 + (n - 1) * probs
    lo = np.floor(index).astype(np.int64)
    hi = np.ceil(index).astype(np.int64)
    qs = sorted_x[lo - 1].copy()
    x_hi = sorted_x[hi - 1]
    move = (index > lo) & (x_hi != qs)
    h = (index - lo)[move]
    qs[move] = (1 - h) * qs[move] + h * x_hi[move]
    return qs


def computed_breaks(
    x: NDArray[np.float64], count: int, method: str
) -> tuple[NDArray[np.float64], bool, list[str]]:
    """The breaks sdcMicro computes for ``count`` intervals of the values ``x`` (no
    missing), whether the first interval is closed, and notes on what differs."""
    notes: list[str] = []
    lo, hi = float(x.min()), float(x.max())
    if count == 1:
        return np.array([lo - 1, hi + 1]), False, notes
    if method == "equidistant":
        return _rounded_if_distinct(_r_seq(lo - 1, hi + 1, count + 1)), True, notes
    if method == "logequidistant":
        if lo <= 0:
            raise AnonlabError(
                f"recode_method logequidistant needs positive values, the column's least is "
                f"{lo:g}: give breaks or another recode_method",
                parameter="recode_method",
            )
        logs = np.log(x)
        b = np.exp(_r_seq(float(logs.min()) - 1, float(logs.max()) + 1, count + 1))
        return _rounded_if_distinct(b), True, notes
    probs = np.concatenate([[0.0], np.arange(1, count + 1, dtype=np.float64) / count])
    b = r_quantile7(np.sort(x), probs)
    distinct = np.unique(b)
    if len(distinct) < len(b):
        notes.append(
            f"equalamount: {len(b) - len(distinct)} of the quantile breaks coincide; the "
            f"distinct ones are kept ({len(distinct) - 1} intervals), where sdcMicro jitters "
            "them at random"
        )
        if len(distinct) < 2:
            distinct = np.array([lo - 1, hi + 1])
            return distinct, False, notes
    return distinct, True, notes


def _intervals(
    x: NDArray[np.float64], inner: NDArray[np.float64]
) -> tuple[NDArray[np.signedinteger[Any]], NDArray[np.int64] | None]:
    """Each value's interval: how many of the ``inner`` breaks lie strictly below it
    (``searchsorted(inner, x, side="left")``; a missing value's is meaningless), and, for
    a few breaks, how many values present lie above each inner break.

    For a few breaks (32 or fewer) one comparison pass per break into one byte a value,
    faster than a binary search per value; the passes count the values above each break
    too, which gives the intervals' counts without another pass.
    """
    if len(inner) > 32:
        return np.searchsorted(inner, x, side="left"), None
    interval = np.zeros(len(x), dtype=np.int8)
    above_counts = np.empty(len(inner), dtype=np.int64)
    above = np.empty(len(x), dtype=bool)  # one buffer for every break
    ones = above.view(np.int8)  # the same bytes as 0 and 1: added without a cast
    for k, b in enumerate(inner):
        np.greater(x, b, out=above)  # False for a missing value (NaN)
        above_counts[k] = np.count_nonzero(above)
        interval += ones
    return interval, above_counts


def recode_column(
    x: NDArray[np.float64], missing: NDArray[np.bool_] | None, params: RecodeParams, name: str
) -> tuple[NDArray[np.signedinteger[Any]], list[str], dict[str, Any]]:
    """One column's interval per record (``-1``: missing), the labels and its report entry
    (module text). ``missing`` is ``None`` when no value is."""
    present = x if missing is None else x[~missing]
    notes: list[str] = []
    if len(params.breaks) == 1:
        if present.size == 0:
            raise AnonlabError(
                f"column '{name}' has no value to compute breaks from: give breaks",
                parameter="breaks",
            )
        breaks, closed, notes = computed_breaks(
            present, int(params.breaks[0]), params.recode_method
        )
    else:
        breaks, closed = np.sort(np.asarray(params.breaks, dtype=np.float64)), False
        if present.size and (present.min() < breaks[0] or present.max() > breaks[-1]):
            outside = (x < breaks[0]) | (x > breaks[-1])  # False where missing
            row = int(np.flatnonzero(outside)[0])
            raise AnonlabError(
                f"column '{name}': value {x[row]:g} (record {row + 1}) lies outside the "
                f"breaks [{breaks[0]:g}, {breaks[-1]:g}]: give breaks that cover every value",
                parameter="breaks",
            )
    # computed breaks cover every value; breaks given were checked above
    if not closed:
        on_lowest = int(np.count_nonzero(x == breaks[0]))
        if on_lowest:
            closed = True  # anonlab keeps them (module text); the label says so
            notes.append(
                f"{on_lowest} value(s) sit on the lowest break {breaks[0]:g}: kept in the "
                "first interval, written closed '[', where sdcMicro releases them as missing"
            )
    labels = interval_labels(breaks, closed)
    if params.labels is not None:
        if len(params.labels) != len(labels):
            raise AnonlabError(
                f"labels: {len(params.labels)} given for {len(labels)} intervals of column "
                f"'{name}': give one label per interval",
                parameter="labels",
            )
        labels = list(params.labels)
    # breaks[k] < x <= breaks[k + 1] is interval k; the lowest break's values the first
    interval, above_counts = _intervals(x, breaks[1:-1])
    if above_counts is not None:
        at_least = np.concatenate([[present.size], above_counts, [0]])
        counts = at_least[:-1] - at_least[1:]
    else:
        counts = np.bincount(
            interval if missing is None else interval[~missing], minlength=len(labels)
        )
    entry = {
        "breaks": [float(b) for b in breaks],
        "closed_first": closed,
        "labels": labels,
        "counts": {label: int(n) for label, n in zip(labels, counts, strict=True)},
        "notes": notes,
    }
    if missing is not None:
        interval = np.where(missing, -1, interval).astype(interval.dtype, copy=False)
    return interval, labels, entry


@cache
def _text_dtype() -> Any:
    """The dtype pandas gives a Series of Python strings (``str``, Arrow-backed, from
    pandas 3; ``object`` before)."""
    return pd.Series(np.asarray(["a"], dtype=object)).dtype


def labels_text(
    codes: NDArray[np.signedinteger[Any]], labels: list[str], index: pd.Index, name: str
) -> pd.Series:
    """The labels of ``codes`` as text, a missing value (``-1``) ``""``: an Arrow
    dictionary decoded (no Python string per value) where pandas keeps text in Arrow,
    else an object array."""
    dtype = _text_dtype()
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        indices = np.where(codes < 0, len(labels), codes) if (codes < 0).any() else codes
        decoded = pa.DictionaryArray.from_arrays(
            pa.array(indices), pa.array([*labels, ""], type=pa.string())
        ).dictionary_decode()
        return pd.Series(decoded, index=index, name=name, dtype=dtype)
    values = np.asarray([*labels, ""], dtype=object)[codes]
    return pd.Series(values, index=index, name=name)


def recode(frame: pd.DataFrame, columns: Sequence[str], params: Any, seed: int | None) -> Masked:
    """Recode each of ``columns`` into intervals (module text)."""
    p: RecodeParams = params
    released: dict[str, pd.Series] = {}
    entries: dict[str, Any] = {}
    for name in columns:
        column = frame[name]
        x = finite_floats(column)
        missing: NDArray[np.bool_] | None = None
        if x is None:
            x, missing = numbers_of(column, name)
            if not missing.any():
                missing = None
        codes, labels, entries[name] = recode_column(x, missing, p, name)
        if is_numeric(column):  # a DataFrame's numbers: the labels as a categorical
            values = pd.Categorical.from_codes(
                codes, dtype=pd.CategoricalDtype(pd.Index(labels)), validate=False
            )
            released[name] = pd.Series(values, index=frame.index, name=name)
        else:  # text: the labels as text, a missing value ""
            released[name] = labels_text(codes, labels, frame.index, name)
    return Masked(released, {"recode_method": p.recode_method, "columns": entries})


METHOD = MaskingMethod(
    name="recode",
    sdcmicro="globalRecode",
    params=RecodeParams,
    apply=recode,
    randomized=False,
    kind="categorical",
    summary="global recoding of numbers into intervals by --breaks",
)
