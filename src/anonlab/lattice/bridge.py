"""From an engine's results to the in-memory objects of the lattice search.

The search needs each quasi-identifier's dictionary mapped onto its
hierarchy (:class:`anonlab.dataset.EncodedQI`), exactly as
:func:`anonlab.dataset.encode_qi` maps it, and the base frequency set. An
engine gives the global dictionary in the same first-seen order, so
:func:`encoded_qis` builds the same level maps and labels; only the per-row
codes stay with the engine (``codes`` is empty). :func:`encoded_sensitive`
does the same for the sensitive columns whose histograms the frequency set
carries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from anonlab.dataset import EncodedQI, EncodedSensitive
from anonlab.engine.base import BaseFrequencySet, Encoding, ReleasePlan
from anonlab.errors import AnonlabError
from anonlab.hierarchy import Hierarchy


def encoded_qis(
    result: BaseFrequencySet | Encoding, hierarchies: Mapping[str, Hierarchy]
) -> tuple[EncodedQI, ...]:
    """Each quasi-identifier of ``result`` with its hierarchy's level maps over its dictionary.

    ``hierarchies`` maps every column of ``result`` to its hierarchy. Value
    frequencies come from the frequency set's counts (or the encoding's);
    ``codes`` is an empty array, since the rows stay in the engine. A value
    missing from its hierarchy is an :class:`AnonlabError` naming it.
    """
    out = []
    for j, name in enumerate(result.columns):
        if name not in hierarchies:
            raise AnonlabError(
                f"hierarchies lacks the quasi-identifier '{name}': give its hierarchy",
                parameter="hierarchies",
            )
        hierarchy = hierarchies[name]
        values = result.dictionaries[j]
        missing = hierarchy.missing(values)
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise AnonlabError(
                f"column '{name}': value '{missing[0]}'{more} is not in "
                f"hierarchy '{hierarchy.source}': add it to the hierarchy file"
            )
        level_codes, level_labels = hierarchy.level_maps(values)
        freqs = (
            result.value_frequencies(j)
            if isinstance(result, BaseFrequencySet)
            else result.frequencies[j]
        )
        out.append(
            EncodedQI(
                name=name,
                hierarchy=hierarchy,
                values=tuple(values),
                codes=np.zeros(0, dtype=np.int32),
                level_codes=tuple(level_codes),
                level_labels=tuple(tuple(x) for x in level_labels),
                frequencies=np.asarray(freqs, dtype=np.int64),
            )
        )
    return tuple(out)


def encoded_sensitive(base: BaseFrequencySet) -> tuple[EncodedSensitive, ...]:
    """The sensitive columns of ``base`` as :class:`EncodedSensitive` (dictionary in
    first-seen order and value counts, as :func:`anonlab.dataset.encode_sensitive` makes
    them; ``codes`` empty)."""
    return tuple(
        EncodedSensitive(
            name=s.name,
            values=tuple(s.dictionary),
            codes=np.zeros(0, dtype=np.int32),
            frequencies=np.asarray(s.frequencies, dtype=np.int64),
        )
        for s in base.sensitive.values()
    )


def plan_at(
    qis: Sequence[EncodedQI],
    levels: Sequence[int],
    suppressed: NDArray[Any] | None = None,
    drop: Sequence[str] = (),
) -> ReleasePlan:
    """The release plan of a node: each quasi-identifier's level maps and labels at ``levels``,
    the suppressed classes (rows of level codes) and the columns to ``drop``."""
    m = len(qis)
    return ReleasePlan(
        columns=tuple(q.name for q in qis),
        dictionaries=tuple(tuple(q.values) for q in qis),
        groups=tuple(
            np.asarray(q.level_codes[lv], dtype=np.int32) for q, lv in zip(qis, levels, strict=True)
        ),
        labels=tuple(tuple(q.level_labels[lv]) for q, lv in zip(qis, levels, strict=True)),
        suppressed=(
            np.zeros((0, m), dtype=np.int32)
            if suppressed is None
            else np.asarray(suppressed, dtype=np.int32).reshape(-1, m)
        ),
        drop=tuple(drop),
    )
