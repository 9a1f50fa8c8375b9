"""Date hierarchies: dates and times to day, month, quarter, year and decade, then ``*``.

As ARX's date builder: each level is a calendar unit that contains the
units below it, so the levels nest. A value ``t`` (year ``y``, month ``m``)
gets the labels

* day: ``y-m-d`` (``2009-07-14``); month: ``y-m`` (``2009-07``);
* quarter: ``y-Qq`` with ``q = floor((m - 1) / 3) + 1`` (``2009-Q3``);
* year: ``y``; decade: ``d-(d + 9)`` with ``d = 10 * floor(y / 10)``
  (``2000-2009``).

Values are parsed by pandas (:func:`pandas.to_datetime`), with ``date_format``
(a ``strftime`` pattern such as ``%d/%m/%Y``) when given, else each value on
its own (ISO 8601, ``Jan 5 2004``, ``01/02/2003`` read month first). Values
that do not parse are refused, naming a few; a missing value (the empty
string) keeps the label ``''`` up to the top, as in the other builders.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from anonlab.errors import AnonlabError
from anonlab.hierarchy import SUPPRESSED, Hierarchy
from anonlab.hierarchy_taxonomy import value_texts

if TYPE_CHECKING:
    import pandas as pd

#: the date levels, finest first; a hierarchy takes some of them in this order
DATE_LEVELS = ("day", "month", "quarter", "year", "decade")


def date_hierarchy(
    values: Iterable[object],
    levels: Sequence[str] | None = None,
    date_format: str | None = None,
    top: str = SUPPRESSED,
) -> Hierarchy:
    """The date hierarchy of ``values``: rows in time order, one label per level, then ``top``.

    ``levels`` defaults to :func:`default_levels` of the parsed values.
    """
    texts = value_texts(values)
    present = [t for t in texts if t != ""]
    if not present:
        raise AnonlabError("no values to build a date hierarchy from")
    stamps = parse_dates(present, date_format)
    chosen = check_levels(levels) if levels is not None else default_levels(stamps)
    order = sorted(range(len(present)), key=lambda i: (stamps[i], present[i]))
    rows = [[present[i], *(date_label(stamps[i], name) for name in chosen), top] for i in order]
    if "" in texts:
        rows.append(["", *[""] * len(chosen), top])
    return Hierarchy.from_rows(rows, source="<date builder>")


def parse_dates(texts: Sequence[str], date_format: str | None = None) -> list[pd.Timestamp]:
    """Each text as a timestamp; refused in one line naming up to 3 that do not parse."""
    import pandas as pd

    series = pd.Series(list(texts), dtype=object)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # pandas' format guessing notes
            parsed = pd.to_datetime(series, format=date_format or "mixed", errors="coerce")
    except (ValueError, TypeError, OverflowError) as exc:
        reason = " ".join(str(exc).split()).rstrip(".")
        raise AnonlabError(
            f"date_format {date_format or 'not given'}: the values are not "
            f"dates of one kind ({reason}): give dates of one time zone, or "
            "the values' strftime pattern",
            parameter="date_format",
        ) from None
    bad = [t for t, p in zip(texts, parsed, strict=True) if pd.isna(p)]
    if bad:
        how = f"'{date_format}'" if date_format else "not given"
        examples = ", ".join(f"'{t}'" for t in bad[:3])
        raise AnonlabError(
            f"date_format {how}: {len(bad)} of {len(texts)} values do not parse "
            f"as dates: {examples}: fix them or give the values' strftime "
            "pattern, e.g. %d/%m/%Y",
            parameter="date_format",
        )
    return list(parsed)


def check_levels(levels: Sequence[str]) -> list[str]:
    """Level names, known and finest first without repeats (else refused)."""
    names = [str(x).strip().lower() for x in levels if str(x).strip()]
    unknown = [n for n in names if n not in DATE_LEVELS]
    if unknown or not names:
        raise AnonlabError(
            f"levels take some of {','.join(DATE_LEVELS)} (got '{','.join(levels)}')",
            parameter="levels",
        )
    ranks = [DATE_LEVELS.index(n) for n in names]
    if any(b <= a for a, b in pairwise(ranks)):
        raise AnonlabError(
            f"levels must go from finer to coarser without repeats, in the order "
            f"{','.join(DATE_LEVELS)} (got '{','.join(names)}')",
            parameter="levels",
        )
    return names


def default_levels(stamps: Sequence[pd.Timestamp]) -> list[str]:
    """``day,month,quarter,year,decade`` when a value has a time of day, else from month up
    (a day level over dates would repeat the values)."""
    timed = any(ts != ts.normalize() for ts in stamps)
    return list(DATE_LEVELS) if timed else list(DATE_LEVELS[1:])


def date_label(ts: pd.Timestamp, level: str) -> str:
    """The label of ``ts`` at a date level (see the module docstring for the formulas)."""
    y, m = ts.year, ts.month
    if level == "day":
        return f"{y:04d}-{m:02d}-{ts.day:02d}"
    if level == "month":
        return f"{y:04d}-{m:02d}"
    if level == "quarter":
        return f"{y:04d}-Q{(m - 1) // 3 + 1}"
    if level == "year":
        return f"{y:04d}"
    decade = y // 10 * 10
    return f"{decade:04d}-{decade + 9:04d}"
