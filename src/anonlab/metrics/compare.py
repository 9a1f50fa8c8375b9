"""One utility loss and one linkage risk for the releases of every family (docs/compare.md).

``anonlab compare`` runs methods of different families on one table; this module measures
each release against the original with the same two figures, whatever the method did to
a cell. It knows no method: it reads the released cells alone (a hierarchy label, a range
``[lo, hi]`` or ``(lo,hi]``, ``*``, a blank, a number, a category), with the hierarchies a
generalization used to read their labels. Every figure is taken over the *attacker
columns* (the quasi-identifiers), the original's record ``i`` against the release's record
``i`` (every family releases the records in the input's order).

A released cell of column ``j`` is read as one of three kinds:

* a **number** (the column's original values are all numbers, and the cell is one): the
  released value ``x'``;
* a **category** (a value the column holds in the original; PRAM, swapping or a value left
  as it is): that value;
* a **coded** cell (everything else): the set of original values it *covers*: a hierarchy
  label covers the values whose hierarchy row has it at some level, a range the values
  between its ends (numbers by value, texts by their rank in the column's order, as
  :mod:`anonlab.metrics.certainty` orders them), ``*`` and a blank every value.

Utility loss of a cell (in [0, 1]): a coded cell its normalized certainty penalty as
:mod:`anonlab.metrics.certainty` defines it (an interval written otherwise than ``[lo, hi]``
its width over the column's range, at most 1); a number ``min(1, |x' - x| / (max - min))``
of the original column; a category 1 when it is another than the original's, else 0. The
loss of a column is the mean over its cells, the overall loss the mean over every attacker
cell: for a release of coded cells only it is the GCP.

Linkage risk (an attacker who knows each person's original attacker values links them to
the release, after Domingo-Ferrer and Torra's distance-based record linkage): the distance
from original record ``i`` to released record ``r`` is the sum over attacker columns of
``0`` if a coded or categorical cell of ``r`` covers (equals) ``i``'s value, else ``1``,
and ``|x_i - x'_r| / sd_j`` for a number (``sd_j`` the original column's standard
deviation, ddof 1, 1 where it is 0). The attacker picks uniformly among the released
records at the least distance from ``i``; ``i`` is re-identified with probability
``[r = i among them] / (their number)``. The report gives the mean probability (the
expected share of records re-identified), the highest, and the share of records whose
probability is at least ``threshold``. For a release of coded cells the least distance is
0 (a release covers its own record) and the probability ``1 / (compatible records)``: the
prosecutor risk of its class when nothing is suppressed and the classes do not overlap.
On a table of more than ``sample`` records the probabilities are those of a seeded sample
of ``sample`` original records (against every released record), and the report says so.

The distances are computed by blocks of original records against the release's distinct
tuples, column by column from each column's distances between the block's values and the
release's distinct labels (NumPy, no loop over record pairs).

Where attacker columns are numbers in both tables, the EM4ADOM figures sdcMicro's
``dUtility`` gives for them are added: ``IL1`` (:func:`anonlab.metrics.utility.il_1`),
``IL1s = IL1 * n * p`` (sdcMicro's sum) and ``eigen`` (``sum |e - e'| / e`` over the
eigenvalues of both tables' correlation matrices, in decreasing order); otherwise they are
marked not applicable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from anonlab.errors import AnonlabError, present
from anonlab.hierarchy import SUPPRESSED, Hierarchy
from anonlab.metrics.certainty import RANGE, cell_penalties
from anonlab.metrics.utility import il_1

#: the default share of re-identification probability a record counts as at risk from
DEFAULT_THRESHOLD = 0.2
#: the default number of original records whose linkage is computed on a large table
DEFAULT_SAMPLE = 5000
#: a released interval written as sdcMicro's ``globalRecode`` writes it: ``(a,b]``, ``[a,b)``
INTERVAL = re.compile(
    r"^(?P<open>[\[(])\s*(?P<lo>[^,\[\]()]+?)\s*,\s*(?P<hi>[^,\[\]()]+?)\s*(?P<close>[\])])$"
)
#: float entries of one block's distance matrix (block records x released tuples)
BLOCK_CELLS = 1 << 22

NUMBER, CATEGORY, HIERARCHY, INTERVAL_KIND, EVERY = 0, 1, 2, 3, 4
KIND_NAMES = {
    NUMBER: "number",
    CATEGORY: "category",
    HIERARCHY: "hierarchy label",
    INTERVAL_KIND: "range",
    EVERY: "suppressed",
}

RISK_RULE = (
    "an attacker who knows every original attacker value of a person links them to the "
    "released records at the least distance (coded or categorical cell: 0 if it covers the "
    "value, else 1; number: |x - x'| / sd), picking one of them at random"
)


def _text(series: pd.Series) -> tuple[NDArray[np.int64], list[str], NDArray[np.float64] | None]:
    """A column's codes, its distinct values as text (a missing value ``""``) and, when the
    column is numeric, each distinct value's number (NaN for a missing one)."""
    if pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        numbers = np.asarray(uniques, dtype=np.float64)
        texts = [_number_text(float(x)) for x in numbers]
        if (codes < 0).any():
            codes = np.where(codes < 0, len(texts), codes)
            texts.append("")
            numbers = np.append(numbers, np.nan)
        return codes.astype(np.int64), texts, numbers
    strings = series.astype("string").fillna("")
    codes, uniques = pd.factorize(strings.to_numpy(dtype=object))
    return codes.astype(np.int64), [str(u) for u in uniques], None


def _number_text(x: float) -> str:
    """A number as a table writes it: whole numbers without a decimal point."""
    if math.isfinite(x) and x == int(x) and abs(x) < 2**53:
        return str(int(x))
    return repr(x)


def _parse(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@dataclass
class _Column:
    """One attacker column: its original and released values encoded, how each released
    label reads (module text), and what the measures need of both."""

    name: str
    original: NDArray[np.int64]  # each record's original value (index into values)
    values: list[str]  # distinct original values as text
    numbers: NDArray[np.float64] | None  # their numbers when the column is numeric
    released: NDArray[np.int64]  # each record's released label (index into labels)
    labels: list[str]
    kind: NDArray[np.int8]  # each label's kind
    label_number: NDArray[np.float64]  # a number label's value
    label_value: NDArray[np.int64]  # a category label's original value
    low: NDArray[np.float64]  # an interval's ends as positions in the column's order
    high: NDArray[np.float64]
    hierarchy_cover: NDArray[np.bool_]  # original values x hierarchy labels (kind order)
    hierarchy_index: NDArray[np.int64]  # a hierarchy label's column in hierarchy_cover
    position: NDArray[np.float64]  # each original value's position in the column's order
    penalty: NDArray[np.float64]  # a coded label's NCP
    span: float  # max - min of the original numbers
    sd: float  # their standard deviation (1 where 0 or undefined)

    def cell_loss(self) -> NDArray[np.float64]:
        """Each record's loss in this column (module text)."""
        r, o = self.released, self.original
        kind = self.kind[r]
        loss = self.penalty[r].copy()
        numeric = kind == NUMBER
        if numeric.any():
            x = present(self.numbers, "the column's numbers")[o[numeric]]
            gap = np.abs(self.label_number[r[numeric]] - x)
            scaled = gap / self.span if self.span > 0 else (gap > 0).astype(np.float64)
            loss[numeric] = np.where(np.isnan(scaled), 1.0, np.minimum(scaled, 1.0))
        category = kind == CATEGORY
        loss[category] = (self.label_value[r[category]] != o[category]).astype(np.float64)
        return loss

    def distances(self, values: NDArray[np.int64]) -> NDArray[np.float64]:
        """The distance from each of ``values`` (original value codes) to each released
        label: ``len(values) x len(labels)`` (module text)."""
        out = np.zeros((len(values), len(self.labels)), dtype=np.float64)
        kind = self.kind
        at = np.flatnonzero(kind == NUMBER)
        if len(at):
            numbers = present(self.numbers, "the column's numbers")
            gap = np.abs(numbers[values][:, None] - self.label_number[at][None, :]) / self.sd
            out[:, at] = np.where(np.isnan(gap), 1.0, gap)
        at = np.flatnonzero(kind == CATEGORY)
        if len(at):
            out[:, at] = values[:, None] != self.label_value[at][None, :]
        at = np.flatnonzero(kind == INTERVAL_KIND)
        if len(at):
            place = self.position[values][:, None]
            inside = (self.low[at][None, :] <= place) & (place <= self.high[at][None, :])
            out[:, at] = ~inside
        at = np.flatnonzero(kind == HIERARCHY)
        if len(at):
            out[:, at] = ~self.hierarchy_cover[values][:, self.hierarchy_index[at]]
        return out


def _order_positions(
    values: Sequence[str], numbers: NDArray[np.float64] | None
) -> dict[str, float]:
    """Each value's place in the column's order: its number when every value is one, else its
    rank (numbers first, by value, then texts), as :mod:`anonlab.metrics.certainty` orders."""
    present = [v for v in values if v != ""]
    parsed = {v: _parse(v) for v in present}
    if all(x is not None for x in parsed.values()):
        return {v: float(x) for v, x in parsed.items() if x is not None}
    ranked = sorted(present, key=lambda v: (parsed[v] is None, parsed[v] or 0.0, v))
    return {v: float(i) for i, v in enumerate(ranked)}


def _column(
    name: str,
    original: pd.Series,
    release: pd.Series,
    hierarchy: Hierarchy | None,
    categorical: bool = False,
) -> _Column:
    """One attacker column read for the measures (module text); ``categorical`` reads
    numbers as category codes (a value released as another is a changed category)."""
    codes, values, numbers = _text(original)
    if categorical:
        numbers = None
    elif numbers is None:
        parsed = [_parse(v) for v in values]
        if all(x is not None for v, x in zip(values, parsed, strict=True) if v != "") and any(
            v != "" for v in values
        ):
            numbers = np.asarray([np.nan if x is None else x for x in parsed], dtype=np.float64)
    r_codes, labels, r_numbers = _text(release)
    if categorical:
        r_numbers = None
    known = {v: i for i, v in enumerate(values)}
    domain = [v for v in values if v != ""]
    positions = _order_positions(values, numbers)
    position = np.asarray([positions.get(v, np.nan) for v in values], dtype=np.float64)
    finite = numbers[np.isfinite(numbers)] if numbers is not None else np.empty(0)
    span = float(finite.max() - finite.min()) if len(finite) else 0.0
    sd = float(np.std(finite, ddof=1)) if len(finite) > 1 else 0.0
    order_span = float(np.nanmax(position) - np.nanmin(position)) if domain else 0.0
    covers = _hierarchy_covers(domain, hierarchy)
    read = _Labels(name, labels, r_numbers, numbers is not None, known, covers, positions)
    read.classify(order_span)
    kind, label_number, label_value = read.kind, read.number, read.value
    low, high, penalty, hierarchy_index = read.low, read.high, read.penalty, read.hierarchy_index
    hierarchy_labels, bracket = read.hierarchy_labels, read.bracket
    if bracket and len(domain) > 1:
        penalty[bracket] = cell_penalties(
            [labels[i] for i in bracket], domain, hierarchy, None, name
        )
    cover = np.zeros((len(values), len(hierarchy_labels)), dtype=np.bool_)
    for j, label in enumerate(hierarchy_labels):
        for v in covers[label]:
            cover[known[v], j] = True
    return _Column(
        name=name,
        original=codes,
        values=values,
        numbers=numbers,
        released=r_codes,
        labels=labels,
        kind=kind,
        label_number=label_number,
        label_value=label_value,
        low=low,
        high=high,
        hierarchy_cover=cover,
        hierarchy_index=hierarchy_index,
        position=position,
        penalty=penalty,
        span=span,
        sd=sd if sd > 0 and math.isfinite(sd) else 1.0,
    )


class _Labels:
    """How each released label of one column reads (module text): its kind and what the
    measures need of it."""

    def __init__(
        self,
        name: str,
        labels: list[str],
        numbers: NDArray[np.float64] | None,
        numeric: bool,
        known: Mapping[str, int],
        covers: Mapping[str, set[str]],
        positions: Mapping[str, float],
    ) -> None:
        self.name, self.labels, self.numbers, self.numeric = name, labels, numbers, numeric
        self.known, self.covers, self.positions = known, covers, positions
        n = len(labels)
        self.kind = np.empty(n, dtype=np.int8)
        self.number = np.full(n, np.nan)
        self.value = np.full(n, -1, dtype=np.int64)
        self.low = np.full(n, np.nan)
        self.high = np.full(n, np.nan)
        self.penalty = np.zeros(n, dtype=np.float64)
        self.hierarchy_index = np.full(n, -1, dtype=np.int64)
        self.hierarchy_labels: list[str] = []
        #: the labels whose NCP :func:`anonlab.metrics.certainty.cell_penalties` gives
        self.bracket: list[int] = []

    def classify(self, order_span: float) -> None:
        """Read every label; an interval not written ``[lo, hi]`` gets its width over
        ``order_span`` (at most 1) as its penalty."""
        for i, label in enumerate(self.labels):
            number = (
                float(self.numbers[i])
                if self.numbers is not None and np.isfinite(self.numbers[i])
                else _parse(label)
            )
            if self.numeric and number is not None:
                self.kind[i], self.number[i] = NUMBER, number
            elif label in self.known and label != "":
                self.kind[i], self.value[i] = CATEGORY, self.known[label]
            elif label in ("", SUPPRESSED):
                self.kind[i], self.low[i], self.high[i] = EVERY, -np.inf, np.inf
                self.penalty[i] = 1.0
            elif label in self.covers:
                self.kind[i] = HIERARCHY
                self.hierarchy_index[i] = len(self.hierarchy_labels)
                self.hierarchy_labels.append(label)
                self.bracket.append(i)
            else:
                self._interval(i, label, order_span)

    def _interval(self, i: int, label: str, order_span: float) -> None:
        ends = _interval(label, self.positions, self.numeric)
        if ends is None:
            raise AnonlabError(
                f"column '{self.name}': the released value '{label}' is no original value, "
                "number, hierarchy label, range or suppressed cell: name the hierarchy "
                "its method used"
            )
        self.kind[i] = INTERVAL_KIND
        self.low[i], self.high[i] = ends
        if RANGE.match(label) is not None:
            self.bracket.append(i)
        else:
            width = (ends[1] - ends[0]) / order_span if order_span > 0 else 1.0
            self.penalty[i] = min(1.0, max(0.0, width))


def _hierarchy_covers(domain: Sequence[str], hierarchy: Hierarchy | None) -> dict[str, set[str]]:
    """Each label of ``hierarchy`` above level 0 and the original values it covers."""
    covers: dict[str, set[str]] = {}
    if hierarchy is None:
        return covers
    for value in domain:
        if value not in hierarchy:
            continue
        for level in range(1, hierarchy.height + 1):
            covers.setdefault(hierarchy.label(value, level), set()).add(value)
    return covers


def _interval(
    label: str, positions: Mapping[str, float], numeric: bool
) -> tuple[float, float] | None:
    """A released range's ends as positions in the column's order (an open end of a number
    interval moved inside by the least step), or ``None`` when ``label`` is none."""
    match = RANGE.match(label)
    if match is not None:
        lo_text, hi_text, open_low, open_high = match["lo"], match["hi"], False, False
    else:
        match = INTERVAL.match(label)
        if match is None:
            return None
        lo_text, hi_text = match["lo"], match["hi"]
        open_low, open_high = match["open"] == "(", match["close"] == ")"
    lo = positions.get(lo_text, _parse(lo_text) if numeric else None)
    hi = positions.get(hi_text, _parse(hi_text) if numeric else None)
    if lo is None or hi is None or hi < lo:
        return None
    if open_low:
        lo = float(np.nextafter(lo, np.inf))
    if open_high:
        hi = float(np.nextafter(hi, -np.inf))
    return float(lo), float(hi)


def attacker_frames(
    original: pd.DataFrame, release: pd.DataFrame, columns: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The attacker columns of both tables, their records matched by place; one line when
    the release lacks a column or holds another number of records."""
    absent = [c for c in columns if c not in release.columns]
    if absent:
        raise AnonlabError(
            f"the release has no column {', '.join(absent)}: the attacker columns must be "
            "released (quasi-identifiers)"
        )
    missing = [c for c in columns if c not in original.columns]
    if missing:
        raise AnonlabError(f"the table has no column {', '.join(missing)}: check attacker")
    if len(release) != len(original):
        raise AnonlabError(
            f"the release holds {len(release)} records, the table {len(original)}: only a "
            "release of every record, in the table's order, can be compared"
        )
    left = original[list(columns)].reset_index(drop=True)
    right = release[list(columns)].reset_index(drop=True)
    return left, right


def read_columns(
    original: pd.DataFrame,
    release: pd.DataFrame,
    columns: Sequence[str],
    hierarchies: Mapping[str, Hierarchy] | None = None,
    categorical: Collection[str] = (),
) -> list[_Column]:
    """Every attacker column read for the measures (module text); the ``categorical`` ones
    as categories even where their values are numbers (codes)."""
    left, right = attacker_frames(original, release, columns)
    found = hierarchies or {}
    return [_column(c, left[c], right[c], found.get(c), c in categorical) for c in columns]


def utility_loss(columns: Sequence[_Column]) -> dict[str, Any]:
    """The ``utility_loss`` section: ``overall`` and ``per_column`` (module text), and the
    kinds of released cells each column holds."""
    per: dict[str, float] = {}
    kinds: dict[str, dict[str, int]] = {}
    for col in columns:
        loss = col.cell_loss()
        per[col.name] = float(loss.mean()) if len(loss) else 0.0
        found = np.bincount(col.kind[col.released], minlength=len(KIND_NAMES))
        kinds[col.name] = {KIND_NAMES[k]: int(c) for k, c in enumerate(found) if c}
    overall = sum(per.values()) / len(per) if per else 0.0
    return {"overall": overall, "per_column": per, "cells": kinds}


def linkage_risk(
    columns: Sequence[_Column],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    sample: int = DEFAULT_SAMPLE,
    seed: int = 0,
) -> dict[str, Any]:
    """The ``linkage`` section (module text): ``mean`` (expected share re-identified),
    ``highest``, ``at_risk`` (share with probability at least ``threshold``), the records
    measured and whether they are a sample."""
    probability, measured = linkage_probabilities(columns, sample=sample, seed=seed)
    n = len(columns[0].original) if columns else 0
    return {
        "rule": RISK_RULE,
        "mean": float(probability.mean()) if len(probability) else 0.0,
        "highest": float(probability.max()) if len(probability) else 0.0,
        "threshold": threshold,
        "at_risk": float((probability >= threshold).mean()) if len(probability) else 0.0,
        "expected_reidentified": float(probability.mean() * n) if len(probability) else 0.0,
        "records_measured": len(measured),
        "sampled": len(measured) < n,
        "seed": seed if len(measured) < n else None,
    }


def linkage_probabilities(
    columns: Sequence[_Column], *, sample: int = DEFAULT_SAMPLE, seed: int = 0
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Each measured original record's re-identification probability and the records
    measured (every record, or a seeded sample of ``sample`` of them; module text)."""
    if sample < 1:
        raise AnonlabError(f"sample must be at least 1 (got {sample})", parameter="sample")
    if not columns:
        return np.empty(0), np.empty(0, dtype=np.int64)
    n = len(columns[0].original)
    if n <= sample:
        measured = np.arange(n, dtype=np.int64)
    else:
        rng = np.random.default_rng(seed)
        measured = np.sort(rng.choice(n, size=sample, replace=False)).astype(np.int64)
    stacked = np.stack([c.released for c in columns], axis=1)
    tuples, own, counts = np.unique(stacked, axis=0, return_inverse=True, return_counts=True)
    own = own.reshape(-1)
    weights = counts.astype(np.float64)
    t = len(tuples)
    block = max(1, BLOCK_CELLS // max(t, 1))
    out = np.empty(len(measured), dtype=np.float64)
    for start in range(0, len(measured), block):
        rows = measured[start : start + block]
        distance = np.zeros((len(rows), t), dtype=np.float64)
        for j, col in enumerate(columns):
            distance += col.distances(col.original[rows])[:, tuples[:, j]]
        least = distance.min(axis=1)
        nearest = distance <= least[:, None]
        ties = nearest.astype(np.float64) @ weights
        mine = distance[np.arange(len(rows)), own[rows]] <= least
        out[start : start + len(rows)] = mine / ties
    return out, measured


def suppression_counts(columns: Sequence[_Column]) -> dict[str, int]:
    """Attacker cells released as ``*`` or blank where the original held a value, and the
    records with every attacker cell so."""
    if not columns:
        return {"suppressed_cells": 0, "suppressed_records": 0}
    blanked = np.stack(
        [
            (c.kind[c.released] == EVERY) & (np.asarray(c.values, dtype=object)[c.original] != "")
            for c in columns
        ],
        axis=1,
    )
    return {
        "suppressed_cells": int(blanked.sum()),
        "suppressed_records": int(blanked.all(axis=1).sum()),
    }


def numeric_figures(columns: Sequence[_Column]) -> dict[str, Any]:
    """sdcMicro's ``dUtility`` figures (IL1, IL1s, eigen) of the attacker columns that are
    numbers in both tables, or ``applicable: false`` when there is none (module text)."""
    names: list[str] = []
    left: list[NDArray[np.float64]] = []
    right: list[NDArray[np.float64]] = []
    for col in columns:
        if col.numbers is None or not np.all(col.kind == NUMBER):
            continue
        x = col.numbers[col.original]
        if not np.all(np.isfinite(x)):
            continue
        names.append(col.name)
        left.append(x)
        right.append(col.label_number[col.released])
    if not names:
        return {
            "applicable": False,
            "why": "no attacker column is released as numbers",
        }
    x, xm = np.stack(left, axis=1), np.stack(right, axis=1)
    n = x.shape[0]
    std = x.std(axis=0, ddof=1)
    usable = std > 0
    il1 = il_1(x[:, usable], xm[:, usable]) if usable.any() and n > 1 else float("nan")
    return {
        "applicable": True,
        "columns": names,
        "IL1": il1,
        "IL1s": il1 * n * int(usable.sum()),
        "eigen": _eigen(x, xm),
    }


def _eigen(x: NDArray[np.float64], xm: NDArray[np.float64]) -> float | None:
    """``sum |e - e'| / e`` over the eigenvalues of both correlation matrices in decreasing
    order (sdcMicro's ``dUtility(method = "eigen")``); ``None`` when one is undefined (a
    constant column)."""
    if x.shape[0] < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.corrcoef(x, rowvar=False) if x.shape[1] > 1 else np.ones((1, 1))
        b = np.corrcoef(xm, rowvar=False) if xm.shape[1] > 1 else np.ones((1, 1))
    if x.shape[1] == 1 and (np.std(x) == 0 or np.std(xm) == 0):
        return None
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return None
    e = np.sort(np.linalg.eigvalsh(np.atleast_2d(a)))[::-1]
    em = np.sort(np.linalg.eigvalsh(np.atleast_2d(b)))[::-1]
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(np.sum(np.abs(e - em) / e))
    return value if math.isfinite(value) else None


def measure_release(
    original: pd.DataFrame,
    release: pd.DataFrame,
    columns: Sequence[str],
    hierarchies: Mapping[str, Hierarchy] | None = None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    sample: int = DEFAULT_SAMPLE,
    seed: int = 0,
    categorical: Collection[str] = (),
) -> dict[str, Any]:
    """Every figure of one release against ``original`` over the attacker ``columns``:
    ``utility_loss``, ``linkage``, ``numeric`` and the suppressed cells and records
    (module text). ``hierarchies`` read the labels of a generalization's release;
    ``categorical`` columns are read as categories even where their values are numbers."""
    if not 0.0 < threshold <= 1.0:
        raise AnonlabError(
            f"threshold must lie in (0, 1] (got {threshold}), e.g. 0.2", parameter="threshold"
        )
    read = read_columns(original, release, columns, hierarchies, categorical)
    return {
        "records": len(original),
        **suppression_counts(read),
        "utility_loss": utility_loss(read),
        "linkage": linkage_risk(read, threshold=threshold, sample=sample, seed=seed),
        "numeric": numeric_figures(read),
    }
